package starrocks_txn

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn/schemasync"
)

// TestReviewMaxwellRowsAfterADDLWaitForACycleBegunAfterIt: Maxwell puts a
// table-alter in a source transaction of its own (no rows), so the time its
// change became visible (Verdict.ReadyAt) is attached to a transaction that
// is skipped. The next transaction of the partition, whose rows carry the new
// column, is checked by its key set: the column is there by then, so its own
// verdict has no ReadyAt, and a cycle begun before the ALTER — one that
// already loaded (planned) the table under the old schema — takes it. In
// StarRocks the plan of a table in a transaction is fixed at its first load
// (TransactionStreamLoadAction::_exec_plan_fragment plans only when the
// transaction's pipe does not exist yet), so the new column's value is
// dropped: the loss ARCHITECTURE.md §14.3's rule is there to prevent.
func TestReviewMaxwellRowsAfterADDLWaitForACycleBegunAfterIt(t *testing.T) {
	meta := newTablesMeta()
	meta.set("test", "a", "id", "txn")
	st := gateStepper(t, false, schemasync.Evolve, meta)
	s := newSrc("a1")

	// t0: a row of the old shape, checked, queued; a cycle begun now takes
	// it and loads table a under the old schema.
	st.write(s.row("p0", "t0", "a", map[string]any{"id": 0, "txn": "t0"}, true))
	require.NoError(t, st.resolve(0))
	st.advance(time.Millisecond) // a cycle begun after t0's check (its first read of a)
	begunBefore := st.now
	q := st.k.dbs["test"]
	taken, _ := st.k.takeBegunAt(q, nil, false, st.now, begunBefore)
	require.Len(t, taken, 1)

	// The table-alter, alone in its transaction, then a row that needs it.
	st.advance(time.Second)
	def, _ := json.Marshal(schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "txn", Type: schema.Varchar(16)}, {Name: "coupon", Type: schema.Varchar(8)}}, Key: []string{"id"}})
	m := service.NewMessage(def)
	s.mu.Lock()
	s.seq++
	s.offset["p0"]++
	contract.Write(m, contract.Meta{Partition: "p0", Database: "test", Table: "a", TxnID: "ddl@1", TxnEnd: true, SchemaChange: true,
		HasSeq: true, Seq: s.seq, SeqSource: s.name, HasOffset: true, SourceOffset: s.offset["p0"]})
	s.mu.Unlock()
	st.write(m)
	st.write(s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1", "coupon": "x"}, true))
	require.NoError(t, st.resolve(1), "the ALTER is applied")
	require.Contains(t, meta.ddl[0], "ADD COLUMN (`coupon`")
	changedAt := st.now
	st.advance(10 * time.Millisecond)
	for i := 2; i < len(st.fx.resolving); i++ {
		require.NoError(t, st.resolve(i))
	}
	require.Equal(t, []string{"ddl@1:skipped", "t1:queued"}, st.states("a1", "p0")[1:])

	taken, fresh := st.k.takeBegunAt(q, taken, false, st.now, begunBefore)
	var ids []string
	for _, tx := range taken {
		ids = append(ids, tx.id)
	}
	assert.True(t, fresh, "t1 needs the column added at %v: a cycle begun at %v, before it, may not take it", changedAt, begunBefore)
	assert.Equal(t, []string{"t0"}, ids, "t1 must wait for a cycle begun after the table-alter")
}

