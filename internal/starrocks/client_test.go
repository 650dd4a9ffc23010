package starrocks

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
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

	"github.com/pierrec/lz4/v4"
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

func TestRequestShapes(t *testing.T) {
	ctx := context.Background()
	multi := Txn{DB: "shop", Label: "p-shop-1", Table: "orders", Multi: true, Timeout: 600 * time.Second}
	classic := Txn{DB: "shop", Label: "p-shop-2", Table: "orders", Timeout: 1500 * time.Millisecond}
	load := func(tx Txn) LoadRequest {
		return LoadRequest{Txn: tx, Headers: map[string]string{"format": "json", "strip_outer_array": "true"}, Body: []byte(`[{"id":1}]`)}
	}
	cases := []struct {
		name    string
		send    func(c *Client) error
		method  string
		path    string
		headers map[string]string // "" = must be absent
		body    string
	}{
		{"multi begin", func(c *Client) error { _, err := c.Begin(ctx, multi); return err },
			"POST", "/api/transaction/begin",
			map[string]string{"label": "p-shop-1", "db": "shop", "transaction_type": "multi", "timeout": "600", "table": ""}, ""},
		{"multi load", func(c *Client) error { _, err := c.Load(ctx, load(multi)); return err },
			"PUT", "/api/transaction/load",
			map[string]string{"label": "p-shop-1", "db": "shop", "table": "orders", "transaction_type": "multi",
				"format": "json", "strip_outer_array": "true", "Expect": "100-continue",
				"Content-Type": "application/octet-stream", "Content-Length": "10", "timeout": "", "compression": ""},
			`[{"id":1}]`},
		{"multi commit", func(c *Client) error { _, err := c.Commit(ctx, multi); return err },
			"POST", "/api/transaction/commit",
			map[string]string{"label": "p-shop-1", "db": "shop", "transaction_type": "multi", "table": "", "timeout": ""}, ""},
		{"multi rollback", func(c *Client) error { _, err := c.Rollback(ctx, multi); return err },
			"POST", "/api/transaction/rollback",
			map[string]string{"label": "p-shop-1", "db": "shop", "transaction_type": "multi", "table": ""}, ""},
		{"multi prepare", func(c *Client) error { _, err := c.Prepare(ctx, multi); return err },
			"POST", "/api/transaction/prepare",
			map[string]string{"label": "p-shop-1", "db": "shop", "transaction_type": "multi", "table": ""}, ""},
		{"classic begin", func(c *Client) error { _, err := c.Begin(ctx, classic); return err },
			"POST", "/api/transaction/begin",
			map[string]string{"label": "p-shop-2", "db": "shop", "table": "orders", "transaction_type": "", "timeout": "2"}, ""},
		{"classic load", func(c *Client) error { _, err := c.Load(ctx, load(classic)); return err },
			"PUT", "/api/transaction/load",
			map[string]string{"label": "p-shop-2", "db": "shop", "table": "orders", "transaction_type": "", "Expect": "100-continue"},
			`[{"id":1}]`},
		{"classic prepare", func(c *Client) error { _, err := c.Prepare(ctx, classic); return err },
			"POST", "/api/transaction/prepare",
			map[string]string{"label": "p-shop-2", "db": "shop", "transaction_type": "", "table": ""}, ""},
		{"classic commit", func(c *Client) error { _, err := c.Commit(ctx, classic); return err },
			"POST", "/api/transaction/commit",
			map[string]string{"label": "p-shop-2", "db": "shop", "transaction_type": "", "table": ""}, ""},
		{"classic rollback", func(c *Client) error { _, err := c.Rollback(ctx, classic); return err },
			"POST", "/api/transaction/rollback",
			map[string]string{"label": "p-shop-2", "db": "shop", "transaction_type": ""}, ""},
		{"begin without timeout", func(c *Client) error {
			_, err := c.Begin(ctx, Txn{DB: "shop", Label: "x", Multi: true})
			return err
		}, "POST", "/api/transaction/begin", map[string]string{"timeout": ""}, ""},
		{"stream load", func(c *Client) error {
			_, err := c.StreamLoad(ctx, LoadRequest{Txn: Txn{DB: "shop", Table: "orders", Label: "sl-1"},
				Headers: map[string]string{"format": "json"}, Body: []byte(`{"id":1}`)})
			return err
		}, "PUT", "/api/shop/orders/_stream_load",
			map[string]string{"label": "sl-1", "format": "json", "Expect": "100-continue", "db": "", "table": "", "transaction_type": ""}, `{"id":1}`},
		{"cancel", func(c *Client) error { return c.Cancel(ctx, "shop", "p-shop-1") },
			"POST", "/api/shop/p-shop-1/_cancel", map[string]string{"label": ""}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				if strings.HasSuffix(r.URL.Path, "_stream_load") {
					writeJSON(w, 200, `{"Status":"Success","Message":"OK"}`)
					return
				}
				writeJSON(w, 200, `{"status":"OK","msg":"Success","Message":""}`)
			})
			c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
			require.NoError(t, tc.send(c))
			got := f.last(t)
			assert.Equal(t, tc.method, got.Method)
			assert.Equal(t, tc.path, got.Path)
			assert.Equal(t, basicAuth("loader", "s3cret-pw"), got.Header.Get("Authorization"))
			for k, v := range tc.headers {
				if v == "" {
					assert.Empty(t, got.Header.Values(k), "header %s must be absent", k)
				} else {
					assert.Equal(t, v, got.Header.Get(k), "header %s", k)
				}
			}
			assert.Equal(t, tc.body, string(got.Body))
			if tc.body == "" {
				assert.Empty(t, got.Header.Get("Content-Type"), "control requests carry no body")
			}
		})
	}
}

