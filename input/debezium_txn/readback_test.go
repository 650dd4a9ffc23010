package debezium_txn

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// The read-back of the last resend_window ENDs before the start returns
// them in offset order; a piece not read within its bound is read again
// (nothing is emitted before the ids are known), and only when the
// assignment ends first does it keep the newest ones (those a connector
// restart re-sends) and name, in an error, the offset from which ids are
// remembered.
func TestReadBackKeepsTheNewestIDsWhenItTimesOut(t *testing.T) {
	defer func(n int64) { readBackMinPiece = n }(readBackMinPiece)
	readBackMinPiece = 1 // pieces of 3 records
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 1})
	var recs []*kgo.Record
	var all []string
	for i := 0; i < 12; i++ {
		id := "r" + itoa(int64(i))
		all = append(all, id)
		recs = append(recs,
			&kgo.Record{Topic: w.src.TransactionTopic(), Value: dbzBegin(id)},
			&kgo.Record{Topic: w.src.TransactionTopic(), Value: dbzEnd(id, "test.orders", 1)})
	}
	w.rawProduce(recs...) // BEGIN of r<i> at 2i, its END at 2i+1
	logs := &syncBuffer{}
	res := service.MockResources(service.MockResourcesOptUseLogger(
		service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(logs, nil)))))
	conf, err := ConfigSpec().ParseYAML(w.yaml("g-readback", "resend_window: 6\n"), nil)
	require.NoError(t, err)
	in, err := New(conf, res)
	require.NoError(t, err)

	assert.Equal(t, all[6:], in.readBackIDs(context.Background(), 24), "the last 6 ENDs, oldest first")
	assert.NotContains(t, logs.String(), "Re-reading")

	// The first two attempts at the pieces below offset 21 run out of their
	// bound (as a fetch slower than revoke_timeout would): they are read
	// again, and every id is remembered. (A new process each time: this one
	// remembers what it read, readcache.go.)
	in.ends = endCache{}
	defer func(f func(*endReader, context.Context, int64, int64) ([]endAt, int64, error)) { readEndsFn = f }(readEndsFn)
	failures := map[int64]int{}
	readEndsFn = func(r *endReader, ctx context.Context, lo, hi int64) ([]endAt, int64, error) {
		if lo < 21 && failures[lo] < 2 {
			failures[lo]++
			return nil, lo, fmt.Errorf("not done within its bound: %w", context.DeadlineExceeded)
		}
		return r.read(ctx, lo, hi)
	}
	assert.Equal(t, all[6:], in.readBackIDs(context.Background(), 24), "every id, after the retries")
	assert.Equal(t, map[int64]int{18: 2, 15: 2, 12: 2}, failures)
	assert.Contains(t, logs.String(), "[18, 21) (attempt 2)")
	assert.NotContains(t, logs.String(), "only the ids")

	// When the assignment ends while a piece still fails, the newest
	// pieces read are kept and the error says from where.
	in.ends = endCache{}
	ctx, cancel := context.WithCancel(context.Background())
	readEndsFn = func(r *endReader, rctx context.Context, lo, hi int64) ([]endAt, int64, error) {
		if lo < 18 {
			cancel()
			return nil, lo, fmt.Errorf("not done within its bound: %w", context.Canceled)
		}
		return r.read(rctx, lo, hi)
	}
	assert.Equal(t, all[9:], in.readBackIDs(ctx, 24), "the newest ENDs are kept")
	assert.Contains(t, logs.String(), "from offset 18 on are remembered")
}

// Why the read-back must finish: a member drops the events of a transaction
// Debezium re-sent whole (it remembers the id as completed) and commits the
// data partitions past them, while the transaction topic's floor stays below
// the re-sent END (an earlier transaction is not committed yet). The next
// member re-reads that END but none of the dropped events: only the id, read
// back from before its start, tells it the END is a re-send — without it the
// END waits for ever, and every transaction after it.
func TestResentTransactionDroppedByAPreviousMemberIsKnownFromTheReadBack(t *testing.T) {
	// Member 1: "a" committed; then "x" emitted, not committed; then "a"
	// re-sent whole, its event on a partition x does not use.
	f := newFeeder(t, testConfig(), orders0, items0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	f.data(items0, dbzEvent(opCreate, "items", 1, "x", 1, 1))
	f.meta(dbzBegin("a"))
	f.meta(dbzEnd("a", "test.orders", 1))
	ems := f.drain()
	require.Equal(t, []string{"a"}, txnIDs(ems))
	f.a.committed(testTxnTopic, ems[0].msgs[0].sourceOffset)
	f.meta(dbzBegin("x"))
	xEnd := f.meta(dbzEnd("x", "test.items", 1))
	require.Equal(t, []string{"x"}, txnIDs(f.drain()))
	f.meta(dbzBegin("a"))
	aEnd := f.meta(dbzEnd("a", "test.orders", 1))
	resent := f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	assert.Empty(t, f.drain())
	data, txnFloor := f.a.floors()
	require.Greater(t, data[orders0], resent, "the dropped re-sent event holds nothing")
	require.Equal(t, xEnd, txnFloor, "x is not committed")
	require.Less(t, txnFloor, aEnd)

	// Member 2 starts at those floors (the process died before x
	// committed).
	member2 := func(remembered bool) *feeder {
		g := newFeeder(t, testConfig(), orders0, items0)
		g.next = map[tp]int64{orders0: data[orders0], items0: data[items0]}
		g.txn = txnFloor
		g.a.txnStart(txnFloor)
		g.a.markEmpty(orders0) // read to its end: AdjustOffsets
		if remembered {
			g.a.remember("a", doneTxn{whole: true}) // what readBackIDs found
		}
		g.data(items0, dbzEvent(opCreate, "items", 1, "x", 1, 1))
		g.meta(dbzEnd("x", "test.items", 1))
		g.meta(dbzBegin("a"))
		g.meta(dbzEnd("a", "test.orders", 1))
		return g
	}
	g := member2(true)
	assert.Equal(t, []string{"x"}, txnIDs(g.drain()))
	assert.Empty(t, g.a.problems(g.now.Add(time.Hour)), "the re-sent END is known and ignored")

	g = member2(false)
	assert.Equal(t, []string{"x"}, txnIDs(g.drain()))
	ps := g.a.problems(g.now.Add(time.Hour))
	require.Len(t, ps, 1, "without the id the re-sent END waits for an event below the floor")
	assert.Contains(t, ps[0].msg, `transaction "a"`)
	assert.Contains(t, ps[0].msg, "seen 0 of 1")
}
