package starrocks_txn

import (
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

func TestTransientCommitFailureReplays(t *testing.T) {
	f := newFakeSR()
	fails := 2
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "commit" && fails > 0 {
			fails--
			ft.state = starrocks.StateAborted
			return srErr("commit", starrocks.ClassTransient, "INTERNAL_ERROR"), true
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\nretry_backoff: {initial_interval: 10ms, max_interval: 50ms}\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{
		s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false),
		s.row("p0", "t1", "b", map[string]any{"id": 2, "txn": "t1"}, true),
	})
	waitAll(t, []chan error{ch}, 5*time.Second)
	assertAtomic(t, f, map[string]int{"t1": 2})
	f.mu.Lock()
	assert.GreaterOrEqual(t, len(f.txns), 3, "replayed under new labels")
	f.mu.Unlock()
}

func TestAmbiguousCommitThatCompletes(t *testing.T) {
	f := newFakeSR()
	once := true
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "commit" && once {
			once = false
			f.apply(ft) // committed, but the reply is lost
			return srErr("commit", starrocks.ClassAmbiguous, "read: connection reset by peer"), true
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitAll(t, []chan error{ch}, 5*time.Second)
	quiesce(t, o)
	assert.Len(t, f.rows("a"), 1, "a commit that completed is never replayed")
	assertAtomic(t, f, map[string]int{"t1": 1})
}

func TestAmbiguousCommitNeverReplayedWhilePrepare(t *testing.T) {
	f := newFakeSR()
	var (
		failed    string
		polls     int
		abortedAt time.Time
	)
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		switch op {
		case "commit":
			if failed == "" {
				failed = ft.label
				return srErr("commit", starrocks.ClassAmbiguous, "commit timed out"), true
			}
			if ft.label == failed && abortedAt.IsZero() {
				return srErr("commit", starrocks.ClassAmbiguous, "Transaction 1 is already committing, label is "+ft.label), true
			}
		case "state":
			if ft.label == failed {
				polls++
				if polls < 4 {
					ft.state = starrocks.StatePrepare
					return nil, true
				}
				if abortedAt.IsZero() {
					abortedAt = time.Now()
				}
				ft.state = starrocks.StateAborted
				return nil, true
			}
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\nretry_backoff: {initial_interval: 20ms, max_interval: 40ms}\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	// A later cycle waits for the unresolved one: it may load, never commit.
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return failed != ""
	}, 5*time.Second, 2*time.Millisecond, "t1's commit was sent")
	ch2 := writeAsync(o, service.MessageBatch{s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true)})
	waitAll(t, []chan error{ch, ch2}, 5*time.Second)
	assertAtomic(t, f, map[string]int{"t1": 1, "t2": 1})
	rows := f.rows("a")
	require.Len(t, rows, 2)
	assert.Equal(t, "t1", rows[0]["txn"], "the later cycle became visible after the earlier one")
	f.mu.Lock()
	defer f.mu.Unlock()
	require.GreaterOrEqual(t, polls, 4)
	// t1's rows were loaded again (the replay) only after ABORTED was proven.
	replays := 0
	for _, l := range f.loads {
		if l.label == failed {
			continue
		}
		for _, txn := range l.txns {
			if txn == "t1" {
				replays++
				assert.False(t, l.at.Before(abortedAt), "t1 replayed under %s at %v, before ABORTED was proven at %v", l.label, l.at, abortedAt)
			}
		}
	}
	assert.Positive(t, replays)
	for _, c := range f.commits {
		assert.False(t, c.at.Before(abortedAt), "commit %s before the unresolved one was resolved", c.label)
	}
}

// lostAndForgotten makes the first data commit apply and lose its reply,
// and the label forgotten at once (label_keep_max_num): get_load_state
// answers UNKNOWN and rollback "does not exist" from then on.
func lostAndForgotten(f *fakeSR, table string, skip int) *string {
	forgotten := new(string)
	f.hook = func(op string, ft *fakeTxn, _ string) (error, bool) {
		if op == "commit" && *forgotten == "" && len(ft.pending[table]) > 0 {
			if skip > 0 {
				skip--
				return nil, false
			}
			*forgotten = ft.label
			f.apply(ft)
			f.evicted[ft.label] = true
			return srErr("commit", starrocks.ClassAmbiguous, "read: connection reset by peer"), true
		}
		return nil, false
	}
	return forgotten
}

