package starrocks_txn

import (
	"sync"
	"sync/atomic"
)

// Load bodies are big (a cycle's rows of one table) and made every
// commit_interval: they are kept for reuse instead of being left to the
// garbage collector. A body is reused only once nothing can read it: its
// load and every resend of it returned, and net/http closed every reader it
// made of it (starrocks.LoadRequest.Refs).

const (
	// bodyPoolMax is how many free bodies are kept: enough for the tables
	// of a few cycles in flight.
	bodyPoolMax = 8
	// bodyPoolMaxBytes is the largest body kept; a larger one is left to the
	// garbage collector.
	bodyPoolMaxBytes = 64 << 20
)

// bodyPool is a free list of load body buffers. It is not a sync.Pool: the
// garbage collector empties those every other cycle, and a body is needed
// once per commit_interval, when many cycles have passed.
type bodyPool struct {
	mu   sync.Mutex
	free [][]byte
}

// get returns an empty buffer with room for n bytes: the smallest free one
// that fits, or a new one with an eighth more room so that a slightly
// larger body next time fits too.
func (p *bodyPool) get(n int) []byte {
	p.mu.Lock()
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.free[best]
		last := len(p.free) - 1
		p.free[best], p.free[last] = p.free[last], nil
		p.free = p.free[:last]
		p.mu.Unlock()
		return b[:0]
	}
	p.mu.Unlock()
	return make([]byte, 0, n+n/8)
}

// put keeps b for reuse; when the list is full the smallest buffer goes.
func (p *bodyPool) put(b []byte) {
	if cap(b) == 0 || cap(b) > bodyPoolMaxBytes {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < bodyPoolMax {
		p.free = append(p.free, b[:0])
		return
	}
	small := 0
	for i := range p.free {
		if cap(p.free[i]) < cap(p.free[small]) {
			small = i
		}
	}
	if cap(p.free[small]) < cap(b) {
		p.free[small] = b[:0]
	}
}

// pooledBody is one load body of a bodyPool. It starts held by its maker,
// who releases it once done with it; each reader net/http opens holds it too
// (starrocks.BodyRefs). The last release puts the buffer back.
type pooledBody struct {
	pool *bodyPool
	buf  []byte
	refs atomic.Int64
}

func newPooledBody(pool *bodyPool, buf []byte) *pooledBody {
	b := &pooledBody{pool: pool, buf: buf}
	b.refs.Store(1)
	return b
}

// Acquire holds the body for one more reader.
func (b *pooledBody) Acquire() { b.refs.Add(1) }

// Release lets go of one hold; the last one returns the buffer to the pool.
func (b *pooledBody) Release() {
	if b.refs.Add(-1) == 0 {
		b.pool.put(b.buf)
	}
}
