// Package bufpool keeps big byte buffers for reuse: load bodies, made once
// per commit cycle and per table, in the output and in the emulator.
//
// It is not a sync.Pool: the garbage collector empties those every other
// cycle, and a load body is needed once per commit interval, when many
// cycles have passed.
package bufpool

import "sync"

const (
	// DefaultMax is how many free buffers a FreeList keeps by default.
	DefaultMax = 8
	// DefaultMaxBytes is the largest buffer a FreeList keeps by default; a
	// larger one is left to the garbage collector.
	DefaultMaxBytes = 64 << 20
)

// FreeList is a bounded list of free buffers; its zero value keeps
// DefaultMax buffers of at most DefaultMaxBytes. It is safe for concurrent
// use. Whoever puts a buffer back must be sure nothing reads or writes it
// any more.
type FreeList struct {
	// Max and MaxBytes bound what is kept (0: the defaults).
	Max, MaxBytes int

	mu   sync.Mutex
	free [][]byte
}

// Get returns an empty buffer with room for n bytes: the smallest free one
// that fits, or a new one with an eighth more room, so that a slightly
// larger body next time fits too.
func (l *FreeList) Get(n int) []byte {
	l.mu.Lock()
	best := -1
	for i, b := range l.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(l.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := l.free[best]
		last := len(l.free) - 1
		l.free[best], l.free[last] = l.free[last], nil
		l.free = l.free[:last]
		l.mu.Unlock()
		return b[:0]
	}
	l.mu.Unlock()
	return make([]byte, 0, n+n/8)
}

// Put keeps b for reuse; when the list is full the smallest buffer goes.
func (l *FreeList) Put(b []byte) {
	maxBytes, maxN := l.MaxBytes, l.Max
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxN == 0 {
		maxN = DefaultMax
	}
	if cap(b) == 0 || cap(b) > maxBytes {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.free) < maxN {
		l.free = append(l.free, b[:0])
		return
	}
	small := 0
	for i := range l.free {
		if cap(l.free[i]) < cap(l.free[small]) {
			small = i
		}
	}
	if cap(l.free[small]) < cap(b) {
		l.free[small] = b[:0]
	}
}

// Len is how many free buffers are kept.
func (l *FreeList) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.free)
}
