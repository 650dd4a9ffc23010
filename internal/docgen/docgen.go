// Package docgen renders a plugin's Markdown reference from its config spec,
// so the documentation is generated from the code it documents.
//
// Benthos v4.60.0's ConfigView.RenderDocs fails on every plugin ("can't
// evaluate field AdvancedConfig in type service.TemplateDataPlugin": its
// template names a field the data no longer has), so the page is rendered
// here from ConfigView.TemplateData.
package docgen

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/redpanda-data/benthos/v4/public/service"
)

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"code": func(s string) string { return "`" + s + "`" },
	"trim": strings.TrimSpace,
}).Parse(`# {{.Name}}

<!-- Generated from the plugin's config spec by internal/docgen; do not edit.
     Regenerate with: UPDATE_DOCS=1 go test -run TestComponentDocs . -->

Type: {{.Type}}. Status: {{.Status}}.{{if .Version}} Since {{.Version}}.{{end}}

{{trim .Summary}}

## Common config

` + "```yaml" + `
{{trim .CommonConfigYAML}}
` + "```" + `

## All fields

` + "```yaml" + `
{{trim .AdvancedConfigYAML}}
` + "```" + `
{{if .Description}}
## Description

{{trim .Description}}
{{end}}{{if .Examples}}
## Examples
{{range .Examples}}
### {{.Title}}

{{trim .Summary}}

` + "```yaml" + `
{{trim .Config}}
` + "```" + `
{{end}}{{end}}
## Fields
{{range .Fields}}
### {{code .FullName}}

{{trim .Description}}
{{if .IsSecret}}
This field contains sensitive information. Review your cluster security before adding it to your configuration.
{{end}}{{if .IsInterpolated}}
This field supports interpolation functions.
{{end}}
*Type*: {{code .Type}}
{{if .DefaultMarshalled}}
*Default*: {{code .DefaultMarshalled}}
{{end}}{{if .AnnotatedOptions}}
| Option | Summary |
|---|---|
{{range .AnnotatedOptions}}| {{code (index . 0)}} | {{index . 1}} |
{{end}}{{else if .Options}}
Options: {{range $i, $o := .Options}}{{if $i}}, {{end}}{{code $o}}{{end}}.
{{end}}{{if .ExamplesMarshalled}}
` + "```yaml" + `
# Examples
{{range .ExamplesMarshalled}}
{{trim .}}
{{end}}` + "```" + `
{{end}}{{end}}{{if .Footnotes}}
{{trim .Footnotes}}
{{end}}`))

// xref is an AsciiDoc cross reference of the Redpanda Connect docs, which
// Benthos's own field descriptions (batching policies, TLS) carry:
// xref:<module>:<page>.adoc[#anchor][text].
var xref = regexp.MustCompile(`xref:(?:([a-z0-9_-]+):)?([A-Za-z0-9_/.-]+?)\.adoc(#[A-Za-z0-9_-]+)?\[([^\]]*)\]`)

// docsBase is where those pages are published.
const docsBase = "https://docs.redpanda.com/redpanda-connect/"

// markdownLinks turns AsciiDoc cross references into Markdown links.
func markdownLinks(b []byte) []byte {
	return xref.ReplaceAllFunc(b, func(m []byte) []byte {
		g := xref.FindSubmatch(m)
		module, page, anchor, text := string(g[1]), string(g[2]), string(g[3]), string(g[4])
		url := docsBase
		if module != "" && module != "ROOT" {
			url += module + "/"
		}
		url += strings.TrimSuffix(page, "/index") + "/" + anchor
		if text == "" {
			text = page
		}
		return []byte("[" + text + "](" + url + ")")
	})
}

// Render returns the Markdown reference of one plugin.
func Render(view *service.ConfigView) ([]byte, error) {
	data, err := view.TemplateData()
	if err != nil {
		return nil, fmt.Errorf("reading the spec of a plugin: %w", err)
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("rendering the docs of %s: %w", data.Name, err)
	}
	return markdownLinks(buf.Bytes()), nil
}
