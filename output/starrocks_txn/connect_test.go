package starrocks_txn

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	vmysql "github.com/dolthub/vitess/go/mysql"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/exitstatus"
	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"

	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// parseTestConfig parses a YAML config of the output.
func parseTestConfig(t *testing.T, yaml string) config {
	t.Helper()
	pc, err := parseTestYAML(yaml, nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	return c
}

// certPEM is the PEM of an httptest TLS server's certificate.
func certPEM(srv *httptest.Server) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

// An https FE that redirects a load to an http BE, as real FEs do: the
// load fails with an error that needs an operator and names
// allow_insecure_redirect, and the BE sees nothing; with the field set the
// load reaches the BE.
func TestAllowInsecureRedirect(t *testing.T) {
	var beHits atomic.Int32
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		beHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"Status":"OK","Message":""}`))
	}))
	defer be.Close()
	fe := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", be.URL+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer fe.Close()
	base := fmt.Sprintf("load_urls: [ %q ]\ntls: { enabled: true, root_cas: %q }\n", fe.URL, certPEM(fe))
	load := starrocks.LoadRequest{Txn: starrocks.Txn{DB: "test", Table: "orders", Label: "l1", Multi: true}, Body: []byte(`[]`)}

	cl, err := newStarRocksClient(parseTestConfig(t, base))
	require.NoError(t, err)
	defer cl.Close()
	err = srClient{cl}.Load(context.Background(), load)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fieldAllowInsecureRedirect)
	assert.Equal(t, starrocks.ClassFatal, starrocks.ClassOf(err))
	assert.Zero(t, beHits.Load())

	opted, err := newStarRocksClient(parseTestConfig(t, base+"allow_insecure_redirect: true\n"))
	require.NoError(t, err)
	defer opted.Close()
	require.NoError(t, srClient{opted}.Load(context.Background(), load))
	assert.Equal(t, int32(1), beHits.Load())
}

func freeAddr(t *testing.T) string { return testkit.FreeAddr(t) }

// lockedBuffer is a log sink for the stream's goroutines.
type lockedBuffer = testlog.Buffer

// connStream is a running stream of generated order rows into one
// starrocks_txn output, with its HTTP server (for /ready), its logs and
// its metrics.
type connStream struct {
	stream  *service.Stream
	logs    *lockedBuffer
	metrics *metricscap.Capture
	http    string
	done    chan error
}

// startConnStream runs the stream; output is the starrocks_txn block's
// fields (indented by 4).
func startConnStream(t *testing.T, output string) *connStream {
	t.Helper()
	sb, metrics := metricStream(t)
	cs := &connStream{logs: &lockedBuffer{}, metrics: metrics, http: freeAddr(t), done: make(chan error, 1)}
	sb.SetLogger(slog.New(slog.NewTextHandler(cs.logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	require.NoError(t, sb.SetYAML(fmt.Sprintf(`
http:
  enabled: true
  address: %s
input:
  generate:
    interval: 20ms
    mapping: 'root = {"order_id": counter(), "customer_id": 1}'
output:
  starrocks_txn:
    schema_evolution: ignore
    database: test
    table: orders
    commit_interval: 200ms
    retry_backoff: { initial_interval: 50ms, max_interval: 200ms }
%s
metrics:
  starrocks_txn_test_metrics: {}
`, cs.http, output)))
	var err error
	cs.stream, err = sb.Build()
	require.NoError(t, err)
	go func() { cs.done <- cs.stream.Run(context.Background()) }()
	t.Cleanup(func() {
		// Not graceful for long: an output that never connected holds
		// its first batch until the stop gives up on it.
		_ = cs.stream.StopWithin(2 * time.Second)
		_ = exitstatus.Take()
	})
	return cs
}

// ready GETs /ready: its code and body ("" and 0 while the server is not
// up yet).
func (cs *connStream) ready() (int, string) {
	resp, err := http.Get("http://" + cs.http + "/ready")
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitStopped waits for the stream to end by itself: the output stopped.
func (cs *connStream) waitStopped(t *testing.T) {
	t.Helper()
	select {
	case <-cs.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the stream did not stop; logs:\n%s", cs.logs.String())
	}
}

// An error no retry can fix stops the output at Connect, and the pipeline
// with it, with a log line naming the field to fix and a failure recorded
// for the exit status; nothing was acknowledged.
func TestConnectStopsOnDefiniteErrors(t *testing.T) {
	e := startEmulator(t, func(c *emulator.Config) { c.User, c.Password = "loader", "pw" })
	cases := []struct {
		name   string
		output string
		field  string
	}{
		{"refused password", fmt.Sprintf("    load_urls: [ %q ]\n    username: loader\n    password: wrong\n", e.FEURL()), "username and password"},
		{"https to the plain FE port", fmt.Sprintf("    load_urls: [ %q ]\n    username: loader\n    password: pw\n    tls: { enabled: true }\n", strings.Replace(e.FEURL(), "http://", "https://", 1)), "check tls, or the scheme of load_urls"},
		{"missing database", fmt.Sprintf("    load_urls: [ %q ]\n    username: loader\n    password: pw\n", e.FEURL()), "database: create the database nodb"},
		{"mysql port refuses the password", fmt.Sprintf("    load_urls: [ %q ]\n    username: loader\n    password: pw\n    mysql_address: %s\n", e.FEURL(), e.MySQLAddr()), "username and password"},
		{"mysql_tls to a MySQL port without TLS", fmt.Sprintf("    load_urls: [ %q ]\n    username: loader\n    password: pw\n    mysql_address: %s\n    mysql_tls: { enabled: true }\n", e.FEURL(), e.MySQLAddr()), "TLS requested but server does not support TLS (check mysql_tls)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.output
			if tc.name == "missing database" {
				out = strings.Replace(out, "    load_urls", "    database: nodb\n    load_urls", 1)
			}
			if tc.name == "mysql port refuses the password" {
				// The HTTP port accepts it; the MySQL port of a second
				// emulator with another password refuses it.
				other := startEmulator(t, func(c *emulator.Config) { c.User, c.Password = "loader", "other" })
				out = strings.Replace(out, e.MySQLAddr(), other.MySQLAddr(), 1)
			}
			cs := startConnStream(t, out)
			cs.waitStopped(t)
			logs := cs.logs.String()
			assert.Contains(t, logs, "The starrocks_txn output stops, and the pipeline with it")
			assert.Contains(t, logs, tc.field)
			assert.NotContains(t, logs, "password: wrong")
			assert.Error(t, exitstatus.Take(), "the binary exits with status 1")
			assert.Zero(t, cs.metrics.Gauge("starrocks_txn_connected"))
			assert.Zero(t, e.Counters().Commits)
		})
	}
	t.Run("unknown host", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var dns *net.DNSError
		if _, err := net.DefaultResolver.LookupHost(ctx, "no-such-fe.invalid"); !errors.As(err, &dns) || !dns.IsNotFound {
			t.Skipf("the resolver of this machine does not answer NXDOMAIN for .invalid (%v)", err)
		}
		cs := startConnStream(t, "    load_urls: [ \"http://no-such-fe.invalid:8030\" ]\n")
		cs.waitStopped(t)
		assert.Contains(t, cs.logs.String(), "check load_urls")
		assert.Error(t, exitstatus.Take())
	})
}

// An FE that is down at start is waited for: Connect fails with a backoff,
// /ready answers 503 and the gauge says 0 meanwhile; once the FE is up the
// output connects, /ready answers 200, the gauge says 1 and rows commit.
func TestConnectWaitsNotReadyForAnFEThatComesUp(t *testing.T) {
	feAddr := freeAddr(t)
	cs := startConnStream(t, fmt.Sprintf("    load_urls: [ \"http://%s\" ]\n", feAddr))
	require.Eventually(t, func() bool {
		code, body := cs.ready()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "StarRocks does not answer")
	}, 10*time.Second, 20*time.Millisecond, "/ready is not ready while the FE is down; logs:\n%s", cs.logs.String())
	assert.Zero(t, cs.metrics.Gauge("starrocks_txn_connected"))
	assert.Zero(t, cs.metrics.Counter("starrocks_txn_commits"))

	startEmulator(t, func(c *emulator.Config) { c.HTTPAddr = feAddr })
	require.Eventually(t, func() bool {
		code, _ := cs.ready()
		return code == http.StatusOK && cs.metrics.Counter("starrocks_txn_commits") > 0
	}, 20*time.Second, 20*time.Millisecond, "the output connects once the FE is up; logs:\n%s", cs.logs.String())
	assert.Equal(t, int64(1), cs.metrics.Gauge("starrocks_txn_connected"))
	assert.Contains(t, cs.logs.String(), "StarRocks answers after")
	select {
	case err := <-cs.done:
		t.Fatalf("the stream stopped: %v", err)
	default:
	}
	// Stopped while the FE is still up (cleanups run in reverse order).
	require.NoError(t, cs.stream.StopWithin(10*time.Second))
	assert.NoError(t, exitstatus.Take(), "no failure is recorded")
}

// max_retries and max_retry_duration make an output whose FE stays down
// give up and stop the pipeline.
func TestConnectGivesUp(t *testing.T) {
	for _, tc := range []struct{ field, value, want string }{
		{fieldMaxRetries, "2", "giving up after 3 attempts"},
		{fieldMaxRetryDuration, "300ms", "(max_retry_duration)"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			cs := startConnStream(t, fmt.Sprintf("    load_urls: [ \"http://%s\" ]\n    %s: %s\n", freeAddr(t), tc.field, tc.value))
			cs.waitStopped(t)
			assert.Contains(t, cs.logs.String(), tc.want)
			assert.Error(t, exitstatus.Take())
		})
	}
}

// The MySQL driver's own messages go through the output's logger, naming
// the address, not to stderr: here the lost connections of a MySQL port
// that hangs up at once.
func TestMySQLDriverMessagesGoThroughTheLogger(t *testing.T) {
	e := startEmulator(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	cs := startConnStream(t, fmt.Sprintf("    load_urls: [ %q ]\n    mysql_address: %s\n", e.FEURL(), ln.Addr()))
	require.Eventually(t, func() bool {
		return strings.Contains(cs.logs.String(), "MySQL driver (mysql_address "+ln.Addr().String()+")")
	}, 10*time.Second, 20*time.Millisecond, "logs:\n%s", cs.logs.String())
	code, _ := cs.ready()
	assert.Equal(t, http.StatusServiceUnavailable, code, "a MySQL port that hangs up may recover: not ready, retried")
}

// unreachableOutput is an output whose only FE does not answer, with a
// connect backoff of a minute.
func unreachableOutput(t *testing.T, stopping <-chan struct{}) *Output {
	t.Helper()
	pc, err := parseTestYAML(fmt.Sprintf("load_urls: [ \"http://%s\" ]\ndatabase: test\ntable: orders\nretry_backoff: { initial_interval: 1m, max_interval: 1m }\n", freeAddr(t)), nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	cl, err := newStarRocksClient(c)
	require.NoError(t, err)
	o := newOutput(c, srClient{cl}, nil, service.MockResources())
	o.conn.stopping = stopping
	t.Cleanup(func() { _ = o.Close(context.Background()) })
	return o
}

// The connect backoff is waited by the output itself, in the next Connect,
// and that wait ends when the process is asked to stop (the output gives up
// with ErrEndOfInput: it never connected, so it holds nothing), when the
// context ends, or when the output closes. Benthos's own wait between two
// Connect calls, which a graceful stop does not interrupt, is asked to be a
// millisecond.
func TestConnectBackoffEndsOnStop(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(o *Output, stopping chan struct{}, cancel context.CancelFunc)
		want error
	}{
		{"process stopping", func(_ *Output, s chan struct{}, _ context.CancelFunc) { close(s) }, service.ErrEndOfInput},
		{"context cancelled", func(_ *Output, _ chan struct{}, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"output closed", func(o *Output, _ chan struct{}, _ context.CancelFunc) { _ = o.Close(context.Background()) }, service.ErrEndOfInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stopping := make(chan struct{})
			o := unreachableOutput(t, stopping)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := o.Connect(ctx)
			var bo *service.ErrBackOff
			require.ErrorAs(t, err, &bo, "the first attempt fails with a backoff")
			assert.Equal(t, connectPause, bo.Wait, "Benthos is asked for almost no wait")
			assert.Contains(t, err.Error(), "retrying in 1m0s")

			second := make(chan error, 1)
			go func() { second <- o.Connect(ctx) }()
			select {
			case err := <-second:
				t.Fatalf("the second attempt did not wait the owed backoff: %v", err)
			case <-time.After(200 * time.Millisecond): // real time: the backoff runs on the wall clock
			}
			tc.stop(o, stopping, cancel)
			select {
			case err := <-second:
				require.ErrorIs(t, err, tc.want)
			case <-time.After(20 * time.Second):
				t.Fatal("the backoff wait did not end on the stop")
			}
		})
	}
}

// A load URL that is not an FE (a proxy answering 404) or whose name does not
// resolve, beside an FE that answers, does not stop the output: it starts,
// commits through the FE that answers, and warns naming the unusable URL.
func TestConnectStartsWhenOneLoadURLIsUnusableAndAnotherAnswers(t *testing.T) {
	e := startEmulator(t)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "<html>not found</html>", http.StatusNotFound)
	}))
	t.Cleanup(proxy.Close)
	cases := []struct{ name, bad string }{{"proxy answering 404", proxy.URL}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var dns *net.DNSError
	if _, err := net.DefaultResolver.LookupHost(ctx, "no-such-fe.invalid"); errors.As(err, &dns) && dns.IsNotFound {
		cases = append(cases, struct{ name, bad string }{"name that does not resolve", "http://no-such-fe.invalid:8030"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			commits := e.Counters().Commits
			cs := startConnStream(t, fmt.Sprintf("    load_urls: [ %q, %q ]\n", tc.bad, e.FEURL()))
			require.Eventually(t, func() bool {
				code, _ := cs.ready()
				return code == http.StatusOK && e.Counters().Commits > commits
			}, 20*time.Second, 20*time.Millisecond, "the output starts on the FE that answers; logs:\n%s", cs.logs.String())
			logs := cs.logs.String()
			assert.Contains(t, logs, "Load URL "+tc.bad+" cannot be used")
			assert.NotContains(t, logs, "The starrocks_txn output stops")
			select {
			case err := <-cs.done:
				t.Fatalf("the stream stopped: %v", err)
			default:
			}
			require.NoError(t, cs.stream.StopWithin(10*time.Second))
			assert.NoError(t, exitstatus.Take(), "no failure is recorded")
		})
	}
}

// A load URL that is the FE's MySQL port, and a mysql_address that is its
// HTTP port, stop the output at start with the port to use, where the first
// was retried forever (`malformed HTTP response "]\x00\x00\x00"`) and the
// second timed out forever.
func TestConnectStopsOnAWrongPort(t *testing.T) {
	e := startEmulator(t)
	feHTTP := strings.TrimPrefix(e.FEURL(), "http://")
	cases := []struct{ name, output, want string }{
		{"load_urls at the MySQL port", fmt.Sprintf("    load_urls: [ \"http://%s\" ]\n", e.MySQLAddr()),
			"it is the FE's MySQL port (query_port, 9030 by default); load_urls take the FE's HTTP port (http_port, 8030 by default)"},
		{"mysql_address at the HTTP port", fmt.Sprintf("    load_urls: [ %q ]\n    mysql_address: %s\n    mysql_timeout: 1s\n", e.FEURL(), feHTTP),
			"it is the FE's HTTP port (http_port, 8030 by default), not its MySQL port (query_port, 9030 by default)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := startConnStream(t, tc.output)
			cs.waitStopped(t)
			logs := cs.logs.String()
			assert.Contains(t, logs, "The starrocks_txn output stops, and the pipeline with it")
			assert.Contains(t, logs, tc.want)
			assert.Error(t, exitstatus.Take(), "the binary exits with status 1")
		})
	}
}

// ldapPlugin stands for StarRocks's authentication_ldap_simple: the server
// gets the password in clear text (mysql_clear_password) and checks it.
type ldapPlugin struct{ password string }

func (p ldapPlugin) Authenticate(_ *mysql_db.MySQLDb, _ string, _ *mysql_db.User, pass string) (bool, error) {
	return pass == p.password, nil
}

// ldapMySQL is a MySQL port (go-mysql-server, as the emulator's) where user
// is an LDAP account, as StarRocks serves one: the server switches the
// client to mysql_clear_password and checks the password it sends. The
// database test exists.
func ldapMySQL(t *testing.T, user, password string) string {
	t.Helper()
	pro := memory.NewDBProvider(memory.NewDatabase("test"))
	engine := sqle.NewDefault(pro)
	mdb := engine.Analyzer.Catalog.MySQLDb
	mdb.SetPlugins(map[string]mysql_db.PlaintextAuthPlugin{"authentication_ldap_simple": ldapPlugin{password: password}})
	ed := mdb.Editor()
	ed.PutUser(&mysql_db.User{User: user, Host: "%", Plugin: "authentication_ldap_simple",
		PrivilegeSet: mysql_db.NewPrivilegeSetWithAllPrivileges(), PasswordLastChanged: time.Unix(1, 0).UTC()})
	ed.Close()
	mdb.SetEnabled(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg := server.Config{Protocol: "tcp", Address: ln.Addr().String(), Listener: ln, AllowClearTextWithoutTLS: true}
	sessions := func(_ context.Context, c *vmysql.Conn, addr string) (gms.Session, error) {
		u, _ := c.UserData.(gms.MysqlConnectionUser)
		client := gms.Client{Address: u.Host, User: u.User, Capabilities: c.Capabilities}
		return memory.NewSession(gms.NewBaseSessionWithClientServer(addr, client, c.ConnectionID), pro), nil
	}
	emulatorStartMu.Lock()
	srv, err := server.NewServer(cfg, engine, gms.NewContext, sessions, nil)
	emulatorStartMu.Unlock()
	require.NoError(t, err)
	go func() { _ = srv.Start() }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// A StarRocks account that authenticates through LDAP makes the MySQL port
// ask for the clear-text password: refused, the output stops at start with
// an error naming mysql_allow_cleartext_passwords (it was retried forever as
// "StarRocks does not answer"); with the field on, it starts, and warns when
// mysql_tls is off.
func TestConnectMySQLClearTextPlugin(t *testing.T) {
	e := startEmulator(t, func(c *emulator.Config) { c.User, c.Password = "loader", "pw" })
	ldap := ldapMySQL(t, "loader", "pw")
	base := fmt.Sprintf("    load_urls: [ %q ]\n    username: loader\n    password: pw\n    mysql_address: %s\n", e.FEURL(), ldap)

	t.Run("refused", func(t *testing.T) {
		cs := startConnStream(t, base)
		cs.waitStopped(t)
		logs := cs.logs.String()
		assert.Contains(t, logs, "The starrocks_txn output stops, and the pipeline with it")
		assert.Contains(t, logs, "mysql_clear_password")
		assert.Contains(t, logs, "check mysql_allow_cleartext_passwords: set it to true")
		assert.Error(t, exitstatus.Take(), "the binary exits with status 1")
	})
	t.Run("allowed", func(t *testing.T) {
		commits := e.Counters().Commits
		cs := startConnStream(t, base+"    mysql_allow_cleartext_passwords: true\n")
		require.Eventually(t, func() bool {
			code, _ := cs.ready()
			return code == http.StatusOK && e.Counters().Commits > commits
		}, 20*time.Second, 20*time.Millisecond, "logs:\n%s", cs.logs.String())
		assert.Contains(t, cs.logs.String(), "mysql_allow_cleartext_passwords is on without mysql_tls")
		require.NoError(t, cs.stream.StopWithin(10*time.Second))
		assert.NoError(t, exitstatus.Take())
	})
}
