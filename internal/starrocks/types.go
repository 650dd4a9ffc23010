package starrocks

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"
)

// Config configures a Client.
type Config struct {
	// LoadURLs are FE HTTP addresses (http://host:8030). The client sends a
	// request to the next one only when it certainly did not reach the
	// previous (no connection could be made); any other failure is the
	// caller's, and the caller's next request starts at the next URL.
	LoadURLs []string
	Username string
	Password string
	// TLS is used for https:// URLs (nil: system defaults).
	TLS *tls.Config
	// ConnectTimeout bounds dialing; RequestTimeout bounds one whole request
	// (0: none beyond the caller's context) while requests end in time: a
	// request that ran out of it doubles the bound of the next request of
	// its operation on its table (or database), up to 8 × RequestTimeout,
	// and one answered within half its bound halves it back.
	ConnectTimeout time.Duration
	RequestTimeout time.Duration
	// ExpectContinueTimeout bounds the wait for "100 Continue" before a load
	// body is sent anyway.
	ExpectContinueTimeout time.Duration
	// MaxRedirects bounds the 307/308 hops followed by hand (default 3).
	MaxRedirects int
	// AllowInsecureRedirect follows a redirect from an https URL to an http
	// one (credentials re-sent). Real FEs write http:// into every Location
	// (to the leader FE and to a BE), so with https load URLs TLS then
	// covers the FE leg only. Off, such a redirect fails with
	// ErrInsecureRedirect (ClassFatal).
	AllowInsecureRedirect bool
	// Compression of load bodies: "" (none), "gzip" or "lz4_frame".
	Compression string
	// MaxIdleConnsPerHost is the keep-alive pool per FE/BE host; size it for
	// the concurrent loads (default 32).
	MaxIdleConnsPerHost int
}

// Txn identifies one transaction.
type Txn struct {
	DB    string
	Label string
	// Table is required for classic transactions and omitted for multi.
	Table string
	// Multi sends transaction_type: multi on every request.
	Multi bool
	// Timeout is sent as the `timeout` header on begin (seconds) when > 0.
	Timeout time.Duration
	// PreparedTimeout is sent as the `prepared_timeout` header on prepare
	// (whole seconds, at least 1) when > 0. StarRocks reads it from 3.5.4;
	// an older FE ignores it and a PREPARED transaction waits its
	// prepared_transaction_default_timeout_second
	// (docs/notes/starrocks-protocol.md §12.3).
	PreparedTimeout time.Duration
}

// LoadRequest is one /api/transaction/load (or plain stream load) request.
type LoadRequest struct {
	Txn
	// Headers are the stream-load data headers (format, strip_outer_array,
	// columns, max_filter_ratio…). They must be identical for every load of a
	// table within one transaction.
	Headers map[string]string
	Body    []byte
	// Refs, when set, is told each time the client opens a reader over
	// Body (Acquire) and when net/http is done with it (Release). net/http
	// may read a request body after the request returned — a reply that
	// came before the body was sent whole, a resend through GetBody — so a
	// caller that reuses Body's memory may do so only once every Acquire
	// was released (and its own hold with them). A reader that net/http
	// never closes is never released: the memory is then left to the
	// garbage collector, never reused.
	Refs BodyRefs
}

// BodyRefs counts the readers of a load body that net/http holds
// (LoadRequest.Refs). Both methods may be called from any goroutine.
type BodyRefs interface {
	Acquire()
	Release()
}

// Class says what a reply means to the caller.
type Class int

const (
	// ClassOK is success.
	ClassOK Class = iota
	// ClassRetrySafe means nothing was ingested (TXN_IN_PROCESSING): the same
	// request may be sent again.
	ClassRetrySafe
	// ClassAmbiguous means the outcome is unknown (a commit that timed out, a
	// reset connection, a non-OK commit reply): decide by label state.
	ClassAmbiguous
	// ClassTransient is a failure of the transaction as a whole that a replay
	// under a new label can cure (network, 5xx, INTERNAL_ERROR, expired or
	// unknown transaction, running-transaction limit).
	ClassTransient
	// ClassPerTxn is a failure caused by the data itself (unknown table,
	// filtered rows over the ratio, a table with 0 rows): replaying the same
	// data fails the same way.
	ClassPerTxn
	// ClassFatal needs an operator (authentication, a label in use, bad
	// configuration).
	ClassFatal
)

func (c Class) String() string {
	switch c {
	case ClassOK:
		return "ok"
	case ClassRetrySafe:
		return "retry_safe"
	case ClassAmbiguous:
		return "ambiguous"
	case ClassTransient:
		return "transient"
	case ClassPerTxn:
		return "per_transaction"
	case ClassFatal:
		return "fatal"
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// LabelState is the state get_load_state reports for a label.
type LabelState string

// Label states.
const (
	StateUnknown   LabelState = "UNKNOWN"
	StatePrepare   LabelState = "PREPARE"
	StatePrepared  LabelState = "PREPARED"
	StateCommitted LabelState = "COMMITTED"
	StateVisible   LabelState = "VISIBLE"
	StateAborted   LabelState = "ABORTED"
)

// Committed reports COMMITTED or VISIBLE.
func (s LabelState) Committed() bool { return s == StateCommitted || s == StateVisible }

// Final reports whether the label's fate is decided (committed or aborted).
func (s LabelState) Final() bool { return s.Committed() || s == StateAborted }

// Error is a classified failure of one request. Message keeps StarRocks's own
// text.
type Error struct {
	Op       string // begin, load, prepare, commit, rollback, get_load_state, cancel, stream_load
	DB       string
	Table    string
	Label    string
	Class    Class
	HTTPCode int
	Status   string // the reply's Status, when there was a reply
	Message  string // the reply's Message, when there was a reply
	Err      error  // the transport error, when there was no reply
}

func (e *Error) Error() string {
	where := e.DB
	if e.Table != "" {
		where += "." + e.Table
	}
	if e.Err != nil {
		return fmt.Sprintf("starrocks %s (db %s, label %s): %s: %v", e.Op, where, e.Label, e.Class, e.Err)
	}
	return fmt.Sprintf("starrocks %s (db %s, label %s): %s: status %s (HTTP %d): %s", e.Op, where, e.Label, e.Class, e.Status, e.HTTPCode, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class of err: ClassOK for nil, the Error's class, or
// ClassTransient for anything else (a context error included).
func ClassOf(err error) Class {
	if err == nil {
		return ClassOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ClassTransient
}