// Without writer or progress rows, a commit whose reply was lost and whose
// label StarRocks then forgot is taken as not committed after
// unknown_commit_timeout and replayed: the database does not stall, and at
// least once holds (here the replay brings the row a second time).
func TestForgottenCommitIsReplayedAfterUnknownCommitTimeout(t *testing.T) {
	f := newFakeSR()
	forgotten := lostAndForgotten(f, "a", 0)
	o, _ := testOutput(t, "commit_interval: 100ms\nunknown_commit_timeout: 300ms\nlabel_state_wait: 50ms\nretry_backoff: {initial_interval: 10ms, max_interval: 50ms}\n", f, nil)
	s := newSrc("a1")
	start := time.Now()
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})}, 5*time.Second)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "taken as not committed only after unknown_commit_timeout")
	f.mu.Lock()
	require.NotEmpty(t, *forgotten)
	f.mu.Unlock()
	assert.Equal(t, 2, countIDs(f.rows("a"))["1"], "the forgotten commit had landed; the replay brings its row again (at least once)")
	// The database goes on.
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true)})}, 5*time.Second)
	assert.Equal(t, 1, countIDs(f.rows("a"))["2"])
}

// The rows a forgotten label carried settle it: its writer row names it
// (exactly_once, or at_least_once with writer rows) — also right after an
// anchor (the first commit of a writer in a database), whose number the
// cycle's row takes — and so do its progress rows (exactly_once). So it is
// known committed and never replayed.
func TestForgottenCommitIsSettledByItsRows(t *testing.T) {
	for _, tc := range []struct {
		mode string
		// skip data commits before the one whose reply is lost.
		skip int
	}{{"exactly_once", 0}, {"exactly_once", 1}, {"writer rows", 0}, {"writer rows", 1}} {
		t.Run(fmt.Sprintf("%s/%d", tc.mode, tc.skip), func(t *testing.T) {
			mode := tc.mode
			f := newFakeSR()
			forgotten := lostAndForgotten(f, "a", tc.skip)
			yaml := "commit_interval: 100ms\nunknown_commit_timeout: 1h\nlabel_state_wait: 50ms\nretry_backoff: {initial_interval: 10ms, max_interval: 50ms}\n"
			var o *Output
			if mode == "exactly_once" {
				o, _, _ = eoOutput(t, f, nil, yaml)
			} else {
				o, _ = testOutput(t, yaml+"pipeline_id: pl\nmysql_address: 127.0.0.1:1\n", f, nil)
				o.setProgressStore(&fakeProgress{f: f, table: defaultProgressTable})
			}
			s := newSrc("a1")
			waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))}, 5*time.Second)
			waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t2", 2)))}, 5*time.Second)
			f.mu.Lock()
			require.NotEmpty(t, *forgotten)
			f.mu.Unlock()
			assertAtomic(t, f, map[string]int{"t1": 2, "t2": 2})
		})
	}
}

// A label whose load task the FE lost (the transaction stays PREPARE, every
// commit and rollback of it answers "does not exist") is cancelled once
// unknown_commit_timeout has passed, while the lease holds: the cycle is
// replayed and committed once, the database does not wait for the FE's
// transaction timeout (txn_timeout: 10 min here; the test waits seconds).
func TestOverdueCommitOfALabelWhoseTaskIsLostIsCancelled(t *testing.T) {
	f := newFakeSR()
	sr := &taskLostSR{fakeSR: f}
	var lost string
	f.mu.Lock()
	f.hook = func(op string, ft *fakeTxn, _ string) (error, bool) {
		if op != "commit" || len(ft.pending["a"]) == 0 {
			return nil, false
		}
		if lost == "" {
			lost = ft.label
		}
		if ft.label == lost && ft.state == starrocks.StatePrepare {
			return srErr("commit", starrocks.ClassTransient, "stream load task "+ft.label+" does not exist"), true
		}
		return nil, false
	}
	f.mu.Unlock()
	o, _ := testOutput(t, "commit_interval: 20ms\nlabel_state_wait: 50ms\nunknown_commit_timeout: 300ms\ntxn_timeout: 10m\nretry_backoff: {initial_interval: 10ms, max_interval: 50ms}\n", f, nil, withClient(sr))
	s := newSrc("asm")
	start := time.Now()
	done := writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))
	waitAll(t, []chan error{done}, 10*time.Second)
	assert.Positive(t, sr.cancels.Load(), "the PREPARE label whose rollback found no task was cancelled")
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "cancelled only after unknown_commit_timeout")
	assert.Equal(t, map[string]int{"t1": 1}, countIDs(f.rows("a")), "replayed and committed once")
}
