package starrocks

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The operations of the transaction stream-load API (begin, load, prepare,
// commit, rollback), plain stream loads, label states and the cancel API:
// the request each one sends and how its reply is read. client.go holds
// the transport they share.

// txnHeaders builds label, db, table and transaction_type for a
// transaction operation. withTable: classic begin and every load.
func txnHeaders(op string, t Txn, withTable bool) (http.Header, error) {
	if err := ValidateName("database", t.DB); err != nil {
		return nil, invalid(op, ClassPerTxn, err)
	}
	if err := ValidateLabel(t.Label); err != nil {
		return nil, invalid(op, ClassFatal, err)
	}
	h := make(http.Header, 8)
	setRaw(h, "label", t.Label)
	setRaw(h, "db", t.DB)
	if withTable {
		if err := ValidateName("table", t.Table); err != nil {
			return nil, &Error{Op: op, DB: t.DB, Label: t.Label, Class: ClassPerTxn, Err: err}
		}
		setRaw(h, "table", t.Table)
	}
	if t.Multi {
		setRaw(h, "transaction_type", "multi")
	}
	return h, nil
}

func (c *Client) control(ctx context.Context, op string, t Txn) (*Reply, error) {
	withTable := op == OpBegin && !t.Multi
	h, err := txnHeaders(op, t, withTable)
	if err != nil {
		return nil, err
	}
	if op == OpBegin && t.Timeout > 0 {
		setRaw(h, "timeout", strconv.FormatInt(int64(math.Ceil(t.Timeout.Seconds())), 10))
	}
	if op == OpPrepare && t.PreparedTimeout > 0 {
		setRaw(h, "prepared_timeout", strconv.FormatInt(max(1, int64(math.Ceil(t.PreparedTimeout.Seconds()))), 10))
	}
	k := &call{op: op, method: http.MethodPost, path: "/api/transaction/" + op, header: h, db: t.DB, label: t.Label}
	if withTable {
		k.table = t.Table
	}
	return c.do(ctx, k)
}

// Begin opens a transaction: POST /api/transaction/begin with label, db,
// table (classic only), transaction_type: multi (multi only) and timeout
// (seconds, when Txn.Timeout > 0). No body.
func (c *Client) Begin(ctx context.Context, t Txn) (*Reply, error) {
	return c.control(ctx, OpBegin, t)
}

// Prepare is POST /api/transaction/prepare (classic only: multi-table
// transactions have no prepare and the FE answers FAILED "Unsupported
// operation: TXN_PREPARE"), with prepared_timeout (seconds) when
// Txn.PreparedTimeout > 0.
func (c *Client) Prepare(ctx context.Context, t Txn) (*Reply, error) {
	return c.control(ctx, OpPrepare, t)
}

// Commit is POST /api/transaction/commit. A failure is ClassAmbiguous
// (decide by LoadState/WaitFinal) unless the reply shows a data abort
// (ClassPerTxn), TXN_IN_PROCESSING (ClassRetrySafe) or an authentication
// failure (ClassFatal).
func (c *Client) Commit(ctx context.Context, t Txn) (*Reply, error) {
	return c.control(ctx, OpCommit, t)
}

// Rollback is POST /api/transaction/rollback; failures are ClassTransient.
func (c *Client) Rollback(ctx context.Context, t Txn) (*Reply, error) {
	return c.control(ctx, OpRollback, t)
}

// Load sends one body: PUT /api/transaction/load with label, db, table,
// transaction_type (multi), the data headers, Expect: 100-continue, an
// explicit Content-Length and, with Config.Compression, the compressed body.
func (c *Client) Load(ctx context.Context, r LoadRequest) (*Reply, error) {
	h, err := txnHeaders(OpLoad, r.Txn, true)
	if err != nil {
		return nil, err
	}
	body, err := c.addData(OpLoad, h, r.Headers, r.Body)
	if err != nil {
		return nil, &Error{Op: OpLoad, DB: r.DB, Table: r.Table, Label: r.Label, Class: ClassFatal, Err: err}
	}
	return c.do(ctx, &call{
		op: OpLoad, method: http.MethodPut, path: "/api/transaction/load", header: h,
		body: body, withBody: true, refs: r.Refs, db: r.DB, table: r.Table, label: r.Label,
	})
}

// StreamLoad is a plain (auto-committing) stream load:
// PUT /api/{db}/{table}/_stream_load with the data headers and, when set,
// the label. Txn.Multi is ignored.
func (c *Client) StreamLoad(ctx context.Context, r LoadRequest) (*Reply, error) {
	if err := ValidateName("database", r.DB); err != nil {
		return nil, invalid(OpStreamLoad, ClassPerTxn, err)
	}
	if err := ValidateName("table", r.Table); err != nil {
		return nil, &Error{Op: OpStreamLoad, DB: r.DB, Class: ClassPerTxn, Err: err}
	}
	h := make(http.Header, 8)
	if r.Label != "" {
		if err := ValidateLabel(r.Label); err != nil {
			return nil, invalid(OpStreamLoad, ClassFatal, err)
		}
		setRaw(h, "label", r.Label)
	}
	body, err := c.addData(OpStreamLoad, h, r.Headers, r.Body)
	if err != nil {
		return nil, &Error{Op: OpStreamLoad, DB: r.DB, Table: r.Table, Label: r.Label, Class: ClassFatal, Err: err}
	}
	return c.do(ctx, &call{
		op: OpStreamLoad, method: http.MethodPut, path: "/api/" + r.DB + "/" + r.Table + "/_stream_load",
		header: h, body: body, withBody: true, refs: r.Refs, db: r.DB, table: r.Table, label: r.Label,
	})
}

// reservedHeaders are set by the client; a data header may not override them.
var reservedHeaders = map[string]bool{
	"label": true, "db": true, "table": true, "transaction_type": true,
	"authorization": true, "expect": true, "content-length": true, "content-type": true,
	"host": true, "transfer-encoding": true, "connection": true,
}

// addData validates the data headers, adds them with the load framing
// headers to h and returns the body to send (compressed when configured).
func (c *Client) addData(op string, h http.Header, data map[string]string, body []byte) ([]byte, error) {
	formatKey := ""
	for k, v := range data {
		lk := strings.ToLower(k)
		switch {
		case !validHeaderName(k):
			return nil, fmt.Errorf("%s header %q: not a valid HTTP header name", op, k)
		case reservedHeaders[lk]:
			return nil, fmt.Errorf("%s header %q is set by the client and cannot be given as a data header", op, k)
		case c.compression != "" && (lk == "compression" || lk == "content-encoding"):
			return nil, fmt.Errorf("%s header %q conflicts with compression %q: StarRocks accepts only one of content-encoding and compression", op, k, c.compression)
		}
		if i := strings.IndexFunc(v, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }); i >= 0 {
			return nil, fmt.Errorf("%s header %q: value has a control character at byte %d (CR/LF are not allowed in headers)", op, k, i)
		}
		if lk == "format" {
			formatKey = k
		}
		setRaw(h, k, v)
	}
	if c.compression != "" {
		compressed, err := compressBody(c.compression, body)
		if err != nil {
			return nil, err
		}
		body = compressed
		if formatKey != "" && strings.EqualFold(data[formatKey], "json") {
			// JSON: the payload compression header (StarRocks ≥ 3.2.7).
			setRaw(h, "compression", c.compression)
		} else {
			// CSV: compressed CSV is its own format, as the Flink
			// connector sends it.
			if formatKey == "" {
				formatKey = "format"
			}
			setRaw(h, formatKey, csvCompressedFormat[c.compression])
		}
	}
	h.Set("Expect", "100-continue")
	h.Set("Content-Type", "application/octet-stream")
	return body, nil
}

