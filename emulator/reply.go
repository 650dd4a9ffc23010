package emulator

import (
	"bytes"
	"net/http"
	"time"
)

// defaultReplyLateDelay is how long ActReplyLate holds a reply when the
// fault gives no delay.
const defaultReplyLateDelay = 3 * time.Second

// heldReply stands in for the ResponseWriter of a request hit by an
// after-apply fault (ActReplyLost, ActReplyLate, ActNoAnswer): the handler
// runs the operation and writes its reply here as usual, and release then
// decides what the client gets — nothing, the reply late, or a reset.
type heldReply struct {
	orig http.ResponseWriter
	hdr  http.Header
	code int
	body bytes.Buffer
}

func newHeldReply(orig http.ResponseWriter) *heldReply {
	return &heldReply{orig: orig, hdr: http.Header{}}
}

func (h *heldReply) Header() http.Header { return h.hdr }

func (h *heldReply) WriteHeader(code int) {
	if h.code == 0 {
		h.code = code
	}
}

func (h *heldReply) Write(b []byte) (int, error) {
	if h.code == 0 {
		h.code = http.StatusOK
	}
	return h.body.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (h *heldReply) Unwrap() http.ResponseWriter { return h.orig }

// flush sends the held reply to the client.
func (h *heldReply) flush() {
	for k, vs := range h.hdr {
		h.orig.Header()[k] = vs
	}
	if h.code == 0 {
		h.code = http.StatusOK
	}
	h.orig.WriteHeader(h.code)
	_, _ = h.orig.Write(h.body.Bytes())
}

// hold makes q's reply go to a heldReply that release acts on, as the
// after-apply fault f says.
func (q *req) hold(f *Fault) {
	if q.held != nil {
		return
	}
	q.held = newHeldReply(q.w)
	q.post = f
	q.w = q.held
}

// release finishes a request whose reply an after-apply fault holds. It
// runs after the handler returned, so the operation has fully happened.
func (e *Emulator) release(q *req) {
	if q.held == nil {
		return
	}
	f, orig := q.post, q.held.orig
	e.log.Debug("fault acts on the reply", "op", f.Op, "action", f.Action, "label", q.label, "table", q.table)
	switch f.Action.canonical() {
	case ActReplyLost:
		hijackReset(orig)
	case ActReplyLate:
		d := f.Delay
		if d <= 0 {
			d = defaultReplyLateDelay
		}
		if e.sleep(q.r.Context(), d) {
			q.held.flush()
		}
	case ActNoAnswer:
		if f.Delay > 0 {
			e.sleep(q.r.Context(), f.Delay)
		} else {
			select {
			case <-q.r.Context().Done():
			case <-e.stop:
			}
		}
		hijackReset(orig)
	}
}
