package starrocks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seen is one request as a fake server received it.
type seen struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	Host   string
}

// fake is an httptest server that records every request and answers with
// reply (default: {"Status":"OK","Message":""}).
type fake struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []seen
	reply func(w http.ResponseWriter, r *http.Request, body []byte)
}

func newFake(t *testing.T, reply func(w http.ResponseWriter, r *http.Request, body []byte)) *fake {
	t.Helper()
	f := &fake{reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body, r.Host})
		f.mu.Unlock()
		if f.reply == nil {
			writeJSON(w, 200, `{"Status":"OK","Message":""}`)
			return
		}
		f.reply(w, r, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

func (f *fake) last(t *testing.T) seen {
	t.Helper()
	r := f.requests()
	require.NotEmpty(t, r, "the fake server got no request")
	return r[len(r)-1]
}

func writeJSON(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	if cfg.Username == "" {
		cfg.Username, cfg.Password = "loader", "s3cret-pw"
	}
	c, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func basicAuth(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// refusedURL is an address nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr
}

func TestRedirectKeepsAuthMethodHeadersAndBody(t *testing.T) {
	be := newFake(t, nil)
	fe := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		http.Redirect(w, r, be.srv.URL+r.URL.Path+"?"+r.URL.RawQuery, http.StatusTemporaryRedirect)
	})
	// A different host name for the BE: net/http would strip Authorization.
	beURL := strings.Replace(be.srv.URL, "127.0.0.1", "localhost", 1)
	fe.reply = func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Location", beURL+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}
	c := newClient(t, Config{LoadURLs: []string{fe.srv.URL}})
	body := bytes.Repeat([]byte(`{"id":1},`), 1000)
	_, err := c.Load(context.Background(), LoadRequest{
		Txn:     Txn{DB: "shop", Table: "orders", Label: "l1", Multi: true},
		Headers: map[string]string{"format": "json", "columns": "id"},
		Body:    body,
	})
	require.NoError(t, err)
	got := be.last(t)
	assert.True(t, strings.HasPrefix(got.Host, "localhost:"), "the BE was reached under its own host name")
	assert.Equal(t, "PUT", got.Method)
	assert.Equal(t, "/api/transaction/load", got.Path)
	assert.Equal(t, basicAuth("loader", "s3cret-pw"), got.Header.Get("Authorization"))
	for k, v := range map[string]string{"label": "l1", "db": "shop", "table": "orders", "transaction_type": "multi", "format": "json", "columns": "id", "Expect": "100-continue"} {
		assert.Equal(t, v, got.Header.Get(k), k)
	}
	assert.Equal(t, body, got.Body)
	require.Len(t, fe.requests(), 1)
}

func TestRedirect308AndGetQuery(t *testing.T) {
	leader := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		writeJSON(w, 200, `{"state":"VISIBLE","status":"OK","code":"0","msg":"Success","message":"OK"}`)
	})
	follower := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Location", leader.srv.URL+r.URL.RequestURI())
		w.WriteHeader(http.StatusPermanentRedirect)
	})
	c := newClient(t, Config{LoadURLs: []string{follower.srv.URL}})
	st, err := c.LoadState(context.Background(), "shop", "l-1")
	require.NoError(t, err)
	assert.Equal(t, StateVisible, st)
	got := leader.last(t)
	assert.Equal(t, "GET", got.Method)
	assert.Equal(t, "/api/shop/get_load_state", got.Path)
	assert.Equal(t, "label=l-1", got.Query)
	assert.Equal(t, basicAuth("loader", "s3cret-pw"), got.Header.Get("Authorization"))
}