// The header names go out exactly as the StarRocks docs spell them
// (lower-case), not canonicalised by net/http.
func TestHeaderNamesOnTheWire(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	raw := make(chan string, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		var buf bytes.Buffer
		tmp := make([]byte, 4096)
		for !bytes.Contains(buf.Bytes(), []byte("\r\n\r\n")) {
			n, err := conn.Read(tmp)
			buf.Write(tmp[:n])
			if err != nil {
				break
			}
		}
		raw <- buf.String()
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 16\r\nConnection: close\r\n\r\n{\"Status\":\"OK\"}\n")
	}()
	c := newClient(t, Config{LoadURLs: []string{"http://" + l.Addr().String()}})
	_, err = c.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true, Timeout: time.Minute})
	require.NoError(t, err)
	wire := <-raw
	for _, h := range []string{"\r\nlabel: l1\r\n", "\r\ndb: shop\r\n", "\r\ntransaction_type: multi\r\n", "\r\ntimeout: 60\r\n", "\r\nContent-Length: 0\r\n"} {
		assert.Contains(t, wire, h)
	}
}

func TestReplyFieldsAreCaseInsensitive(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		writeJSON(w, 200, `{"Status":"OK","Message":"","Label":"l1","TxnId":9032,"LoadBytes":12,"Flag":true,"Nested":{"a":1},"Null":null}`)
	})
	c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
	rep, err := c.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
	require.NoError(t, err)
	assert.Equal(t, 200, rep.HTTPCode)
	assert.Equal(t, "OK", rep.Status())
	assert.Equal(t, "9032", rep.Get("txnid"))
	assert.Equal(t, "9032", rep.Get("TXNID"))
	assert.Equal(t, "l1", rep.Get("Label"))
	assert.Equal(t, "true", rep.Get("flag"))
	assert.Equal(t, `{"a":1}`, rep.Get("nested"))
	assert.Equal(t, "", rep.Get("null"))
	assert.Equal(t, "", rep.Get("absent"))
	assert.Contains(t, rep.Fields, "txnid")
	assert.Contains(t, string(rep.Raw), `"TxnId":9032`)
}

func TestRestBaseResultMessage(t *testing.T) {
	rep, err := parseReply(200, []byte(`{"status":"FAILED","code":"1","msg":"unknown database, database=x"}`))
	require.NoError(t, err)
	assert.Equal(t, "FAILED", rep.Status())
	assert.Equal(t, "unknown database, database=x", rep.Message(), "msg is the fallback for message")
	rep, err = parseReply(200, []byte(`{"status":"OK","msg":"Success","message":"OK"}`))
	require.NoError(t, err)
	assert.Equal(t, "OK", rep.Message())
}

func TestFailureKeepsStarRocksStatusAndMessage(t *testing.T) {
	const msg = "class com.starrocks.common.StarRocksException: stream load task p-1 does not exist"
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		writeJSON(w, 200, `{"Status":"FAILED","Message":"`+msg+`"}`)
	})
	c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
	rep, err := c.Load(context.Background(), LoadRequest{Txn: Txn{DB: "shop", Table: "orders", Label: "p-1", Multi: true}, Body: []byte("{}")})
	require.Error(t, err)
	require.NotNil(t, rep)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, OpLoad, e.Op)
	assert.Equal(t, "shop", e.DB)
	assert.Equal(t, "orders", e.Table)
	assert.Equal(t, "p-1", e.Label)
	assert.Equal(t, "FAILED", e.Status)
	assert.Equal(t, msg, e.Message)
	assert.Equal(t, 200, e.HTTPCode)
	assert.Equal(t, ClassTransient, ClassOf(err))
	assert.Contains(t, err.Error(), msg)
}

