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
// takes: the pauses add up to at least the evaluations' time.
func TestPollPausesAsLongAsTheConditionTakes(t *testing.T) {
	var evals int
	start := time.Now()
	held := Poll(5*time.Second, func() bool {
		evals++
		time.Sleep(60 * time.Millisecond)
		return evals == 4
	})
	assert.True(t, held)
	assert.GreaterOrEqual(t, time.Since(start), 4*60*time.Millisecond+3*60*time.Millisecond)
	assert.False(t, Poll(50*time.Millisecond, func() bool { return false }))
}
