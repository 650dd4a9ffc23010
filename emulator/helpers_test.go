package emulator

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

func schemaSQL(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("../examples/schema.sql")
	require.NoError(t, err)
	return string(b)
}

// startEmu starts an emulator on free ports with the example schema.
func startEmu(t testing.TB, mod func(*Config)) *Emulator {
	t.Helper()
	cfg := Config{HTTPAddr: "127.0.0.1:0", Schema: schemaSQL(t), ReaperInterval: 20 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	e, err := Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

// client talks to the emulator the way curl does, without following
// redirects.
type client struct {
	t          testing.TB
	base       string
	user, pass string
	hc         *http.Client
}

func newClient(t testing.TB, e *Emulator) *client {
	return &client{t: t, base: e.FEURL(), user: "root", hc: &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type resp struct {
	code int
	hdr  http.Header
	raw  string
	m    map[string]any
}

func (r resp) str(k string) string {
	v, ok := r.m[k]
	if !ok {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

func (r resp) num(k string) int64 {
	f, _ := r.m[k].(float64)
	return int64(f)
}

type hdrs map[string]string

func (c *client) do(method, url string, h hdrs, body string) resp {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	if strings.HasPrefix(url, "/") {
		url = c.base + url
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(c.t, err)
	if c.user != "" || c.pass != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	res, err := c.hc.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	out := resp{code: res.StatusCode, hdr: res.Header, raw: string(b)}
	if json.Valid(b) {
		_ = json.Unmarshal(b, &out.m)
	}
	return out
}

// multiH are the headers of a multi-table transaction request.
func multiH(db, label string, extra ...string) hdrs {
	h := hdrs{"db": db, "label": label, "transaction_type": "multi"}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

func jsonLoadH(db, label, table string, extra ...string) hdrs {
	h := multiH(db, label, append([]string{"table", table, "format", "json", "strip_outer_array", "true"}, extra...)...)
	return h
}

func (c *client) begin(h hdrs) resp  { return c.do(http.MethodPost, "/api/transaction/begin", h, "") }
func (c *client) commit(h hdrs) resp { return c.do(http.MethodPost, "/api/transaction/commit", h, "") }
func (c *client) rollback(h hdrs) resp {
	return c.do(http.MethodPost, "/api/transaction/rollback", h, "")
}
func (c *client) prepare(h hdrs) resp {
	return c.do(http.MethodPost, "/api/transaction/prepare", h, "")
}
func (c *client) load(h hdrs, body string) resp {
	return c.do(http.MethodPut, "/api/transaction/load", h, body)
}

func (c *client) state(db, label string) string {
	c.t.Helper()
	r := c.do(http.MethodGet, "/api/"+db+"/get_load_state?label="+label, nil, "")
	require.Equal(c.t, http.StatusOK, r.code, r.raw)
	require.Equal(c.t, "OK", r.str("status"), r.raw)
	return r.str("state")
}

// requireStatus checks a TransactionResult/BE reply.
func requireStatus(t testing.TB, r resp, status, msg string) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.code, r.raw)
	require.Equal(t, status, r.str("Status"), r.raw)
	require.Equal(t, msg, r.str("Message"), r.raw)
}

func orderRows(from, n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"order_id":%d,"customer_id":%d,"total_amount":"1.50","order_status":"new"}`, from+i, 7)
	}
	b.WriteByte(']')
	return b.String()
}

func itemRows(from, n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"order_id":%d,"item_id":1,"product":"p","quantity":2,"price":"3.00"}`, from+i)
	}
	b.WriteByte(']')
	return b.String()
}

// badOrderRows lack the NOT NULL customer_id: every row is filtered.
func badOrderRows(from, n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"order_id":%d}`, from+i)
	}
	b.WriteByte(']')
	return b.String()
}

func openMySQL(t testing.TB, e *Emulator) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", "root:@tcp("+e.MySQLAddr()+")/test")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func countRows(t testing.TB, e *Emulator, table string) int {
	t.Helper()
	rows, err := e.Store().Rows("test", table)
	require.NoError(t, err)
	return len(rows)
}

// multiTxn begins a multi transaction and loads the given tables.
func (c *client) multiTxn(label string, loads ...[2]string) {
	c.t.Helper()
	requireStatus(c.t, c.begin(multiH("test", label)), "OK", "")
	for _, l := range loads {
		r := c.load(jsonLoadH("test", label, l[0]), l[1])
		requireStatus(c.t, r, "OK", "")
	}
}