func TestRedirectLimits(t *testing.T) {
	t.Run("too many hops", func(t *testing.T) {
		// A chain FE0 → FE1 → FE2 → FE3 → BE: 4 hops.
		be := newFake(t, nil)
		next := be.srv.URL
		for range 4 {
			to := next
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				w.Header().Set("Location", to+r.URL.RequestURI())
				w.WriteHeader(http.StatusTemporaryRedirect)
			})
			next = f.srv.URL
		}
		c := newClient(t, Config{LoadURLs: []string{next}, MaxRedirects: 3})
		_, err := c.Commit(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.ErrorIs(t, err, ErrTooManyRedirects)
		assert.Equal(t, ClassAmbiguous, ClassOf(err))
		assert.Empty(t, be.requests())

		c4 := newClient(t, Config{LoadURLs: []string{next}, MaxRedirects: 4})
		_, err = c4.Commit(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.NoError(t, err)
		assert.Len(t, be.requests(), 1)
	})
	t.Run("default is 3", func(t *testing.T) {
		var hops atomic.Int32
		var f *fake
		f = newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			n := hops.Add(1)
			if n > 10 {
				writeJSON(w, 200, `{"Status":"OK"}`)
				return
			}
			w.Header().Set("Location", f.srv.URL+"/hop/"+string(rune('a'+n)))
			w.WriteHeader(http.StatusTemporaryRedirect)
		})
		c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
		_, err := c.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.ErrorIs(t, err, ErrTooManyRedirects)
		assert.Equal(t, int32(4), hops.Load(), "the first request and 3 followed hops")
		assert.Equal(t, ClassTransient, ClassOf(err))
	})
	t.Run("loop", func(t *testing.T) {
		var a, b *fake
		a = newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Location", b.srv.URL+r.URL.RequestURI())
			w.WriteHeader(http.StatusTemporaryRedirect)
		})
		b = newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Location", a.srv.URL+r.URL.RequestURI())
			w.WriteHeader(http.StatusTemporaryRedirect)
		})
		c := newClient(t, Config{LoadURLs: []string{a.srv.URL}, MaxRedirects: 10})
		_, err := c.Rollback(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.ErrorIs(t, err, ErrRedirectLoop)
		assert.Len(t, a.requests(), 1)
		assert.Len(t, b.requests(), 1)
	})
	t.Run("relative location", func(t *testing.T) {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			if r.URL.Path == "/api/transaction/load" {
				w.Header().Set("Location", "/be/api/transaction/load?x=1")
				w.WriteHeader(http.StatusTemporaryRedirect)
				return
			}
			writeJSON(w, 200, `{"Status":"OK"}`)
		})
		c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
		_, err := c.Load(context.Background(), LoadRequest{Txn: Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}, Body: []byte("{}")})
		require.NoError(t, err)
		got := f.last(t)
		assert.Equal(t, "/be/api/transaction/load", got.Path)
		assert.Equal(t, "x=1", got.Query)
		assert.Equal(t, "{}", string(got.Body))
	})
	t.Run("no location", func(t *testing.T) {
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { w.WriteHeader(http.StatusTemporaryRedirect) })
		c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
		_, err := c.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no Location")
	})
}

// countingListener counts the bytes the server reads.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// With Expect: 100-continue an FE that only redirects never receives the
// body; the BE does.
func TestExpectContinueKeepsBodyOffTheFE(t *testing.T) {
	be := newFake(t, nil)
	var feRead atomic.Int64
	fe := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Like the StarRocks FE: answer from the headers, never read the body.
		w.Header().Set("Location", be.srv.URL+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	fe.Listener = countingListener{fe.Listener, &feRead}
	fe.Start()
	defer fe.Close()

	c := newClient(t, Config{LoadURLs: []string{fe.URL}, ExpectContinueTimeout: 10 * time.Second})
	body := bytes.Repeat([]byte("a"), 1<<20)
	start := time.Now()
	_, err := c.Load(context.Background(), LoadRequest{Txn: Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}, Body: body})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "the redirect answered the Expect without waiting for its timeout")
	assert.Less(t, feRead.Load(), int64(64<<10), "the FE read only the headers")
	got := be.last(t)
	assert.Equal(t, "100-continue", got.Header.Get("Expect"))
	assert.Equal(t, body, got.Body)
}

