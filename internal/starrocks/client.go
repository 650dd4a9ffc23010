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
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/redact"
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
	// ErrInsecureRedirect is a 307/308 from an https URL to an http one,
	// refused unless Config.AllowInsecureRedirect: following it would send
	// the credentials and the rows in clear.
	ErrInsecureRedirect = errors.New("redirect from https to http refused")
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
	// unusable marks, per load URL, one the last probe found unusable by a
	// cause of its own while another answered (Probe): requests go to it
	// only when no other can be reached, and it is never preferred.
	unusable []atomic.Bool
	// health, when set, is told after each request whether StarRocks
	// answered it (SetHealthObserver).
	health atomic.Pointer[func(healthy bool)]
	// bounds holds a callBound per operation and table (boundKey): a
	// request gets Config.RequestTimeout, or more after requests of its
	// kind ran out of it, so that a StarRocks that answers every load of a
	// table (or every commit of a database) slower than RequestTimeout — a
	// large body on a busy BE — is answered after a few replays instead of
	// never. Per operation and table: the quick rollback and begin between
	// two slow loads, and another database's quick loads, do not shrink a
	// slow table's bound; and per body size class within (callBound): the
	// table's quick small loads do not shrink the bound of its big ones.
	bounds callBounds
}

// bound is the callBound of op on db.table (table empty for operations of
// a whole transaction or database).
func (c *Client) bound(op, db, table string) *callBound {
	return c.bounds.get(op + "\x00" + db + "\x00" + table)
}

// SetHealthObserver makes the client call fn after every request it did not
// give up because of the caller's context: healthy is true when an FE (or
// the BE it redirected to) answered with accepted credentials, whatever the
// answer said, and false when no load URL could be reached, every one
// answered 5xx, or the credentials were refused. fn must be cheap and safe
// for concurrent calls.
func (c *Client) SetHealthObserver(fn func(healthy bool)) { c.health.Store(&fn) }

func (c *Client) observe(ctx context.Context, rep *Reply, err error) {
	fn := c.health.Load()
	if fn == nil || ctx.Err() != nil {
		return
	}
	healthy := err == nil && rep != nil && rep.HTTPCode < 500 &&
		rep.HTTPCode != http.StatusUnauthorized && rep.HTTPCode != http.StatusForbidden
	(*fn)(healthy)
}

