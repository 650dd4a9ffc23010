package starrocks_txn

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// TestReviewMaxwellNewColumnValueReachesStarRocks is the end-to-end form of
// TestReviewMaxwellRowsAfterADDLWaitForACycleBegunAfterIt, against the
// emulator (which keeps, as StarRocks does, the schema a transaction's table
// was planned with at its first load): a Maxwell-like stream — an order
// (loaded into the open cycle, so the cycle's transaction plans orders), a
// table-alter adding coupon in a source transaction of its own, then an
// order with a coupon — loaded with schema_evolution: evolve. The ALTER is
// applied (fast schema evolution: at once) while the cycle is open; the
// order with the coupon is checked by its keys, finds the column there, gets
// no ReadyAt and joins the open cycle, whose plan of orders has no coupon:
// the value is dropped silently. Waits poll the emulator's counters; the
// commit interval is long so that the cycle is reliably still open.
//
// Run as StarRocks 4.x (multi_table) and as 3.3 (per_table: the orders part
// is begun, and planned, at the cycle's first load of orders).
func TestReviewMaxwellNewColumnValueReachesStarRocks(t *testing.T) {
	for _, v := range []struct{ name, version, mode string }{{"multi_table", "", "multi_table"}, {"per_table", "3.3", "per_table"}} {
		t.Run(v.name, func(t *testing.T) { maxwellNewColumnValue(t, v.version, v.mode) })
	}
}

func maxwellNewColumnValue(t *testing.T, version, mode string) {
	e := startEmulator(t, func(c *emulator.Config) { c.StarRocksVersion = version })
	sb := service.NewStreamBuilder()
	require.NoError(t, sb.SetLoggerYAML("level: none"))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  load_urls: [ %s ]
  mysql_address: %s
  schema_evolution: evolve
  transaction_mode: %s
  commit_interval: 20s
  txn_timeout: 120s
  max_in_flight: 64
`, e.FEURL(), e.MySQLAddr(), mode)))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()
	t.Cleanup(func() { _ = stream.StopWithin(5 * time.Second) })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := newSrc("mx")
	// The first cycle is due at once; a warm-up commit makes the next one wait
	// commit_interval.
	require.NoError(t, produce(ctx, service.MessageBatch{s.row("p0", "w0", "orders",
		map[string]any{"order_id": 100, "customer_id": 7, "total_amount": "0.50", "order_status": "warm"}, true)}))
	first := make(chan error, 1)
	go func() {
		first <- produce(ctx, service.MessageBatch{s.row("p0", "t0", "orders",
			map[string]any{"order_id": 1, "customer_id": 7, "total_amount": "1.50", "order_status": "new"}, true)})
	}()
	require.Eventually(t, func() bool { return e.Counters().RowsReceived >= 2 }, time.Minute, 20*time.Millisecond,
		"the first order is loaded into the open cycle")
	var n int
	require.NoError(t, func() error {
		db, err := sql.Open("mysql", "root:@tcp("+e.MySQLAddr()+")/test")
		if err != nil {
			return err
		}
		defer db.Close()
		return db.QueryRow("SELECT COUNT(*) FROM test.orders").Scan(&n)
	}())
	require.Equal(t, 1, n, "the cycle is still open (counters: %+v)", e.Counters())

	def, _ := json.Marshal(schema.Table{Columns: []schema.Column{
		{Name: "order_id", Type: schema.BigInt}, {Name: "customer_id", Type: schema.BigInt},
		{Name: "total_amount", Type: schema.Decimal(10, 2), Nullable: true}, {Name: "order_status", Type: schema.Varchar(32), Nullable: true},
		{Name: "updated_at", Type: schema.DateTime, Nullable: true}, {Name: "coupon", Type: schema.Varchar(8), Nullable: true},
	}, Key: []string{"order_id"}})
	ddl := service.NewMessage(def)
	s.mu.Lock()
	s.seq++
	s.offset["p0"]++
	contract.Write(ddl, contract.Meta{Partition: "p0", Database: "test", Table: "orders", TxnID: "ddl@1", TxnEnd: true, SchemaChange: true,
		HasSeq: true, Seq: s.seq, SeqSource: s.name, HasOffset: true, SourceOffset: s.offset["p0"]})
	s.mu.Unlock()
	second := make(chan error, 1)
	go func() {
		second <- produce(ctx, service.MessageBatch{ddl, s.row("p0", "t1", "orders",
			map[string]any{"order_id": 2, "customer_id": 7, "total_amount": "2.50", "order_status": "new", "coupon": "x"}, true)})
	}()
	require.NoError(t, <-first)
	require.NoError(t, <-second)

	db, err := sql.Open("mysql", "root:@tcp("+e.MySQLAddr()+")/test")
	require.NoError(t, err)
	defer db.Close()
	var coupon sql.NullString
	require.NoError(t, db.QueryRow("SELECT coupon FROM test.orders WHERE order_id = 2").Scan(&coupon))
	assert.Equal(t, sql.NullString{String: "x", Valid: true}, coupon, "the new column's value of the first row that carries it")
}
