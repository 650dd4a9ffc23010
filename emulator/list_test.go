package emulator

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listObj is one context of the BE list reply as rapidjson's PrettyWriter
// prints it; inProcessing drops the Status entry.
func listObj(inProcessing bool, label string, id, loadBytes, begin, last, timeout, idle int64) string {
	head := "{\n    \"Status\": \"OK\",\n    \"InProcessing\": false,\n"
	if inProcessing {
		head = "{\n    \"InProcessing\": true,\n"
	}
	return head + fmt.Sprintf(`    "Label": %q,
    "TxnId": %d,
    "NumberTotalRows": 0,
    "NumberLoadedRows": 0,
    "NumberFilteredRows": 0,
    "NumberUnselectedRows": 0,
    "LoadBytes": %d,
    "StreamLoadPlanTimeMs": 0,
    "ReceivedDataTimeMs": 0,
    "WriteDataTimeMs": 0,
    "BeginTimestamp": %d,
    "LastActiveTimestamp": %d,
    "TransactionTimeoutSec": %d,
    "IdleTransactionTimeoutSec": %d
}`, label, id, loadBytes, begin, last, timeout, idle)
}

// ctxTimes are the begin and last-active Unix seconds of the BE context of
// label, checked against the wall clock around the requests that set them.
func ctxTimes(t *testing.T, e *Emulator, label string, from, to time.Time) (begin, last int64) {
	t.Helper()
	e.mu.Lock()
	tx := e.beContexts[label]
	require.NotNil(t, tx, "no BE context for %s", label)
	begin, last = tx.created.Unix(), tx.lastActive.Unix()
	e.mu.Unlock()
	assert.GreaterOrEqual(t, begin, from.Unix())
	assert.LessOrEqual(t, last, to.Unix())
	assert.LessOrEqual(t, begin, last)
	return begin, last
}

