package testkit

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// recorder is a testing.TB that records a failure instead of ending the
// test running WaitFor.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r)
}

func waitRecorded(within time.Duration, cond func() bool) (failed string) {
	r := &recorder{}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		failed = r.failed
	}()
	WaitFor(r, within, cond, "the %s", "condition")
	return ""
}

// WaitFor returns once the condition holds, and fails naming what it awaited
// when the condition never holds.
func TestWaitFor(t *testing.T) {
	var n atomic.Int32
	assert.Empty(t, waitRecorded(5*time.Second, func() bool { return n.Add(1) >= 3 }))
	assert.Equal(t, int32(3), n.Load(), "polled until it held, no more")

	start := time.Now()
	failed := waitRecorded(100*time.Millisecond, func() bool { return false })
	assert.Equal(t, "timed out after 100ms waiting for: the condition", failed)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
}

// A condition that takes long to evaluate is polled no more often than it
// takes: each pause lasts at least the evaluation before it; a quick one is
// polled every 20 ms until the deadline.
func TestPollPausesAsLongAsTheConditionTakes(t *testing.T) {
	now := time.Unix(1000, 0)
	var pauses []time.Duration
	c := clock{
		now:   func() time.Time { return now },
		sleep: func(d time.Duration) { pauses = append(pauses, d); now = now.Add(d) },
	}
	var evals int
	start := now
	held := poll(c, 5*time.Second, func() bool {
		evals++
		now = now.Add(60 * time.Millisecond)
		return evals == 4
	})
	assert.True(t, held)
	assert.Equal(t, []time.Duration{60 * time.Millisecond, 60 * time.Millisecond, 60 * time.Millisecond}, pauses)
	assert.Equal(t, 4*60*time.Millisecond+3*60*time.Millisecond, now.Sub(start))

	pauses = nil
	assert.False(t, poll(c, 50*time.Millisecond, func() bool { return false }))
	assert.Equal(t, []time.Duration{pollInterval, pollInterval, pollInterval}, pauses, "polled every 20 ms until past the deadline")
}