func TestFailover(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		good := newFake(t, nil)
		c := newClient(t, Config{LoadURLs: []string{refusedURL(t), good.srv.URL}})
		_, err := c.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.NoError(t, err)
		assert.Len(t, good.requests(), 1)
		// The working URL is remembered: the next request goes straight there.
		_, err = c.Commit(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.NoError(t, err)
		assert.Len(t, good.requests(), 2)
		assert.Equal(t, int32(1), c.preferred.Load())
	})
	t.Run("503", func(t *testing.T) {
		// A 503 says nothing about whether the FE behind it applied the
		// load (Envoy answers 503 when the upstream reset the connection
		// after it read the request): the same body is never sent to
		// another FE under the same label.
		bad := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		})
		good := newFake(t, nil)
		c := newClient(t, Config{LoadURLs: []string{bad.srv.URL, good.srv.URL}})
		body := []byte(`[{"id":7}]`)
		_, err := c.Load(context.Background(), LoadRequest{Txn: Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}, Body: body})
		require.Error(t, err)
		assert.Equal(t, ClassTransient, ClassOf(err), "the output replays the cycle under a new label")
		require.Len(t, bad.requests(), 1)
		assert.Empty(t, good.requests(), "the body is not re-sent to the next FE")
		// The caller's next request (its replay under a new label) goes
		// to the next FE first.
		_, err = c.Begin(context.Background(), Txn{DB: "shop", Label: "l2", Multi: true})
		require.NoError(t, err)
		assert.Len(t, bad.requests(), 1, "the failed FE is not asked first again")
		assert.Len(t, good.requests(), 1)
	})
	t.Run("logical FAILED does not fail over", func(t *testing.T) {
		failing := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, 200, `{"Status":"FAILED","Message":"class com.starrocks.common.StarRocksException: transaction timeout after 20000ms"}`)
		})
		other := newFake(t, nil)
		c := newClient(t, Config{LoadURLs: []string{failing.srv.URL, other.srv.URL}})
		_, err := c.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.Error(t, err)
		assert.Equal(t, ClassTransient, ClassOf(err))
		assert.Len(t, failing.requests(), 1)
		assert.Empty(t, other.requests())
	})
	t.Run("no request is re-sent after a 5xx", func(t *testing.T) {
		tx := Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}
		ops := []struct {
			op    string
			class Class
			send  func(c *Client) error
		}{
			{OpBegin, ClassTransient, func(c *Client) error { _, err := c.Begin(context.Background(), tx); return err }},
			{OpLoad, ClassTransient, func(c *Client) error {
				_, err := c.Load(context.Background(), LoadRequest{Txn: tx, Body: []byte("{}")})
				return err
			}},
			{OpCommit, ClassAmbiguous, func(c *Client) error { _, err := c.Commit(context.Background(), tx); return err }},
			{OpRollback, ClassTransient, func(c *Client) error { _, err := c.Rollback(context.Background(), tx); return err }},
		}
		for _, code := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
			for _, o := range ops {
				gw := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { w.WriteHeader(code) })
				other := newFake(t, nil)
				c := newClient(t, Config{LoadURLs: []string{gw.srv.URL, other.srv.URL}})
				err := o.send(c)
				require.Error(t, err, "%s answered HTTP %d", o.op, code)
				assert.Equal(t, o.class, ClassOf(err), "%s answered HTTP %d", o.op, code)
				assert.Len(t, gw.requests(), 1, "%s answered HTTP %d", o.op, code)
				assert.Empty(t, other.requests(), "%s answered HTTP %d is not re-sent to another FE", o.op, code)
			}
		}
	})
	t.Run("get_load_state fails over on a 5xx and on a reset", func(t *testing.T) {
		// It only reads: asking another FE cannot apply anything twice.
		for _, reply := range []func(w http.ResponseWriter, r *http.Request, _ []byte){
			func(w http.ResponseWriter, _ *http.Request, _ []byte) { w.WriteHeader(http.StatusServiceUnavailable) },
			func(w http.ResponseWriter, _ *http.Request, _ []byte) {
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					_ = conn.Close()
				}
			},
		} {
			bad := newFake(t, reply)
			good := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
				writeJSON(w, 200, `{"status":"OK","msg":"Success","state":"VISIBLE"}`)
			})
			c := newClient(t, Config{LoadURLs: []string{bad.srv.URL, good.srv.URL}})
			st, err := c.LoadState(context.Background(), "shop", "l1")
			require.NoError(t, err)
			assert.Equal(t, StateVisible, st)
			assert.Len(t, good.requests(), 1)
		}
	})
	t.Run("all down", func(t *testing.T) {
		bad := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			http.Error(w, "bad gateway", http.StatusBadGateway)
		})
		c := newClient(t, Config{LoadURLs: []string{refusedURL(t), bad.srv.URL}})
		_, err := c.Commit(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.Error(t, err)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, ClassAmbiguous, e.Class)
		assert.Equal(t, 502, e.HTTPCode)
		assert.Contains(t, err.Error(), "bad gateway")

		c2 := newClient(t, Config{LoadURLs: []string{refusedURL(t), refusedURL(t)}})
		_, err = c2.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.Error(t, err)
		assert.Equal(t, ClassTransient, ClassOf(err))
		assert.Contains(t, err.Error(), "all 2 load URLs failed")
	})
}

