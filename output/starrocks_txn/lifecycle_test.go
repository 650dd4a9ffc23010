package starrocks_txn

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lifecycleViolations checks, under the output's lock, what must hold
// between any two steps of the output (lifecycle.go):
//
//   - buffered equals the bytes of the live transactions (open, active,
//     queued, in cycle), and committable their number in active, queued and
//     in cycle; neither counter, nor waiting, nor any call's pending count is
//     negative;
//   - every transaction is where its state says: a partition's open one is
//     open, its active chunks hold active ones, a queued one is in its
//     database worker's queue, and no message of a live transaction has been
//     acknowledged.
//
// Every live transaction is reachable from its partition (partition.open or
// partition.order), since only a resolved prefix leaves order and a fence
// takes every transaction of the partitions it removes.
func lifecycleViolations(o *Output) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return coreViolations(o.core)
}

// coreViolations is lifecycleViolations of a core, under its owner's lock.
func coreViolations(k *core) []string {
	var bad []string
	report := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	seen := map[*srcTxn]bool{}
	var live []*srcTxn
	visit := func(t *srcTxn) {
		if seen[t] {
			return
		}
		seen[t] = true
		if t.bytes < 0 {
			report("transaction %q: %d bytes", t.id, t.bytes)
		}
		for _, it := range t.items {
			if it.call.pending < 0 {
				report("transaction %q: a WriteBatch call with %d messages pending", t.id, it.call.pending)
			}
			if t.state.live() && it.finished {
				report("transaction %q is %s, but one of its messages is acknowledged", t.id, t.state)
			}
		}
		if t.state.live() {
			live = append(live, t)
		}
	}
	for k, p := range k.parts {
		if p.open != nil {
			if p.open.state != txnOpen {
				report("partition %s: its open transaction %q is %s", k, p.open.id, p.open.state)
			}
			visit(p.open)
		}
		inOrder := map[*srcTxn]bool{}
		for _, t := range p.order {
			inOrder[t] = true
			visit(t)
		}
		for _, t := range p.active {
			if t.state != txnActive {
				report("partition %s: transaction %q in the active chunks is %s", k, t.id, t.state)
			}
			if !inOrder[t] {
				report("partition %s: active transaction %q is not in the partition's order", k, t.id)
			}
		}
	}
	queued := map[*srcTxn]int{}
	for db, q := range k.dbs {
		for _, t := range q.queue {
			if t.state == txnQueued {
				queued[t]++
				if t.db != db {
					report("transaction %q of database %s is queued at the worker of %s", t.id, t.db, db)
				}
			}
		}
	}
	var sum int64
	committable := 0
	for _, t := range live {
		sum += t.bytes
		if t.state.committable() {
			committable++
		}
		if t.state == txnQueued && queued[t] != 1 {
			report("queued transaction %q is in %d worker queues", t.id, queued[t])
		}
	}
	if k.buffered != sum {
		report("buffered is %d, the live transactions hold %d bytes", k.buffered, sum)
	}
	if k.committable != committable {
		report("committable is %d, %d transactions are active, queued or in a cycle", k.committable, committable)
	}
	// Messages waiting for their partition's progress have a read marked
	// for them, and a read holds only partitions marked (progress.go).
	for part, its := range k.progressWait {
		if len(its) > 0 && !k.progressLoading[part] {
			report("partition %s: %d messages wait for a progress read that is not marked", part, len(its))
		}
	}
	for part := range k.progressClaimed {
		if !k.progressLoading[part] {
			report("partition %s: held by a progress read that is not marked", part)
		}
	}
	if k.buffered < 0 || k.committable < 0 || k.waiting < 0 {
		report("a negative counter: buffered %d, committable %d, waiting %d", k.buffered, k.committable, k.waiting)
	}
	return bad
}

// lifecycleChecker runs lifecycleViolations for one output of a test and
// keeps what it found, with every refused transition, until the test's
// goroutine reports it (checkLifecycle): the checks also run on the output's
// own goroutines, through the fake server's calls.
type lifecycleChecker struct {
	o  *Output
	mu sync.Mutex
	// found holds the first violations seen (a few are enough to debug).
	found []string
}

func (c *lifecycleChecker) record(msgs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		if len(c.found) < 10 && !slices.Contains(c.found, m) {
			c.found = append(c.found, m)
		}
	}
}

func (c *lifecycleChecker) run() { c.record(lifecycleViolations(c.o)...) }

// checkers are the lifecycle checkers of the running tests' outputs.
var checkers sync.Map // *testing.T -> *[]*lifecycleChecker

