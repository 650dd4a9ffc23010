package starrocks

// Home of G14 (ARCHITECTURE.md §11.1): a call that ran out of its bound doubles the next one's
// (up to 8 ×), so a slow StarRocks is still loaded and read. Main test:
// TestCallBoundGrowsCapsAndShrinks.

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"time"
)

// maxBoundFactor caps how far a callBound lets a call's bound grow: 8 ×
// its base.
const maxBoundFactor = 8

// Size classes of a call's body: class 0 below 64 KiB, then one class per
// doubling (class 1 below 128 KiB, 2 below 256 KiB, …), up to maxSizeClass.
const (
	sizeClassShift = 16
	maxSizeClass   = 40
)

// sizeClass is the size class of a body of size bytes.
func sizeClass(size int) int {
	if size <= 0 {
		return 0
	}
	return min(bits.Len(uint(size)>>sizeClassShift), maxSizeClass)
}

// errCallBound is the cause of a call's context when its own bound ended
// it. It is a context.DeadlineExceeded to errors.Is, as the plain timeout
// was.
var errCallBound = fmt.Errorf("the call ran out of its time bound: %w", context.DeadlineExceeded)

// callBound bounds one kind of call to StarRocks (a Meta statement kind in
// one database: Meta.bound; an HTTP operation on one table or database:
// Client.bound). A call gets base while calls end in time. A call that ran
// out of its bound doubles the next call's, up to maxBoundFactor × base; a
// call answered within half its bound halves it again, down to base. One
// that needed more than half keeps it, so a server slower than base every
// time is not timed out every other call; one that got no answer (a
// refused connection, a proxy's 5xx, an error) says nothing about how long
// an answer takes, so it keeps it too.
//
// The bound is kept per size class of the call's body (sizeClass): a call
// gets the largest bound of its class and of every smaller one (a larger
// body takes at least as long), a call that ran out grows its own class's,
// and a quick answer brings down its own class's and every smaller one's
// only. So the quick answers to a table's small loads never shrink the
// bound its big load's timeout grew: the replay of the big load gets the
// grown bound, where it would otherwise get base again and time out again,
// replay after replay, while its backlog grows.
//
// Callers retry a failed call (the output replays a load or a cycle whose
// call timed out, re-reads its progress, re-checks the tables a cycle
// needs), so a StarRocks that answers every call slower than base — a
// loaded FE, a BE writing a large body, a busy catalog — is still answered
// after a few attempts, instead of every attempt timing out at the same
// bound and starting over forever. The growth is bounded, so a server that
// never answers is still given up on.
type callBound struct {
	base time.Duration
	// clock measures the calls (nil: the wall clock).
	clock boundClock

	mu sync.Mutex
	// next is the bound of the next call of each size class (0: base).
	next [maxSizeClass + 1]time.Duration
}

// start returns ctx bounded for one call without a body (size class 0),
// and the function that ends the call, told whether the call was answered.
// A base of 0 or less leaves ctx unbounded.
func (b *callBound) start(ctx context.Context) (context.Context, func(answered bool)) {
	return b.startSized(ctx, 0)
}

// startSized is start for a call whose body has size bytes.
func (b *callBound) startSized(ctx context.Context, size int) (context.Context, func(answered bool)) {
	if b.base <= 0 {
		return ctx, func(bool) {}
	}
	c := sizeClass(size)
	b.mu.Lock()
	d := b.boundLocked(c)
	b.mu.Unlock()
	clock := b.clock
	if clock == nil {
		clock = wallClock{}
	}
	began := clock.Now()
	cctx, cancel := clock.WithTimeoutCause(ctx, d, errCallBound)
	return cctx, func(answered bool) {
		// The caller's own deadline or cancellation has another cause.
		ranOut := errors.Is(context.Cause(cctx), errCallBound)
		cancel()
		b.mu.Lock()
		defer b.mu.Unlock()
		switch {
		case ranOut:
			// max: a concurrent call that began with a larger bound and
			// ran out too keeps its doubling.
			b.next[c] = min(max(b.next[c], 2*d), maxBoundFactor*b.base)
		case answered && clock.Now().Sub(began) <= d/2:
			// A body this large was answered within d/2: so are the
			// smaller ones.
			half := max(d/2, b.base)
			for i := range c + 1 {
				b.next[i] = min(b.next[i], half)
			}
		}
	}
}

// boundLocked is the bound of a call of size class c: the largest of its
// class's and every smaller class's.
func (b *callBound) boundLocked(c int) time.Duration {
	d := b.base
	for _, n := range b.next[:c+1] {
		d = max(d, n)
	}
	return d
}

// current is the bound the next call without a body gets.
func (b *callBound) current() time.Duration { return b.currentSized(0) }

// currentSized is the bound the next call with a body of size bytes gets.
func (b *callBound) currentSized(size int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.boundLocked(sizeClass(size))
}

// boundClock is what a callBound measures a call on: when it began and
// ended, and the deadline of its bound. The bound's tests step one of their
// own, so that what they check does not depend on how loaded the machine is.
type boundClock interface {
	Now() time.Time
	// WithTimeoutCause is context.WithTimeoutCause on this clock.
	WithTimeoutCause(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc)
}

// wallClock is the real time.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) WithTimeoutCause(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, cause)
}

// callBounds holds a callBound per key, made on first use.
type callBounds struct {
	base time.Duration
	// clock is the callBounds' clock (nil: the wall clock).
	clock boundClock
	m     sync.Map // string → *callBound
}

// get is key's callBound.
func (bs *callBounds) get(key string) *callBound {
	if b, ok := bs.m.Load(key); ok {
		return b.(*callBound)
	}
	b, _ := bs.m.LoadOrStore(key, &callBound{base: bs.base, clock: bs.clock})
	return b.(*callBound)
}
