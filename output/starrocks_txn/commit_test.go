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
	time.Sleep(200 * time.Millisecond)
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
	time.Sleep(50 * time.Millisecond)
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

func TestFilteredRowsAtCommitAreIsolated(t *testing.T) {
	f := newFakeSR()
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op != "commit" {
			return nil, false
		}
		for _, rows := range ft.pending {
			for _, r := range rows {
				if r["bad"] == true {
					ft.state = starrocks.StateAborted
					return srErr("commit", starrocks.ClassPerTxn, "abnormal data more than max filter rate"), true
				}
			}
		}
		return nil, false
	}
	dl := &fakeDL{}
	f.commitGate = make(chan struct{})
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	var chs []chan error
	want := map[string]int{}
	for i := 0; i < 12; i++ {
		id := fmt.Sprintf("t%d", i)
		body := map[string]any{"id": fmt.Sprintf("p%d-k%d", i%2, i%3), "v": i, "txn": id}
		if i == 7 {
			body["bad"] = true
		} else {
			want[id] = 1
		}
		chs = append(chs, writeAsync(o, service.MessageBatch{s.row(fmt.Sprintf("p%d", i%2), id, "a", body, true)}))
	}
	// All twelve land in one cycle.
	time.Sleep(300 * time.Millisecond)
	close(f.commitGate)
	waitAll(t, chs, 10*time.Second)
	assert.Equal(t, []string{"t7"}, dl.txnIDs())
	assertAtomic(t, f, want)
	// Per key order kept.
	last := map[string]int{}
	for _, r := range f.rows("a") {
		v := int(r["v"].(float64))
		assert.Greater(t, v, last[idOf(r)]-1)
		last[idOf(r)] = v
	}
}