func TestNonJSONReplyKeepsBodyPrefix(t *testing.T) {
	body := "<html><body>502 Bad Gateway from the proxy</body></html>" + strings.Repeat("x", 1000)
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.WriteHeader(200)
		_, _ = io.WriteString(w, body)
	})
	c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
	rep, err := c.Commit(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
	require.Error(t, err)
	require.NotNil(t, rep)
	assert.Nil(t, rep.Fields)
	assert.Equal(t, ClassAmbiguous, ClassOf(err))
	assert.Contains(t, err.Error(), "502 Bad Gateway from the proxy")
	assert.Contains(t, err.Error(), "not a JSON object")
	assert.Less(t, len(err.Error()), 600, "only the first bytes of the body are kept")
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
		bad := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		})
		good := newFake(t, nil)
		c := newClient(t, Config{LoadURLs: []string{bad.srv.URL, good.srv.URL}})
		body := []byte(`[{"id":7}]`)
		_, err := c.Load(context.Background(), LoadRequest{Txn: Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}, Body: body})
		require.NoError(t, err)
		require.Len(t, bad.requests(), 1)
		require.Len(t, good.requests(), 1)
		assert.Equal(t, body, good.last(t).Body, "the body is re-sent to the next FE")
		_, err = c.Commit(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
		require.NoError(t, err)
		assert.Len(t, bad.requests(), 1, "the failed FE is not asked first again")
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
	t.Run("a load is not re-sent after a gateway error", func(t *testing.T) {
		for _, code := range []int{http.StatusBadGateway, http.StatusGatewayTimeout} {
			gw := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { w.WriteHeader(code) })
			other := newFake(t, nil)
			c := newClient(t, Config{LoadURLs: []string{gw.srv.URL, other.srv.URL}})
			_, err := c.Load(context.Background(), LoadRequest{Txn: Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}, Body: []byte("{}")})
			require.Error(t, err)
			assert.Equal(t, ClassTransient, ClassOf(err))
			assert.Empty(t, other.requests(), "HTTP %d", code)
			// Control requests carry no data and are idempotent per label.
			_, err = c.Commit(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
			require.NoError(t, err)
			assert.Len(t, other.requests(), 1, "HTTP %d", code)
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

func TestCompression(t *testing.T) {
	payload := bytes.Repeat([]byte(`{"id":1,"name":"compressible"},`), 2000)
	decoders := map[string]func([]byte) ([]byte, error){
		CompressionGzip: func(b []byte) ([]byte, error) {
			r, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			return io.ReadAll(r)
		},
		CompressionLZ4: func(b []byte) ([]byte, error) { return io.ReadAll(lz4.NewReader(bytes.NewReader(b))) },
	}
	for name, decode := range decoders {
		t.Run(name+" json", func(t *testing.T) {
			f := newFake(t, nil)
			c := newClient(t, Config{LoadURLs: []string{f.srv.URL}, Compression: name})
			for range 2 { // pooled writers are reused cleanly
				_, err := c.Load(context.Background(), LoadRequest{
					Txn:     Txn{DB: "shop", Table: "t", Label: "l1", Multi: true},
					Headers: map[string]string{"format": "json"}, Body: payload,
				})
				require.NoError(t, err)
				got := f.last(t)
				assert.Equal(t, name, got.Header.Get("compression"))
				assert.Empty(t, got.Header.Get("Content-Encoding"), "content-encoding and compression are mutually exclusive")
				assert.Equal(t, "json", got.Header.Get("format"))
				assert.Less(t, len(got.Body), len(payload))
				assert.Equal(t, got.Header.Get("Content-Length"), strconv.Itoa(len(got.Body)))
				plain, err := decode(got.Body)
				require.NoError(t, err)
				assert.Equal(t, payload, plain)
			}
		})
		t.Run(name+" csv", func(t *testing.T) {
			f := newFake(t, nil)
			c := newClient(t, Config{LoadURLs: []string{f.srv.URL}, Compression: name})
			csv := bytes.Repeat([]byte("1,abc\n"), 1000)
			_, err := c.Load(context.Background(), LoadRequest{Txn: Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}, Body: csv})
			require.NoError(t, err)
			got := f.last(t)
			assert.Equal(t, csvCompressedFormat[name], got.Header.Get("format"))
			assert.Empty(t, got.Header.Get("compression"))
			plain, err := decode(got.Body)
			require.NoError(t, err)
			assert.Equal(t, csv, plain)
		})
	}
	t.Run("conflicting header", func(t *testing.T) {
		f := newFake(t, nil)
		c := newClient(t, Config{LoadURLs: []string{f.srv.URL}, Compression: "gzip"})
		_, err := c.Load(context.Background(), LoadRequest{
			Txn:     Txn{DB: "shop", Table: "t", Label: "l1", Multi: true},
			Headers: map[string]string{"format": "json", "Content-Encoding": "gzip"}, Body: payload,
		})
		require.Error(t, err)
		assert.Equal(t, ClassFatal, ClassOf(err))
		assert.Contains(t, err.Error(), "only one of content-encoding and compression")
		assert.Empty(t, f.requests())
	})
}

func TestLoadRejectsBadHeaders(t *testing.T) {
	f := newFake(t, nil)
	c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
	tx := Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}
	for name, h := range map[string]map[string]string{
		"reserved label":   {"label": "other"},
		"reserved table":   {"Table": "other"},
		"reserved auth":    {"Authorization": "Basic x"},
		"CRLF in value":    {"columns": "id\r\nX-Evil: 1"},
		"bad header name":  {"bad name": "x"},
		"LF in value only": {"where": "a\n"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Load(context.Background(), LoadRequest{Txn: tx, Headers: h, Body: []byte("{}")})
			require.Error(t, err)
			assert.Equal(t, ClassFatal, ClassOf(err))
		})
	}
	assert.Empty(t, f.requests())
}

