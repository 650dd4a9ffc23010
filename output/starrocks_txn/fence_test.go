package starrocks_txn

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

func TestCommittedThroughAndFence(t *testing.T) {
	f := newFakeSR()
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	reg := registry.Get(res)
	require.True(t, reg.Tracking())
	s := newSrc("a1")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{
		s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false),
		s.row("p0", "t1", "a", map[string]any{"id": 2, "txn": "t1"}, true),
	})}, 5*time.Second)
	off, ok := reg.Committed("p0")
	require.True(t, ok)
	assert.Equal(t, int64(2), off, "the END offset of the last committed source transaction")

	// An open transaction of p0 is held; a fence releases it with success
	// and its rows are never committed.
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t2", "a", map[string]any{"id": 3, "txn": "t2"}, false)})
	waitCore(t, o, "t2 is open", func(k *core) bool { return openTxn(k, "a1", "p0", "t2") })
	require.NoError(t, reg.Fence(context.Background(), "p0"))
	waitAll(t, []chan error{ch}, time.Second)
	quiesce(t, o)
	assert.Len(t, f.rows("a"), 2)
}

func TestFenceReleasesAStalledPartition(t *testing.T) {
	f := newFakeSR()
	f.unknownTables["missing"] = true
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	chs := []chan error{
		writeAsync(o, service.MessageBatch{s.row("p0", "bad", "missing", map[string]any{"id": 1}, true)}),
	}
	waitCore(t, o, "p0 stalls at bad", func(k *core) bool { return stalledAt(k, "a1", "p0") == "bad" })
	// Admitted after the stall: held with it.
	chs = append(chs, writeAsync(o, service.MessageBatch{s.row("p0", "later", "a", map[string]any{"id": 2}, true)}))
	waitCore(t, o, "later is held behind the stall", func(k *core) bool { return len(k.parts[pkey{"a1", "p0"}].held) == 1 })
	for _, ch := range chs {
		select {
		case <-ch:
			t.Fatal("a stalled partition's batch returned before the fence")
		default:
		}
	}
	require.NoError(t, registry.Get(res).Fence(context.Background(), "p0"))
	waitAll(t, chs, time.Second)
	assert.Empty(t, f.rows("a"), "nothing of the fenced partition was committed")
	o.mu.Lock()
	assert.Empty(t, o.core.parts, "the partition's state is gone; a new owner starts fresh")
	o.mu.Unlock()
}

// A fence that gives up waiting for an in-flight commit, followed by that
// commit aborting: every WriteBatch call of the fenced partition returns and
// nothing stays counted as committable (which would block admission at the
// hard cap for every partition).
func TestFenceThatGivesUpReleasesWhenTheCommitAborts(t *testing.T) {
	f := newFakeSR()
	gate := make(chan struct{})
	f.commitGate = gate
	var commits atomic.Int32
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "commit" && commits.Add(1) == 1 {
			ft.state = starrocks.StateAborted
			return srErr("commit", starrocks.ClassTransient, "transaction aborted by the test"), true
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("asm")
	inCommit := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitCommitting(t, o)
	// Later transactions of p0: a complete one (queued or in the next
	// cycle) and an open one.
	later := writeAsync(o, service.MessageBatch{
		s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true),
		s.row("p0", "t3", "a", map[string]any{"id": 3, "txn": "t3"}, false),
	})
	waitCore(t, o, "t2 is complete and t3 open", func(k *core) bool { return openTxn(k, "asm", "p0", "t3") })

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	require.Error(t, o.fence(ctx, "p0"), "the fence gives up: the commit does not resolve in time")
	waitAll(t, []chan error{later}, 2*time.Second)

	close(gate) // the commit now aborts
	waitAll(t, []chan error{inCommit}, 5*time.Second)
	require.Eventually(t, func() bool {
		c, b := accounting(o)
		return c == 0 && b == 0
	}, 3*time.Second, 10*time.Millisecond, "nothing of the fenced partition stays committable or buffered")
	assert.Empty(t, f.rows("a"), "nothing of the fenced partition was committed")

	// The output goes on for other partitions.
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p1", "u1", "a", map[string]any{"id": 9, "txn": "u1"}, true)})}, 5*time.Second)
	assert.Len(t, f.rows("a"), 1)
}

