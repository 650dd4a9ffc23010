package starrocks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Probing: before a caller relies on the FEs it asks each load URL one cheap,
// authenticated question, and tells an error that only an operator can fix
// (a refused password, a host name that does not resolve, a certificate, a
// database that does not exist) from one that may pass (an FE that is down
// or restarting).

// probeLabel is the label a probe asks the state of. No transaction carries
// it (labels of the output have a writer and a number), so a healthy FE
// answers UNKNOWN.
const probeLabel = "starrocks_txn_probe"

// probeDatabase is the database a probe names when the caller has none: it
// exists on every StarRocks FE, and a reply about it, whatever it says,
// proves the credentials were accepted.
const probeDatabase = "information_schema"

// DefaultProbeTimeout bounds one probe of one load URL when the caller's
// context has no deadline.
const DefaultProbeTimeout = 10 * time.Second

// Cause says why a probe failed.
type Cause int

const (
	// CauseUnreachable: no answer (refused, reset, timed out, a temporary
	// DNS failure) or a 5xx. It may pass: the FE may be starting.
	CauseUnreachable Cause = iota
	// CauseUnknownHost: the host name does not resolve (NXDOMAIN).
	CauseUnknownHost
	// CauseTLS: the TLS handshake failed on the certificate, or one side
	// does not speak TLS (an https URL to an http port or the reverse).
	CauseTLS
	// CauseAuth: the credentials were refused (HTTP 401/403, "Access
	// denied"), or the user may not use the database.
	CauseAuth
	// CauseNoDatabase: the database does not exist.
	CauseNoDatabase
	// CauseNotFE: something answered, but not as a StarRocks FE (a BE, a
	// proxy's error page, another service).
	CauseNotFE
	// CauseInsecureRedirect: the FE redirected from https to http
	// (ErrInsecureRedirect).
	CauseInsecureRedirect
	// CauseRedirect: a redirect loop or too many hops.
	CauseRedirect
	// CauseWrongPort: the address speaks another protocol than the one
	// asked for: a load URL that is an FE's MySQL port, a MySQL address
	// that is an HTTP port (wrongport.go).
	CauseWrongPort
	// CauseAuthPlugin: the MySQL server asked for an authentication
	// plugin the client does not use, or may not (the clear-text one of
	// LDAP accounts, unless allowed): see AuthPluginError.
	CauseAuthPlugin
)

func (c Cause) String() string {
	switch c {
	case CauseUnreachable:
		return "unreachable"
	case CauseUnknownHost:
		return "unknown host"
	case CauseTLS:
		return "tls"
	case CauseAuth:
		return "authentication"
	case CauseNoDatabase:
		return "no such database"
	case CauseNotFE:
		return "not a StarRocks FE"
	case CauseInsecureRedirect:
		return "insecure redirect"
	case CauseRedirect:
		return "redirect"
	case CauseWrongPort:
		return "wrong port"
	case CauseAuthPlugin:
		return "authentication plugin"
	}
	return fmt.Sprintf("cause(%d)", int(c))
}

// Definite reports whether retrying cannot help until an operator changes
// the configuration or the cluster: every cause but CauseUnreachable and
// CauseRedirect. A redirect loop or chain is retried: it is also what a
// proxy or an FE in the middle of a change of its nodes answers for a
// moment, and a pipeline must not stop on a moment's answer (max_retries
// bounds the retries for those who want it to).
func (c Cause) Definite() bool { return c != CauseUnreachable && c != CauseRedirect }

// Shared reports whether a definite cause concerns every FE alike: the
// credentials (and the authentication plugin of the account) and the
// database live in the cluster's catalog, which all FEs share, so one FE's
// refusal is every FE's. The other definite causes concern one address (a
// proxy or a BE in the list, a name that does not resolve, a certificate, a
// port of the wrong kind), and another load URL may still be an FE that
// answers.
func (c Cause) Shared() bool { return c == CauseAuth || c == CauseNoDatabase || c == CauseAuthPlugin }

// ProbeError is the failed probe of one address.
type ProbeError struct {
	// Addr is the load URL (or MySQL address) probed, without credentials.
	Addr  string
	Cause Cause
	Err   error
}

func (e *ProbeError) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Addr, e.Cause, e.Err)
}

func (e *ProbeError) Unwrap() error { return e.Err }

// ProbeReport is the outcome of probing every load URL.
type ProbeReport struct {
	// OK lists the load URLs that answered as healthy FEs.
	OK []string
	// Failed holds one error per other load URL, in the configured order.
	Failed []*ProbeError
}

// Definite returns the first failure no retry can cure, or nil: a failure
// every FE shares (Cause.Shared) whatever the other load URLs answered, and
// a failure of one address only when no load URL answered. A load URL that
// fails so while another answers is the caller's to report (Failed); the
// client sends its requests to those that answered (Client.Probe).
func (r ProbeReport) Definite() *ProbeError {
	for _, f := range r.Failed {
		if f.Cause.Definite() && (f.Cause.Shared() || len(r.OK) == 0) {
			return f
		}
	}
	return nil
}

