package starrocks

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

func TestClassOf(t *testing.T) {
	assert.Equal(t, ClassOK, ClassOf(nil))
	assert.Equal(t, ClassTransient, ClassOf(errors.New("x")))
	assert.Equal(t, ClassPerTxn, ClassOf(&Error{Class: ClassPerTxn}))
}
