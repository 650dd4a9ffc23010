package starrocks_txn

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"

	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
)

// logBuffer collects an output's log lines.
type logBuffer = testlog.Buffer

// withLog makes an output log into buf.
func withLog(buf *logBuffer) func(*Output) {
	return func(o *Output) {
		o.log = service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	}
}

// Close waits for a commit in flight instead of abandoning it: the commit
// lands, its WriteBatch call is acknowledged, and every other label the
// output began is rolled back.
func TestCloseWaitsForTheCommitInFlight(t *testing.T) {
	f := newFakeSR()
	f.commitGate = make(chan struct{})
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitCommitting(t, o)
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closed <- o.Close(ctx)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a commit was in flight")
	case <-time.After(300 * time.Millisecond): // real time: an absence (Close still waiting) has no event to wait on
	}
	close(f.commitGate)
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return once the commit resolved")
	}
	require.NoError(t, <-ch, "the commit landed during Close: the batch is acknowledged")
	assert.Len(t, f.rows("a"), 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	for label, ft := range f.txns {
		assert.True(t, ft.state.Final(), "label %s is %s after Close: every label is committed or rolled back", label, ft.state)
	}
}

// When the shutdown deadline comes first, Close returns, names the label
// left in doubt, and acknowledges nothing of it.
func TestCloseNamesTheCommitLeftInDoubt(t *testing.T) {
	f := newFakeSR()
	f.commitGate = make(chan struct{})
	defer close(f.commitGate)
	var logs logBuffer
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil, withLog(&logs))
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitCommitting(t, o)
	var label string
	o.mu.Lock()
	for l := range o.core.inFlight {
		label = l
	}
	o.mu.Unlock()
	require.NotEmpty(t, label)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.NoError(t, o.Close(ctx))
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "Close waited for the commit until its deadline")
	assert.Error(t, <-ch, "nothing uncommitted is acknowledged")
	assert.Empty(t, f.rows("a"))
	assert.Contains(t, logs.String(), "Closing while the commit of label "+label+" is unresolved")
}

// A cycle whose commit StarRocks refuses while the output closes is rolled
// back, not replayed.
func TestCloseDoesNotReplay(t *testing.T) {
	f := newFakeSR()
	gate := make(chan struct{})
	f.hook = func(op string, ft *fakeTxn, _ string) (error, bool) {
		if op == "commit" && len(ft.pending["a"]) > 0 {
			<-gate
			ft.state = starrocks.StateAborted
			return srErr("commit", starrocks.ClassTransient, "Can not commit CANCELLED transaction"), true
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\nretry_backoff: {initial_interval: 1ms, max_interval: 2ms}\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.core.inFlight) > 0
	}, 5*time.Second, time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- o.Close(context.Background()) }()
	require.Eventually(t, o.closing, 5*time.Second, time.Millisecond, "Close began")
	close(gate)
	require.NoError(t, <-closed)
	assert.Error(t, <-ch)
	f.mu.Lock()
	defer f.mu.Unlock()
	loaded := 0
	for _, ft := range f.txns {
		if ft.loaded {
			loaded++
		}
		assert.True(t, ft.state.Final(), "label %s is %s", ft.label, ft.state)
	}
	assert.Equal(t, 1, loaded, "no replay under a new label after Close began")
}