// New validates cfg and builds a Client: at least one http(s) load URL
// without credentials, query or fragment; a known compression; no negative
// durations. Zero fields take the Default* values.
func New(cfg Config) (*Client, error) {
	if len(cfg.LoadURLs) == 0 {
		return nil, errors.New("starrocks client: at least one load URL is required (an FE HTTP address such as http://fe:8030)")
	}
	c := &Client{cfg: cfg, bounds: callBounds{base: cfg.RequestTimeout}}
	for i, raw := range cfg.LoadURLs {
		u, err := parseLoadURL(raw)
		if err != nil {
			return nil, fmt.Errorf("starrocks client: load URL %d: %w", i+1, err)
		}
		c.bases = append(c.bases, u)
	}
	c.unusable = make([]atomic.Bool, len(c.bases))
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
		// The hop net/http prepared is never sent: its body (a reader
		// GetBody made, which LoadRequest.Refs counts) is closed here, as
		// net/http would leave it open.
		CheckRedirect: func(next *http.Request, _ []*http.Request) error {
			if next.Body != nil {
				_ = next.Body.Close()
			}
			return http.ErrUseLastResponse
		},
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
		// url.Parse quotes the whole input, credentials included: the
		// error is not wrapped.
		return nil, fmt.Errorf("%q is not a valid URL; use http://host:8030", redact.URL(raw))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q: scheme must be http or https (e.g. http://fe:8030)", shownURL(u))
	case u.Host == "":
		return nil, fmt.Errorf("%q: no host (e.g. http://fe:8030)", shownURL(u))
	case u.User != nil:
		return nil, fmt.Errorf("%q: credentials in the URL are not allowed; set username and password instead", shownURL(u))
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%q: a load URL takes no query or fragment", shownURL(u))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// shownURL is u as logs and errors show it: without userinfo (URL.Redacted
// would keep the user name).
func shownURL(u *url.URL) string { return redact.URL(u.String()) }

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
	// refs, when set, counts the readers of body net/http holds
	// (LoadRequest.Refs).
	refs  BodyRefs
	db    string
	table string
	label string
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

// do sends k to the preferred load URL and fails over, in order, to the
// others only while the outcome is definitely "not applied" (failOver). Any
// other outcome is the caller's: a logical reply, and equally an ambiguous
// one (a reset or timeout after the request was sent, a 5xx), which the
// caller settles under the same label or by replaying under a new one. The
// URL that gave the final answer becomes the preferred one, except that an
// ambiguous outcome moves the preference to the next URL, so the caller's
// next request (its replay) goes to another FE. URLs a probe set aside
// (Probe) come last and are never preferred.
func (c *Client) do(ctx context.Context, k *call) (*Reply, error) {
	if c.auth != "" {
		k.header.Set("Authorization", c.auth)
	}
	n := len(c.bases)
	order := c.order(int(c.preferred.Load()))
	var (
		rep *Reply
		err error
	)
	for i, idx := range order {
		rep, err = c.attempt(ctx, c.bases[idx], k)
		if ctx.Err() != nil {
			break
		}
		if !failOver(k, rep, err) {
			c.prefer(idx, n > 1 && unsettled(rep, err))
			break
		}
		if i == n-1 && n > 1 && err != nil {
			err = fmt.Errorf("all %d load URLs failed, the last with: %w", n, err)
		}
	}
	c.observe(ctx, rep, err)
	return c.result(k, rep, err)
}

// order is the order in which a request tries the load URLs: from start
// on, those a probe did not set aside first, then the others.
func (c *Client) order(start int) []int {
	n := len(c.bases)
	order := make([]int, 0, n)
	for pass := range 2 {
		for i := range n {
			idx := (start + i) % n
			if c.unusable[idx].Load() == (pass == 1) {
				order = append(order, idx)
			}
		}
	}
	return order
}

// prefer makes the URL that gave a request its final answer the next
// request's first, or the URL after it when the outcome settled nothing
// (moveOn), skipping URLs a probe set aside: a URL that answered only
// because every other one could not be reached is not preferred.
func (c *Client) prefer(idx int, moveOn bool) {
	n := len(c.bases)
	if !moveOn {
		if !c.unusable[idx].Load() {
			c.preferred.Store(int32(idx))
		}
		return
	}
	for i := 1; i < n; i++ {
		if next := (idx + i) % n; !c.unusable[next].Load() {
			c.preferred.Store(int32(next))
			return
		}
	}
	if c.unusable[idx].Load() {
		c.preferred.Store(int32((idx + 1) % n))
	}
}

// failOver reports whether the same request may be sent to another FE: only
// when the first one definitely did not act on it, because no connection
// was made (dial, name resolution, a refused connection, a failed TLS
// handshake: nothing was sent). A reset or timeout after the request was
// written, or a 5xx (StarRocks answers every result, failures included,
// with HTTP 200 — docs/notes/starrocks-protocol.md §1.4 — so a 5xx comes from
// a proxy or a dying process, and a proxy such as Envoy answers 503 when the
// FE reset the connection after it had applied the request), may mean the
// request was applied: a second copy of a load in the same transaction
// doubles its rows, a second begin or commit races the first. Those go back
// to the caller as they are. get_load_state only reads, so it also fails over
// on those.
func failOver(k *call, rep *Reply, err error) bool {
	if err != nil {
		return isConnError(err) || k.op == OpLoadState
	}
	return k.op == OpLoadState && rep.HTTPCode >= 500 && rep.HTTPCode < 600
}

// unsettled reports an outcome that says nothing about whether the request
// was applied: no reply at all, or a 5xx.
func unsettled(rep *Reply, err error) bool {
	return err != nil || rep.HTTPCode >= 500
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
// on a peer that does not speak TLS (net/http reports an https URL to a
// plain-HTTP port as ErrSchemeMismatch): configuration only an operator
// fixes.
func isTLSSetupError(err error) bool {
	var cert *tls.CertificateVerificationError
	var rec tls.RecordHeaderError
	var unknownCA x509.UnknownAuthorityError
	var host x509.HostnameError
	return errors.As(err, &cert) || errors.As(err, &rec) || errors.As(err, &unknownCA) || errors.As(err, &host) ||
		errors.Is(err, http.ErrSchemeMismatch)
}

// result turns the outcome into (*Reply, *Error).
func (c *Client) result(k *call, rep *Reply, err error) (*Reply, error) {
	if err != nil {
		class := Classify(k.op, 0, "", "", "")
		if isTLSSetupError(err) || errors.Is(err, ErrInsecureRedirect) {
			// Nothing was sent (or acted on), and retrying will not fix a
			// certificate or a refused downgrade.
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
// re-sending the method, every header (Authorization included: StarRocks
// authenticates the BE leg of a load too) and the body, to any host; a hop
// from https to http is refused (ErrInsecureRedirect) unless
// Config.AllowInsecureRedirect. It returns the final reply, or an error
// when no reply was obtained.
func (c *Client) attempt(ctx context.Context, base *url.URL, k *call) (rep *Reply, err error) {
	// RequestTimeout, or more after requests of k's kind and body size ran
	// out of it (bounds); only a reply below 500 tells how long StarRocks
	// takes.
	ctx, end := c.bound(k.op, k.db, k.table).startSized(ctx, len(k.body))
	defer func() { end(err == nil && rep != nil && rep.HTTPCode < 500) }()
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
		if k.refs != nil && len(k.body) > 0 {
			countReaders(req, k.body, k.refs)
		}
		req.Header = k.header.Clone()
		resp, err := c.http.Do(req)
		if err != nil {
			// net/http quotes a Location it cannot parse, userinfo
			// included.
			return nil, redact.Error(err)
		}
		if resp.StatusCode == http.StatusTemporaryRedirect || resp.StatusCode == http.StatusPermanentRedirect {
			loc := resp.Header.Get("Location")
			discard(resp)
			if loc == "" {
				return nil, fmt.Errorf("HTTP %d from %s has no Location header", resp.StatusCode, shownURL(u))
			}
			next, err := u.Parse(loc)
			if err != nil {
				// The parse error quotes the Location, userinfo included.
				return nil, fmt.Errorf("following redirect from %s: bad Location: %w", shownURL(u), redact.Error(err))
			}
			next.User = nil
			if u.Scheme == "https" && next.Scheme == "http" && !c.cfg.AllowInsecureRedirect {
				// Nothing was sent to next: the server that redirected
				// did not act on the request.
				return nil, fmt.Errorf("%s redirected the %s request to %s: %w: it would send the credentials and the data without TLS (StarRocks FEs redirect to http:// whatever the scheme they were reached on)", shownURL(u), k.op, shownURL(next), ErrInsecureRedirect)
			}
			if hops >= c.maxRedirects {
				return nil, fmt.Errorf("following redirects from %s to %s: %w (limit %d)", shownURL(&target), shownURL(next), ErrTooManyRedirects, c.maxRedirects)
			}
			if seen[next.String()] {
				return nil, fmt.Errorf("following redirects from %s: %w: %s was already visited", shownURL(&target), ErrRedirectLoop, shownURL(next))
			}
			seen[next.String()] = true
			u = next
			continue
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
		discard(resp)
		if err != nil {
			return nil, fmt.Errorf("reading %s reply from %s: %w", k.op, shownURL(u), err)
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
