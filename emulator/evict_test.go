package emulator

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEvictAfterCommitReplyLost is the lost commit reply whose label is
// then evicted: the client sees no reply, StarRocks keeps no record of the
// label, get_load_state answers UNKNOWN and rollback the no-record texts
// (FE StreamLoadMgr.rollbackLoadTask "stream load task<L>does not exist"
// for multi, TransactionLoadAction "No transaction found with db[D] and
// label[L]" for classic), although the rows are committed.
func TestEvictAfterCommitReplyLost(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)

	c.multiTxn("lost-m", [2]string{"orders", orderRows(1, 2)})
	require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActCommitReplyLost}))
	o := send(t, newRequest(t, http.MethodPost, e.FEURL()+"/api/transaction/commit", multiH("test", "lost-m"), ""), 5*time.Second)
	require.Error(t, o.err, "the commit reply is lost")
	assert.Equal(t, "VISIBLE", c.state("test", "lost-m"))

	requireStatus(t, c.begin(ctlH("lost-c")), "OK", "")
	requireStatus(t, c.load(classicH("lost-c"), orderRows(10, 1)), "OK", "")
	require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActCommitReplyLost}))
	o = send(t, newRequest(t, http.MethodPost, e.FEURL()+"/api/transaction/commit", ctlH("lost-c"), ""), 5*time.Second)
	require.Error(t, o.err)
	assert.Equal(t, "VISIBLE", c.state("test", "lost-c"))

	r := c.do(http.MethodPost, "/_emulator/evict_labels", nil, `{"db":"test","labels":["lost-m","lost-c"]}`)
	require.Equal(t, http.StatusOK, r.code, r.raw)
	assert.Equal(t, int64(2), r.num("evicted"))

	assert.Equal(t, "UNKNOWN", c.state("test", "lost-m"))
	assert.Equal(t, "UNKNOWN", c.state("test", "lost-c"))
	requireStatus(t, c.rollback(multiH("test", "lost-m")), "FAILED", pfx+"stream load tasklost-mdoes not exist")
	requireStatus(t, c.commit(multiH("test", "lost-m")), "FAILED", pfx+"stream load task lost-m does not exist")
	requireStatus(t, c.rollback(ctlH("lost-c")), "FAILED", pfx+"No transaction found with db[test] and label[lost-c]")
	requireStatus(t, c.commit(ctlH("lost-c")), "FAILED", pfx+"No transaction found with db[test] and label[lost-c]")
	assert.Equal(t, 3, countRows(t, e, "orders"), "both commits hold")
	t.Log("an evicted label is free again")
	requireStatus(t, c.begin(multiH("test", "lost-m")), "OK", "")
}

// TestEvictOnlyFinished: running transactions are never evicted; db and
// labels narrow the selection; an empty selection takes every finished
// label.
func TestEvictOnlyFinished(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	for i := 1; i <= 3; i++ {
		l := fmt.Sprintf("ev%d", i)
		c.multiTxn(l, [2]string{"orders", orderRows(i, 1)})
		requireStatus(t, c.commit(multiH("test", l)), "OK", "")
	}
	c.multiTxn("open", [2]string{"orders", orderRows(9, 1)})
	assert.Equal(t, 0, e.EvictLabels("other"), "another database")
	assert.Equal(t, 1, e.EvictLabels("test", "ev1"))
	assert.Equal(t, "UNKNOWN", c.state("test", "ev1"))
	assert.Equal(t, "VISIBLE", c.state("test", "ev2"))
	assert.Equal(t, 2, e.EvictLabels(""))
	assert.Equal(t, "UNKNOWN", c.state("test", "ev3"))
	assert.Equal(t, "PREPARE", c.state("test", "open"), "running: kept")
	requireStatus(t, c.commit(multiH("test", "open")), "OK", "")
}

// TestRetentionStatesAndTasks: label_keep_max_num drops the transaction
// state (get_load_state UNKNOWN) while the multi task stays until
// stream_load_task_keep_max_num drops it; meanwhile rollback answers from
// the task and the label cannot be begun again.
func TestRetentionStatesAndTasks(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.LabelKeepMax = 1; c.StreamLoadTaskKeepMax = 2 })
	c := newClient(t, e)
	for _, l := range []string{"r1", "r2"} {
		c.multiTxn(l, [2]string{"orders", orderRows(len(l), 1)})
		requireStatus(t, c.commit(multiH("test", l)), "OK", "")
	}
	assert.Equal(t, "UNKNOWN", c.state("test", "r1"), "its state is beyond label_keep_max_num")
	requireStatus(t, c.rollback(multiH("test", "r1")), "FAILED", fmt.Sprintf("Can not abort VISIBLE transaction %d, label is r1", multiID(t, e, "r1")))
	assert.Equal(t, "LABEL_ALREADY_EXISTS", c.begin(multiH("test", "r1")).str("Status"), "the task is kept")
	c.multiTxn("r3", [2]string{"orders", orderRows(3, 1)})
	requireStatus(t, c.commit(multiH("test", "r3")), "OK", "")
	requireStatus(t, c.rollback(multiH("test", "r1")), "FAILED", pfx+"stream load taskr1does not exist")
}

func multiID(t testing.TB, e *Emulator, label string) int64 {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.multi[label]
	require.NotNil(t, m)
	return m.id
}
