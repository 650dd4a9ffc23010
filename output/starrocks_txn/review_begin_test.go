package starrocks_txn

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReviewACycleIsBegunWhenItsBeginWasSent: takeBegunAt keeps a source
// transaction whose schema change became visible at notBefore out of any
// cycle whose StarRocks transaction began at or before it, and reads the
// cycle's begin time from cycle.begun. begin sets it from the clock after
// the begin's reply, not before the request: a begin the FE applied at
// 10:00:00 whose reply arrived at 10:00:01 (slow: one of the outcomes the
// fault model names) is taken to have begun at 10:00:01, so a change that
// became visible at 10:00:00.5 counts as older than the transaction and its
// rows join a transaction the FE began before the change.
func TestReviewACycleIsBegunWhenItsBeginWasSent(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(36_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f := newFakeSR()
	var appliedAt time.Time
	f.hook = func(op string, _ *fakeTxn, _ string) (error, bool) {
		if op == "begin" {
			mu.Lock()
			appliedAt = now
			now = now.Add(time.Second) // the reply comes a second after the FE began it
			mu.Unlock()
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 1s\n", f, nil, withClock(clock))
	w := newDBWorker(o, &dbQueue{db: "test"}, nil)
	c := &cycle{}
	require.True(t, w.begin(context.Background(), c))
	t.Cleanup(func() { w.rollback(c.label) })
	assert.False(t, c.begun.After(appliedAt), "cycle.begun %v is after the time the FE began the transaction (%v): a change visible in between is taken as older than it", c.begun, appliedAt)
}
