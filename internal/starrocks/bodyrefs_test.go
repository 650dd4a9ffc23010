package starrocks

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refCount is a BodyRefs that records how many readers are open and closes
// released once the count is back to zero after the caller's own hold.
type refCount struct {
	n        atomic.Int64
	acquired atomic.Int64
	released chan struct{}
	once     sync.Once
}

func newRefCount() *refCount { r := &refCount{released: make(chan struct{})}; r.n.Store(1); return r }

func (r *refCount) Acquire() { r.n.Add(1); r.acquired.Add(1) }

func (r *refCount) Release() {
	if r.n.Add(-1) == 0 {
		r.once.Do(func() { close(r.released) })
	}
}

func (r *refCount) waitReleased(t *testing.T) {
	t.Helper()
	select {
	case <-r.released:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d readers of the body still open of %d", r.n.Load(), r.acquired.Load())
	}
}

// Every reader of a load body the client opens is released once net/http
// is done with it, through a redirect (a resend through GetBody) too; the
// caller may reuse the memory then.
func TestLoadBodyReadersReleased(t *testing.T) {
	be := newFake(t, nil)
	fe := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Location", be.srv.URL+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	c := newClient(t, Config{LoadURLs: []string{fe.srv.URL}})
	body := bytes.Repeat([]byte(`{"id":1},`), 1000)
	want := append([]byte(nil), body...)
	refs := newRefCount()
	_, err := c.Load(context.Background(), LoadRequest{
		Txn:     Txn{DB: "shop", Table: "orders", Label: "l1", Multi: true},
		Headers: map[string]string{"format": "json"},
		Body:    body,
		Refs:    refs,
	})
	require.NoError(t, err)
	refs.Release()
	refs.waitReleased(t)
	assert.GreaterOrEqual(t, refs.acquired.Load(), int64(2), "one reader per hop")
	assert.Equal(t, want, be.last(t).Body)
}

// A reply that comes before the body was sent whole leaves net/http writing
// it after Load returned: the readers are released only once it stopped, so
// writing over the memory then races with nothing (go test -race).
func TestLoadBodyReleasedOnlyAfterAnEarlyReply(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Answer at once, reading nothing of the body.
		writeJSON(w, 200, `{"Status":"Fail","Message":"refused before reading"}`)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, Config{LoadURLs: []string{srv.URL}})
	body := bytes.Repeat([]byte(`{"id":1},`), 1<<20)
	refs := newRefCount()
	_, _ = c.Load(context.Background(), LoadRequest{
		Txn:     Txn{DB: "shop", Table: "orders", Label: "l1", Multi: true},
		Headers: map[string]string{"format": "json"},
		Body:    body,
		Refs:    refs,
	})
	refs.Release()
	refs.waitReleased(t)
	assert.Positive(t, refs.acquired.Load())
	for i := range body {
		body[i] = 'x'
	}
	_, _ = io.Discard.Write(body)
}
