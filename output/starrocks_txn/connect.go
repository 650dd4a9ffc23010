package starrocks_txn

// Home of G15 (ARCHITECTURE.md §11.1): an error no retry fixes stops the start naming the field
// to fix; one that may pass is retried. Main test: TestConnectStopsOnDefiniteErrors.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/exitstatus"
	"github.com/starrocks-txn/benthos-starrocks/internal/shutdown"
	"github.com/starrocks-txn/benthos-starrocks/internal/specfields"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The connection to StarRocks: the fields that say how the output reaches
// the FE (and its MySQL port) beyond the addresses and credentials, the
// probes of Connect, what the output does when they fail, and the
// starrocks_txn_connected gauge.
//
// Benthos calls Connect until it returns nil, pausing ErrBackOff.Wait between
// attempts (docs/notes/benthos-semantics.md, the table of write errors), and
// its /ready endpoint answers 503 while Connect fails and 200 once it
// succeeded (v4.60.0 internal/component/output/async_writer.go,
// internal/stream/type.go). A Connect that returns service.ErrEndOfInput
// closes the output for good, which ends the stream. So: an error only an
// operator can fix makes Connect stop the output (and the binary exit with
// status 1, internal/exitstatus); an error that may pass makes Connect fail
// with a backoff, so /ready says not ready meanwhile; once
// connected, failures are retried inside the output as before (/ready stays
// ready, the gauge says 0).

const (
	fieldMySQLTLS              = "mysql_tls"
	fieldMySQLAllowCleartext   = "mysql_allow_cleartext_passwords"
	fieldAllowInsecureRedirect = "allow_insecure_redirect"
	fieldMaxRetries            = "max_retries"
	fieldMaxRetryDuration      = "max_retry_duration"
)

// connConfig is the part of the config this file parses.
type connConfig struct {
	// allowInsecureRedirect follows a redirect from an https load URL to
	// an http one (starrocks.Config.AllowInsecureRedirect).
	allowInsecureRedirect bool
	// maxRetries and maxRetryDuration bound how long Connect retries an
	// FE or MySQL port that does not answer (0: no limit).
	maxRetries       int
	maxRetryDuration time.Duration
	// mysqlTLS encrypts the MySQL connection (nil: plain).
	mysqlTLS *tls.Config
	// allowCleartext sends the password as is when the MySQL port asks
	// for it (mysql_clear_password: an LDAP account).
	allowCleartext bool
	// database and table are the targets when the database and table
	// fields are literals ("" when interpolated): the probes check the
	// database, and the metrics of the pair exist from the start.
	database, table string
}

func allowInsecureRedirectField() *service.ConfigField {
	return service.NewBoolField(fieldAllowInsecureRedirect).
		Description("Follow a redirect from an `https://` load URL to an `http://` one, re-sending the credentials. " +
			"Real FEs redirect every load to `http://<be_host>:<be_http_port>` (and a non-leader FE to `http://<leader>`), " +
			"whatever the scheme they were reached on, so with `https://` load URLs TLS protects only the request to the FE: " +
			"the credentials and the rows then cross the network to the BE in clear. Off, such a redirect fails with an error " +
			"that names this field; turn it on only when that network is trusted.").
		Example(true).
		Default(false).
		Advanced()
}

func mysqlTLSField() *service.ConfigField {
	return specfields.TLS(fieldMySQLTLS).
		Description("TLS for the MySQL-protocol connection of `" + fieldMySQLAddress + "` (StarRocks FEs serve it when `ssl_enable` is on). " +
			"When enabled, a server that does not offer TLS is refused rather than used in plain text. Independent of `" + fieldTLS + "`, which covers the HTTP load URLs.").
		Example(map[string]any{"enabled": true, "root_cas_file": "./starrocks_ca.pem"})
}

func mysqlAllowCleartextField() *service.ConfigField {
	return service.NewBoolField(fieldMySQLAllowCleartext).
		Description("Send the password of the MySQL connection of `" + fieldMySQLAddress + "` in clear text when the FE asks for it " +
			"(the `mysql_clear_password` plugin), as StarRocks does for an account that authenticates through LDAP " +
			"(`authentication_ldap_simple`). Off, such an account is refused at start with an error naming this field. " +
			"The password then crosses the network as it is unless `" + fieldMySQLTLS + "` is enabled, which is the safe way to use it; " +
			"without `" + fieldMySQLTLS + "` the output logs a warning at start, and the `lint` command warns.").
		Example(true).
		Default(false).
		Advanced()
}