// Probe asks every load URL, one after the other and without failing over,
// for the state of a label nobody uses in db (GET
// /api/{db}/get_load_state): an authenticated request that follows the
// redirect to the leader FE, answers 401 for refused credentials and
// "unknown database" for a database that does not exist, and changes
// nothing. With db empty the database is not checked. The credentials,
// TLS settings and redirect rules are the client's own.
//
// A load URL that failed with a definite cause of its own (not an FE, a
// name that does not resolve, TLS) while another answered is set aside: the
// client's requests go to the others, and it is tried only when none of
// them can be reached, until a later probe finds it healthy (Client.do).
func (c *Client) Probe(ctx context.Context, db string) ProbeReport {
	checkDB := db != ""
	if !checkDB {
		db = probeDatabase
	}
	var r ProbeReport
	unusable := make([]bool, len(c.bases))
	for i, base := range c.bases {
		err := c.probeOne(ctx, base, db, checkDB)
		if err == nil {
			r.OK = append(r.OK, shownURL(base))
			continue
		}
		r.Failed = append(r.Failed, err)
		unusable[i] = err.Cause.Definite() && !err.Cause.Shared()
	}
	if ctx.Err() == nil && len(r.OK) > 0 {
		for i := range c.bases {
			c.unusable[i].Store(unusable[i])
		}
	}
	return r
}

func (c *Client) probeOne(ctx context.Context, base *url.URL, db string, checkDB bool) *ProbeError {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultProbeTimeout)
		defer cancel()
	}
	k := &call{
		op: OpLoadState, method: http.MethodGet, db: db, label: probeLabel,
		path:   "/api/" + url.PathEscape(db) + "/get_load_state",
		query:  url.Values{"label": {probeLabel}},
		header: http.Header{},
	}
	if c.auth != "" {
		k.header.Set("Authorization", c.auth)
	}
	fail := func(cause Cause, err error) *ProbeError {
		return &ProbeError{Addr: shownURL(base), Cause: cause, Err: err}
	}
	rep, err := c.attempt(ctx, base, k)
	if err != nil {
		if cause, werr, ok := wrongPortHTTP(base, err); ok {
			return fail(cause, werr)
		}
		cause := transportCause(err)
		if cause == CauseUnreachable && !isConnError(err) && ctx.Err() == nil && greetsWithMySQL(ctx, hostPort(base)) {
			// Connected, but no HTTP reply: a server that speaks first.
			return fail(CauseWrongPort, msgMySQLPort(base))
		}
		return fail(cause, err)
	}
	code := rep.HTTPCode
	switch {
	case httpsPortReply(code, rep.Raw):
		return fail(CauseTLS, fmt.Errorf("it answers with TLS: write the load URL with https:// (and set the tls block), or give the FE's plain HTTP port (%s by default): HTTP %d: %s", defaultHTTPPort, code, replyText(rep)))
	case code == http.StatusNotFound && base.Path != "":
		return fail(CauseNotFE, fmt.Errorf("HTTP 404 to GET %s: %s: the load URL has the path %q, and an FE serves its API at the root: write it without a path (http://host:%s), unless a proxy serves the FE under that path", base.Path+k.path, replyText(rep), base.Path, defaultHTTPPort))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		if !checkDB && strings.Contains(strings.ToLower(rep.Message()), "privilege") {
			// The password was accepted; the user may not read the
			// placeholder database (enable_http_auth), which is not ours.
			return nil
		}
		return fail(CauseAuth, fmt.Errorf("HTTP %d: %s", code, replyText(rep)))
	case code >= 500:
		return fail(CauseUnreachable, fmt.Errorf("HTTP %d: %s", code, replyText(rep)))
	case code < 200 || code > 299:
		return fail(CauseNotFE, fmt.Errorf("HTTP %d to GET %s: %s (a load URL must be the HTTP port of an FE, 8030 by default)", code, k.path, replyText(rep)))
	case rep.parseErr != nil:
		return fail(CauseNotFE, rep.parseErr)
	case rep.Status() == "":
		return fail(CauseNotFE, fmt.Errorf("the reply to GET %s has no status: %q", k.path, bodyPrefix(rep.Raw)))
	case strings.EqualFold(rep.Status(), "OK"):
		return nil
	}
	msg := rep.Message()
	switch {
	case !checkDB:
		// Any logical answer about the placeholder proves the FE and
		// the credentials.
		return nil
	case IsUnknownDatabase(errors.New(msg)):
		return fail(CauseNoDatabase, fmt.Errorf("the database %s does not exist: %s", db, msg))
	case strings.Contains(strings.ToLower(msg), "access denied"):
		return fail(CauseAuth, errors.New(msg))
	}
	return fail(CauseUnreachable, fmt.Errorf("status %s: %s", rep.Status(), msg))
}

// replyText is the message of a reply, or the first bytes of its body.
func replyText(rep *Reply) string {
	if m := rep.Message(); m != "" {
		return m
	}
	return fmt.Sprintf("%q", bodyPrefix(rep.Raw))
}

// transportCause classifies an error that left no reply.
func transportCause(err error) Cause {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return CauseUnknownHost
	case isTLSSetupError(err):
		return CauseTLS
	case errors.Is(err, ErrInsecureRedirect):
		return CauseInsecureRedirect
	case errors.Is(err, ErrRedirectLoop), errors.Is(err, ErrTooManyRedirects):
		return CauseRedirect
	}
	return CauseUnreachable
}
