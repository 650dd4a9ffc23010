package starrocks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// probeOf probes a client of one load URL and returns its single outcome.
func probeOf(t *testing.T, cfg Config, db string) *ProbeError {
	t.Helper()
	c := newClient(t, cfg)
	r := c.Probe(context.Background(), db)
	require.Equal(t, 1, len(r.OK)+len(r.Failed))
	if len(r.Failed) == 1 {
		return r.Failed[0]
	}
	return nil
}

// resolverSaysNoSuchHost skips a test on a machine whose resolver does not
// answer NXDOMAIN for the reserved .invalid domain (RFC 6761).
func resolverSaysNoSuchHost(t *testing.T, host string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := net.DefaultResolver.LookupHost(ctx, host)
	var dns *net.DNSError
	if !errors.As(err, &dns) || !dns.IsNotFound {
		t.Skipf("the resolver of this machine does not say %s does not exist (%v)", host, err)
	}
}

// Every cause a probe tells, one server each: what an operator must fix is
// definite, what may pass is not.
func TestProbeCauses(t *testing.T) {
	answer := func(code int, body string) string {
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { writeJSON(w, code, body) })
		return f.srv.URL
	}
	okState := `{"state":"UNKNOWN","status":"OK","code":"0","msg":"Success","message":"OK"}`
	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, okState) }))
	defer untrusted.Close()
	plain := answer(200, okState)
	be := newFake(t, nil)
	fe, trust := tlsFE(t, func() string { return be.srv.URL })

	cases := []struct {
		name string
		cfg  Config
		db   string
		want Cause
		ok   bool
	}{
		{name: "healthy", cfg: Config{LoadURLs: []string{plain}}, db: "shop", ok: true},
		{name: "healthy without a database", cfg: Config{LoadURLs: []string{plain}}, ok: true},
		{name: "401", cfg: Config{LoadURLs: []string{answer(401, `{"status":"FAILED","code":"1","msg":"Access denied for user 'loader'"}`)}}, db: "shop", want: CauseAuth},
		{name: "401 privilege on the placeholder is not ours", cfg: Config{LoadURLs: []string{answer(401, `{"status":"FAILED","msg":"Access denied; you need (at least one of) the INSERT privilege(s) on DATABASE information_schema"}`)}}, ok: true},
		{name: "401 privilege on the user's database", cfg: Config{LoadURLs: []string{answer(401, `{"status":"FAILED","msg":"Access denied; you need (at least one of) the INSERT privilege(s) on DATABASE shop"}`)}}, db: "shop", want: CauseAuth},
		{name: "unknown database", cfg: Config{LoadURLs: []string{answer(200, `{"status":"FAILED","code":"1","msg":"unknown database, database=shop","message":"unknown database, database=shop"}`)}}, db: "shop", want: CauseNoDatabase},
		{name: "unknown placeholder database", cfg: Config{LoadURLs: []string{answer(200, `{"status":"FAILED","code":"1","msg":"unknown database, database=information_schema"}`)}}, ok: true},
		{name: "a BE or a proxy: 404", cfg: Config{LoadURLs: []string{answer(404, `<html>not found</html>`)}}, db: "shop", want: CauseNotFE},
		{name: "not JSON", cfg: Config{LoadURLs: []string{answer(200, `hello`)}}, db: "shop", want: CauseNotFE},
		{name: "JSON without status", cfg: Config{LoadURLs: []string{answer(200, `{"total_backend_num":3}`)}}, db: "shop", want: CauseNotFE},
		{name: "5xx", cfg: Config{LoadURLs: []string{answer(503, ``)}}, db: "shop", want: CauseUnreachable},
		{name: "FE not ready", cfg: Config{LoadURLs: []string{answer(200, `{"status":"FAILED","msg":"meta not ready"}`)}}, db: "shop", want: CauseUnreachable},
		{name: "refused", cfg: Config{LoadURLs: []string{refusedURL(t)}}, db: "shop", want: CauseUnreachable},
		{name: "untrusted certificate", cfg: Config{LoadURLs: []string{untrusted.URL}}, db: "shop", want: CauseTLS},
		{name: "https to a plain port", cfg: Config{LoadURLs: []string{"https://" + plain[len("http://"):]}}, db: "shop", want: CauseTLS},
		{name: "https FE redirecting to http", cfg: Config{LoadURLs: []string{fe.URL}, TLS: trust}, db: "shop", want: CauseInsecureRedirect},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := probeOf(t, tc.cfg, tc.db)
			if tc.ok {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.Cause, "%v", got)
			assert.Equal(t, tc.want != CauseUnreachable, got.Cause.Definite())
			assert.NotContains(t, got.Error(), "s3cret-pw")
		})
	}
	assert.Empty(t, be.requests(), "the downgrade was refused before anything reached the BE")
}

