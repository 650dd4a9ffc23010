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
	assert.Positive(t, s.Checks, "the readers checked while loading")
	assert.Equal(t, s.SourceCommitted, s.TxnsLoaded, "every source transaction loaded once")
	assert.Positive(t, s.SnapshotRows)
	// Source transactions share StarRocks transactions: on a quiet machine
	// about 20 per commit, on one starved by other work (the producer wrote
	// 31 in its 4 s at a load average of 30) about 3.
	assert.Less(t, s.Commits, s.TxnsLoaded/2, "source transactions share StarRocks transactions")
	assert.Contains(t, out.String(), "snapshot rows")
}

// The Debezium summary says which of its counts are snapshot rows: a
// snapshot row has no transaction, and the output counts each as a source
// transaction of its own.
func TestSummarySaysWhichCountsAreSnapshotRows(t *testing.T) {
	var out bytes.Buffer
	PrintSummary(&out, &Summary{SourceCommitted: 515, Records: 6347, TxnsLoaded: 515, RowsLoaded: 4466, Commits: 6, Loads: 73,
		TablesMatch: true, SnapshotRows: 976, LargestTxn: 113, Latencies: make([]time.Duration, 1491)})
	assert.Contains(t, out.String(), "  producer: 515 source transactions committed, 0 aborted (6347 Kafka records)\n"+
		"            Debezium: before them a snapshot of 976 rows (no transaction: each row loads as one of its own); the largest source transaction 113 events\n"+
		"  loaded:   515 source transactions and the 976 snapshot rows, 4466 rows in all, in 6 StarRocks commits and 73 HTTP loads\n")
	assert.Contains(t, out.String(), "visibility latency (Kafka record time → StarRocks commit), 1491 transactions at the output: the source's and the 976 snapshot rows, one each:")

	out.Reset()
	PrintSummary(&out, &Summary{SourceCommitted: 40, TxnsLoaded: 40, RowsLoaded: 200, Commits: 4, TablesMatch: true, Latencies: make([]time.Duration, 40)})
	assert.NotContains(t, out.String(), "snapshot")
	assert.Contains(t, out.String(), "  loaded:   40 source transactions, 200 rows, in 4 StarRocks commits and 0 HTTP loads\n")
	assert.Contains(t, out.String(), "), 40 source transactions: p50")
}
