package emulator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/starrocks-txn/benthos-starrocks/emulator/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReviewPreparedLoadsJoinInOrder: a classic transaction keeps each load's rows apart and
// joins them at its prepare (txn.go joinedRows). What the prepare journals must be what the
// commit applies, in arrival order across the loads — a later load's row wins for its key,
// a __op delete removes a row an earlier load of the same transaction wrote, a row written
// again after its delete is back, absent columns take their defaults — on the emulator that
// prepared it and on one restarted from its data directory (a crash after the prepare).
// Nothing of the transaction is visible before the commit. Enough rows that every load
// splits leaves of the table's tree.
func TestReviewPreparedLoadsJoinInOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e1 := startEmu(t, func(c *Config) { c.DataDir = dir })
	c := newClient(t, e1)

	// Committed before: orders 0..59, status "old".
	requireStatus(t, c.begin(ctlH("before")), "OK", "")
	var b strings.Builder
	b.WriteByte('[')
	for i := range 60 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"order_id":%d,"customer_id":1,"total_amount":"2.00","order_status":"old"}`, i)
	}
	b.WriteByte(']')
	requireStatus(t, c.load(classicH("before"), b.String()), "OK", "")
	requireStatus(t, c.commit(ctlH("before")), "OK", "")
	before, err := e1.Store().Rows("test", "orders")
	require.NoError(t, err)

	// Three loads of one transaction. want is what the commit must leave.
	want := map[int64]map[string]any{}
	for _, r := range before {
		want[r["order_id"].(int64)] = r
	}
	load := func(rows []string) string {
		return "[" + strings.Join(rows, ",") + "]"
	}
	var l1, l2, l3 []string
	for i := int64(0); i < 80; i += 2 { // load 1: even keys, new status; 60.. are new rows
		l1 = append(l1, fmt.Sprintf(`{"order_id":%d,"customer_id":2,"order_status":"l1"}`, i))
	}
	for i := int64(0); i < 80; i += 4 { // load 2: every 4th key deleted, after load 1 wrote it
		l2 = append(l2, fmt.Sprintf(`{"order_id":%d,"customer_id":2,"__op":1}`, i))
	}
	for i := int64(0); i < 80; i += 8 { // load 3: every 8th key written again, after its delete
		l3 = append(l3, fmt.Sprintf(`{"order_id":%d,"customer_id":3,"order_status":"l3"}`, i))
	}
	for i := int64(1); i < 80; i += 6 { // load 3 also: odd keys load 1 did not touch
		l3 = append(l3, fmt.Sprintf(`{"order_id":%d,"customer_id":3,"total_amount":"9.00","order_status":"l3odd"}`, i))
	}
	set := func(id, cust int64, status string, amount any) {
		want[id] = map[string]any{"order_id": id, "customer_id": cust, "total_amount": amount, "order_status": status, "updated_at": nil}
	}
	for i := int64(0); i < 80; i += 2 {
		set(i, 2, "l1", "0") // total_amount left out: its DEFAULT "0", not the old row's 2.00
	}
	for i := int64(0); i < 80; i += 4 {
		delete(want, i)
	}
	for i := int64(0); i < 80; i += 8 {
		set(i, 3, "l3", "0")
	}
	for i := int64(1); i < 80; i += 6 {
		set(i, 3, "l3odd", "9")
	}

	requireStatus(t, c.begin(ctlH("joined")), "OK", "")
	for i, body := range []string{load(l1), load(l2), load(l3)} {
		r := c.load(classicH("joined"), body)
		require.Equal(t, "OK", r.str("Status"), "load %d: %s", i+1, r.raw)
	}
	requireStatus(t, c.prepare(ctlH("joined")), "OK", "")
	got, err := e1.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Equal(t, before, got, "a prepared transaction shows nothing")

	crashed := t.TempDir()
	copyDir(t, dir, crashed) // a kill -9 now: the prepare is synced

	requireStatus(t, c.commit(ctlH("joined")), "OK", "")
	committed, err := e1.Store().Rows("test", "orders")
	require.NoError(t, err)
	checkOrders(t, committed, want)

	e2 := startEmu(t, func(c *Config) { c.DataDir = crashed })
	c2 := newClient(t, e2)
	require.Equal(t, "PREPARED", c2.state("test", "joined"))
	got, err = e2.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Equal(t, before, got, "restarted: the prepared transaction still shows nothing")
	r := c2.commit(ctlH("joined"))
	require.Equal(t, "OK", r.str("Status"), r.raw)
	restarted, err := e2.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Equal(t, committed, restarted, "the journaled prepare commits what the prepared emulator committed")
}

// checkOrders compares the orders rows by key with want; total_amount and the defaults are
// compared as the store renders them (a column a load leaves out takes its default).
func checkOrders(t *testing.T, got []map[string]any, want map[int64]map[string]any) {
	t.Helper()
	byID := map[int64]map[string]any{}
	for _, r := range got {
		byID[r["order_id"].(int64)] = r
	}
	require.Equal(t, len(want), len(byID), "row count")
	for id, w := range want {
		g, ok := byID[id]
		if !assert.True(t, ok, "order %d missing", id) {
			continue
		}
		assert.Equal(t, w["customer_id"], g["customer_id"], "order %d customer", id)
		assert.Equal(t, w["order_status"], g["order_status"], "order %d status", id)
		assert.Equal(t, fmt.Sprint(w["total_amount"]), fmt.Sprint(g["total_amount"]), "order %d amount", id)
	}
}

// TestReviewPreparedPartialLoadsSurviveRestart: the same with partial updates: each load sets
// order_status only; a key two loads set takes the later load's value and keeps the columns
// no load set; a new key written by two loads has the later status. The prepare journals the rows'
// set columns, so a restart's commit gives the same rows.
func TestReviewPreparedPartialLoadsSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e1 := startEmu(t, func(c *Config) { c.DataDir = dir })
	c := newClient(t, e1)
	requireStatus(t, c.begin(ctlH("base")), "OK", "")
	requireStatus(t, c.load(classicH("base"), `[{"order_id":1,"customer_id":1,"total_amount":"2.00","order_status":"old"},
		{"order_id":2,"customer_id":1,"total_amount":"2.00","order_status":"old"},{"order_id":3,"customer_id":1,"total_amount":"2.00","order_status":"old"}]`), "OK", "")
	requireStatus(t, c.commit(ctlH("base")), "OK", "")

	h := classicH("partial", "partial_update", "true", "columns", "order_id,order_status")
	requireStatus(t, c.begin(ctlH("partial")), "OK", "")
	for i, body := range []string{
		`[{"order_id":1,"order_status":"p1"},{"order_id":5,"order_status":"new5"}]`,
		`[{"order_id":1,"order_status":"p2"},{"order_id":2,"order_status":"p2b"},{"order_id":5,"order_status":"new5b"}]`,
	} {
		r := c.load(h, body)
		require.Equal(t, "OK", r.str("Status"), "load %d: %s", i+1, r.raw)
	}
	requireStatus(t, c.prepare(ctlH("partial")), "OK", "")
	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	requireStatus(t, c.commit(ctlH("partial")), "OK", "")
	committed, err := e1.Store().Rows("test", "orders")
	require.NoError(t, err)
	render := func(rows []map[string]any) []string {
		var out []string
		for _, r := range rows {
			if r["order_id"] == int64(5) {
				// a new key: the columns no load set are as the emulator fills them
				// (compared below with the restarted commit), only its status here
				out = append(out, fmt.Sprintf("5 %q", r["order_status"]))
				continue
			}
			out = append(out, fmt.Sprintf("%v %v %v %q", r["order_id"], r["customer_id"], r["total_amount"], r["order_status"]))
		}
		return out
	}
	assert.Equal(t, []string{`1 1 2 "p2"`, `2 1 2 "p2b"`, `3 1 2 "old"`, `5 "new5b"`}, render(committed))

	e2 := startEmu(t, func(c *Config) { c.DataDir = crashed })
	c2 := newClient(t, e2)
	require.Equal(t, "PREPARED", c2.state("test", "partial"))
	r := c2.commit(ctlH("partial"))
	require.Equal(t, "OK", r.str("Status"), r.raw)
	restarted, err := e2.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Equal(t, committed, restarted, "the journaled prepare commits what the prepared emulator committed")
}

// TestReviewJoinedRowsKeepsOneCopy: joinedRows replaces the loads' row slices by their join;
// the slots of the loads' slices must let go of them, or a prepared transaction holds every
// row header twice until its commit (a prepared transaction may wait a day).
func TestReviewJoinedRowsKeepsOneCopy(t *testing.T) {
	tl := &tableLoad{}
	for l := range 3 {
		tl.rows = append(tl.rows, []store.Row{{Values: []any{int64(l)}}, {Values: []any{int64(l + 10)}}})
	}
	joined := tl.joinedRows()
	require.Len(t, joined, 6)
	require.Len(t, tl.rows, 1)
	assert.Equal(t, joined, tl.rows[0])
	for i, r := range tl.rows[1:cap(tl.rows)] {
		assert.Nil(t, r, "slot %d still holds a load's rows", i+1)
	}
	assert.Equal(t, joined, tl.joinedRows(), "a second call sees the same rows")
}
