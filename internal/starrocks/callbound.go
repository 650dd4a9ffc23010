package starrocks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// maxBoundFactor caps how far a callBound lets a call's bound grow: 8 ×
// its base.
const maxBoundFactor = 8

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
// Callers retry a failed call (the output replays a load or a cycle whose
// call timed out, re-reads its progress, re-checks the tables a cycle
// needs), so a StarRocks that answers every call slower than base — a
// loaded FE, a BE writing a large body, a busy catalog — is still answered
// after a few attempts, instead of every attempt timing out at the same
// bound and starting over forever. The growth is bounded, so a server that
// never answers is still given up on.
type callBound struct {
	base time.Duration

	mu sync.Mutex
	// next is the bound of the next call (0: base).
	next time.Duration
}

// start returns ctx bounded for one call, and the function that ends the
// call, told whether the call was answered. A base of 0 or less leaves ctx
// unbounded.
func (b *callBound) start(ctx context.Context) (context.Context, func(answered bool)) {
	if b.base <= 0 {
		return ctx, func(bool) {}
	}
	b.mu.Lock()
	d := max(b.next, b.base)
	b.mu.Unlock()
	began := time.Now()
	cctx, cancel := context.WithTimeoutCause(ctx, d, errCallBound)
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
			b.next = min(max(b.next, 2*d), maxBoundFactor*b.base)
		case answered && time.Since(began) <= d/2:
			b.next = max(d/2, b.base)
		}
	}
}

// current is the bound the next call gets.
func (b *callBound) current() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.next, b.base)
}

// callBounds holds a callBound per key, made on first use.
type callBounds struct {
	base time.Duration
	m    sync.Map // string → *callBound
}

// get is key's callBound.
func (bs *callBounds) get(key string) *callBound {
	if b, ok := bs.m.Load(key); ok {
		return b.(*callBound)
	}
	b, _ := bs.m.LoadOrStore(key, &callBound{base: bs.base})
	return b.(*callBound)
}
