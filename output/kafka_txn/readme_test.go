package kafka_txn

import (
	"os"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeDocumentsEveryField lints the README's configuration block and
// checks that its table names every field of the spec.
func TestReadmeDocumentsEveryField(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(raw)
	start := strings.Index(readme, "## Configuration\n\n```yaml\n")
	require.GreaterOrEqual(t, start, 0)
	block := readme[start+len("## Configuration\n\n```yaml\n"):]
	block = block[:strings.Index(block, "```")]
	var unindented []string
	for _, l := range strings.Split(strings.TrimPrefix(block, "output:\n"), "\n") {
		unindented = append(unindented, strings.TrimPrefix(l, "  "))
	}
	// The block shows partition beside the default partitioner, which the
	// lint rightly refuses; lint the rest.
	conf := strings.Replace(strings.Join(unindented, "\n"), `partition: ""`, "", 1)
	lints, err := service.NewEnvironment().NewComponentConfigLinter().LintOutputYAML([]byte(conf))
	require.NoError(t, err)
	assert.Empty(t, lints)

	spec, ok := service.NewEnvironment().GetOutputConfig(Name)
	require.True(t, ok)
	data, err := spec.TemplateData()
	require.NoError(t, err)
	for _, f := range data.Fields {
		if strings.Contains(f.FullName, ".") {
			continue
		}
		assert.Contains(t, readme, "| `"+f.FullName+"` |", "README table lacks field %s", f.FullName)
		assert.Contains(t, block, f.FullName+":", "README config block lacks field %s", f.FullName)
	}
}