// The same give-up, but the in-flight commit then succeeds: its calls
// return, nothing stays committable, and the fenced partition's boundary is
// not published after the fence ended (the input has released it).
func TestFenceThatGivesUpReleasesWhenTheCommitSucceeds(t *testing.T) {
	f := newFakeSR()
	gate := make(chan struct{})
	f.commitGate = gate
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("asm")
	inCommit := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitCommitting(t, o)
	open := writeAsync(o, service.MessageBatch{s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, false)})
	waitCore(t, o, "t2 is open", func(k *core) bool { return openTxn(k, "asm", "p0", "t2") })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	require.Error(t, registry.Get(res).Fence(ctx, "p0"))
	waitAll(t, []chan error{open}, 2*time.Second)
	close(gate)
	waitAll(t, []chan error{inCommit}, 5*time.Second)
	require.Eventually(t, func() bool {
		c, b := accounting(o)
		return c == 0 && b == 0
	}, 3*time.Second, 10*time.Millisecond)
	assert.Len(t, f.rows("a"), 1, "the commit in flight completed")
	_, published := registry.Get(res).Committed("p0")
	assert.False(t, published, "nothing is published for a partition whose fence ended")
}

// The fence waits for a commit in flight; when that commit succeeds during
// the wait, its boundary is published before the fence returns, so the
// input's revoke commits it and the new owner does not read it again.
func TestFencePublishesACommitThatResolvesDuringTheWait(t *testing.T) {
	for _, eo := range []bool{false, true} {
		t.Run(fmt.Sprintf("exactly_once=%v", eo), func(t *testing.T) {
			f := newFakeSR()
			gate := make(chan struct{})
			f.commitGate = gate
			var o *Output
			var res *service.Resources
			if eo {
				o, res, _ = eoOutput(t, f, nil, "")
			} else {
				o, res = testOutput(t, "commit_interval: 100ms\n", f, nil)
			}
			s := newSrc("asm")
			ch := writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))
			// Wait until the commit is in flight.
			waitCommitting(t, o)
			done := make(chan error, 1)
			go func() { done <- o.fence(context.Background(), "p0") }()
			// The commit resolves while the fence waits for it.
			waitCore(t, o, "the fence took the partition", func(k *core) bool { return k.parts[pkey{"asm", "p0"}] == nil })
			close(gate)
			require.NoError(t, <-done)
			off, ok := registry.Get(res).Committed("p0")
			require.True(t, ok, "the boundary of the commit that resolved during the fence is published")
			assert.Equal(t, int64(2), off)
			waitAll(t, []chan error{ch}, time.Second)
			assert.Len(t, f.rows("a"), 1)
		})
	}
}

// A zombie tail: the head of source transaction T is admitted, the
// partition is revoked and fenced, and the tail of T (of the old assignment)
// reaches the output afterwards. It must not commit: the new owner commits
// the whole of T.
func TestStaleEpochTailAfterFenceIsNeverCommitted(t *testing.T) {
	f := newFakeSR()
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	reg := registry.Get(res)
	e1 := reg.Assign("p0")
	s := newSrc("asm")
	rows := []*service.Message{
		s.row("p0", "T", "a", map[string]any{"id": 1, "txn": "T"}, false),
		s.row("p0", "T", "a", map[string]any{"id": 2, "txn": "T"}, false),
		s.row("p0", "T", "a", map[string]any{"id": 3, "txn": "T"}, true),
	}
	again := replay(rows, "asm2") // the new owner reads T again
	headCh := writeAsync(o, withEpoch(e1, rows[0], rows[1]))
	waitCore(t, o, "the head of T is admitted", func(k *core) bool {
		return openTxn(k, "asm", "p0", "T") && len(k.parts[pkey{"asm", "p0"}].open.items) == 2
	})
	require.NoError(t, reg.Fence(context.Background(), "p0"))
	waitAll(t, []chan error{headCh}, time.Second)

	// The tail arrives after the fence, before and after the partition is
	// assigned again.
	waitAll(t, []chan error{writeAsync(o, withEpoch(e1, rows[2]))}, time.Second)
	o.mu.Lock()
	assert.Empty(t, o.core.parts, "a stale message never recreates the fenced partition")
	o.mu.Unlock()
	quiesce(t, o)
	assert.Empty(t, f.rows("a"), "the tail of T alone was never committed")

	e2 := reg.Assign("p0")
	require.Greater(t, e2, e1)
	waitAll(t, []chan error{writeAsync(o, withEpoch(e2, again...))}, 5*time.Second)
	assertAtomic(t, f, map[string]int{"T": 3})
	off, ok := reg.Committed("p0")
	require.True(t, ok)
	assert.Equal(t, int64(3), off)
}

