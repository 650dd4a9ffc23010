package bufpool

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Get takes the smallest free buffer that fits; Put keeps at most Max,
// dropping the smallest, and never one over MaxBytes.
func TestFreeListKeepsTheLargestFew(t *testing.T) {
	var l FreeList
	for i := range DefaultMax + 2 {
		l.Put(make([]byte, 0, 1000*(i+1)))
	}
	require.Equal(t, DefaultMax, l.Len())
	for _, b := range l.free {
		assert.GreaterOrEqual(t, cap(b), 3000, "the smallest were dropped")
	}
	l.Put(make([]byte, 0, DefaultMaxBytes+1))
	for _, b := range l.free {
		assert.LessOrEqual(t, cap(b), DefaultMaxBytes)
	}
	got := l.Get(4500)
	assert.Equal(t, 5000, cap(got), "the smallest that fits")
	assert.Empty(t, got)
	fresh := l.Get(DefaultMaxBytes / 2)
	assert.GreaterOrEqual(t, cap(fresh), DefaultMaxBytes/2, "a new one when none fits")
}

// The bounds can be set.
func TestFreeListBounds(t *testing.T) {
	l := FreeList{Max: 1, MaxBytes: 100}
	l.Put(make([]byte, 0, 101))
	assert.Zero(t, l.Len())
	l.Put(make([]byte, 0, 50))
	l.Put(make([]byte, 0, 60))
	require.Equal(t, 1, l.Len())
	assert.Equal(t, 60, cap(l.Get(10)), "the larger one was kept")
}