// watchLifecycle makes every step of o checked: after each fake server call,
// in waitAll, in accounting, and once more after the output closed. A
// transition the lifecycle refuses fails the test.
func watchLifecycle(t *testing.T, o *Output, f txnClient) *lifecycleChecker {
	t.Helper()
	c := &lifecycleChecker{o: o}
	o.core.onLifecycleError = func(err error) { c.record("refused: " + err.Error()) }
	v, loaded := checkers.LoadOrStore(t, &[]*lifecycleChecker{})
	if !loaded {
		// Registered first, so run last: after every output of t closed
		// and was checked.
		t.Cleanup(func() { checkers.Delete(t) })
	}
	list := v.(*[]*lifecycleChecker)
	*list = append(*list, c)
	if obs, ok := f.(interface{ observe(func()) }); ok {
		obs.observe(c.run)
	}
	return c
}

// checkLifecycle runs the checks of every output of t and fails t with what
// any of them found.
func checkLifecycle(t *testing.T) {
	t.Helper()
	v, ok := checkers.Load(t)
	if !ok {
		return
	}
	for _, c := range *v.(*[]*lifecycleChecker) {
		c.run()
		c.mu.Lock()
		found := c.found
		c.found = nil
		c.mu.Unlock()
		if len(found) > 0 {
			t.Errorf("lifecycle invariants broken:\n  %s", strings.Join(found, "\n  "))
		}
	}
}

// Each edge of the diagram in lifecycle.go, and nothing else. The two
// markers are apart: a commit in flight allows fenced or stalled →
// committed, a dead-letter write in flight fenced → dead-lettered, and
// either keeps a fenced transaction from being released. Both markers at
// once never happen (a poisoned transaction is never in a commit), and are
// checked all the same.
func TestLifecycleTransitions(t *testing.T) {
	type edge struct {
		from, to               txnState
		inCommit, inDeadLetter bool
	}
	want := map[edge]bool{}
	both := []bool{false, true}
	add := func(from, to txnState, inCommit, inDeadLetter []bool) {
		for _, c := range inCommit {
			for _, d := range inDeadLetter {
				want[edge{from, to, c, d}] = true
			}
		}
	}
	always := func(from, to txnState) { add(from, to, both, both) }
	always(txnOpen, txnActive)
	always(txnOpen, txnGated)
	always(txnGated, txnActive)
	always(txnGated, txnSkipped)
	add(txnStalled, txnGated, []bool{false}, both)
	always(txnActive, txnQueued)
	always(txnQueued, txnInCycle)
	always(txnInCycle, txnCommitted)
	always(txnOpen, txnSkipped)
	for _, s := range []txnState{txnOpen, txnGated, txnActive, txnQueued, txnInCycle} {
		always(s, txnPoisoned)
		always(s, txnStalled)
	}
	always(txnPoisoned, txnDeadLettered)
	for _, s := range []txnState{txnOpen, txnGated, txnActive, txnQueued, txnInCycle, txnPoisoned, txnStalled} {
		always(s, txnFenced)
	}
	add(txnFenced, txnReleased, []bool{false}, []bool{false})
	add(txnFenced, txnCommitted, []bool{true}, both)
	add(txnStalled, txnCommitted, []bool{true}, both)
	add(txnFenced, txnDeadLettered, both, []bool{true})

	for from := txnState(0); from < numTxnStates; from++ {
		for to := txnState(0); to < numTxnStates; to++ {
			for _, inCommit := range both {
				for _, inDL := range both {
					assert.Equal(t, want[edge{from, to, inCommit, inDL}], canMove(from, to, inCommit, inDL),
						"%s → %s (commit in flight %v, dead-letter write in flight %v)", from, to, inCommit, inDL)
				}
			}
		}
	}
	for s := txnState(0); s < numTxnStates; s++ {
		assert.NotContains(t, s.String(), "state(", "every state has a name")
		if s.over() {
			assert.False(t, s.live() || s.committable(), "%s is over", s)
		}
		if s.committable() {
			assert.True(t, s.live(), "%s: committable implies live", s)
		}
		if s.resolved() {
			assert.True(t, s.over(), "%s: resolved implies over", s)
		}
	}
}

