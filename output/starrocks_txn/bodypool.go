package starrocks_txn

// Home of G9 (ARCHITECTURE.md §11.1): a pooled load body is never reused while its load, a
// resend or a net/http reader can read it. Main test:
// TestPooledBodyReusedOnlyOnceEveryHoldReleased.

import (
	"sync/atomic"

	"github.com/starrocks-txn/benthos-starrocks/internal/bufpool"
)

// Load bodies are big (a cycle's rows of one table) and made every
// commit_interval: they are kept for reuse instead of being left to the
// garbage collector. A body is reused only once nothing can read it: its
// load and every resend of it returned, and net/http closed every reader it
// made of it (starrocks.LoadRequest.Refs).

// pooledBody is one load body from a bufpool.FreeList. It starts held by its maker,
// who releases it once done with it; each reader net/http opens holds it too
// (starrocks.BodyRefs). The last release puts the buffer back.
type pooledBody struct {
	pool *bufpool.FreeList
	buf  []byte
	refs atomic.Int64
}

func newPooledBody(pool *bufpool.FreeList, buf []byte) *pooledBody {
	b := &pooledBody{pool: pool, buf: buf}
	b.refs.Store(1)
	return b
}

// Acquire holds the body for one more reader.
func (b *pooledBody) Acquire() { b.refs.Add(1) }

// Release lets go of one hold; the last one returns the buffer to the pool.
func (b *pooledBody) Release() {
	if b.refs.Add(-1) == 0 {
		b.pool.Put(b.buf)
	}
}
