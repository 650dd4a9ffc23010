package starrocks

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stepClock is a boundClock that moves only when a test steps it (Add): a
// call's bound runs out when Add reaches its deadline, and a call took what
// the steps between its start and its end add up to, however long the
// machine took to run the test.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*stepTimer]bool
}

type stepTimer struct {
	at   time.Time
	fire func()
}

func newStepClock() *stepClock {
	return &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), timers: map[*stepTimer]bool{}}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) WithTimeoutCause(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancelCause(ctx)
	tm := &stepTimer{fire: func() { cancel(cause) }}
	c.mu.Lock()
	tm.at = c.now.Add(d)
	c.timers[tm] = true
	c.mu.Unlock()
	return cctx, func() {
		c.mu.Lock()
		delete(c.timers, tm)
		c.mu.Unlock()
		cancel(context.Canceled)
	}
}

// Add moves the clock on by d, ends the contexts whose deadline it reached
// and reports how many it ended.
func (c *stepClock) Add(d time.Duration) int {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*stepTimer
	for tm := range c.timers {
		if !tm.at.After(c.now) {
			due = append(due, tm)
			delete(c.timers, tm)
		}
	}
	c.mu.Unlock()
	for _, tm := range due {
		tm.fire()
	}
	return len(due)
}

// A call that runs out of its bound doubles the next one's, up to 8 × the
// base; one that ends within half its bound halves it; one that needs more
// than half keeps it; a call ended by its caller's own deadline changes
// nothing.
func TestCallBoundGrowsCapsAndShrinks(t *testing.T) {
	const base = 20 * time.Millisecond
	// On the wall clock the bound is the context's deadline, a
	// context.DeadlineExceeded to errors.Is, cause and all.
	wall := &callBound{base: base}
	ctx, end := wall.start(context.Background())
	<-ctx.Done()
	require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	require.True(t, errors.Is(context.Cause(ctx), context.DeadlineExceeded), "the cause is a deadline to errors.Is")
	require.ErrorIs(t, context.Cause(ctx), errCallBound)
	end(false)
	assert.Equal(t, 2*base, wall.current())

	// The rest on a clock the test steps.
	clk := newStepClock()
	b := &callBound{base: base, clock: clk}
	ranOut := func() {
		ctx, end := b.start(context.Background())
		require.Equal(t, 1, clk.Add(maxBoundFactor*base), "the call's bound ran out")
		<-ctx.Done()
		require.True(t, errors.Is(context.Cause(ctx), context.DeadlineExceeded), "the cause is a deadline to errors.Is")
		end(false)
	}
	for _, want := range []time.Duration{2 * base, 4 * base, 8 * base, 8 * base} {
		ranOut()
		assert.Equal(t, want, b.current())
	}
	// Needing more than half the bound keeps it.
	ctx, end = b.start(context.Background())
	clk.Add(5 * base)
	require.NoError(t, ctx.Err())
	end(true)
	assert.Equal(t, 8*base, b.current(), "a call that needed more than half its bound keeps it")
	for _, want := range []time.Duration{4 * base, 2 * base, base, base} {
		_, end := b.start(context.Background())
		end(true)
		assert.Equal(t, want, b.current())
	}
	// A quick call that got no answer (a refused connection, a 5xx) keeps
	// the bound.
	for range 3 {
		ranOut()
	}
	grown := b.current()
	_, end = b.start(context.Background())
	end(false)
	assert.Equal(t, grown, b.current(), "a quick call without an answer keeps the bound")
	for b.current() > base {
		_, end = b.start(context.Background())
		end(true)
	}
	// The caller's deadline is not the bound's.
	parent, cancel := context.WithTimeout(context.Background(), base/4)
	defer cancel()
	ctx, end = b.start(parent)
	<-ctx.Done()
	end(false)
	assert.Equal(t, base, b.current(), "a call its caller's deadline ended does not grow the bound")
	// No base: no bound.
	unbounded := &callBound{}
	ctx, end = unbounded.start(context.Background())
	_, has := ctx.Deadline()
	end(true)
	assert.False(t, has)
}

// The bound is kept per body size class: a call that ran out grows its own
// class's bound, which larger bodies get too and smaller ones do not; a
// quick answer brings down its own class and every smaller one, never a
// larger one.
func TestCallBoundPerSizeClass(t *testing.T) {
	const base = 20 * time.Millisecond
	const small, big, bigger = 1 << 10, 1 << 20, 1 << 24
	clk := newStepClock()
	b := &callBound{base: base, clock: clk}
	ctx, end := b.startSized(context.Background(), big)
	require.Equal(t, 1, clk.Add(base), "the big call ran out")
	<-ctx.Done()
	end(false)
	assert.Equal(t, 2*base, b.currentSized(big))
	assert.Equal(t, 2*base, b.currentSized(bigger), "a larger body gets at least a smaller one's bound")
	assert.Equal(t, base, b.currentSized(small), "a smaller body keeps base")

	_, end = b.startSized(context.Background(), small)
	end(true)
	assert.Equal(t, 2*base, b.currentSized(big), "a quick small call does not shrink a big one's bound")

	_, end = b.startSized(context.Background(), bigger)
	end(true)
	assert.Equal(t, base, b.currentSized(big), "a quick answer to a larger body shrinks the smaller ones' bound")
	assert.Equal(t, 0, sizeClass(0))
	assert.Equal(t, 0, sizeClass(64<<10-1))
	assert.Equal(t, 1, sizeClass(64<<10))
	assert.Equal(t, maxSizeClass, sizeClass(int(^uint(0)>>1)))
}
