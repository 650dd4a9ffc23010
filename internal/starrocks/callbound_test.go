package starrocks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call that runs out of its bound doubles the next one's, up to 8 × the
// base; one that ends within half its bound halves it; one that needs more
// than half keeps it; a call ended by its caller's own deadline changes
// nothing.
func TestCallBoundGrowsCapsAndShrinks(t *testing.T) {
	const base = 20 * time.Millisecond
	b := &callBound{base: base}
	ranOut := func() {
		ctx, end := b.start(context.Background())
		<-ctx.Done()
		require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		require.True(t, errors.Is(context.Cause(ctx), context.DeadlineExceeded), "the cause is a deadline to errors.Is")
		end(false)
	}
	for _, want := range []time.Duration{2 * base, 4 * base, 8 * base, 8 * base} {
		ranOut()
		assert.Equal(t, want, b.current())
	}
	// Needing more than half the bound keeps it.
	ctx, end := b.start(context.Background())
	time.Sleep(5 * base)
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
	b := &callBound{base: base}
	ctx, end := b.startSized(context.Background(), big)
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