func TestNamesValidatedBeforeSending(t *testing.T) {
	f := newFake(t, nil)
	c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
	ctx := context.Background()
	_, err := c.Begin(ctx, Txn{DB: "shop\r\nX-Evil: 1", Label: "l1", Multi: true})
	require.Error(t, err)
	assert.Equal(t, ClassPerTxn, ClassOf(err))
	assert.Contains(t, err.Error(), "database")
	assert.NotContains(t, err.Error(), "\r\n", "the bad value is quoted")

	_, err = c.Load(ctx, LoadRequest{Txn: Txn{DB: "shop", Table: "orders;drop", Label: "l1", Multi: true}})
	require.Error(t, err)
	assert.Equal(t, ClassPerTxn, ClassOf(err))
	assert.Contains(t, err.Error(), `invalid table name "orders;drop"`)

	_, err = c.Load(ctx, LoadRequest{Txn: Txn{DB: "shop", Label: "l1", Multi: true}})
	require.Error(t, err, "a load always names its table")

	_, err = c.Begin(ctx, Txn{DB: "shop", Label: "l1"})
	require.Error(t, err, "a classic begin needs a table")

	_, err = c.Commit(ctx, Txn{DB: "shop", Label: "bad label!", Multi: true})
	require.Error(t, err)
	assert.Equal(t, ClassFatal, ClassOf(err))

	_, err = c.StreamLoad(ctx, LoadRequest{Txn: Txn{DB: "shop", Table: "a/b"}})
	assert.Equal(t, ClassPerTxn, ClassOf(err))
	_, err = c.StreamLoad(ctx, LoadRequest{Txn: Txn{DB: "", Table: "t"}})
	assert.Equal(t, ClassPerTxn, ClassOf(err))
	_, err = c.StreamLoad(ctx, LoadRequest{Txn: Txn{DB: "shop", Table: "t", Label: "a b"}})
	assert.Equal(t, ClassFatal, ClassOf(err))
	_, err = c.StreamLoad(ctx, LoadRequest{Txn: Txn{DB: "shop", Table: "t"}, Headers: map[string]string{"db": "x"}})
	assert.Equal(t, ClassFatal, ClassOf(err))

	_, err = c.LoadState(ctx, "shop", "")
	require.Error(t, err)
	require.Error(t, c.Cancel(ctx, "sh/op", "l1"))
	assert.Empty(t, f.requests())
}

