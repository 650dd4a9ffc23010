package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
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
		"processors/txn_assembler.md": func() (*service.ConfigView, bool) { return env.GetProcessorConfig("txn_assembler") },
		"metrics/prometheus.md":       func() (*service.ConfigView, bool) { return env.GetMetricsConfig("prometheus") },
	}
	for path, get := range views {
		view, ok := get()
		require.True(t, ok, "plugin for %s is not registered", path)
		doc, err := docgen.Render(view)
		require.NoError(t, err)
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