func TestTransportErrorsClassByOperation(t *testing.T) {
	// The server accepts, reads the request, then drops the connection.
	f := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	defer f.Close()
	other := newFake(t, nil)
	c := newClient(t, Config{LoadURLs: []string{f.URL, other.srv.URL}})
	tx := Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}
	_, err := c.Commit(context.Background(), tx)
	assert.Equal(t, ClassAmbiguous, ClassOf(err), "a reset commit may have committed")
	assert.Equal(t, int32(1), c.preferred.Load(), "the next request goes to the next FE first")
	c.preferred.Store(0)
	_, err = c.Load(context.Background(), LoadRequest{Txn: tx, Body: []byte("{}")})
	assert.Equal(t, ClassTransient, ClassOf(err))
	assert.Empty(t, other.requests(), "a request that was sent is never re-sent to another FE")
}

func TestRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := newClient(t, Config{LoadURLs: []string{f.srv.URL}, RequestTimeout: 100 * time.Millisecond})
	start := time.Now()
	_, err := c.Commit(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Equal(t, ClassAmbiguous, ClassOf(err))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestAuthFailureIsFatal(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("WWW-Authenticate", `Basic realm=""`)
		writeJSON(w, 401, `{"status":"FAILED","code":"1","msg":"Access denied for user 'loader'","message":"Access denied for user 'loader'"}`)
	})
	other := newFake(t, nil)
	c := newClient(t, Config{LoadURLs: []string{f.srv.URL, other.srv.URL}})
	_, err := c.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
	require.Error(t, err)
	assert.Equal(t, ClassFatal, ClassOf(err))
	assert.Empty(t, other.requests())
	assert.NotContains(t, err.Error(), "s3cret-pw")
}

func TestNewValidatesConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no URL", Config{}, "at least one load URL"},
		{"bad scheme", Config{LoadURLs: []string{"ftp://fe:8030"}}, "scheme must be http or https"},
		{"no host", Config{LoadURLs: []string{"http://"}}, "no host"},
		{"no scheme", Config{LoadURLs: []string{"fe:8030"}}, "scheme must be http or https"},
		{"query", Config{LoadURLs: []string{"http://fe:8030?x=1"}}, "no query"},
		{"credentials", Config{LoadURLs: []string{"http://root:hunter2@fe:8030"}}, "credentials in the URL"},
		{"compression", Config{LoadURLs: []string{"http://fe:8030"}, Compression: "zip"}, `unsupported compression "zip"`},
		{"negative timeout", Config{LoadURLs: []string{"http://fe:8030"}, RequestTimeout: -time.Second}, "request timeout must not be negative"},
		{"negative redirects", Config{LoadURLs: []string{"http://fe:8030"}, MaxRedirects: -1}, "max redirects"},
		{"second URL bad", Config{LoadURLs: []string{"http://fe:8030", "http://a b"}}, "load URL 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "hunter2")
		})
	}
	lz, err := New(Config{LoadURLs: []string{"http://fe:8030"}, Compression: "lz4"})
	require.NoError(t, err)
	assert.Equal(t, CompressionLZ4, lz.compression, `"lz4" is accepted as lz4_frame`)
	c, err := New(Config{LoadURLs: []string{"https://fe1:8443/", " http://fe2:8030 "}, Compression: "LZ4_FRAME"})
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, CompressionLZ4, c.compression)
	assert.Equal(t, DefaultMaxRedirects, c.maxRedirects)
	assert.Equal(t, "https://fe1:8443", c.bases[0].String())
	assert.Equal(t, DefaultMaxIdleConnsPerHost, c.transport.MaxIdleConnsPerHost)
	assert.Equal(t, DefaultExpectContinueTimeout, c.transport.ExpectContinueTimeout)
}

func TestPasswordNeverInErrors(t *testing.T) {
	c := newClient(t, Config{LoadURLs: []string{refusedURL(t)}, Username: "root", Password: "hunter2-secret"})
	_, err := c.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2-secret")
	assert.NotContains(t, err.Error(), base64.StdEncoding.EncodeToString([]byte("root:hunter2-secret")))
}

// Connections are reused across loads and control requests: every reply
// body is drained and closed. (An FE that answers a load with a 307 without
// reading its body closes that connection; that is the server's choice.)
func TestKeepAlive(t *testing.T) {
	var conns atomic.Int32
	f := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeJSON(w, 200, `{"Status":"OK","Message":""}`)
	}))
	f.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	f.Start()
	defer f.Close()
	c := newClient(t, Config{LoadURLs: []string{f.URL}})
	for range 20 {
		_, err := c.Load(context.Background(), LoadRequest{Txn: Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}, Body: []byte(`{"a":1}`)})
		require.NoError(t, err)
		_, err = c.Commit(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.NoError(t, err)
	}
	assert.Equal(t, int32(1), conns.Load())
}

// Concurrent loads of different tables share the client safely (run with
// -race).
func TestConcurrentUse(t *testing.T) {
	f := newFake(t, nil)
	c := newClient(t, Config{LoadURLs: []string{refusedURL(t), f.srv.URL}, Compression: "lz4_frame"})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Load(context.Background(), LoadRequest{
				Txn:     Txn{DB: "shop", Table: "t" + strconv.Itoa(i), Label: "l1", Multi: true},
				Headers: map[string]string{"format": "json"}, Body: bytes.Repeat([]byte(`{"a":1}`), 100),
			})
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Len(t, f.requests(), 16)
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"Status":"OK","Message":""}`)
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())

	c := newClient(t, Config{LoadURLs: []string{srv.URL}, TLS: &tls.Config{RootCAs: pool}})
	_, err := c.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
	require.NoError(t, err)

	// Without the CA the certificate is refused: an operator must act.
	untrusted := newClient(t, Config{LoadURLs: []string{srv.URL}})
	_, err = untrusted.Commit(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
	require.Error(t, err)
	assert.Equal(t, ClassFatal, ClassOf(err))

	// A failed handshake fails over to the next FE (nothing was sent).
	good := newFake(t, nil)
	failover := newClient(t, Config{LoadURLs: []string{srv.URL, good.srv.URL}})
	_, err = failover.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
	require.NoError(t, err)
	assert.Len(t, good.requests(), 1)
}
