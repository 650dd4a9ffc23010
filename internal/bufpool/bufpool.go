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
	// larger one is left to the garbage collector (its allocation is small
	// beside filling it).
	DefaultMaxBytes = 16 << 20
	// DefaultMaxTotal bounds the bytes of all the free buffers a FreeList
	// keeps by default: memory held for reuse, beyond what the output's
	// buffer_size accounts for, stays small.
	DefaultMaxTotal = 32 << 20
)

// FreeList is a bounded list of free buffers; its zero value keeps up to
// DefaultMax buffers of at most DefaultMaxBytes each and DefaultMaxTotal in
// all. It is safe for concurrent use. Whoever puts a buffer back must be
// sure nothing reads or writes it any more.
type FreeList struct {
	// Max, MaxBytes and MaxTotal bound what is kept (0: the defaults).
	Max, MaxBytes, MaxTotal int

	mu   sync.Mutex
	free [][]byte
	// total is the capacity of the free buffers.
	total int
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
		l.total -= cap(b)
		l.mu.Unlock()
		return b[:0]
	}
	l.mu.Unlock()
	return make([]byte, 0, n+n/8)
}

// Put keeps b for reuse; when the list is full (by count or by bytes) the
// smallest buffers go to make room, and b goes instead when it is smaller
// than what it would push out.
func (l *FreeList) Put(b []byte) {
	maxBytes, maxN, maxTotal := l.MaxBytes, l.Max, l.MaxTotal
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxN == 0 {
		maxN = DefaultMax
	}
	if maxTotal == 0 {
		maxTotal = DefaultMaxTotal
	}
	if cap(b) == 0 || cap(b) > maxBytes || cap(b) > maxTotal {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.free) >= maxN || l.total+cap(b) > maxTotal {
		small := 0
		for i := range l.free {
			if cap(l.free[i]) < cap(l.free[small]) {
				small = i
			}
		}
		if cap(l.free[small]) >= cap(b) {
			return
		}
		l.total -= cap(l.free[small])
		last := len(l.free) - 1
		l.free[small], l.free[last] = l.free[last], nil
		l.free = l.free[:last]
	}
	l.free = append(l.free, b[:0])
	l.total += cap(b)
}

// Len is how many free buffers are kept.
func (l *FreeList) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.free)
}
