package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/bloblang"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/docgen"
)

// The component reference under docs/components is rendered from the plugins'
// own config specs, so the documentation cannot drift from the code. Run
// `UPDATE_DOCS=1 go test -run TestComponentDocs .` after changing a spec.
func TestComponentDocs(t *testing.T) {
	env := service.GlobalEnvironment()
	views := map[string]func() (*service.ConfigView, bool){
		"inputs/kafka_txn.md":         func() (*service.ConfigView, bool) { return env.GetInputConfig("kafka_txn") },
		"inputs/debezium_txn.md":      func() (*service.ConfigView, bool) { return env.GetInputConfig("debezium_txn") },
		"outputs/starrocks_txn.md":    func() (*service.ConfigView, bool) { return env.GetOutputConfig("starrocks_txn") },
		"outputs/kafka_txn.md":        func() (*service.ConfigView, bool) { return env.GetOutputConfig("kafka_txn") },
		"processors/txn_assembler.md": func() (*service.ConfigView, bool) { return env.GetProcessorConfig("txn_assembler") },
		"metrics/prometheus.md":       func() (*service.ConfigView, bool) { return env.GetMetricsConfig("prometheus") },
	}
	for path, get := range views {
		view, ok := get()
		require.True(t, ok, "plugin for %s is not registered", path)
		doc, err := docgen.Render(view)
		require.NoError(t, err)
		require.NotContains(t, string(doc), "xref:", "%s: an AsciiDoc cross reference left in the Markdown", path)
		full := filepath.Join("docs", "components", path)
		if os.Getenv("UPDATE_DOCS") != "" {
			require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
			require.NoError(t, os.WriteFile(full, doc, 0o644))
			continue
		}
		have, err := os.ReadFile(full)
		require.NoError(t, err, "missing %s: run UPDATE_DOCS=1 go test -run TestComponentDocs .", full)
		require.Equal(t, string(doc), string(have), "%s is stale: run UPDATE_DOCS=1 go test -run TestComponentDocs .", full)
	}
}

// Every field of every component of the project shows an example in its
// reference (the generated docs' "# Examples" block).
func TestEveryFieldHasAnExample(t *testing.T) {
	env := service.GlobalEnvironment()
	views := map[string]func() (*service.ConfigView, bool){
		"input kafka_txn":      func() (*service.ConfigView, bool) { return env.GetInputConfig("kafka_txn") },
		"input debezium_txn":   func() (*service.ConfigView, bool) { return env.GetInputConfig("debezium_txn") },
		"output kafka_txn":     func() (*service.ConfigView, bool) { return env.GetOutputConfig("kafka_txn") },
		"output starrocks_txn": func() (*service.ConfigView, bool) { return env.GetOutputConfig("starrocks_txn") },
		"txn_assembler":        func() (*service.ConfigView, bool) { return env.GetProcessorConfig("txn_assembler") },
		"metrics prometheus":   func() (*service.ConfigView, bool) { return env.GetMetricsConfig("prometheus") },
	}
	for name, get := range views {
		view, ok := get()
		require.True(t, ok, name)
		data, err := view.TemplateData()
		require.NoError(t, err)
		var missing []string
		for _, f := range data.Fields {
			if len(f.ExamplesMarshalled) == 0 {
				missing = append(missing, f.FullName)
			}
		}
		assert.Empty(t, missing, "%s: fields without an example", name)
	}
}

// The Bloblang examples of the assembler's custom mappings are mappings.
func TestAssemblerMappingExamplesParse(t *testing.T) {
	view, ok := service.GlobalEnvironment().GetProcessorConfig("txn_assembler")
	require.True(t, ok)
	data, err := view.TemplateData()
	require.NoError(t, err)
	n := 0
	for _, f := range data.Fields {
		if !strings.HasPrefix(f.FullName, "custom.") {
			continue
		}
		for _, ex := range f.Examples {
			_, err := bloblang.Parse(ex.(string))
			assert.NoError(t, err, "%s example %q", f.FullName, ex)
			n++
		}
	}
	assert.Equal(t, 7, n)
}

// The README's "coming from the Flink connector" table names fields the
// output has.
func TestReadmeFlinkTableNamesRealFields(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	text := string(raw)
	start := strings.Index(text, "## Coming from the StarRocks Flink connector")
	require.Positive(t, start)
	section := text[start:]
	section = section[:strings.Index(section[3:], "\n## ")+3]

	view, ok := service.GlobalEnvironment().GetOutputConfig("starrocks_txn")
	require.True(t, ok)
	data, err := view.TemplateData()
	require.NoError(t, err)
	known := map[string]bool{"txn_assembler": true, "starrocks_txn_end": true, "at_least_once": true, "exactly_once": true}
	for _, f := range data.Fields {
		known[f.FullName] = true
	}
	ident := regexp.MustCompile("^[a-z_]+$")
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.Contains(cells[1], "Flink connector option") {
			continue
		}
		rows++
		for _, m := range regexp.MustCompile("`([^`]*)`").FindAllStringSubmatch(cells[2], -1) {
			if ident.MatchString(m[1]) {
				assert.True(t, known[m[1]], "the Flink table names %q, which is not a field of starrocks_txn", m[1])
			}
		}
	}
	assert.GreaterOrEqual(t, rows, 12)
}