// A whole source transaction of a revoked assignment that reaches the output
// after the fence (calls wait for a free max_in_flight slot for about a
// commit cycle) must not commit, whether or not the partition was assigned
// again: the new owner commits it, and an older value must not overwrite a
// newer one.
func TestStaleEpochWholeTransactionAfterFenceIsNeverCommitted(t *testing.T) {
	f := newFakeSR()
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	reg := registry.Get(res)
	e1 := reg.Assign("p0")
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(o, withEpoch(e1, s.row("p0", "t1", "a", map[string]any{"id": "k", "v": 1, "txn": "t1"}, true)))}, 5*time.Second)
	late := withEpoch(e1,
		s.row("p0", "t2", "a", map[string]any{"id": "k", "v": 2, "txn": "t2"}, false),
		s.row("p0", "t2", "b", map[string]any{"id": "k", "v": 2, "txn": "t2"}, true))
	require.NoError(t, reg.Fence(context.Background(), "p0"))
	waitAll(t, []chan error{writeAsync(o, late)}, time.Second)

	// Re-assigned: an even later old-epoch transaction is refused too, and
	// the new assignment's messages commit.
	e2 := reg.Assign("p0")
	late2 := withEpoch(e1, s.row("p0", "t3", "a", map[string]any{"id": "k", "v": 3, "txn": "t3"}, true))
	fresh := withEpoch(e2, s.row("p0", "t4", "a", map[string]any{"id": "k", "v": 4, "txn": "t4"}, true))
	waitAll(t, []chan error{writeAsync(o, late2), writeAsync(o, fresh)}, 5*time.Second)
	quiesce(t, o)
	var txns []string
	for _, r := range f.rows("a") {
		txns = append(txns, r["txn"].(string))
	}
	assert.Equal(t, []string{"t1", "t4"}, txns, "no old-epoch transaction committed after the fence")
	assert.Empty(t, f.rows("b"))
	c, b := accounting(o)
	assert.Zero(t, c)
	assert.Zero(t, b)
}

// Without the epoch key nothing is checked: hand-written mappings and
// non-Kafka sources work as before, even on a fenced partition.
func TestNoEpochMeansNoEpochChecking(t *testing.T) {
	f := newFakeSR()
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	reg := registry.Get(res)
	reg.Assign("p0")
	require.NoError(t, reg.Fence(context.Background(), "p0"))
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})}, 5*time.Second)
	assert.Len(t, f.rows("a"), 1)
}

// A partition whose consumer-group lease is over (no heartbeat got through
// for half the session timeout: the broker may have given it to another
// member) is not committed until the lease is renewed; a fence then takes
// it out of the cycle instead.
func TestCommitWaitsForTheGroupLease(t *testing.T) {
	f := newFakeSR()
	var logs logBuffer
	o, res := testOutput(t, "commit_interval: 20ms\n", f, nil, withLog(&logs))
	reg := registry.Get(res)
	reg.Renew([]string{"p0"}, time.Now().Add(-time.Millisecond))
	s := newSrc("asm")
	done := writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))
	waitLogged(t, &logs, 0, "the commit is held for the lease of p0", "Holding the commit of label", "partition p0")
	assert.Empty(t, f.rows("a"), "nothing is committed while the lease is over")
	select {
	case err := <-done:
		t.Fatalf("acknowledged while the lease was over: %v", err)
	default:
	}
	reg.Renew([]string{"p0"}, time.Now().Add(time.Minute))
	waitAll(t, []chan error{done}, 5*time.Second)
	assert.Equal(t, map[string]int{"t1": 1}, countIDs(f.rows("a")))

	// Expired again: a fence (the input reports the partition lost) takes
	// the held transaction out; nothing of it is committed.
	reg.Renew([]string{"p1"}, time.Now().Add(-time.Millisecond))
	held := writeAsync(o, service.MessageBatch(txnMsgs(s, "p1", "t2", 2)))
	waitLogged(t, &logs, 0, "the commit is held for the lease of p1", "Holding the commit of label", "partition p1")
	require.NoError(t, reg.Fence(context.Background(), "p1"))
	waitAll(t, []chan error{held}, 5*time.Second)
	reg.Unlease([]string{"p1"})
	quiesce(t, o)
	assert.Equal(t, map[string]int{"t1": 1}, countIDs(f.rows("a")), "the fenced transaction was never committed")
}

