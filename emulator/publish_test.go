package emulator

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The publish order (publish.go, docs/notes/starrocks-protocol.md §4.7): a
// table's commits become visible in commit order, a commit held behind an
// earlier one answers as StarRocks's publish wait does, and commits of other
// tables are not held.

// statusRow is order 1 with the given order_status: the rows of two commits
// of the same key, told apart by it.
func statusRow(status string) string {
	return fmt.Sprintf(`[{"order_id":1,"customer_id":7,"total_amount":"1.50","order_status":%q}]`, status)
}

// orderStatus is order 1's order_status as a reader sees it ("" when the
// order is not there).
func orderStatus(t *testing.T, e *Emulator) string {
	t.Helper()
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	for _, r := range rows {
		if fmt.Sprint(r["order_id"]) == "1" {
			return fmt.Sprint(r["order_status"])
		}
	}
	return ""
}

// preparedOrder begins, loads order 1 with status and prepares label on a
// 3.x emulator.
func preparedOrder(t *testing.T, c *client, label, status string) {
	t.Helper()
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", ctlH(label), ""), "OK", "")
	requireStatus(t, c.follow(http.MethodPut, "/api/transaction/load", classicH(label), statusRow(status)), "OK", "")
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/prepare", ctlH(label), ""), "OK", "")
}

// lateCommit commits label with a commit_late fault of delay: FAILED at
// once, COMMITTED meanwhile.
func lateCommit(t *testing.T, e *Emulator, c *client, label string, delay time.Duration) {
	t.Helper()
	require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActCommitLate, Label: "^" + label + "$", Delay: delay}))
	r := c.follow(http.MethodPost, "/api/transaction/commit", ctlH(label), "")
	require.Equal(t, "FAILED", r.str("Status"), r.raw)
	require.Equal(t, "COMMITTED", c.state("test", label))
}

// A commit answered late (its publish pending) and a later commit of the same
// key: the later one's reply waits until the earlier one is visible, and the
// later row is what a reader sees — as StarRocks publishes a table's versions
// in commit order. An FE restart between them changes nothing (a COMMITTED
// transaction is journaled).
func TestPublishOrderLaterCommitOfTheSameTableWins(t *testing.T) {
	t.Parallel()
	e := startV3(t, "3.3", nil)
	c := newClient(t, e)
	preparedOrder(t, c, "A", "first")
	preparedOrder(t, c, "B", "second")
	lateCommit(t, e, c, "A", 1500*time.Millisecond)
	e.Restart()
	r := c.follow(http.MethodPost, "/api/transaction/commit", ctlH("B"), "")
	requireStatus(t, r, "OK", "")
	assert.Equal(t, "VISIBLE", c.state("test", "A"), "B is visible only after A")
	assert.Equal(t, "VISIBLE", c.state("test", "B"))
	require.Eventually(t, func() bool { return c.state("test", "A") == "VISIBLE" }, 20*time.Second, 10*time.Millisecond)
	assert.Equal(t, "second", orderStatus(t, e), "the later commit's row wins")
	assert.EqualValues(t, 1, e.Counters().PublishHeld, "B waited in the publish order, once")
}

// Commits of another table are not held by a late commit: they answer OK and
// are visible at once while the late one is still COMMITTED.
func TestPublishOrderOtherTablesAreNotHeld(t *testing.T) {
	t.Parallel()
	e := startV3(t, "3.3", nil)
	c := newClient(t, e)
	preparedOrder(t, c, "A", "first")
	lateCommit(t, e, c, "A", time.Hour) // applied when the emulator closes
	itemH := func(label string) hdrs { return hdrs{"db": "test", "label": label, "table": "order_items"} }
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", itemH("I"), ""), "OK", "")
	load := classicH("I")
	load["table"] = "order_items"
	requireStatus(t, c.follow(http.MethodPut, "/api/transaction/load", load, itemRows(1, 1)), "OK", "")
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/prepare", itemH("I"), ""), "OK", "")
	start := time.Now()
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/commit", itemH("I"), ""), "OK", "")
	assert.Less(t, time.Since(start), fePublishWait, "not held for the FE's publish wait")
	assert.Equal(t, "VISIBLE", c.state("test", "I"))
	assert.Equal(t, 1, countRows(t, e, "order_items"))
	assert.Equal(t, "COMMITTED", c.state("test", "A"))
	assert.Equal(t, "", orderStatus(t, e))
	assert.Zero(t, e.Counters().PublishHeld, "nothing waited in the publish order")
}

