package docgen

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMarkdownLinks(t *testing.T) {
	for in, want := range map[string]string{
		"A xref:guides:bloblang/about.adoc[Bloblang query] that":                "A [Bloblang query](https://docs.redpanda.com/redpanda-connect/guides/bloblang/about/) that",
		"list of xref:components:processors/about.adoc[processors] to":          "list of [processors](https://docs.redpanda.com/redpanda-connect/components/processors/about/) to",
		"see xref:configuration:interpolation.adoc#bloblang-queries[functions]": "see [functions](https://docs.redpanda.com/redpanda-connect/configuration/interpolation/#bloblang-queries)",
		"xref:index.adoc[]":                         "[index](https://docs.redpanda.com/redpanda-connect/index/)",
		"no reference here":                         "no reference here",
		"two xref:a:b.adoc[x] and xref:c:d.adoc[y]": "two [x](https://docs.redpanda.com/redpanda-connect/a/b/) and [y](https://docs.redpanda.com/redpanda-connect/c/d/)",
	} {
		assert.Equal(t, want, string(markdownLinks([]byte(in))), in)
	}
}