// TestReviewAChangeFoundAppliedStillOrdersTheCycle: Debezium, one table's
// topic with two partitions; after the source's ALTER both carry the same new
// schema (one decoder: the same *schema.Table). p0's transaction t1 is
// checked first: the ADD COLUMN is applied and t1 gets a ReadyAt. p1's u1,
// arriving after, finds the schema known (the fast path) and is not gated at
// all, so it carries no ReadyAt; its partition switched long ago while p0's
// switched a moment before t1 (t1 waits in p0's active chunk), so u1 is
// queued first and joins the cycle begun — and planned on the table — before
// the column existed. StarRocks drops its coupon (the plan of a table in a
// transaction is fixed at its first load).
func TestReviewAChangeFoundAppliedStillOrdersTheCycle(t *testing.T) {
	meta := newTablesMeta()
	meta.set("test", "a", "id", "txn")
	st := gateStepper(t, false, schemasync.Evolve, meta)
	s := newSrc("a1")
	old := &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "txn", Type: schema.String}}, Key: []string{"id"}}
	wider := func() *schema.Table {
		return &schema.Table{Columns: append(append([]schema.Column(nil), old.Columns...), schema.Column{Name: "coupon", Type: schema.Varchar(8)}), Key: []string{"id"}}
	}
	st.write(s.typedRow("p1", "u0", "a", old, map[string]any{"id": 0, "txn": "u0"}, true))
	require.NoError(t, st.resolve(0))
	st.advance(time.Second)
	st.write(s.typedRow("p0", "t0", "a", old, map[string]any{"id": 10, "txn": "t0"}, true))
	begunBefore := st.now
	q := st.k.dbs["test"]
	taken, _ := st.k.takeBegunAt(q, nil, false, st.now, begunBefore)
	require.Len(t, taken, 2, "a cycle begun now loads table a under the old schema")

	st.advance(time.Millisecond)
	w := wider()
	st.write(s.typedRow("p0", "t1", "a", w, map[string]any{"id": 1, "txn": "t1", "coupon": "x"}, true))
	require.NoError(t, st.resolve(1))
	require.Len(t, meta.ddl, 1, "t1's check adds the column")
	st.write(s.typedRow("p1", "u1", "a", w, map[string]any{"id": 2, "txn": "u1", "coupon": "y"}, true))
	require.Len(t, meta.ddl, 1)

	taken, _ = st.k.takeBegunAt(q, taken, false, st.now, begunBefore)
	var ids []string
	for _, tx := range taken {
		ids = append(ids, tx.id)
	}
	assert.Equal(t, []string{"u0", "t0"}, ids, "u1 needs the column added after the cycle began: it may not join it")
}

// TestReviewBookReadyAtWhenAnotherWriterMadeTheChange: the book's verdict for
// rows whose column another writer added a moment ago has no ReadyAt, so
// nothing keeps those rows out of a StarRocks transaction begun (and planned
// on the table) before the change.
func TestReviewBookReadyAtWhenAnotherWriterMadeTheChange(t *testing.T) {
	meta := newTablesMeta()
	meta.set("test", "a", "id", "txn", "coupon") // another writer's ALTER, just finished
	now := time.Unix(1000, 0)
	book := schemasync.New(meta, schemasync.Config{Mode: schemasync.Evolve, PollMin: time.Millisecond, Now: func() time.Time { return now }})
	wider := &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "txn", Type: schema.String}, {Name: "coupon", Type: schema.Varchar(8)}}, Key: []string{"id"}}
	v := book.Resolve(context.Background(), "test", "a", schemasync.Ref{Typed: wider})
	require.NoError(t, v.Err)
	assert.False(t, v.ReadyAt.IsZero(), "the book cannot tell when the column appeared: the rows must go into a transaction begun after this read")
}

// flakyMeta fails the next column reads as a reset MySQL connection does.
type flakyMeta struct {
	*tablesMeta
	fail int
}

func (m *flakyMeta) Columns(ctx context.Context, db, table string) (*schema.Table, bool, error) {
	if m.fail > 0 {
		m.fail--
		return nil, false, errors.New("reading the columns of test.a: invalid connection")
	}
	return m.tablesMeta.Columns(ctx, db, table)
}

// TestReviewATransientColumnReadIsNotDeadLettered: with dead_letter
// configured, a source transaction whose schema check meets a reset MySQL
// connection (information_schema read: "reset, not applied", one of the
// outcomes every remote call must survive) is poisoned and dead-lettered
// whole — a valid transaction taken off the table for a network blip, and
// every gated transaction checked during the blip with it. A transient
// failure of the check must be tried again (as a stall is), never
// dead-lettered.
func TestReviewATransientColumnReadIsNotDeadLettered(t *testing.T) {
	meta := newTablesMeta()
	meta.set("test", "a", "id", "txn")
	flaky := &flakyMeta{tablesMeta: meta, fail: 1}
	st := newStepper(t, "commit_interval: 100ms\nstall_retry_interval: 1s\n", true)
	book := schemasync.New(flaky, schemasync.Config{Mode: schemasync.Evolve, PollMin: time.Millisecond, Now: func() time.Time { return st.now }})
	st.o.schemas, st.k.schemas = book, book
	s := newSrc("a1")
	old := &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "txn", Type: schema.String}}, Key: []string{"id"}}
	st.write(s.typedRow("p0", "t1", "a", old, map[string]any{"id": 1, "txn": "t1"}, true))
	_ = st.resolve(0)
	assert.Empty(t, st.k.dlQueued(), "a reset connection is no reason to dead-letter t1")
	assert.NotEqual(t, "t1:poisoned", st.states("a1", "p0")[0])
}
