package starrocks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults for zero Config fields.
const (
	DefaultMaxRedirects          = 3
	DefaultConnectTimeout        = 30 * time.Second
	DefaultExpectContinueTimeout = 3 * time.Second
	DefaultMaxIdleConnsPerHost   = 32

	idleConnTimeout = 90 * time.Second
	tcpKeepAlive    = 30 * time.Second
	// maxReplyBytes bounds how much of a reply is read; StarRocks replies
	// are a few hundred bytes.
	maxReplyBytes = 4 << 20
	// drainBytes is how much of an unread body is discarded so the
	// connection can be reused; larger leftovers close it instead.
	drainBytes = 64 << 10
)

// Errors of redirect handling, matched with errors.Is.
var (
	ErrRedirectLoop     = errors.New("redirect loop")
	ErrTooManyRedirects = errors.New("too many redirects")
)

// Client talks to StarRocks FEs over HTTP. It is safe for concurrent use.
type Client struct {
	cfg          Config
	bases        []*url.URL
	compression  string
	maxRedirects int
	auth         string
	transport    *http.Transport
	http         *http.Client
	// preferred is the index of the load URL that answered last.
	preferred atomic.Int32
}

// New validates cfg and builds a Client: at least one http(s) load URL
// without credentials, query or fragment; a known compression; no negative
// durations. Zero fields take the Default* values.
func New(cfg Config) (*Client, error) {
	if len(cfg.LoadURLs) == 0 {
		return nil, errors.New("starrocks client: at least one load URL is required (an FE HTTP address such as http://fe:8030)")
	}
	c := &Client{cfg: cfg}
	for i, raw := range cfg.LoadURLs {
		u, err := parseLoadURL(raw)
		if err != nil {
			return nil, fmt.Errorf("starrocks client: load URL %d: %w", i+1, err)
		}
		c.bases = append(c.bases, u)
	}
	var err error
	if c.compression, err = normalizeCompression(cfg.Compression); err != nil {
		return nil, fmt.Errorf("starrocks client: %w", err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"connect timeout", cfg.ConnectTimeout},
		{"request timeout", cfg.RequestTimeout},
		{"expect-continue timeout", cfg.ExpectContinueTimeout},
	} {
		if d.v < 0 {
			return nil, fmt.Errorf("starrocks client: %s must not be negative, got %s", d.name, d.v)
		}
	}
	switch {
	case cfg.MaxRedirects < 0:
		return nil, fmt.Errorf("starrocks client: max redirects must not be negative, got %d", cfg.MaxRedirects)
	case cfg.MaxRedirects == 0:
		c.maxRedirects = DefaultMaxRedirects
	default:
		c.maxRedirects = cfg.MaxRedirects
	}
	if cfg.MaxIdleConnsPerHost < 0 {
		return nil, fmt.Errorf("starrocks client: max idle connections per host must not be negative, got %d", cfg.MaxIdleConnsPerHost)
	}
	connectTimeout := orDefault(cfg.ConnectTimeout, DefaultConnectTimeout)
	dialer := &net.Dialer{Timeout: connectTimeout, KeepAlive: tcpKeepAlive}
	c.transport = &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       cfg.TLS.Clone(),
		TLSHandshakeTimeout:   connectTimeout,
		ExpectContinueTimeout: orDefault(cfg.ExpectContinueTimeout, DefaultExpectContinueTimeout),
		MaxIdleConnsPerHost:   orDefault(cfg.MaxIdleConnsPerHost, DefaultMaxIdleConnsPerHost),
		IdleConnTimeout:       idleConnTimeout,
		// Replies are tiny JSON documents; no transparent decoding.
		DisableCompression: true,
	}
	c.http = &http.Client{
		Transport: c.transport,
		// Redirects are followed by hand (see attempt): net/http drops
		// Authorization when the host changes (FE → BE always does).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if cfg.Username != "" || cfg.Password != "" {
		c.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(cfg.Username+":"+cfg.Password))
	}
	return c, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func parseLoadURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole input, credentials included: keep only
		// what follows the last '@'.
		shown := raw
		if at := strings.LastIndexByte(shown, '@'); at >= 0 {
			shown = "…@" + shown[at+1:]
		}
		return nil, fmt.Errorf("%q is not a valid URL; use http://host:8030", shown)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q: scheme must be http or https (e.g. http://fe:8030)", u.Redacted())
	case u.Host == "":
		return nil, fmt.Errorf("%q: no host (e.g. http://fe:8030)", u.Redacted())
	case u.User != nil:
		return nil, fmt.Errorf("%q: credentials in the URL are not allowed; set username and password instead", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%q: a load URL takes no query or fragment", u.Redacted())
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// call is one logical request, possibly sent to several URLs and hops.
type call struct {
	op       string
	method   string
	path     string
	query    url.Values
	header   http.Header
	body     []byte
	withBody bool
	db       string
	table    string
	label    string
}

func (k *call) fail(class Class, rep *Reply, err error) *Error {
	e := &Error{Op: k.op, DB: k.db, Table: k.table, Label: k.label, Class: class, Err: err}
	if rep != nil {
		e.HTTPCode = rep.HTTPCode
		e.Status = rep.Status()
		e.Message = rep.Message()
	}
	return e
}

// invalid is a request rejected before it was sent. The offending value is
// named (quoted) in err; fields are left empty so no raw control character
// reaches a log through Error().
func invalid(op string, class Class, err error) *Error {
	return &Error{Op: op, Class: class, Err: err}
}

// setRaw sets a header under exactly the given (lower-case) name, as the
// StarRocks docs and curl examples spell them.
func setRaw(h http.Header, key, value string) { h[key] = []string{value} }

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
// operation: TXN_PREPARE").
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
		body: body, withBody: true, db: r.DB, table: r.Table, label: r.Label,
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
		header: h, body: body, withBody: true, db: r.DB, table: r.Table, label: r.Label,
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

// do sends k to the preferred load URL and fails over, in order, to the
// others on connection errors and 5xx replies. A logical reply never fails
// over. The URL that gave the final answer becomes the preferred one.
func (c *Client) do(ctx context.Context, k *call) (*Reply, error) {
	if c.auth != "" {
		k.header.Set("Authorization", c.auth)
	}
	n := len(c.bases)
	start := int(c.preferred.Load())
	var (
		rep *Reply
		err error
	)
	for i := range n {
		idx := (start + i) % n
		rep, err = c.attempt(ctx, c.bases[idx], k)
		if ctx.Err() != nil {
			break
		}
		if !failOver(k, rep, err) {
			c.preferred.Store(int32(idx))
			break
		}
		if i == n-1 && n > 1 && err != nil {
			err = fmt.Errorf("all %d load URLs failed, the last with: %w", n, err)
		}
	}
	return c.result(k, rep, err)
}

// failOver reports whether another FE should be tried: the connection could
// not be made (nothing was sent), or the server answered 5xx. A load is not
// re-sent after 502/504: a gateway may have forwarded its body before it
// gave up, and a second copy in the same transaction would duplicate rows
// of a DUPLICATE KEY table.
func failOver(k *call, rep *Reply, err error) bool {
	if err != nil {
		return isConnError(err)
	}
	if k.withBody && (rep.HTTPCode == http.StatusBadGateway || rep.HTTPCode == http.StatusGatewayTimeout) {
		return false
	}
	return rep.HTTPCode >= 500 && rep.HTTPCode < 600
}

// isConnError reports errors that happen before a request is sent: dialing,
// name resolution, a refused connection or a failed TLS handshake.
func isConnError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || isTLSSetupError(err)
}

// isTLSSetupError reports a TLS handshake that failed on the certificate or
// on a peer that does not speak TLS: configuration only an operator fixes.
func isTLSSetupError(err error) bool {
	var cert *tls.CertificateVerificationError
	var rec tls.RecordHeaderError
	var unknownCA x509.UnknownAuthorityError
	var host x509.HostnameError
	return errors.As(err, &cert) || errors.As(err, &rec) || errors.As(err, &unknownCA) || errors.As(err, &host)
}

// result turns the outcome into (*Reply, *Error).
func (c *Client) result(k *call, rep *Reply, err error) (*Reply, error) {
	if err != nil {
		class := Classify(k.op, 0, "", "", "")
		if isTLSSetupError(err) {
			// Nothing was sent, and retrying will not fix a certificate.
			class = ClassFatal
		}
		return nil, k.fail(class, nil, err)
	}
	if rep.parseErr != nil {
		return rep, k.fail(Classify(k.op, rep.HTTPCode, "", "", ""), rep, rep.parseErr)
	}
	class := Classify(k.op, rep.HTTPCode, rep.Status(), rep.Message(), rep.Get("ExistingJobStatus"))
	if class == ClassOK {
		return rep, nil
	}
	var detail error
	if rep.Status() == "" {
		detail = fmt.Errorf("reply has no Status (HTTP %d; StarRocks before 2.4 has no transaction interface): %q", rep.HTTPCode, bodyPrefix(rep.Raw))
	}
	return rep, k.fail(class, rep, detail)
}

// attempt sends k to one load URL and follows 307/308 redirects by hand,
// re-sending the method, every header (Authorization included) and the
// body. It returns the final reply, or an error when no reply was obtained.
func (c *Client) attempt(ctx context.Context, base *url.URL, k *call) (*Reply, error) {
	if c.cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	target := *base
	target.Path = base.Path + k.path
	target.RawQuery = k.query.Encode()
	u := &target
	seen := map[string]bool{u.String(): true}
	for hops := 0; ; hops++ {
		var body io.Reader
		if k.withBody {
			body = bytes.NewReader(k.body)
		}
		req, err := http.NewRequestWithContext(ctx, k.method, u.String(), body)
		if err != nil {
			return nil, fmt.Errorf("building %s request: %w", k.op, err)
		}
		req.Header = k.header.Clone()
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusTemporaryRedirect || resp.StatusCode == http.StatusPermanentRedirect {
			loc := resp.Header.Get("Location")
			discard(resp)
			if loc == "" {
				return nil, fmt.Errorf("HTTP %d from %s has no Location header", resp.StatusCode, u.Redacted())
			}
			next, err := u.Parse(loc)
			if err != nil {
				return nil, fmt.Errorf("following redirect from %s: bad Location: %w", u.Redacted(), err)
			}
			next.User = nil
			if hops >= c.maxRedirects {
				return nil, fmt.Errorf("following redirects from %s to %s: %w (limit %d)", target.Redacted(), next.Redacted(), ErrTooManyRedirects, c.maxRedirects)
			}
			if seen[next.String()] {
				return nil, fmt.Errorf("following redirects from %s: %w: %s was already visited", target.Redacted(), ErrRedirectLoop, next.Redacted())
			}
			seen[next.String()] = true
			u = next
			continue
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
		discard(resp)
		if err != nil {
			return nil, fmt.Errorf("reading %s reply from %s: %w", k.op, u.Redacted(), err)
		}
		rep, perr := parseReply(resp.StatusCode, raw)
		rep.parseErr = perr
		return rep, nil
	}
}

// discard drains (a bounded amount of) the body so the connection can be
// reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainBytes))
	_ = resp.Body.Close()
}