func TestLoadState(t *testing.T) {
	cases := []struct {
		body  string
		want  LabelState
		class Class
	}{
		{`{"state":"VISIBLE","status":"OK","code":"0","msg":"Success","message":"OK"}`, StateVisible, ClassOK},
		{`{"state":"prepared","status":"OK"}`, StatePrepared, ClassOK},
		{`{"State":"UNKNOWN","Status":"OK"}`, StateUnknown, ClassOK},
		{`{"status":"FAILED","code":"1","msg":"unknown database, database=shop","message":"unknown database, database=shop"}`, "", ClassTransient},
		{`{"status":"OK"}`, "", ClassTransient},
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { writeJSON(w, 200, tc.body) })
			c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
			st, err := c.LoadState(context.Background(), "shop", "l1")
			assert.Equal(t, tc.want, st)
			assert.Equal(t, tc.class, ClassOf(err))
		})
	}
}

func TestWaitFinal(t *testing.T) {
	t.Run("polls until final", func(t *testing.T) {
		var polls atomic.Int32
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			switch polls.Add(1) {
			case 1:
				writeJSON(w, 200, `{"state":"UNKNOWN","status":"OK"}`)
			case 2:
				writeJSON(w, 200, `{"state":"PREPARE","status":"OK"}`)
			case 3:
				writeJSON(w, 500, `oops`)
			default:
				writeJSON(w, 200, `{"state":"COMMITTED","status":"OK"}`)
			}
		})
		c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
		start := time.Now()
		st, err := c.WaitFinal(context.Background(), "shop", "l1", 30*time.Second)
		require.NoError(t, err)
		assert.Equal(t, StateCommitted, st)
		assert.Equal(t, int32(4), polls.Load())
		// 0.2 + 0.5 + 1 s of backoff before the 4th poll.
		assert.GreaterOrEqual(t, time.Since(start), 1700*time.Millisecond)
		assert.Less(t, time.Since(start), 5*time.Second)
	})
	t.Run("stops at maxWait", func(t *testing.T) {
		var polls atomic.Int32
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			polls.Add(1)
			writeJSON(w, 200, `{"state":"PREPARE","status":"OK"}`)
		})
		c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
		start := time.Now()
		st, err := c.WaitFinal(context.Background(), "shop", "l1", 600*time.Millisecond)
		elapsed := time.Since(start)
		require.NoError(t, err)
		assert.Equal(t, StatePrepare, st, "the last state seen")
		assert.GreaterOrEqual(t, elapsed, 600*time.Millisecond)
		assert.Less(t, elapsed, 3*time.Second, "stopped near maxWait, not after the next 0.5 s backoff step")
		// At 0, 0.2 s and at the 0.6 s deadline (fewer only on a starved
		// machine).
		assert.GreaterOrEqual(t, polls.Load(), int32(2))
		assert.LessOrEqual(t, polls.Load(), int32(3))
	})
	t.Run("context ends", func(t *testing.T) {
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, 200, `{"state":"PREPARED","status":"OK"}`)
		})
		c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		st, err := c.WaitFinal(ctx, "shop", "l1", time.Minute)
		assert.Equal(t, StatePrepared, st)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("errors only", func(t *testing.T) {
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, 200, `{"status":"FAILED","msg":"unknown database, database=shop"}`)
		})
		c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
		st, err := c.WaitFinal(context.Background(), "shop", "l1", 300*time.Millisecond)
		assert.Equal(t, LabelState(""), st)
		require.Error(t, err)
		assert.Equal(t, ClassTransient, ClassOf(err))
	})
	t.Run("aborted is final", func(t *testing.T) {
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, 200, `{"state":"ABORTED","status":"OK"}`)
		})
		c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
		st, err := c.WaitFinal(context.Background(), "shop", "l1", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, StateAborted, st)
		assert.Len(t, f.requests(), 1)
	})
}

func TestStreamLoadLabelExists(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		writeJSON(w, 200, `{"Status":"Label Already Exists","ExistingJobStatus":"FINISHED","Message":"Label [sl-1] has already been used."}`)
	})
	c := newClient(t, Config{LoadURLs: []string{f.srv.URL}})
	rep, err := c.StreamLoad(context.Background(), LoadRequest{Txn: Txn{DB: "shop", Table: "t", Label: "sl-1"}, Body: []byte("1\n")})
	require.NoError(t, err)
	assert.Equal(t, "FINISHED", rep.Get("existingjobstatus"))
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

func TestClassOf(t *testing.T) {
	assert.Equal(t, ClassOK, ClassOf(nil))
	assert.Equal(t, ClassTransient, ClassOf(errors.New("x")))
	assert.Equal(t, ClassPerTxn, ClassOf(&Error{Class: ClassPerTxn}))
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
