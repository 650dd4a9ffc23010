package starrocks

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// countReaders makes every reader of req's body over data — the body itself
// and each one GetBody makes for a resend — acquire refs when it is made and
// release it once, when net/http closes it, which it does for every request
// body, on errors too (LoadRequest.Refs).
func countReaders(req *http.Request, data []byte, refs BodyRefs) {
	open := func() io.ReadCloser {
		refs.Acquire()
		return &countedBody{Reader: bytes.NewReader(data), refs: refs}
	}
	req.Body = open()
	req.GetBody = func() (io.ReadCloser, error) { return open(), nil }
}

// countedBody is a request body that releases its BodyRefs when closed.
type countedBody struct {
	*bytes.Reader
	refs BodyRefs
	once sync.Once
}

func (b *countedBody) Close() error {
	b.once.Do(b.refs.Release)
	return nil
}
