package emulator

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMultiTimeout: the transaction times out from BEGIN; later ops answer
// per state. The emulator's clock is the test's: loads at 100 ms steps, the
// reaper's rounds at the times the test sets.
func TestMultiTimeout(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	e := startEmu(t, func(c *Config) { c.DefaultTxnTimeout = 400 * time.Millisecond; c.Now = clk.Now })
	c := newClient(t, e)

	t.Log("timeout header of 1 s, loads keep coming: still aborted 1 s after BEGIN")
	requireStatus(t, c.begin(multiH("test", "t1", "timeout", "1")), "OK", "")
	for i := range 7 {
		requireStatus(t, c.load(jsonLoadH("test", "t1", "orders"), orderRows(i, 1)), "OK", "")
		clk.Add(100 * time.Millisecond)
	}
	clk.Add(200 * time.Millisecond)
	e.reap(e.now())
	assert.Equal(t, "PREPARE", c.state("test", "t1"), "900 ms after BEGIN")
	clk.Add(100 * time.Millisecond)
	e.reap(e.now())
	assert.Equal(t, "PREPARE", c.state("test", "t1"), "1 s after BEGIN: not over it yet")
	clk.Add(time.Millisecond)
	require.Eventually(t, func() bool { return c.state("test", "t1") == "ABORTED" }, 10*time.Second, 20*time.Millisecond, "the reaper aborts it past 1 s")
	id := txnID(t, e, "t1")
	requireStatus(t, c.load(jsonLoadH("test", "t1", "orders"), orderRows(50, 1)), "FAILED", pfx+"stream load task t1 has already been cancelled: transaction timeout after 1000ms")
	requireStatus(t, c.commit(multiH("test", "t1")), "FAILED", fmt.Sprintf("Can not commit CANCELLED transaction %d, label is t1", id))
	requireStatus(t, c.rollback(multiH("test", "t1")), "OK", fmt.Sprintf("Transaction %d has already aborted, label is t1", id))

	t.Log("no timeout header: the default applies")
	requireStatus(t, c.begin(multiH("test", "t2")), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "t2", "orders"), orderRows(1, 1)), "OK", "")
	e.reap(e.now())
	assert.Equal(t, "PREPARE", c.state("test", "t2"))
	clk.Add(401 * time.Millisecond)
	require.Eventually(t, func() bool { return c.state("test", "t2") == "ABORTED" }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, 0, countRows(t, e, "orders"))
}

// TestMultiLabelStates: UNKNOWN until the first load, then PREPARE, VISIBLE
// or ABORTED.
func TestMultiLabelStates(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	requireStatus(t, c.begin(multiH("test", "s1")), "OK", "")
	assert.Equal(t, "UNKNOWN", c.state("test", "s1"))
	requireStatus(t, c.load(jsonLoadH("test", "s1", "orders"), orderRows(1, 1)), "OK", "")
	assert.Equal(t, "PREPARE", c.state("test", "s1"))
	requireStatus(t, c.commit(multiH("test", "s1")), "OK", "")
	assert.Equal(t, "VISIBLE", c.state("test", "s1"))

	requireStatus(t, c.begin(multiH("test", "s2")), "OK", "")
	requireStatus(t, c.rollback(multiH("test", "s2")), "OK", "stream load s2 abort")
	assert.Equal(t, "UNKNOWN", c.state("test", "s2"), "never loaded: never registered")

	t.Log("get_load_state errors")
	r := c.do("GET", "/api//get_load_state?label=x", nil, "")
	assert.Equal(t, "No database selected.", r.str("msg"))
	assert.Equal(t, "FAILED", r.str("status"))
	r = c.do("GET", "/api/test/get_load_state", nil, "")
	assert.Equal(t, "No label selected.", r.str("msg"))
	r = c.do("GET", "/api/nodb/get_load_state?label=x", nil, "")
	assert.Equal(t, 200, r.code)
	assert.Equal(t, "unknown database, database=nodb", r.str("msg"))
	r = c.do("GET", "/api/test/get_load_state?label=s1", nil, "")
	assert.Equal(t, `{"state":"VISIBLE","status":"OK","code":"0","msg":"Success","message":"OK"}`, r.raw)
}

