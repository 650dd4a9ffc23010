package demo

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// `demo --format debezium` with its schema changes (the CLI's default): the
// source adds orders columns, creates shipments (its first transaction
// also updates the order it ships), widens order_items' quantity and
// product, and drops orders.updated_at, each at its planned transaction;
// the output applies each in step with the transactions, and at the end
// the tables equal the source — the new columns' values, the new table,
// the wide values, NULL after the drop — and no reader ever saw half a
// transaction.
func TestDemoDebeziumSchemaChanges(t *testing.T) {
	schema, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Start(ctx, Options{
		Partitions: 3, Rate: 150, Duration: 5 * time.Second, Format: FormatDebezium, SchemaChanges: true,
		Pipeline: DebeziumPipeline, Schema: string(schema), Out: &out, Seed: 7,
	})
	require.NoError(t, err)
	defer r.Close()
	s, err := r.Run(ctx)
	PrintSummary(&out, s)
	t.Log(out.String())
	require.NoError(t, err)
	assert.True(t, s.TablesMatch, s.Mismatch)
	assert.Zero(t, s.TornReads, s.ConsistencyError)
	assert.Equal(t, s.SourceCommitted, s.TxnsLoaded, "every source transaction committed once (the new table's topic made the input rebalance and re-read what was in flight)")
	require.Len(t, s.SchemaChanges, len(workload.SchemaKinds), "every change was made mid-run")
	for _, k := range workload.SchemaKinds {
		assert.Contains(t, out.String(), "schema:   "+string(k))
	}
	var n int
	require.NoError(t, r.db.QueryRow("SELECT COUNT(*) FROM test.shipments").Scan(&n))
	assert.Positive(t, n, "the new table holds rows")
	require.NoError(t, r.db.QueryRow("SELECT COUNT(*) FROM test.orders WHERE coupon IS NOT NULL").Scan(&n))
	assert.Positive(t, n, "the new column holds values")
}

// Schema changes need the Debezium format.
func TestDemoSchemaChangesNeedDebezium(t *testing.T) {
	_, err := Start(context.Background(), Options{SchemaChanges: true, Format: FormatEnvelope})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--format debezium")
}