// A commit whose reply was lost leaves its label PREPARE, and the output
// sends the commit again. If the partition's consumer-group lease ended
// meanwhile (the broker may have given the partition to another member,
// which loads the same source transactions under its own label), the
// commit must not be sent again: the label is rolled back instead, and
// the replayed cycle waits for the lease like any commit.
func TestAmbiguousCommitIsNotResentWithoutTheGroupLease(t *testing.T) {
	f := newFakeSR()
	var logs logBuffer
	o, res := testOutput(t, "commit_interval: 20ms\nlabel_state_wait: 100ms\n", f, nil, withLog(&logs))
	reg := registry.Get(res)
	reg.Renew([]string{"p0"}, time.Now().Add(time.Minute))
	var lost atomic.Bool
	f.mu.Lock()
	f.hook = func(op string, ft *fakeTxn, _ string) (error, bool) {
		if op == "commit" && len(ft.pending["a"]) > 0 && lost.CompareAndSwap(false, true) {
			// Loaded, committed by nobody, the reply lost; meanwhile the
			// lease ends.
			ft.state = starrocks.StatePrepare
			// Leases only move forward: the test stands for one whose
			// last renewal has run out.
			reg.Unlease([]string{"p0"})
			reg.Renew([]string{"p0"}, time.Now().Add(-time.Millisecond))
			return srErr("commit", starrocks.ClassAmbiguous, "reply lost"), true
		}
		return nil, false
	}
	f.mu.Unlock()
	s := newSrc("asm")
	done := writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))
	// The label is rolled back instead of committed again, and the replay
	// waits for the lease.
	off := waitLogged(t, &logs, 0, "the label in doubt is rolled back", "rolled back rather than committed again")
	waitLogged(t, &logs, off, "the replay is held for the lease", "Holding the commit of label", "partition p0")
	require.True(t, lost.Load(), "the first commit's reply was lost")
	assert.Empty(t, f.rows("a"), "nothing is committed while the lease is over, not even by a commit sent again")
	select {
	case err := <-done:
		t.Fatalf("acknowledged while the lease was over: %v", err)
	default:
	}
	reg.Renew([]string{"p0"}, time.Now().Add(time.Minute))
	waitAll(t, []chan error{done}, 10*time.Second)
	assert.Equal(t, map[string]int{"t1": 1}, countIDs(f.rows("a")), "committed once the lease was back, once")
}

