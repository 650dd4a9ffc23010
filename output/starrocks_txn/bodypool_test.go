package starrocks_txn

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/bufpool"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// A pooled body goes back to the pool only after its maker and every reader
// released it; until then get never hands its memory out again.
func TestPooledBodyReusedOnlyOnceEveryHoldReleased(t *testing.T) {
	var p bufpool.FreeList
	b := newPooledBody(&p, append(p.Get(100), "[1]"...))
	b.Acquire() // net/http opens a reader
	b.Acquire() // and one for a resend
	b.Release() // the maker is done
	b.Release() // the first reader is closed
	other := p.Get(100)
	assert.NotSame(t, &b.buf[:1][0], &other[:1][0], "a reader still holds the body")
	b.Release() // the last reader is closed
	again := p.Get(100)
	assert.Same(t, &b.buf[:1][0], &again[:1][0], "reused once nothing holds it")
	assert.Empty(t, again, "handed out empty")
}

// The body loadPending builds from the pool is the same JSON array as
// loadBody's.
func TestPooledLoadBodyEqualsLoadBody(t *testing.T) {
	txns := benchTxns(50)
	var p bufpool.FreeList
	p.Put(append(make([]byte, 0, 1<<20), "garbage left by the last use"...))
	for _, tbl := range []string{"orders", "none"} {
		want, n := loadBody(txns, tbl)
		size, m := loadBodySize(txns, tbl)
		assert.Equal(t, n, m)
		if n == 0 {
			continue
		}
		assert.Len(t, want, size)
		assert.Equal(t, string(want), string(fillLoadBody(p.Get(size), txns, tbl)))
	}
}

// readerHeldLoad is a client whose loads leave a reader of the body open
// after they returned, as net/http does when a reply comes before the body
// was sent whole: it keeps the body and a copy of it.
type readerHeldLoad struct {
	*fakeSR
	mu    sync.Mutex
	held  [][]byte
	as    [][]byte
	holds []starrocks.BodyRefs
	// noRefs counts loads without refs: their body could not be pooled.
	noRefs int
}

func (l *readerHeldLoad) Load(ctx context.Context, r starrocks.LoadRequest) error {
	l.mu.Lock()
	if r.Refs == nil {
		l.noRefs++
		l.mu.Unlock()
		return l.fakeSR.Load(ctx, r)
	}
	r.Refs.Acquire()
	l.held = append(l.held, r.Body)
	l.as = append(l.as, append([]byte(nil), r.Body...))
	l.holds = append(l.holds, r.Refs)
	l.mu.Unlock()
	return l.fakeSR.Load(ctx, r)
}

// A load body a reader still holds is never reused for a later cycle's
// body: what that reader reads stays the body it was sent with.
func TestLoadBodyNotReusedWhileAReaderHoldsIt(t *testing.T) {
	f := newFakeSR()
	c := &readerHeldLoad{fakeSR: f}
	o, _ := testOutput(t, "commit_interval: 50ms\n", f, nil, withClient(c))
	s := newSrc("a1")
	for i := range 5 {
		txn := fmt.Sprintf("t%d", i)
		waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p0", txn, "a", map[string]any{"id": i, "txn": txn}, true)})}, 5*time.Second)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	require.GreaterOrEqual(t, len(c.held), 5)
	assert.Zero(t, c.noRefs, "every load body comes with its refs")
	for i := range c.held {
		assert.Equal(t, string(c.as[i]), string(c.held[i]), "load %d: its body was overwritten while a reader held it", i)
	}
	for _, h := range c.holds {
		h.Release()
	}
}
