package starrocks_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// envoyReset is what Envoy answers when the upstream closed the connection
// after it had read the request: a 503 that says nothing about whether the
// FE applied it.
const envoyReset = "upstream connect error or disconnect/reset before headers. reset reason: connection termination"

// proxyTo is a reverse proxy in front of the emulator's FE that answers 503
// (as Envoy does) when the FE drops the connection.
func proxyTo(t *testing.T, fe string) string {
	t.Helper()
	u, err := url.Parse(fe)
	require.NoError(t, err)
	p := httputil.NewSingleHostReverseProxy(u)
	p.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		http.Error(w, envoyReset, http.StatusServiceUnavailable)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr
}

// With several load URLs in front of one StarRocks (the emulator), the
// client sends a request to the next URL only when the first one certainly
// did not act on it. Each outcome of the fault matrix on a load, a commit
// and a begin: what the caller is told, and that the label never holds the
// rows twice (order_events-like DUPLICATE KEY table: a second copy would
// stay).
func TestFailoverNeverResendsWhatMayHaveBeenApplied(t *testing.T) {
	const rows = `[{"id":1},{"id":2},{"id":3}]`
	type urls func(fe, proxy string) []string
	direct := func(fe, _ string) []string { return []string{fe, fe} }
	viaProxy := func(fe, proxy string) []string { return []string{proxy, fe} }
	cases := []struct {
		name    string
		urls    urls
		fault   *emulator.Fault
		timeout time.Duration
		// copies is how many copies of the rows the label holds after the
		// load (1 = applied once, 0 = not applied).
		copies int
		// ok: the client reports success; else the class it reports.
		ok    bool
		class starrocks.Class
	}{
		{name: "applied, reply lost, the proxy answers 503", urls: viaProxy,
			fault: &emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActLoadReplyLost}, copies: 1, class: starrocks.ClassTransient},
		{name: "refused with HTTP 503", urls: direct,
			fault: &emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActHTTPError, HTTPCode: 503}, copies: 0, class: starrocks.ClassTransient},
		{name: "refused with HTTP 500", urls: direct,
			fault: &emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActHTTPError, HTTPCode: 500}, copies: 0, class: starrocks.ClassTransient},
		{name: "applied, reply lost", urls: direct,
			fault: &emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActReplyLost}, copies: 1, class: starrocks.ClassTransient},
		{name: "not applied, connection reset mid-body", urls: direct,
			fault: &emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActReset}, copies: 0, class: starrocks.ClassTransient},
		{name: "applied, reply after the client's timeout", urls: direct, timeout: 300 * time.Millisecond,
			fault: &emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActReplyLate, Delay: 2 * time.Second}, copies: 1, class: starrocks.ClassTransient},
		{name: "refused definitely, status reply", urls: direct,
			fault: &emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActInternalError}, copies: 0, class: starrocks.ClassTransient},
		{name: "first URL refuses connections: fails over", urls: func(fe, _ string) []string { return []string{closedURL(t), fe} },
			copies: 1, ok: true},
	}
	for _, tc := range cases {
		t.Run("load "+tc.name, func(t *testing.T) {
			e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0",
				Schema: "CREATE DATABASE shop; CREATE TABLE shop.t (id INT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1;"})
			require.NoError(t, err)
			t.Cleanup(func() { _ = e.Close() })
			c, err := starrocks.New(starrocks.Config{LoadURLs: tc.urls(e.FEURL(), proxyTo(t, e.FEURL())), Username: "root", RequestTimeout: tc.timeout})
			require.NoError(t, err)
			t.Cleanup(c.Close)
			single, err := starrocks.New(starrocks.Config{LoadURLs: []string{e.FEURL()}, Username: "root"})
			require.NoError(t, err)
			t.Cleanup(single.Close)

			ctx := context.Background()
			tx := starrocks.Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}
			_, err = single.Begin(ctx, tx)
			require.NoError(t, err)
			if tc.fault != nil {
				require.NoError(t, e.Faults().Add(*tc.fault))
			}
			_, err = c.Load(ctx, starrocks.LoadRequest{Txn: tx, Headers: map[string]string{"format": "json", "strip_outer_array": "true"}, Body: []byte(rows)})
			if tc.ok {
				require.NoError(t, err)
			} else {
				assert.Error(t, err, "the client cannot know the load's outcome and must not claim success")
				assert.Equal(t, tc.class, starrocks.ClassOf(err), "%v", err)
			}
			if tc.fault != nil {
				assert.Empty(t, e.Faults().Pending(), "the fault fired")
			}
			if tc.fault != nil && tc.fault.Action == emulator.ActReplyLate {
				// The held reply is the emulator's; the load itself
				// completes before it, though not necessarily before
				// the client gave up on a loaded machine: the commit
				// comes once the emulator took the rows in.
				testkit.WaitFor(t, 10*time.Second, func() bool { return e.Counters().RowsReceived >= 3 }, "the emulator took in the late-answered load's rows")
			}
			// What the label holds: commit it and count.
			_, cerr := single.Commit(ctx, tx)
			got, err := e.Store().Rows("shop", "t")
			require.NoError(t, err)
			assert.Len(t, got, 3*tc.copies, "the label holds the rows %d time(s) (commit: %v)", tc.copies, cerr)
		})
	}

	// Control requests: a commit or begin that may have been applied is
	// not sent again to another FE either.
	control := []struct {
		name  string
		urls  urls
		fault emulator.Fault
		op    string
		class starrocks.Class
	}{
		{name: "commit applied, reply lost, the proxy answers 503", urls: viaProxy,
			fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitReplyLost}, op: starrocks.OpCommit, class: starrocks.ClassAmbiguous},
		{name: "commit refused with HTTP 503", urls: direct,
			fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActHTTPError}, op: starrocks.OpCommit, class: starrocks.ClassAmbiguous},
		{name: "begin applied, reply lost, the proxy answers 503", urls: viaProxy,
			fault: emulator.Fault{Op: emulator.OpBegin, Action: emulator.ActBeginReplyLost}, op: starrocks.OpBegin, class: starrocks.ClassTransient},
		{name: "begin refused with HTTP 503", urls: direct,
			fault: emulator.Fault{Op: emulator.OpBegin, Action: emulator.ActHTTPError}, op: starrocks.OpBegin, class: starrocks.ClassTransient},
	}
	for _, tc := range control {
		t.Run(tc.name, func(t *testing.T) {
			e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0",
				Schema: "CREATE DATABASE shop; CREATE TABLE shop.t (id INT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1;"})
			require.NoError(t, err)
			t.Cleanup(func() { _ = e.Close() })
			c, err := starrocks.New(starrocks.Config{LoadURLs: tc.urls(e.FEURL(), proxyTo(t, e.FEURL())), Username: "root"})
			require.NoError(t, err)
			t.Cleanup(c.Close)
			ctx := context.Background()
			tx := starrocks.Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}
			if tc.op == starrocks.OpCommit {
				_, err = c.Begin(ctx, tx)
				require.NoError(t, err)
				_, err = c.Load(ctx, starrocks.LoadRequest{Txn: tx, Headers: map[string]string{"format": "json", "strip_outer_array": "true"}, Body: []byte(rows)})
				require.NoError(t, err)
			}
			before := e.Counters()
			require.NoError(t, e.Faults().Add(tc.fault))
			if tc.op == starrocks.OpCommit {
				_, err = c.Commit(ctx, tx)
			} else {
				_, err = c.Begin(ctx, tx)
			}
			require.Error(t, err, "the client cannot know the outcome and must not claim success")
			assert.Equal(t, tc.class, starrocks.ClassOf(err), "%v", err)
			after := e.Counters()
			assert.Equal(t, before.Commits+before.Begins+1, after.Commits+after.Begins, "the %s reached StarRocks once", tc.op)
		})
	}
}