// The same after the partition was taken away: a fence that gave up while
// the commit was in doubt, then the input dropped the partition's lease
// (Unlease: no lease tracked reads as leased). The commit must still not
// be sent again for the fenced transaction — the partition belongs to
// another member now — and nothing of it is committed.
func TestAmbiguousCommitIsNotResentAfterAFenceGaveUp(t *testing.T) {
	f := newFakeSR()
	var logs logBuffer
	o, res := testOutput(t, "commit_interval: 20ms\nlabel_state_wait: 100ms\n", f, nil, withLog(&logs))
	reg := registry.Get(res)
	reg.Renew([]string{"p0"}, time.Now().Add(time.Minute))
	var lost atomic.Bool
	fenced := make(chan struct{})
	f.mu.Lock()
	f.hook = func(op string, ft *fakeTxn, _ string) (error, bool) {
		if op == "commit" && len(ft.pending["a"]) > 0 && lost.CompareAndSwap(false, true) {
			ft.state = starrocks.StatePrepare
			go func() {
				// The input loses p0; its fence gives up at once on the
				// commit in doubt, and it forgets the lease.
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				_ = reg.Fence(ctx, "p0")
				reg.Unlease([]string{"p0"})
				close(fenced)
			}()
			return srErr("commit", starrocks.ClassAmbiguous, "reply lost"), true
		}
		if op == "state" && lost.Load() {
			// The label state is asked for after the fence gave up.
			select {
			case <-fenced:
			case <-time.After(5 * time.Second):
			}
		}
		return nil, false
	}
	f.mu.Unlock()
	s := newSrc("asm")
	done := writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))
	<-fenced
	waitLogged(t, &logs, 0, "the label in doubt is rolled back, not committed again", "rolled back rather than committed again")
	assert.Empty(t, f.rows("a"), "a fenced transaction's commit is never sent again")
	waitAll(t, []chan error{done}, 10*time.Second)
	quiesce(t, o)
	assert.Empty(t, f.rows("a"), "released by the fence, never committed")
}

// taskLostSR is a fake whose rollback of a PREPARE label finds no load task
// (an FE restart or a leader change lost it, the transaction stays
// PREPARE); only the cancel API aborts it. Cancels are counted.
type taskLostSR struct {
	*fakeSR
	cancels atomic.Int32
}

func (s *taskLostSR) Rollback(ctx context.Context, t starrocks.Txn) error {
	s.mu.Lock()
	ft, ok := s.txns[t.Label]
	prepared := ok && ft.state == starrocks.StatePrepare
	s.mu.Unlock()
	if prepared {
		return srErr("rollback", starrocks.ClassPerTxn, "stream load task"+t.Label+"does not exist")
	}
	return s.fakeSR.Rollback(ctx, t)
}

func (s *taskLostSR) Cancel(ctx context.Context, db, label string) error {
	s.cancels.Add(1)
	return s.fakeSR.Rollback(ctx, starrocks.Txn{DB: db, Label: label, Multi: true})
}

// A commit in doubt while the lease is over is rolled back, not sent again;
// when the rollback finds no load task for the PREPARE label, it is
// cancelled, so the label aborts now and the cycle is replayed once the
// lease is back — rather than waiting for the FE's transaction timeout
// (txn_timeout: 10 min here; the test waits a few seconds).
func TestAmbiguousCommitWithoutTheLeaseCancelsALabelWhoseTaskIsLost(t *testing.T) {
	f := newFakeSR()
	sr := &taskLostSR{fakeSR: f}
	o, res := testOutput(t, "commit_interval: 20ms\nlabel_state_wait: 100ms\ntxn_timeout: 10m\n", f, nil, withClient(sr))
	reg := registry.Get(res)
	reg.Renew([]string{"p0"}, time.Now().Add(time.Minute))
	var lost atomic.Bool
	f.mu.Lock()
	f.hook = func(op string, ft *fakeTxn, _ string) (error, bool) {
		if op == "commit" && len(ft.pending["a"]) > 0 && lost.CompareAndSwap(false, true) {
			ft.state = starrocks.StatePrepare
			reg.Unlease([]string{"p0"})
			reg.Renew([]string{"p0"}, time.Now().Add(-time.Millisecond))
			return srErr("commit", starrocks.ClassAmbiguous, "reply lost"), true
		}
		return nil, false
	}
	f.mu.Unlock()
	s := newSrc("asm")
	done := writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))
	require.Eventually(t, func() bool { return sr.cancels.Load() > 0 }, 5*time.Second, 10*time.Millisecond,
		"the PREPARE label whose rollback found no task is cancelled")
	assert.Empty(t, f.rows("a"), "nothing committed while the lease is over")
	reg.Renew([]string{"p0"}, time.Now().Add(time.Minute))
	waitAll(t, []chan error{done}, 5*time.Second)
	assert.Equal(t, map[string]int{"t1": 1}, countIDs(f.rows("a")), "replayed and committed once the lease was back, once")
}
