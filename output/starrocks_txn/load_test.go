package starrocks_txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

func TestTxnInProcessingResendsLoad(t *testing.T) {
	f := newFakeSR()
	busy := 2
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "load" && busy > 0 {
			busy--
			return srErr("load", starrocks.ClassRetrySafe, "Transaction is in processing"), true
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitAll(t, []chan error{ch}, 5*time.Second)
	assertAtomic(t, f, map[string]int{"t1": 1})
	f.mu.Lock()
	assert.Len(t, f.txns, 1+countOpen(f), "no replay under a new label")
	f.mu.Unlock()
}

func TestRowSpecificLoadFailureIsIsolated(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	// The load of a body holding the bad row fails for its data only.
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "load" && f.lastBodyHasBad {
			return srErr("load", starrocks.ClassPerTxn, "primary key size exceed the limit"), true
		}
		return nil, false
	}
	f.commitGate = make(chan struct{})
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	var chs []chan error
	want := map[string]int{}
	for i := 0; i < 8; i++ {
		id := fmt.Sprintf("t%d", i)
		body := map[string]any{"id": i, "txn": id}
		if i == 5 {
			body["bad"] = true
		} else {
			want[id] = 1
		}
		chs = append(chs, writeAsync(o, service.MessageBatch{s.row("p0", id, "a", body, true)}))
	}
	// All eight are complete before the first commit, held at the gate,
	// resolves.
	waitCore(t, o, "all eight are committable", func(k *core) bool { return k.committable == 8 })
	close(f.commitGate)
	waitAll(t, chs, 10*time.Second)
	assert.Equal(t, []string{"t5"}, dl.txnIDs())
	assertAtomic(t, f, want)
}

// What a failed load means for its cycle, decided in one place.
func TestClassifyLoad(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want loadOutcome
	}{
		{errors.New("no shared transaction"), loadReplay},
		{&loadError{table: "a", err: srErr("load", starrocks.ClassTransient, "INTERNAL_ERROR")}, loadReplay},
		{&loadError{table: "a", err: srErr("load", starrocks.ClassAmbiguous, "read: connection reset by peer")}, loadReplay},
		{&loadError{table: "a", err: srErr("load", starrocks.ClassPerTxn, "primary key size exceed the limit.")}, loadBadRows},
		{&loadError{table: "a", err: srErr("load", starrocks.ClassPerTxn, "LOAD exception: Failed to find table a in db d")}, loadBadTable},
		{fmt.Errorf("wrapped: %w", &loadError{table: "a", err: srErr("load", starrocks.ClassPerTxn, "Only primary key table support partial update")}), loadBadTable},
	} {
		got, le := classifyLoad(tc.err)
		assert.Equal(t, tc.want, got, "%v", tc.err)
		if tc.want != loadReplay {
			require.NotNil(t, le)
			assert.Equal(t, "a", le.table)
		}
	}
}

// lostLoadReply applies the loads it is told to, then reports a transport
// error, as a connection dropped after the server ingested the body does.
type lostLoadReply struct {
	*fakeSR
	mu sync.Mutex
	// lose is how many loads of table still lose their reply.
	lose  int
	table string
	// lostUnder are the labels whose load reply was lost.
	lostUnder []string
}

func (l *lostLoadReply) Load(ctx context.Context, r starrocks.LoadRequest) error {
	err := l.fakeSR.Load(ctx, r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && r.Table == l.table && l.lose > 0 {
		l.lose--
		l.lostUnder = append(l.lostUnder, r.Label)
		return &starrocks.Error{Op: "load", Class: starrocks.ClassTransient, Err: errors.New("read: connection reset by peer")}
	}
	return err
}

// A load streamed between commits whose reply is lost may have been
// ingested: its label is tainted, so the cycle is rolled back and replayed
// under a new label; its rows are never sent again to the same label.
func TestLostStreamedLoadReplyTaintsTheLabel(t *testing.T) {
	f := newFakeSR()
	lost := &lostLoadReply{fakeSR: f, table: "a"}
	// A long commit interval: after the first commit, loads stream between
	// commits.
	o, _ := testOutput(t, "commit_interval: 1s\nretry_backoff: {initial_interval: 10ms, max_interval: 50ms}\n", f, nil, withClient(lost))
	s := newSrc("a1")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p0", "t0", "a", map[string]any{"id": 0, "txn": "t0"}, true)})}, 5*time.Second)
	lost.mu.Lock()
	lost.lose = 1
	lost.mu.Unlock()
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitAll(t, []chan error{ch}, 5*time.Second)
	lost.mu.Lock()
	require.Len(t, lost.lostUnder, 1, "the fault fired")
	tainted := lost.lostUnder[0]
	lost.mu.Unlock()
	assertAtomic(t, f, map[string]int{"t0": 1, "t1": 1})
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.loads {
		if l.label == tainted {
			assert.Equal(t, 1, l.rows, "nothing was sent again under the label %s whose load reply was lost", tainted)
		}
	}
	for _, c := range f.commits {
		assert.NotEqual(t, tainted, c.label, "the tainted label is never committed")
	}
}