// TestBEListTransactions is docs/notes/starrocks-protocol.md §4.6: the BE lists its classic transaction
// contexts as concatenated pretty-printed objects; the FE refuses list.
func TestBEListTransactions(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.BEAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	be := func(method, op string, h hdrs, body string) resp {
		t.Helper()
		return c.do(method, e.BEURL()+"/api/transaction/"+op, h, body)
	}
	list := func() string {
		t.Helper()
		r := be(http.MethodPost, "list", nil, "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		assert.Equal(t, "application/json", r.hdr.Get("Content-Type"))
		return r.raw
	}

	t.Log("no contexts: an empty body, for POST and PUT and any op case")
	assert.Equal(t, "", list())
	r := be(http.MethodPut, "LIST", nil, "")
	assert.Equal(t, http.StatusOK, r.code)
	assert.Equal(t, "", r.raw)
	assert.Equal(t, http.StatusMethodNotAllowed, be(http.MethodGet, "list", nil, "").code)

	t.Log("the FE does not serve list, BE or not")
	r = c.do(http.MethodPost, "/api/transaction/list", ctlH("x"), "")
	assert.Equal(t, http.StatusOK, r.code)
	assert.Equal(t, `{"Status":"FAILED","Message":"`+pfx+`Unknown transaction operation: list"}`, r.raw)

	t.Log("two open classic contexts, one with data and both timeouts")
	before := time.Now()
	r1 := be(http.MethodPost, "begin", hdrs{"db": "test", "label": "ls1", "table": "orders", "timeout": "60", "idle_transaction_timeout": "30"}, "")
	requireStatus(t, r1, "OK", "")
	body := orderRows(1, 2)
	requireStatus(t, be(http.MethodPut, "load", classicH("ls1"), body), "OK", "")
	r2 := be(http.MethodPost, "begin", ctlH("ls2"), "")
	requireStatus(t, r2, "OK", "")
	after := time.Now()
	b1, l1 := ctxTimes(t, e, "ls1", before, after)
	b2, l2 := ctxTimes(t, e, "ls2", before, after)
	twoOpen := listObj(false, "ls1", r1.num("TxnId"), int64(len(body)), b1, l1, 60, 30) +
		listObj(false, "ls2", r2.num("TxnId"), 0, b2, l2, -1, -1)
	assert.Equal(t, twoOpen, list())

	t.Log("not contexts: a multi transaction's channels, a plain stream load, a PREPARED transaction")
	c.multiTxn("lm1")
	r = c.load(jsonLoadH("test", "lm1", "orders"), orderRows(10, 1))
	require.Equal(t, http.StatusTemporaryRedirect, r.code, "the FE plans the table, then sends the load to the BE")
	requireStatus(t, c.do(http.MethodPut, r.hdr.Get("Location"), jsonLoadH("test", "lm1", "orders"), orderRows(10, 1)), "OK", "")
	sl := c.do(http.MethodPut, e.BEURL()+"/api/test/order_events/_stream_load", hdrs{"format": "json", "label": "lsl"}, `{"event_id":1,"order_id":1,"kind":"created"}`)
	assert.Equal(t, "Success", sl.str("Status"), sl.raw)
	requireStatus(t, be(http.MethodPost, "begin", ctlH("lp1"), ""), "OK", "")
	requireStatus(t, be(http.MethodPut, "load", classicH("lp1"), orderRows(20, 1)), "OK", "")
	requireStatus(t, be(http.MethodPost, "prepare", ctlH("lp1"), ""), "OK", "")
	assert.Equal(t, "PREPARED", c.state("test", "lp1"))
	assert.Equal(t, twoOpen, list())

	t.Log("list needs no label or db and ignores transaction_type")
	r = be(http.MethodPost, "list", multiH("test", "whatever"), "")
	assert.Equal(t, twoOpen, r.raw)

	t.Log("a later load updates LoadBytes (that request's bytes) and the last-active time")
	body2 := orderRows(3, 1)
	before = time.Now()
	requireStatus(t, be(http.MethodPut, "load", classicH("ls1"), body2), "OK", "")
	b1, l1 = ctxTimes(t, e, "ls1", before.Add(-time.Hour), time.Now())
	assert.GreaterOrEqual(t, l1, before.Unix())
	assert.Equal(t, listObj(false, "ls1", r1.num("TxnId"), int64(len(body2)), b1, l1, 60, 30)+
		listObj(false, "ls2", r2.num("TxnId"), 0, b2, l2, -1, -1), list())

	t.Log("commit removes a context; rollback removes the other")
	r = be(http.MethodPost, "commit", ctlH("ls1"), "")
	requireStatus(t, r, "OK", "")
	assert.Equal(t, int64(3), r.num("NumberLoadedRows"))
	assert.Equal(t, listObj(false, "ls2", r2.num("TxnId"), 0, b2, l2, -1, -1), list())
	requireStatus(t, be(http.MethodPost, "rollback", ctlH("ls2"), ""), "OK", "")
	assert.Equal(t, "", list())
	assert.Equal(t, "VISIBLE", c.state("test", "ls1"))
	assert.Equal(t, "ABORTED", c.state("test", "ls2"))
}

// TestBEListInProcessing: a context locked by a load in progress shows
// InProcessing true and no Status, with LoadBytes reset for the new load.
func TestBEListInProcessing(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.BEAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	list := func() string {
		t.Helper()
		r := c.do(http.MethodPut, e.BEURL()+"/api/transaction/list", nil, "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		return r.raw
	}
	before := time.Now()
	r := c.do(http.MethodPost, e.BEURL()+"/api/transaction/begin", hdrs{"db": "test", "label": "lb1", "table": "orders", "timeout": "0"}, "")
	requireStatus(t, r, "OK", "")
	id := r.num("TxnId")
	first := orderRows(1, 1)
	requireStatus(t, c.do(http.MethodPut, e.BEURL()+"/api/transaction/load", classicH("lb1"), first), "OK", "")
	b, l := ctxTimes(t, e, "lb1", before, time.Now())
	assert.Equal(t, listObj(false, "lb1", id, int64(len(first)), b, l, 0, -1), list())

	body := orderRows(10, 3)
	sb := &slowBody{first: body[:10], rest: body[10:], started: make(chan struct{}), release: make(chan struct{})}
	req, err := http.NewRequest(http.MethodPut, e.BEURL()+"/api/transaction/load", sb)
	require.NoError(t, err)
	req.SetBasicAuth("root", "")
	for k, v := range classicH("lb1") {
		req.Header.Set(k, v)
	}
	req.ContentLength = int64(len(body))
	waitSlow := sendAsync(t, req)
	<-sb.started
	require.Eventually(t, func() bool { return strings.Contains(list(), `"InProcessing": true`) }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, listObj(true, "lb1", id, 0, b, l, 0, -1), list())
	t.Log("the locked context still refuses a second load")
	requireStatus(t, c.do(http.MethodPut, e.BEURL()+"/api/transaction/load", classicH("lb1"), first), "TXN_IN_PROCESSING", "Transaction is in processing")
	close(sb.release)
	slow := waitSlow()
	assert.Contains(t, slow.raw, `"Status": "OK"`, "the BE's load reply, pretty-printed as the BE prints it")
	b, l = ctxTimes(t, e, "lb1", before, time.Now())
	assert.Equal(t, listObj(false, "lb1", id, int64(len(body)), b, l, 0, -1), list())

	t.Log("an abort (here a load whose parameters differ) removes the context")
	requireStatus(t, c.do(http.MethodPut, e.BEURL()+"/api/transaction/load", classicH("lb1", "strict_mode", "true"), first), "INVALID_ARGUMENT", "load request not equal last.")
	assert.Equal(t, "", list())
}

// TestBEListAuth: list needs the Basic credentials every BE endpoint needs.
func TestBEListAuth(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.BEAddr = "127.0.0.1:0"; c.Password = "s3cret" })
	c := newClient(t, e)
	r := c.do(http.MethodPost, e.BEURL()+"/api/transaction/list", nil, "")
	assert.Equal(t, http.StatusUnauthorized, r.code, r.raw)
	assert.Equal(t, `Basic realm=""`, r.hdr.Get("WWW-Authenticate"))
	assert.Equal(t, "FAILED", r.str("status"))
	c.user = ""
	r = c.do(http.MethodPost, e.BEURL()+"/api/transaction/list", nil, "")
	assert.Equal(t, http.StatusUnauthorized, r.code, r.raw)
	assert.Equal(t, "Need auth information.", r.str("msg"))
	c.user, c.pass = "root", "s3cret"
	r = c.do(http.MethodPost, e.BEURL()+"/api/transaction/list", nil, "")
	assert.Equal(t, http.StatusOK, r.code, r.raw)
	assert.Equal(t, "", r.raw)
}

// TestReplyPretty: the PrettyWriter layout, JSON escapes but no HTML ones,
// and an empty object.
func TestReplyPretty(t *testing.T) {
	t.Parallel()
	b, err := reply{{"A<b>", `x"y\z&`}, {"N", int64(-1)}, {"T", true}}.pretty()
	require.NoError(t, err)
	assert.Equal(t, "{\n    \"A<b>\": \"x\\\"y\\\\z&\",\n    \"N\": -1,\n    \"T\": true\n}", string(b))
	b, err = reply{}.pretty()
	require.NoError(t, err)
	assert.Equal(t, "{}", string(b))
	_, err = reply{{"bad", func() {}}}.pretty()
	require.ErrorContains(t, err, `encoding the value of "bad"`)
}