func TestProbeUnknownHost(t *testing.T) {
	resolverSaysNoSuchHost(t, "no-such-fe.invalid")
	got := probeOf(t, Config{LoadURLs: []string{"http://no-such-fe.invalid:8030"}}, "shop")
	require.NotNil(t, got)
	assert.Equal(t, CauseUnknownHost, got.Cause)
	assert.True(t, got.Cause.Definite())
	assert.Contains(t, got.Error(), "no-such-fe.invalid")
}

// The probe is authenticated, names the database and a label nobody uses,
// follows the redirect to the leader, and asks every load URL without
// failing over: one healthy FE and one down make a report with both.
func TestProbeRequestAndReport(t *testing.T) {
	leader := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		writeJSON(w, 200, `{"state":"UNKNOWN","status":"OK"}`)
	})
	follower := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Location", leader.srv.URL+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	down := refusedURL(t)
	c := newClient(t, Config{LoadURLs: []string{follower.srv.URL, down}})
	r := c.Probe(context.Background(), "shop")
	assert.Equal(t, []string{follower.srv.URL}, r.OK)
	require.Len(t, r.Failed, 1)
	assert.Equal(t, down, r.Failed[0].Addr)
	assert.Equal(t, CauseUnreachable, r.Failed[0].Cause)
	assert.Nil(t, r.Definite())

	got := leader.last(t)
	assert.Equal(t, http.MethodGet, got.Method)
	assert.Equal(t, "/api/shop/get_load_state", got.Path)
	assert.Equal(t, "label="+probeLabel, got.Query)
	assert.Equal(t, basicAuth("loader", "s3cret-pw"), got.Header.Get("Authorization"))
}

// The client reports, request by request, whether StarRocks answered.
func TestHealthObserver(t *testing.T) {
	status := 200
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		writeJSON(w, status, `{"Status":"FAILED","Message":"whatever"}`)
	})
	c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
	var seen []bool
	c.SetHealthObserver(func(h bool) { seen = append(seen, h) })
	txn := Txn{DB: "shop", Label: "l1", Multi: true}
	_, _ = c.Begin(context.Background(), txn)
	status = 401
	_, _ = c.Begin(context.Background(), txn)
	status = 500
	_, _ = c.Begin(context.Background(), txn)
	down := newClient(t, Config{LoadURLs: []string{refusedURL(t)}})
	down.SetHealthObserver(func(h bool) { seen = append(seen, h) })
	_, _ = down.Begin(context.Background(), txn)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = down.Begin(ctx, txn)
	assert.Equal(t, []bool{true, false, false, false}, seen, "a logical failure is an answer; a cancelled call says nothing")
}

// A redirect loop at startup is retried, not taken as a configuration
// error: a proxy or an FE changing its nodes answers so for a moment.
func TestRedirectCauseIsRetried(t *testing.T) {
	assert.False(t, CauseRedirect.Definite())
	assert.False(t, CauseUnreachable.Definite())
	for _, c := range []Cause{CauseUnknownHost, CauseTLS, CauseAuth, CauseNoDatabase, CauseNotFE, CauseInsecureRedirect} {
		assert.True(t, c.Definite(), c.String())
	}
}
