package starrocks_txn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// withStopping makes an output take stopping as the process's stop signal.
func withStopping(stopping <-chan struct{}) func(*Output) {
	return func(o *Output) { o.stopping = stopping }
}

// A process asked to stop while the output holds WriteBatch calls — a
// partition stalled, another with a source transaction whose END has not
// come — says once, at the start of the wait, what the stop waits for and
// for how long at most.
func TestStopSaysWhatItWaitsFor(t *testing.T) {
	f := newFakeSR()
	f.hook = func(op string, ft *fakeTxn, _ string) (error, bool) {
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
	var logs logBuffer
	stopping := make(chan struct{})
	o, _ := testOutput(t, "commit_interval: 50ms\n", f, nil, withLog(&logs), withStopping(stopping))
	s := newSrc("a1")
	good := writeAsync(o, service.MessageBatch{s.row("p2", "fine", "a", map[string]any{"id": 1, "txn": "fine"}, true)})
	stalled := writeAsync(o, service.MessageBatch{s.row("p0", "bad", "a", map[string]any{"id": 2, "txn": "bad", "bad": true}, true)})
	open := writeAsync(o, service.MessageBatch{s.row("p1", "open1", "a", map[string]any{"id": 3, "txn": "open1"}, false)})
	waitAll(t, []chan error{good}, 10*time.Second)
	waitCore(t, o, "p0 stalled at bad", func(k *core) bool { return stalledAt(k, "a1", "p0") == "bad" })
	waitCore(t, o, "p1 has open1 open", func(k *core) bool { return openTxn(k, "a1", "p1", "open1") })
	before := logs.Len()
	assert.NotContains(t, logs.String(), "The process is stopping", "nothing is said before the stop")
	close(stopping)
	waitLogged(t, &logs, before, "the stop says what it waits for",
		"level=WARN", "The process is stopping and 2 WriteBatch calls", "three quarters of shutdown_timeout",
		`stalled partitions p0@a1 at source transaction \"bad\"`, `p1@a1 (source transaction \"open1\")`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.NoError(t, o.Close(ctx))
	assert.Error(t, <-stalled, "nothing stalled is acknowledged")
	assert.Error(t, <-open, "nothing open is acknowledged")
	assert.Equal(t, 1, strings.Count(logs.String(), "The process is stopping"), "said once, not repeated while the stop waits")
}

// Close says at its start which commits it waits for and how long at most,
// not only, at its end, those it left in doubt.
func TestCloseSaysWhichCommitsItWaitsFor(t *testing.T) {
	f := newFakeSR()
	f.commitGate = make(chan struct{})
	var logs logBuffer
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil, withLog(&logs))
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitCommitting(t, o)
	var label string
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		for l := range o.core.inFlight {
			label = l
		}
		return label != ""
	}, 5*time.Second, time.Millisecond)
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closed <- o.Close(ctx)
	}()
	waitLogged(t, &logs, 0, "Close says what it waits for", "Closing: waiting at most", "for the commits of labels "+label+" to resolve")
	close(f.commitGate)
	require.NoError(t, <-closed)
	require.NoError(t, <-ch)
}

func TestCloseWaitBound(t *testing.T) {
	now := time.Unix(1000, 0)
	assert.Equal(t, closeCommitWait, closeWaitBound(time.Time{}, false, now), "no deadline: closeCommitWait")
	assert.Equal(t, 5*time.Second, closeWaitBound(now.Add(5*time.Second), true, now), "an earlier deadline")
	assert.Equal(t, closeCommitWait, closeWaitBound(now.Add(time.Hour), true, now), "a later deadline")
	assert.Equal(t, time.Duration(0), closeWaitBound(now.Add(-time.Second), true, now), "a deadline passed")
}
