package main

import (
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every field of every project component has an example, with no waiver
// list, including the components TestEveryFieldHasAnExample leaves out.
func TestRev16EveryFieldHasAnExampleNoWaiver(t *testing.T) {
	env := service.GlobalEnvironment()
	views := map[string]func() (*service.ConfigView, bool){
		"input kafka_txn":      func() (*service.ConfigView, bool) { return env.GetInputConfig("kafka_txn") },
		"input debezium_txn":   func() (*service.ConfigView, bool) { return env.GetInputConfig("debezium_txn") },
		"output kafka_txn":     func() (*service.ConfigView, bool) { return env.GetOutputConfig("kafka_txn") },
		"output starrocks_txn": func() (*service.ConfigView, bool) { return env.GetOutputConfig("starrocks_txn") },
		"txn_assembler":        func() (*service.ConfigView, bool) { return env.GetProcessorConfig("txn_assembler") },
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