var csvCompressedFormat = map[string]string{CompressionGzip: "gzip", CompressionLZ4: "lz4"}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0 {
			continue
		}
		return false
	}
	return true
}

// LoadState asks GET /api/{db}/get_load_state?label=L. A failure returns ""
// and a ClassTransient *Error (ClassFatal for authentication or an invalid
// label).
func (c *Client) LoadState(ctx context.Context, db, label string) (LabelState, error) {
	if err := ValidateName("database", db); err != nil {
		return "", invalid(OpLoadState, ClassFatal, err)
	}
	if err := ValidateLabel(label); err != nil {
		return "", invalid(OpLoadState, ClassFatal, err)
	}
	k := &call{
		op: OpLoadState, method: http.MethodGet, path: "/api/" + db + "/get_load_state",
		query: url.Values{"label": {label}}, header: make(http.Header), db: db, label: label,
	}
	rep, err := c.do(ctx, k)
	if err != nil {
		return "", err
	}
	state := strings.ToUpper(strings.TrimSpace(rep.Get("state")))
	if state == "" {
		return "", k.fail(ClassTransient, rep, fmt.Errorf("get_load_state reply has no state: %q", bodyPrefix(rep.Raw)))
	}
	return LabelState(state), nil
}

// pollDelays is the WaitFinal backoff; the last value repeats.
var pollDelays = []time.Duration{
	200 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second,
}

// WaitFinal polls get_load_state (backoff 0.2 s, 0.5 s, 1 s, 2 s, 4 s, then
// every 5 s) until the state is final (COMMITTED, VISIBLE, ABORTED), maxWait
// has passed or ctx ends. It returns the last state seen ("" if none) with a
// nil error when the last query succeeded, else with that query's error (or
// the context's). A Fatal error (authentication) stops at once.
func (c *Client) WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (LabelState, error) {
	deadline := time.Now().Add(maxWait)
	var last LabelState
	for attempt := 0; ; attempt++ {
		state, err := c.LoadState(ctx, db, label)
		if err == nil {
			last = state
			if state.Final() {
				return state, nil
			}
		} else if ClassOf(err) == ClassFatal || ctx.Err() != nil {
			return last, err
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return last, err
		}
		wait := min(pollDelays[min(attempt, len(pollDelays)-1)], remaining)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return last, fmt.Errorf("waiting for label %s to be final: %w", label, ctx.Err())
		case <-timer.C:
		}
	}
}

// Cancel aborts a transaction by label: POST /api/{db}/{label}/_cancel (the
// FE cancel API; a fallback when rollback cannot reach a lingering PREPARE
// transaction).
func (c *Client) Cancel(ctx context.Context, db, label string) error {
	if err := ValidateName("database", db); err != nil {
		return invalid(OpCancel, ClassFatal, err)
	}
	if err := ValidateLabel(label); err != nil {
		return invalid(OpCancel, ClassFatal, err)
	}
	_, err := c.do(ctx, &call{
		op: OpCancel, method: http.MethodPost, path: "/api/" + db + "/" + label + "/_cancel",
		header: make(http.Header), db: db, label: label,
	})
	return err
}
