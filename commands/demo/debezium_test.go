package demo

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `demo --format debezium`: Debezium topics with a snapshot, large
// transactions and re-sent copies, through debezium_txn into the emulator;
// the tables equal the source and no reader sees half a transaction.
func TestDemoDebezium(t *testing.T) {
	schema, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Start(ctx, Options{
		Partitions: 3, Rate: 150, Duration: 4 * time.Second, Format: FormatDebezium,
		Pipeline: DebeziumPipeline, Schema: string(schema), Out: &out, Seed: 7,
	})
	require.NoError(t, err)
	defer r.Close()
	s, err := r.Run(ctx)
	require.NoError(t, err)
	PrintSummary(&out, s)
	t.Log(out.String())
	assert.True(t, s.TablesMatch, s.Mismatch)
	assert.Zero(t, s.TornReads, s.ConsistencyError)
	assert.Greater(t, s.Checks, int64(10))
	assert.Equal(t, s.SourceCommitted, s.TxnsLoaded, "every source transaction loaded once")
	assert.Positive(t, s.SnapshotRows)
	assert.Less(t, s.Commits, s.TxnsLoaded/5, "many source transactions share one StarRocks transaction")
	assert.Contains(t, out.String(), "snapshot rows")
}
