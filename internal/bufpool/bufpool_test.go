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

// The free buffers never hold more than MaxTotal bytes together: the
// smallest go to make room for a larger one, and a buffer smaller than all
// it would push out is dropped instead; Get takes a buffer's bytes off the
// total.
func TestFreeListBoundsTheTotalBytes(t *testing.T) {
	l := FreeList{Max: 10, MaxBytes: 100, MaxTotal: 200}
	sum := func() (n int) {
		for _, b := range l.free {
			n += cap(b)
		}
		return n
	}
	for _, c := range []int{80, 90, 70, 100, 10} {
		l.Put(make([]byte, 0, c))
		assert.LessOrEqual(t, sum(), 200, "after putting %d", c)
		assert.Equal(t, sum(), l.total)
	}
	// 70 was smaller than the 80 it would have pushed out; 100 pushed
	// out 80; 10 still fit.
	assert.Equal(t, 200, sum())
	assert.Equal(t, 3, l.Len())
	got := l.Get(95)
	assert.Equal(t, 100, cap(got))
	assert.Equal(t, 100, l.total)
	l.Put(make([]byte, 0, 100))
	assert.Equal(t, 200, l.total)
	l.Put(make([]byte, 0, 95))
	assert.Equal(t, 195, l.total, "95 pushed out 10 and 90")
	// Defaults: DefaultMaxTotal in all.
	var d FreeList
	for range DefaultMax {
		d.Put(make([]byte, 0, DefaultMaxBytes))
	}
	assert.LessOrEqual(t, d.total, DefaultMaxTotal)
}
