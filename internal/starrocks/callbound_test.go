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