// A transaction through the commit path and through the fence path: the
// counters follow each step, and the messages are acknowledged once it is
// over, not before.
func TestLifecycleCountersFollowTheTransitions(t *testing.T) {
	o, _ := testOutput(t, "", newFakeSR(), nil)
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.core.partition(pkey{"asm", "p0"})
	c := &call{pending: 2, done: make(chan struct{})}
	mk := func(id string) *srcTxn {
		tx := newTxn(p, id, time.Now())
		it := &item{call: c, isRow: true, table: "a", body: []byte(`{"id":1}`)}
		tx.items = []*item{it}
		o.core.addRow(tx, it)
		p.order = append(p.order, tx)
		return tx
	}
	check := func(committable int, buffered int64) {
		t.Helper()
		assert.Equal(t, committable, o.core.committable)
		assert.Equal(t, buffered, o.core.buffered)
	}
	a := mk("a")
	check(0, 8)
	for _, s := range []txnState{txnActive, txnQueued, txnInCycle} {
		require.True(t, o.core.move(a, s))
		check(1, 8)
	}
	b := mk("b")
	check(1, 16)
	require.True(t, o.core.move(b, txnActive))
	check(2, 16)
	require.True(t, o.core.move(a, txnCommitted))
	check(1, 8)
	assert.Equal(t, 1, c.pending, "a's message is acknowledged")
	require.True(t, o.core.move(b, txnFenced))
	check(0, 0)
	assert.Equal(t, 1, c.pending, "a fenced transaction's message waits for its release")
	b.inCommit = true
	assert.False(t, canMove(b.state, txnReleased, b.inCommit, b.inDeadLetter), "never released while a commit holding it is in flight")
	b.inCommit = false
	require.True(t, o.core.move(b, txnReleased))
	assert.Zero(t, c.pending)
	select {
	case <-c.done:
	default:
		t.Fatal("the call did not return once both of its messages were done")
	}
	check(0, 0)
	o.mu.Unlock()
	checkLifecycle(t)
	o.mu.Lock()
}

// A refused transition changes nothing and is reported: production logs and
// counts it, the tests' hook fails the test (here it is caught instead).
func TestIllegalTransitionIsRefused(t *testing.T) {
	pc, err := parseTestYAML("load_urls: [ http://fake:8030 ]", nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	o := newOutput(c, newFakeSR(), nil, service.MockResources())
	var refused []error
	o.core.onLifecycleError = func(err error) { refused = append(refused, err) }
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.core.partition(pkey{"asm", "p0"})
	tx := newTxn(p, "t1", time.Now())
	it := &item{call: &call{pending: 1, done: make(chan struct{})}, isRow: true, table: "a", body: []byte(`{}`)}
	tx.items = []*item{it}
	o.core.addRow(tx, it)
	require.True(t, o.core.move(tx, txnSkipped))

	assert.False(t, o.core.move(tx, txnActive), "an over transaction never comes back")
	assert.Equal(t, txnSkipped, tx.state)
	assert.Zero(t, o.core.committable)
	assert.Zero(t, o.core.buffered)
	o.core.addRow(tx, it)
	assert.Zero(t, o.core.buffered, "no row is added to a transaction that is not open")
	require.Len(t, refused, 2)
	assert.Contains(t, refused[0].Error(), "from skipped to active")
	assert.Contains(t, refused[1].Error(), "in state skipped")
}

// The invariant check itself can fail: a counter that drifts from the
// transactions is found.
func TestLifecycleCheckFindsDriftingCounters(t *testing.T) {
	// The fake's calls must not check while the counters are broken on
	// purpose.
	o, _ := testOutput(t, "commit_interval: 100ms\n", unobserved{newFakeSR()}, nil)
	s := newSrc("asm")
	open := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false)})
	require.Eventually(t, func() bool {
		_, b := accounting(o)
		return b > 0
	}, 5*time.Second, 5*time.Millisecond)
	assert.Empty(t, lifecycleViolations(o))
	o.mu.Lock()
	o.core.buffered++
	o.core.committable++
	o.mu.Unlock()
	found := lifecycleViolations(o)
	assert.Len(t, found, 2, "%v", found)
	o.mu.Lock()
	o.core.buffered--
	o.core.committable--
	o.mu.Unlock()
	assert.Empty(t, lifecycleViolations(o))
	require.NoError(t, o.fence(t.Context(), "p0"))
	waitAll(t, []chan error{open}, time.Second)
}

// unobserved hides the fake server's observe method: its calls run no
// lifecycle check.
type unobserved struct{ txnClient }

// A transaction's rows stay each table's own, in order, however many tables
// and rows it has: a table's rows past its room in srcTxn.rowsBuf never
// land in the next table's.
func TestAddRowKeepsEachTablesRows(t *testing.T) {
	k := newCore(&config{}, newRecFx(), false)
	txn := newTxn(&partition{}, "t", time.Time{})
	want := map[string][]string{}
	tables := []string{"a", "b", "c", "d", "e"}
	for i := range 40 {
		tbl := tables[(i*7+i/3)%len(tables)]
		body := fmt.Sprintf(`{"n":%d}`, i)
		k.addRow(txn, &item{table: tbl, body: []byte(body)})
		want[tbl] = append(want[tbl], body)
	}
	got := map[string][]string{}
	for _, tbl := range txn.tables {
		for _, r := range txn.rowsOf(tbl) {
			got[tbl] = append(got[tbl], string(r))
		}
	}
	assert.Equal(t, want, got)
	assert.ElementsMatch(t, tables, txn.tables)
	assert.Equal(t, int64(len(`{"n":0}`)*10+len(`{"n":10}`)*30), txn.bytes)
}