// TestRunningTxnLimit: multi counted from the first load, classic at begin.
func TestRunningTxnLimit(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MaxRunningTxnPerDB = 2 })
	c := newClient(t, e)
	dbID, ok := e.Store().DatabaseID("test")
	require.True(t, ok)
	for _, l := range []string{"m1", "m2", "m3"} {
		requireStatus(t, c.begin(multiH("test", l)), "OK", "")
	}
	requireStatus(t, c.load(jsonLoadH("test", "m1", "orders"), orderRows(1, 1)), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "m2", "orders"), orderRows(2, 1)), "OK", "")
	limitMsg := fmt.Sprintf("current running txns on db %d is 2, larger than limit 2", dbID)
	requireStatus(t, c.load(jsonLoadH("test", "m3", "orders"), orderRows(3, 1)), "FAILED", pfx+limitMsg)
	r := c.commit(multiH("test", "m3"))
	assert.Contains(t, r.str("Message"), "Can not commit CANCELLED transaction", "the limit error aborted m3")
	requireStatus(t, c.begin(hdrs{"db": "test", "label": "k1", "table": "orders"}), "ANALYSIS_ERROR", limitMsg)

	requireStatus(t, c.commit(multiH("test", "m1")), "OK", "")
	requireStatus(t, c.begin(hdrs{"db": "test", "label": "k1", "table": "orders"}), "OK", "")
	requireStatus(t, c.begin(multiH("test", "m4")), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "m4", "orders"), orderRows(4, 1)), "FAILED", pfx+limitMsg)
}

// TestLabelRetention: finished labels are kept by count and by age.
func TestLabelRetention(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.LabelKeepMax = 2 })
	c := newClient(t, e)
	for _, l := range []string{"k1", "k2", "k3"} {
		c.multiTxn(l, [2]string{"orders", orderRows(1, 1)})
		requireStatus(t, c.commit(multiH("test", l)), "OK", "")
	}
	assert.Equal(t, "UNKNOWN", c.state("test", "k1"), "beyond the count")
	assert.Equal(t, "VISIBLE", c.state("test", "k2"))
	requireStatus(t, c.begin(multiH("test", "k1")), "OK", "")

	e2 := startEmu(t, func(c *Config) { c.LabelKeepMaxAge = time.Second })
	c2 := newClient(t, e2)
	c2.multiTxn("a1", [2]string{"orders", orderRows(1, 1)})
	requireStatus(t, c2.commit(multiH("test", "a1")), "OK", "")
	assert.Equal(t, "VISIBLE", c2.state("test", "a1"))
	require.Eventually(t, func() bool { return c2.state("test", "a1") == "UNKNOWN" }, 3*time.Second, 20*time.Millisecond)
	requireStatus(t, c2.begin(multiH("test", "a1")), "OK", "")
}

// TestMultiRegistrationLabelCheck is §5.7: the multi transaction is admitted
// (label check, then running limit) when its first load registers it; a
// label taken meanwhile by a classic transaction of the db fails that load
// with LabelAlreadyUsedException and aborts the whole multi transaction,
// and the classic transaction receives nothing.
func TestMultiRegistrationLabelCheck(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)

	t.Log("Given: a begun multi transaction (not registered yet) and a classic begin with its label")
	requireStatus(t, c.begin(multiH("test", "lc1")), "OK", "")
	assert.Equal(t, "UNKNOWN", c.state("test", "lc1"))
	r := c.begin(ctlH("lc1"))
	requireStatus(t, r, "OK", "")
	classicID := r.num("TxnId")

	t.Log("When: the multi transaction's first load registers it")
	r = c.load(jsonLoadH("test", "lc1", "orders"), orderRows(1, 2))

	t.Log("Then: the label check fails the load and aborts the multi transaction")
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", "Label [lc1] has already been used.")
	assert.Equal(t, []string{"ExistingJobStatus", "Message", "Status"}, keysOf(r))
	assert.Equal(t, "RUNNING", r.str("ExistingJobStatus"))
	multiID := txnID(t, e, "lc1")
	requireStatus(t, c.commit(multiH("test", "lc1")), "FAILED",
		fmt.Sprintf("Can not commit CANCELLED transaction %d, label is lc1", multiID))

	t.Log("And: the classic transaction got none of the multi rows and still works")
	r = c.load(classicH("lc1"), orderRows(10, 1))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, classicID, r.num("TxnId"))
	r = c.commit(ctlH("lc1"))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, int64(1), r.num("NumberLoadedRows"), r.raw)
	assert.Equal(t, 1, countRows(t, e, "orders"))

	t.Log("A label the classic path committed meanwhile reports FINISHED")
	requireStatus(t, c.begin(multiH("test", "lc2")), "OK", "")
	requireStatus(t, c.begin(ctlH("lc2")), "OK", "")
	requireStatus(t, c.load(classicH("lc2"), orderRows(20, 1)), "OK", "")
	requireStatus(t, c.commit(ctlH("lc2")), "OK", "")
	r = c.load(jsonLoadH("test", "lc2", "orders"), orderRows(30, 1))
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", "Label [lc2] has already been used.")
	assert.Equal(t, "FINISHED", r.str("ExistingJobStatus"))
	requireStatus(t, c.rollback(multiH("test", "lc2")), "OK",
		fmt.Sprintf("Transaction %d has already aborted, label is lc2", txnID(t, e, "lc2")))
	assert.Equal(t, "VISIBLE", c.state("test", "lc2"))
	assert.Equal(t, 2, countRows(t, e, "orders"))
}

// TestMultiLoadRoutedByTransactionType: on the BE, a load carrying