// Held past its publish wait, a later commit answers as its path does in
// StarRocks and stays COMMITTED; it becomes visible after the earlier one
// (here when Close cuts the late commit's delay short), its row last.
func TestPublishOrderHeldCommitTimesOut(t *testing.T) {
	t.Parallel()
	t.Run("FE commit of a PREPARED transaction", func(t *testing.T) {
		t.Parallel()
		e := startV3(t, "3.3", nil)
		c := newClient(t, e)
		preparedOrder(t, c, "A", "first")
		preparedOrder(t, c, "B", "second")
		lateCommit(t, e, c, "A", time.Hour)
		h := ctlH("B")
		h["timeout"] = "1"
		requireStatus(t, c.follow(http.MethodPost, "/api/transaction/commit", h, ""), "FAILED", pfx3+"publish timeout: 1000")
		assert.Equal(t, "COMMITTED", c.state("test", "B"))
		requireStatus(t, c.follow(http.MethodPost, "/api/transaction/commit", ctlH("B"), ""), "OK",
			fmt.Sprintf("Transaction %d has already committed, label is B", txnIDClassic(t, e, "B")))
		assert.Equal(t, "", orderStatus(t, e), "neither is visible")
		require.NoError(t, e.Close())
		assert.Equal(t, "second", orderStatus(t, e))
	})
	t.Run("BE commit", func(t *testing.T) {
		t.Parallel()
		e := startV3(t, "3.3", nil)
		c := newClient(t, e)
		preparedOrder(t, c, "A", "first")
		lateCommit(t, e, c, "A", time.Hour)
		h := ctlH("B")
		h["timeout"] = "5"
		requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", h, ""), "OK", "")
		requireStatus(t, c.follow(http.MethodPut, "/api/transaction/load", classicH("B"), statusRow("second")), "OK", "")
		s, err := e.Store().Table("test", "orders")
		require.NoError(t, err)
		requireStatus(t, c.follow(http.MethodPost, "/api/transaction/commit", ctlH("B"), ""), "PUBLISH_TIMEOUT",
			fmt.Sprintf("Publish timeout. The data will be visible after a while"+
				"txn has not sent publish tasks yet, maybe waiting previous txns on the same table(s) to finish, tableIds: %d", s.ID))
		assert.Equal(t, "COMMITTED", c.state("test", "B"))
		assert.Equal(t, "", orderStatus(t, e))
		require.NoError(t, e.Close())
		assert.Equal(t, "second", orderStatus(t, e))
	})
	t.Run("multi-statement commit", func(t *testing.T) {
		t.Parallel()
		e := startEmu(t, nil)
		c := newClient(t, e)
		c.hc.Timeout = time.Minute
		c.multiTxn("A", [2]string{"orders", statusRow("first")})
		c.multiTxn("B", [2]string{"orders", statusRow("second")})
		require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActCommitLate, Label: "^A$", Delay: time.Hour}))
		assert.Equal(t, "FAILED", c.commit(multiH("test", "A")).str("Status"))
		start := time.Now()
		r := c.commit(multiH("test", "B"))
		requireStatus(t, r, "OK", "")
		assert.GreaterOrEqual(t, time.Since(start), multiPublishWait, "held for transaction_visible_wait_timeout")
		assert.Equal(t, "COMMITTED", c.state("test", "B"))
		assert.Equal(t, "", orderStatus(t, e))
		require.NoError(t, e.Close())
		assert.Equal(t, "second", orderStatus(t, e))
	})
}

// Close does not wait forever for a commit held behind a late one: the late
// commit's delay is cut short, both are applied in order, and the held reply
// is answered.
func TestPublishOrderCloseReleasesAHeldCommit(t *testing.T) {
	t.Parallel()
	e := startV3(t, "3.3", nil)
	c := newClient(t, e)
	c.hc.Timeout = time.Minute
	preparedOrder(t, c, "A", "first")
	preparedOrder(t, c, "B", "second")
	lateCommit(t, e, c, "A", time.Hour)
	replied := make(chan resp, 1)
	go func() { replied <- c.follow(http.MethodPost, "/api/transaction/commit", ctlH("B"), "") }()
	require.Eventually(t, func() bool { return len(e.pub.before(txnTicket(e, "B"))) == 1 }, 10*time.Second, 10*time.Millisecond,
		"B waits behind A")
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Close is stuck behind the held commit")
	}
	r := <-replied
	requireStatus(t, r, "OK", "")
	assert.Equal(t, "second", orderStatus(t, e))
}

// txnTicket is label's place in the commit order (0 before its commit).
func txnTicket(e *Emulator, label string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.latestLocked("test", label)
	if t == nil {
		return 0
	}
	return t.pubTicket
}

// The order itself: a ticket waits for earlier tickets that share one of its
// tables, never for later ones or for other tables, and one that ends — applied
// or failed — releases what waits behind it.
func TestPublishOrderTickets(t *testing.T) {
	t.Parallel()
	e := &Emulator{}
	on := func(tables ...string) *txn {
		x := &txn{}
		var ch []storeChanges
		for _, tb := range tables {
			ch = append(ch, storeChanges{DB: "d", Table: tb})
		}
		e.enterLocked(x, ch)
		e.enterLocked(x, ch) // once
		return x
	}
	a, b, c, m := on("x"), on("x"), on("y"), on("x", "y")
	assert.Equal(t, []int64{1, 2, 3, 4}, []int64{a.pubTicket, b.pubTicket, c.pubTicket, m.pubTicket})
	assert.Empty(t, e.pub.before(a.pubTicket))
	assert.Len(t, e.pub.before(b.pubTicket), 1)
	assert.Empty(t, e.pub.before(c.pubTicket), "another table is not held")
	assert.Len(t, e.pub.before(m.pubTicket), 3, "a multi-table transaction waits for every table's earlier ones")
	e.pub.leave(a.pubTicket)
	assert.Empty(t, e.pub.before(b.pubTicket))
	assert.Len(t, e.pub.before(m.pubTicket), 2)
	e.pub.leave(b.pubTicket)
	e.pub.leave(c.pubTicket)
	done := make(chan struct{})
	go func() { e.pub.wait(m.pubTicket); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the last ticket still waits")
	}
}
