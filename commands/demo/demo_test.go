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

// The demo is the product's smoke test: the real pipeline config, in-process
// Kafka with aborted producer transactions, the emulator, and a reader that
// checks on every query that no source transaction is half visible.
func TestDemoVerifiesTheWholePipeline(t *testing.T) {
	pipeline, err := os.ReadFile("../../examples/demo.yaml")
	require.NoError(t, err)
	schema, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)

	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Start(ctx, Options{
		Partitions: 3, Rate: 150, Duration: 4 * time.Second, AbortRatio: 0.2,
		Pipeline: string(pipeline), Schema: string(schema), Out: &out, Seed: 7,
	})
	require.NoError(t, err)
	defer r.Close()
	s, err := r.Run(ctx)
	require.NoError(t, err)
	PrintSummary(&out, s)
	t.Log(out.String())

	assert.True(t, s.TablesMatch, s.Mismatch)
	assert.Zero(t, s.TornReads, s.ConsistencyError)
	assert.Empty(t, s.ConsistencyError)
	assert.Greater(t, s.Checks, int64(10), "the reader must have run while loading")
	assert.Greater(t, s.SourceAborted, int64(0), "the run must include aborted producer transactions")
	assert.Equal(t, s.SourceCommitted, s.TxnsLoaded, "every committed source transaction is loaded once")
	assert.Less(t, s.Commits, s.TxnsLoaded/5, "many source transactions share one StarRocks transaction")
	assert.Len(t, s.Latencies, int(s.TxnsLoaded))
	assert.Contains(t, out.String(), "OK: tables equal")
}

// --starrocks-version 3.3: the emulator has no multi-table transactions, so
// the output (transaction_mode auto) commits each cycle per table; the demo
// verifies the tables the same way, lets a partial read pass only while it
// heals (none may be left once drained), and prints the commit windows.
func TestDemoPerTableOnStarRocks33(t *testing.T) {
	pipeline, err := os.ReadFile("../../examples/demo.yaml")
	require.NoError(t, err)
	schema, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)

	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Start(ctx, Options{
		Partitions: 3, Rate: 150, Duration: 4 * time.Second, AbortRatio: 0.2,
		Pipeline: string(pipeline), Schema: string(schema), Out: &out, Seed: 7, StarRocksVersion: "3.3",
	})
	require.NoError(t, err)
	defer r.Close()
	s, err := r.Run(ctx)
	require.NoError(t, err)
	PrintSummary(&out, s)
	t.Log(out.String())

	assert.True(t, s.PerTable)
	assert.True(t, s.TablesMatch, s.Mismatch)
	assert.Zero(t, s.TornReads, s.ConsistencyError)
	assert.Equal(t, s.SourceCommitted, s.TxnsLoaded, "every committed source transaction is loaded once")
	assert.NotEmpty(t, s.Windows, "the commit windows are measured")
	assert.Less(t, s.Commits, s.TxnsLoaded/5, "many source transactions share one cycle")
	assert.Contains(t, out.String(), "commit window (first to last COMMIT of a cycle")
	assert.Contains(t, out.String(), "none once the cycles were done")
}