func maxRetriesField() *service.ConfigField {
	return service.NewIntField(fieldMaxRetries).
		Description("How many times the output retries, at start, an FE (or MySQL port) that does not answer before it gives up " +
			"and stops, which stops the pipeline (the binary exits with status 1). 0: retry forever, as the default does. " +
			"Errors that no retry can fix (refused credentials, a database that does not exist, an address of the wrong kind of port; " +
			"a host name that does not resolve or a TLS handshake failure when no other load URL answers) stop the output at once whatever this says. Once the output has started, " +
			"failures are retried inside it without limit (it never drops or nacks data); watch `starrocks_txn_connected`.").
		Example(10).
		Default(0).
		Advanced()
}

func maxRetryDurationField() *service.ConfigField {
	return service.NewDurationField(fieldMaxRetryDuration).
		Description("How long the output keeps retrying, at start, an FE (or MySQL port) that does not answer before it gives up " +
			"and stops the pipeline, as `" + fieldMaxRetries + "` does by count. 0s: no limit.").
		Example("5m").
		Default("0s").
		Advanced()
}

// newStarRocksClient builds the HTTP client of the configuration.
func newStarRocksClient(c config) (*starrocks.Client, error) {
	cl, err := starrocks.New(starrocks.Config{
		LoadURLs:              c.loadURLs,
		Username:              c.username,
		Password:              c.password,
		TLS:                   c.tls,
		RequestTimeout:        c.requestTimeout,
		Compression:           c.compression,
		AllowInsecureRedirect: c.conn.allowInsecureRedirect,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the StarRocks client: %w", err)
	}
	return cl, nil
}

// openMeta opens the metadata client of mysql_address, its TLS, and a log
// of the driver's own messages through the output's logger (the driver's
// default is a process-wide logger to stderr): a discarded idle connection,
// which harms nothing, at debug level, the rest as warnings.
func openMeta(c config, log *service.Logger) (*starrocks.Meta, error) {
	if c.conn.allowCleartext && c.conn.mysqlTLS == nil {
		log.Warnf("%s is on without %s: the password of %s crosses the network in clear text whenever the FE asks for it (LDAP accounts); enable %s", fieldMySQLAllowCleartext, fieldMySQLTLS, fieldMySQLAddress, fieldMySQLTLS)
	}
	return starrocks.OpenMetaWith(starrocks.MetaConfig{
		Addr: c.mysqlAddress, User: c.username, Password: c.password, TLS: c.conn.mysqlTLS,
		AllowCleartextPasswords: c.conn.allowCleartext,
		Timeout:                 c.mysqlTimeout,
		Log: func(msg string, harmless bool) {
			if harmless {
				log.Debugf("MySQL driver (%s %s): %s", fieldMySQLAddress, c.mysqlAddress, msg)
				return
			}
			log.Warnf("MySQL driver (%s %s): %s", fieldMySQLAddress, c.mysqlAddress, msg)
		},
	})
}

func connConfigFromParsed(conf *service.ParsedConfig) (c connConfig, err error) {
	if c.allowInsecureRedirect, err = conf.FieldBool(fieldAllowInsecureRedirect); err != nil {
		return
	}
	if c.maxRetries, err = conf.FieldInt(fieldMaxRetries); err != nil {
		return
	}
	if c.maxRetries < 0 {
		return c, fmt.Errorf("%s must be 0 (no limit) or more, got %d", fieldMaxRetries, c.maxRetries)
	}
	if c.maxRetryDuration, err = durationField(conf, fieldMaxRetryDuration); err != nil {
		return
	}
	if c.maxRetryDuration < 0 {
		return c, fmt.Errorf("%s must be 0s (no limit) or more, got %s", fieldMaxRetryDuration, c.maxRetryDuration)
	}
	// A database that is not interpolated from the message is checked at
	// Connect.
	var tlsOn bool
	if c.mysqlTLS, tlsOn, err = conf.FieldTLSToggled(fieldMySQLTLS); err != nil {
		return
	}
	if !tlsOn {
		c.mysqlTLS = nil
	}
	if c.allowCleartext, err = conf.FieldBool(fieldMySQLAllowCleartext); err != nil {
		return
	}
	if c.database, err = literalName(conf, fieldDatabase); err != nil {
		return
	}
	c.table, err = literalName(conf, fieldTable)
	return
}

// literalName is the value of an interpolated name field that interpolates
// nothing, "" when it does (or is not a valid name).
func literalName(conf *service.ParsedConfig, field string) (string, error) {
	raw, err := conf.FieldString(field)
	if err != nil || strings.Contains(raw, "${!") || starrocks.ValidateName(field, raw) != nil {
		return "", err
	}
	return raw, nil
}

// connHint adds to a client error the field that fixes it, for the errors
// whose cause is the configuration of the connection. The class of err is
// kept (starrocks.ClassOf sees through the wrapping).
func connHint(err error) error {
	if errors.Is(err, starrocks.ErrInsecureRedirect) {
		return fmt.Errorf("%w; set %s: true to follow it (the rest of the way is not encrypted), or use http:// load URLs", err, fieldAllowInsecureRedirect)
	}
	return err
}

// prober is what Connect asks of the HTTP client: srClient has it, the
// fakes of the unit tests do not (their outputs connect at once).
type prober interface {
	Probe(ctx context.Context, db string) starrocks.ProbeReport
	SetHealthObserver(fn func(healthy bool))
}

func (s srClient) Probe(ctx context.Context, db string) starrocks.ProbeReport {
	return s.c.Probe(ctx, db)
}

func (s srClient) SetHealthObserver(fn func(healthy bool)) { s.c.SetHealthObserver(fn) }

// connection is the output's knowledge of whether StarRocks answers.
type connection struct {
	conf  connConfig
	user  string
	log   *service.Logger
	gauge *service.MetricGauge
	now   func() time.Time

	mu sync.Mutex
	// failures counts the consecutive failed Connect attempts, since
	// when the first of them failed; wait paces them.
	failures int
	since    time.Time
	wait     *backoff
	// owed is the backoff the next Connect waits before it probes: the
	// output waits itself, interruptibly (see connect), and asks Benthos
	// for almost none.
	owed time.Duration
	// stopping is closed once the process is asked to stop
	// (internal/shutdown).
	stopping <-chan struct{}
	// retryInitial and retryMax are retry_backoff's.
	retryInitial, retryMax time.Duration
	// stopped is Connect's answer once the output gave up.
	stopped error
	// modeChecked is set once the transaction mode was decided or checked
	// against the FE (checkMode).
	modeChecked bool
	// observing is set once the client reports its requests' health;
	// healthy is what it reported last.
	observing bool
	healthy   bool
}

func newConnection(c config, log *service.Logger, gauge *service.MetricGauge) *connection {
	return &connection{conf: c.conn, user: c.username, log: log, gauge: gauge, now: time.Now,
		wait: newBackoff(c.retryInitial, c.retryMax), retryInitial: c.retryInitial, retryMax: c.retryMax,
		stopping: shutdown.Signalled()}
}

// probeFailure is a failed probe with the field an operator would change.
type probeFailure struct {
	field string
	err   *starrocks.ProbeError
	// others are more failures of the same kind (other load URLs).
	others []*starrocks.ProbeError
}

func (f *probeFailure) Error() string {
	var b strings.Builder
	b.WriteString(f.err.Error())
	for _, o := range f.others {
		b.WriteString("; ")
		b.WriteString(o.Error())
	}
	fmt.Fprintf(&b, " (check %s)", f.field)
	return b.String()
}

func (f *probeFailure) Unwrap() error { return f.err }

// fieldOf names the configuration field that fixes a probe's cause.
func (cn *connection) fieldOf(cause starrocks.Cause, mysql bool) string {
	addr := fieldLoadURLs
	if mysql {
		addr = fieldMySQLAddress
	}
	switch cause {
	case starrocks.CauseTLS:
		if mysql {
			return fieldMySQLTLS
		}
		return fieldTLS + ", or the scheme of " + fieldLoadURLs
	case starrocks.CauseAuth:
		return fmt.Sprintf("%s and %s: user %q was refused, or may not load into the database", fieldUsername, fieldPassword, cn.user)
	case starrocks.CauseNoDatabase:
		if mysql {
			return fmt.Sprintf("%s: create the database %s, grant user %q its privileges on it, or change the field", fieldDatabase, cn.conf.database, cn.user)
		}
		return fmt.Sprintf("%s: create the database %s, or change the field", fieldDatabase, cn.conf.database)
	case starrocks.CauseAuthPlugin:
		return fmt.Sprintf("%s: user %q authenticates with a plugin the output does not use", fieldUsername, cn.user)
	case starrocks.CauseInsecureRedirect:
		return fieldAllowInsecureRedirect
	}
	return addr
}

// probe asks every load URL, then the MySQL port, and returns the first
// definite failure, else a failure when no load URL or the MySQL port does
// not answer, else nil. A failure every FE shares (credentials, database) is
// definite at once; one of a single load URL (not an FE, a name that does
// not resolve, TLS) only when no load URL answers. Load URLs that fail while
// another answers are only logged: the client uses those that answer.
func (o *Output) probe(ctx context.Context, p prober) (definite bool, f *probeFailure) {
	cn := o.conn
	db := cn.conf.database
	if p != nil {
		r := p.Probe(ctx, db)
		if d := r.Definite(); d != nil {
			f := &probeFailure{field: cn.fieldOf(d.Cause, false), err: d}
			if !d.Cause.Shared() {
				// No load URL answered: say what each one did.
				for _, o := range r.Failed {
					if o != d {
						f.others = append(f.others, o)
					}
				}
			}
			return true, f
		}
		if len(r.OK) == 0 && len(r.Failed) > 0 {
			return false, &probeFailure{field: fieldLoadURLs, err: r.Failed[0], others: r.Failed[1:]}
		}
		for _, down := range r.Failed {
			if down.Cause.Definite() {
				// A cause of its own (Cause.Shared is false here): the
				// client sends its requests to the others.
				o.log.Warnf("Load URL %s cannot be used (%v; check %s); the others answer: requests go to them, and to it only when none of them can be reached", down.Addr, down.Err, cn.fieldOf(down.Cause, false))
				continue
			}
			o.log.Warnf("Load URL %s does not answer (%v); the others do, and the client fails over to them", down.Addr, down.Err)
		}
	}
	if o.meta != nil {
		if m := o.meta.Probe(ctx, db); m != nil {
			field := cn.fieldOf(m.Cause, true)
			if pe := (*starrocks.AuthPluginError)(nil); errors.As(m, &pe) && pe.Cleartext {
				field = fmt.Sprintf("%s: set it to true, with %s enabled so that the password is encrypted on the way", fieldMySQLAllowCleartext, fieldMySQLTLS)
			}
			return m.Cause.Definite(), &probeFailure{field: field, err: m}
		}
	}
	return false, nil
}

// connect is the check Connect runs before it starts the output: nil when
// StarRocks answers, a backoff error while it may still come, and an error
// that stops the output when it never will.
func (o *Output) connect(ctx context.Context) error {
	cn := o.conn
	cn.mu.Lock()
	stopped := cn.stopped
	cn.mu.Unlock()
	if stopped != nil {
		return stopped
	}
	if err := o.waitOwed(ctx); err != nil {
		return err
	}
	p, _ := o.client.(prober)
	if p == nil && o.meta == nil {
		if err := o.checkMode(ctx); err != nil {
			return err
		}
		cn.connected()
		return nil
	}
	if p != nil {
		cn.observe(p)
	}
	definite, f := o.probe(ctx, p)
	if f == nil {
		if err := o.checkMode(ctx); err != nil {
			return err
		}
		cn.connected()
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.setLocked(false)
	now := cn.now()
	if cn.failures == 0 {
		cn.since = now
	}
	cn.failures++
	switch {
	case definite:
		return cn.stopLocked(fmt.Errorf("cannot start: %w; no retry can fix this", f))
	case cn.conf.maxRetries > 0 && cn.failures > cn.conf.maxRetries:
		return cn.stopLocked(fmt.Errorf("giving up after %d attempts in %s (%s): %w", cn.failures, now.Sub(cn.since).Round(time.Millisecond), fieldMaxRetries, f))
	case cn.conf.maxRetryDuration > 0 && now.Sub(cn.since) >= cn.conf.maxRetryDuration:
		return cn.stopLocked(fmt.Errorf("giving up after %s and %d attempts (%s): %w", now.Sub(cn.since).Round(time.Millisecond), cn.failures, fieldMaxRetryDuration, f))
	}
	wait := cn.wait.next()
	cn.owed = wait
	return &service.ErrBackOff{
		Err:  fmt.Errorf("StarRocks does not answer (attempt %d, retrying in %s; not ready until it does): %w", cn.failures, wait, f),
		Wait: connectPause,
	}
}

// checkMode decides the transaction mode once StarRocks answered (mode.go:
// decideMode), once: a mode no retry makes work (multi_table against a 3.x
// FE) stops the output, a failure that may pass (the version query) fails
// Connect with a backoff.
func (o *Output) checkMode(ctx context.Context) error {
	cn := o.conn
	cn.mu.Lock()
	done := cn.modeChecked
	cn.mu.Unlock()
	if done {
		return nil
	}
	err := o.decideMode(ctx)
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if err == nil {
		cn.modeChecked = true
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cn.setLocked(false)
	if stop := (errStopped{}); errors.As(err, &stop) {
		return cn.stopLocked(fmt.Errorf("cannot start: %w; no retry can fix this", stop.error))
	}
	now := cn.now()
	if cn.failures == 0 {
		cn.since = now
	}
	cn.failures++
	wait := cn.wait.next()
	cn.owed = wait
	return &service.ErrBackOff{
		Err:  fmt.Errorf("StarRocks answers, but %v (attempt %d, retrying in %s; not ready until it does)", err, cn.failures, wait),
		Wait: connectPause,
	}
}

// connectPause is the wait Benthos is asked for between two Connect calls;
// the backoff itself is waited in the next Connect (waitOwed). Benthos's own
// wait only ends when the output is told to stop, which a stream stopping
// gracefully does only after its input and pipeline closed, so an output
// that waited there would hold a stop for most of shutdown_timeout.
const connectPause = time.Millisecond

// waitOwed waits the backoff the last failed Connect owes, returning early
// when ctx ends, the output closes, or the process is asked to stop. In the
// last case the output gives up with service.ErrEndOfInput, which lets the
// stream stop at once: it has never connected, so it holds nothing.
func (o *Output) waitOwed(ctx context.Context) error {
	cn := o.conn
	cn.mu.Lock()
	d := cn.owed
	cn.owed = 0
	stopping := cn.stopping
	cn.mu.Unlock()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-o.closed:
		return fmt.Errorf("%w: the starrocks_txn output closed before StarRocks answered", service.ErrEndOfInput)
	case <-stopping:
		cn.log.Info("The process is stopping before StarRocks answered; the output stops without having written anything")
		return fmt.Errorf("%w: the process is stopping before StarRocks answered", service.ErrEndOfInput)
	}
}

// stopLocked makes the output give up: logged, recorded for the exit
// status, and returned as service.ErrEndOfInput, which closes the output
// and ends the stream.
func (cn *connection) stopLocked(err error) error {
	cn.log.Errorf("The starrocks_txn output stops, and the pipeline with it: %v", err)
	exitstatus.Fail(err)
	cn.stopped = fmt.Errorf("%w: %v", service.ErrEndOfInput, err)
	return cn.stopped
}

// connected records a successful Connect.
func (cn *connection) connected() {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.failures > 0 {
		cn.log.Infof("StarRocks answers after %d failed attempts in %s", cn.failures, cn.now().Sub(cn.since).Round(time.Millisecond))
	}
	cn.failures = 0
	cn.wait = newBackoff(cn.retryInitial, cn.retryMax)
	cn.setLocked(true)
}

// observe makes the client report each request's health to the gauge.
func (cn *connection) observe(p prober) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.observing {
		return
	}
	cn.observing = true
	p.SetHealthObserver(func(healthy bool) {
		cn.mu.Lock()
		defer cn.mu.Unlock()
		if healthy == cn.healthy {
			return
		}
		if healthy {
			cn.log.Info("StarRocks answers again")
		} else {
			cn.log.Warn("StarRocks does not answer (or refuses the credentials); the output keeps retrying")
		}
		cn.setLocked(healthy)
	})
}

func (cn *connection) setLocked(healthy bool) {
	cn.healthy = healthy
	if healthy {
		cn.gauge.Set(1)
	} else {
		cn.gauge.Set(0)
	}
}
