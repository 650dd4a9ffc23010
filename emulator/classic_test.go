package emulator

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func classicH(label string, extra ...string) hdrs {
	h := hdrs{"db": "test", "label": label, "table": "orders", "format": "json", "strip_outer_array": "true"}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

// ctlH are the headers of classic begin/prepare/commit/rollback.
func ctlH(label string) hdrs { return hdrs{"db": "test", "label": label, "table": "orders"} }

func keysOf(r resp) []string {
	keys := make([]string, 0, len(r.m))
	for k := range r.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestClassicFlow is docs/notes/starrocks-protocol.md §4: begin, load, prepare, commit with the BE reply
// shapes, and the FE commit/rollback table §4.4.
func TestClassicFlow(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)

	// the BE does not check the table header; the FE's loadTxnBegin finds no table "" (§12.1)
	requireStatus(t, c.begin(hdrs{"db": "test", "label": "x0"}), "ANALYSIS_ERROR", `unknown table "test."`)
	r := c.begin(ctlH("c1"))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, []string{"BeginTxnTimeMs", "Label", "Message", "Status", "TxnId"}, keysOf(r))
	id := r.num("TxnId")
	r = c.begin(ctlH("c1"))
	assert.Equal(t, `{"Status":"LABEL_ALREADY_EXISTS","ExistingJobStatus":"","Message":""}`, r.raw)
	assert.Equal(t, "PREPARE", c.state("test", "c1"))

	// the FE finds no coordinator for a label never begun (test_stream_load_basic_txn:
	// FAILED); the BE's TXN_NOT_EXISTS is for a transaction that is over
	requireStatus(t, c.load(classicH("nolabel"), orderRows(1, 1)), "FAILED",
		pfx+"Can't find the transaction with db [test] and label[nolabel]. The possible reasons: 1. FE leader is started or switched; 2. The transaction timeouts and is cleaned.")
	requireStatus(t, c.load(hdrs{"db": "test", "label": "c1", "table": "order_items"}, itemRows(1, 1)), "INVALID_ARGUMENT", "Request table order_items not equal transaction table orders")
	// an unknown database is the FE's refusal (TransactionWithoutChannelHandler.handle), another
	// one the BE's
	requireStatus(t, c.load(hdrs{"db": "nodb", "label": "c1", "table": "orders"}, itemRows(1, 1)), "FAILED", pfx+"Database[nodb] does not exist.")
	require.NoError(t, e.Store().ExecScript("CREATE DATABASE other"))
	requireStatus(t, c.load(hdrs{"db": "other", "label": "c1", "table": "orders"}, itemRows(1, 1)), "INVALID_ARGUMENT", "Request database other not equal transaction database test")
	r = c.load(classicH("c1"), orderRows(1, 2))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, []string{"Label", "LoadBytes", "Message", "ReceivedDataTimeMs", "Status", "StreamLoadPlanTimeMs", "TxnId"}, keysOf(r))
	requireStatus(t, c.load(classicH("c1"), orderRows(3, 1)), "OK", "")

	r = c.prepare(ctlH("c1"))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, int64(3), r.num("NumberLoadedRows"))
	assert.Equal(t, int64(3), r.num("NumberTotalRows"))
	assert.Equal(t, int64(0), r.num("NumberFilteredRows"))
	assert.Contains(t, r.m, "CommitAndPublishTimeMs")
	assert.Equal(t, "PREPARED", c.state("test", "c1"))
	assert.Equal(t, 0, countRows(t, e, "orders"))

	t.Log("a PREPARED label cannot be begun again (RUNNING)")
	r = c.begin(ctlH("c1"))
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", "Label [c1] has already been used.")
	assert.Equal(t, "RUNNING", r.str("ExistingJobStatus"))

	t.Log("§4.4 PREPARED → commit by the FE")
	r = c.commit(ctlH("c1"))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, id, r.num("TxnId"))
	assert.Equal(t, "c1", r.str("Label"))
	assert.Equal(t, "VISIBLE", c.state("test", "c1"))
	assert.Equal(t, 3, countRows(t, e, "orders"))

	t.Log("§4.4 COMMITTED/VISIBLE")
	requireStatus(t, c.commit(ctlH("c1")), "OK", fmt.Sprintf("Transaction %d has already committed, label is c1", id))
	requireStatus(t, c.rollback(ctlH("c1")), "FAILED", pfx+fmt.Sprintf("Can not abort VISIBLE transaction %d, label is c1", id))
	r = c.begin(ctlH("c1"))
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", "Label [c1] has already been used.")
	assert.Equal(t, "FINISHED", r.str("ExistingJobStatus"))

	t.Log("§4.4 PREPARED → rollback; ABORTED rows; aborted labels are reusable")
	requireStatus(t, c.begin(ctlH("c2")), "OK", "")
	requireStatus(t, c.load(classicH("c2"), orderRows(10, 1)), "OK", "")
	requireStatus(t, c.prepare(ctlH("c2")), "OK", "")
	r = c.rollback(ctlH("c2"))
	requireStatus(t, r, "OK", "")
	id2 := r.num("TxnId")
	assert.NotZero(t, id2)
	assert.Equal(t, "ABORTED", c.state("test", "c2"))
	requireStatus(t, c.commit(ctlH("c2")), "FAILED", pfx+fmt.Sprintf("Can not commit ABORTED transaction %d, label is c2", id2))
	requireStatus(t, c.rollback(ctlH("c2")), "OK", fmt.Sprintf("Transaction %d has already aborted, label is c2", id2))
	requireStatus(t, c.begin(ctlH("c2")), "OK", "")
	assert.Equal(t, "PREPARE", c.state("test", "c2"))

	t.Log("commit of a PREPARE transaction goes to the BE: counters")
	requireStatus(t, c.load(classicH("c2"), orderRows(20, 2)), "OK", "")
	r = c.commit(ctlH("c2"))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, int64(2), r.num("NumberLoadedRows"))
	assert.Equal(t, "VISIBLE", c.state("test", "c2"))

	t.Log("rollback of a PREPARE transaction goes to the BE")
	requireStatus(t, c.begin(ctlH("c3")), "OK", "")
	r = c.rollback(ctlH("c3"))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, "ABORTED", c.state("test", "c3"))
	requireStatus(t, c.load(classicH("c3"), orderRows(30, 1)), "TXN_NOT_EXISTS", "Transaction with label c3 not exists")
}

func TestClassicErrors(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)

	t.Run("no data", func(t *testing.T) {
		r := c.begin(ctlH("e1"))
		requireStatus(t, c.prepare(ctlH("e1")), "INTERNAL_ERROR", fmt.Sprintf("transaction %d hasn't send any data yet", r.num("TxnId")))
		assert.Equal(t, "ABORTED", c.state("test", "e1"))
	})
	t.Run("too many filtered rows", func(t *testing.T) {
		requireStatus(t, c.begin(ctlH("e2")), "OK", "")
		requireStatus(t, c.load(classicH("e2"), badOrderRows(1, 1)), "OK", "")
		r := c.commit(ctlH("e2"))
		requireStatus(t, r, "INTERNAL_ERROR", "too many filtered rows")
		assert.True(t, strings.HasPrefix(r.str("ErrorURL"), e.FEURL()+"/api/_load_error_log?file="), r.raw)
		assert.Equal(t, "ABORTED", c.state("test", "e2"))
	})
	t.Run("parameters differ from the first load: rolled back", func(t *testing.T) {
		requireStatus(t, c.begin(ctlH("e3")), "OK", "")
		requireStatus(t, c.load(classicH("e3"), orderRows(1, 1)), "OK", "")
		requireStatus(t, c.load(classicH("e3", "strict_mode", "true"), orderRows(2, 1)), "INVALID_ARGUMENT", "load request not equal last.")
		assert.Equal(t, "ABORTED", c.state("test", "e3"))
	})
	t.Run("unknown db and table", func(t *testing.T) {
		// the FE checks the database before it routes a begin to the BE (TransactionWithoutChannelHandler.handle)
		requireStatus(t, c.begin(hdrs{"db": "nodb", "label": "e4", "table": "orders"}), "FAILED", pfx+"Database[nodb] does not exist.")
		requireStatus(t, c.begin(hdrs{"db": "test", "label": "e4", "table": "nope"}), "ANALYSIS_ERROR", `unknown table "test.nope"`)
		requireStatus(t, c.begin(hdrs{"db": "test", "label": "e4", "table": "orders", "timeout": "-3"}), "INVALID_ARGUMENT", "Invalid timeout format")
	})
	t.Run("timeout", func(t *testing.T) {
		requireStatus(t, c.begin(hdrs{"db": "test", "label": "e5", "table": "orders", "timeout": "1"}), "OK", "")
		requireStatus(t, c.load(classicH("e5"), orderRows(1, 1)), "OK", "")
		require.Eventually(t, func() bool { return c.state("test", "e5") == "ABORTED" }, 3*time.Second, 20*time.Millisecond)
		requireStatus(t, c.load(classicH("e5"), orderRows(1, 1)), "TXN_NOT_EXISTS", "Transaction with label e5 not exists")
		requireStatus(t, c.begin(ctlH("e5")), "OK", "")
	})
	t.Run("multi transaction addressed without transaction_type", func(t *testing.T) {
		c.multiTxn("e6", [2]string{"orders", orderRows(1, 1)})
		requireStatus(t, c.commit(hdrs{"db": "test", "label": "e6"}), "FAILED", pfx+"Transaction with label e6 has no backend")
		requireStatus(t, c.commit(multiH("test", "e6")), "OK", "")
	})
	t.Run("cancel", func(t *testing.T) {
		requireStatus(t, c.begin(ctlH("e7")), "OK", "")
		r := c.do("POST", "/api/test/e7/_cancel", nil, "")
		assert.Equal(t, "OK", r.str("status"), r.raw)
		assert.Equal(t, "ABORTED", c.state("test", "e7"))
		r = c.do("POST", "/api/test/e7/_cancel", nil, "")
		assert.Equal(t, "FAILED", r.str("status"), r.raw)
		r = c.do("POST", "/api/test/nolabel/_cancel", nil, "")
		assert.Equal(t, "FAILED", r.str("status"), r.raw)
	})
}

// TestStreamLoad is the plain stream load (docs/notes/starrocks-protocol.md §3.3).
func TestStreamLoad(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	h := hdrs{"format": "json", "strip_outer_array": "true", "label": "sl1"}
	r := c.do("PUT", "/api/test/orders/_stream_load", h, orderRows(1, 3))
	assert.Equal(t, "Success", r.str("Status"), r.raw)
	assert.Equal(t, "OK", r.str("Message"))
	assert.Equal(t, int64(3), r.num("NumberLoadedRows"))
	assert.Equal(t, int64(3), r.num("NumberTotalRows"))
	assert.Equal(t, "sl1", r.str("Label"))
	assert.Equal(t, 3, countRows(t, e, "orders"))
	assert.Equal(t, "VISIBLE", c.state("test", "sl1"))

	r = c.do("PUT", "/api/test/orders/_stream_load", h, orderRows(1, 3))
	assert.Equal(t, "Label Already Exists", r.str("Status"), r.raw)
	assert.Equal(t, "FINISHED", r.str("ExistingJobStatus"))

	t.Log("label optional: generated")
	r = c.do("PUT", "/api/test/orders/_stream_load", hdrs{"format": "json", "strip_outer_array": "true"}, orderRows(10, 1))
	assert.Equal(t, "Success", r.str("Status"), r.raw)
	assert.NotEmpty(t, r.str("Label"))

	t.Log("filtered rows: too many filtered rows, or Success within max_filter_ratio")
	mixed := "[" + strings.Trim(orderRows(20, 1), "[]") + "," + strings.Trim(badOrderRows(21, 1), "[]") + "]"
	r = c.do("PUT", "/api/test/orders/_stream_load", hdrs{"format": "json", "strip_outer_array": "true"}, mixed)
	assert.Equal(t, "Fail", r.str("Status"), r.raw)
	assert.Equal(t, "too many filtered rows", r.str("Message"))
	assert.NotEmpty(t, r.str("ErrorURL"))
	assert.Equal(t, int64(1), r.num("NumberFilteredRows"))
	r = c.do("PUT", "/api/test/orders/_stream_load", hdrs{"format": "json", "strip_outer_array": "true", "max_filter_ratio": "0.5"}, mixed)
	assert.Equal(t, "Success", r.str("Status"), r.raw)
	assert.Equal(t, int64(1), r.num("NumberFilteredRows"))
	assert.Equal(t, 5, countRows(t, e, "orders"))

	r = c.do("PUT", "/api/test/nope/_stream_load", hdrs{"format": "json"}, "{}")
	assert.Equal(t, "Fail", r.str("Status"), r.raw)
}

// countingBody records whether the body was ever read.
type countingBody struct {
	r    io.Reader
	read atomic.Bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	b.read.Store(true)
	return b.r.Read(p)
}

// TestBERedirect: the FE answers loads with 307 before reading the body; the
// BE accepts loads only as PUT; classic begin/prepare/commit of PREPARE go to
// the BE; the FE commits PREPARED itself.
func TestBERedirect(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.BEAddr = "127.0.0.1:0" })
	require.NotEmpty(t, e.BEURL())
	c := newClient(t, e)
	c.multiTxn("rd1")

	t.Log("FE: 307 to the BE, body not read (Expect: 100-continue)")
	body := &countingBody{r: strings.NewReader(orderRows(1, 2))}
	req, err := http.NewRequest(http.MethodPut, e.FEURL()+"/api/transaction/load?x=1", body)
	require.NoError(t, err)
	req.ContentLength = int64(len(orderRows(1, 2)))
	req.SetBasicAuth("root", "")
	req.Header.Set("Expect", "100-continue")
	for k, v := range jsonLoadH("test", "rd1", "orders") {
		req.Header.Set(k, v)
	}
	hc := &http.Client{
		Transport:     &http.Transport{ExpectContinueTimeout: 5 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	res, err := hc.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusTemporaryRedirect, res.StatusCode)
	assert.Equal(t, e.BEURL()+"/api/transaction/load?x=1", res.Header.Get("Location"))
	assert.False(t, body.read.Load(), "the FE must not read the load body")

	t.Log("BE: POST load refused, PUT accepted")
	r := c.do("POST", e.BEURL()+"/api/transaction/load", jsonLoadH("test", "rd1", "orders"), orderRows(1, 2))
	assert.Equal(t, http.StatusMethodNotAllowed, r.code)
	requireStatus(t, c.do("PUT", e.BEURL()+"/api/transaction/load", jsonLoadH("test", "rd1", "orders"), orderRows(1, 2)), "OK", "")
	t.Log("BE refuses multi control ops")
	requireStatus(t, c.do("POST", e.BEURL()+"/api/transaction/commit", multiH("test", "rd1"), ""), "INVALID_ARGUMENT",
		"Multi-statement transaction requests can only be sent to FE nodes, not BE nodes")
	requireStatus(t, c.commit(multiH("test", "rd1")), "OK", "")
	assert.Equal(t, 2, countRows(t, e, "orders"))

	t.Log("classic: begin, load and commit of PREPARE redirect; PREPARED is committed by the FE")
	r = c.begin(ctlH("rd2"))
	assert.Equal(t, http.StatusTemporaryRedirect, r.code)
	assert.Equal(t, e.BEURL()+"/api/transaction/begin", r.hdr.Get("Location"))
	requireStatus(t, c.do("POST", r.hdr.Get("Location"), ctlH("rd2"), ""), "OK", "")
	r = c.load(classicH("rd2"), orderRows(10, 1))
	assert.Equal(t, http.StatusTemporaryRedirect, r.code)
	requireStatus(t, c.do("PUT", r.hdr.Get("Location"), classicH("rd2"), orderRows(10, 1)), "OK", "")
	r = c.prepare(ctlH("rd2"))
	assert.Equal(t, http.StatusTemporaryRedirect, r.code)
	requireStatus(t, c.do("POST", r.hdr.Get("Location"), ctlH("rd2"), ""), "OK", "")
	requireStatus(t, c.commit(ctlH("rd2")), "OK", "")
	assert.Equal(t, 3, countRows(t, e, "orders"))

	r = c.begin(ctlH("rd3"))
	requireStatus(t, c.do("POST", r.hdr.Get("Location"), ctlH("rd3"), ""), "OK", "")
	r = c.commit(ctlH("rd3"))
	assert.Equal(t, http.StatusTemporaryRedirect, r.code, "commit of a PREPARE transaction goes to the BE")
	r = c.rollback(ctlH("rd3"))
	assert.Equal(t, http.StatusTemporaryRedirect, r.code)

	t.Log("stream load redirects too")
	r = c.do("PUT", "/api/test/orders/_stream_load", hdrs{"format": "json"}, "{}")
	assert.Equal(t, http.StatusTemporaryRedirect, r.code)
	assert.Equal(t, e.BEURL()+"/api/test/orders/_stream_load", r.hdr.Get("Location"))
	assert.Positive(t, e.Counters().Redirects)
}

// TestClassicEvictedOutcome is the last row of docs/notes/starrocks-protocol.md §4.4: after label eviction
// commit/rollback answer from the cached outcome.
func TestClassicEvictedOutcome(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.LabelKeepMax = 1 })
	c := newClient(t, e)
	for _, l := range []string{"v1", "v2", "v3"} {
		requireStatus(t, c.begin(ctlH(l)), "OK", "")
		requireStatus(t, c.load(classicH(l), orderRows(1, 1)), "OK", "")
	}
	requireStatus(t, c.commit(ctlH("v1")), "OK", "")
	requireStatus(t, c.rollback(ctlH("v2")), "OK", "")
	requireStatus(t, c.commit(ctlH("v3")), "OK", "")
	assert.Equal(t, "UNKNOWN", c.state("test", "v1"))
	assert.Equal(t, "UNKNOWN", c.state("test", "v2"))
	assert.Equal(t, "VISIBLE", c.state("test", "v3"))
	requireStatus(t, c.commit(ctlH("v1")), "OK", "Transaction has already committed, label is v1")
	requireStatus(t, c.rollback(ctlH("v1")), "FAILED", pfx+"Can not abort COMMITTED transaction, label is v1")
	requireStatus(t, c.commit(ctlH("v2")), "FAILED", pfx+"Can not commit ABORTED transaction, label is v2")
	requireStatus(t, c.rollback(ctlH("v2")), "OK", "Transaction has already aborted, label is v2")
	t.Log("an evicted label can be used again")
	requireStatus(t, c.begin(ctlH("v1")), "OK", "")
	requireStatus(t, c.commit(ctlH("v1")), "INTERNAL_ERROR", fmt.Sprintf("transaction %d hasn't send any data yet", txnIDClassic(t, e, "v1")))
}

func txnIDClassic(t testing.TB, e *Emulator, label string) int64 {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	tx := e.latestLocked("test", label)
	require.NotNil(t, tx)
	return tx.id
}

func TestClassicBEChecks(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	requireStatus(t, c.begin(ctlH("b1")), "OK", "")
	requireStatus(t, c.commit(hdrs{"db": "test", "label": "b1x"}), "FAILED", pfx+"No transaction found with db[test] and label[b1x]")
	requireStatus(t, c.prepare(hdrs{"db": "test", "label": "b1x"}), "FAILED", pfx+"No transaction found with db[test] and label[b1x]")

	t.Log("all rows filtered but within the ratio: no rows imported")
	requireStatus(t, c.load(classicH("b1", "max_filter_ratio", "1"), badOrderRows(1, 2)), "OK", "")
	requireStatus(t, c.commit(ctlH("b1")), "INTERNAL_ERROR", errNoRowsImported)
	assert.Equal(t, "ABORTED", c.state("test", "b1"))

	t.Log("a malformed document fails the commit")
	requireStatus(t, c.begin(ctlH("b2")), "OK", "")
	requireStatus(t, c.load(classicH("b2"), orderRows(1, 1)), "OK", "")
	requireStatus(t, c.load(classicH("b2"), `[{"order_id":`), "OK", "")
	r := c.commit(ctlH("b2"))
	assert.Equal(t, "INTERNAL_ERROR", r.str("Status"), r.raw)
	assert.NotEmpty(t, r.str("Message"))
	assert.Equal(t, "ABORTED", c.state("test", "b2"))

	t.Log("a body of unknown length (chunked) is read whole")
	requireStatus(t, c.begin(ctlH("b3")), "OK", "")
	req, err := http.NewRequest(http.MethodPut, e.FEURL()+"/api/transaction/load", io.MultiReader(strings.NewReader(orderRows(1, 50))))
	require.NoError(t, err)
	req.ContentLength = -1
	req.SetBasicAuth("root", "")
	for k, v := range classicH("b3") {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	assert.Contains(t, string(b), `"Status":"OK"`)
	r = c.commit(ctlH("b3"))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, int64(50), r.num("NumberLoadedRows"))
	assert.Equal(t, 50, countRows(t, e, "orders"))
}

// TestBEFollowRedirects drives the redirect path like the project's client:
// follow the 307 by hand, re-sending method, headers and body.
func TestBEFollowRedirects(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.BEAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	follow := func(method, path string, h hdrs, body string) resp {
		r := c.do(method, path, h, body)
		for i := 0; i < 3 && r.code == http.StatusTemporaryRedirect; i++ {
			r = c.do(method, r.hdr.Get("Location"), h, body)
		}
		return r
	}
	requireStatus(t, follow("POST", "/api/transaction/begin", multiH("test", "fr"), ""), "OK", "")
	requireStatus(t, follow("PUT", "/api/transaction/load", jsonLoadH("test", "fr", "orders"), orderRows(1, 2)), "OK", "")
	requireStatus(t, follow("PUT", "/api/transaction/load", jsonLoadH("test", "fr", "order_items"), itemRows(1, 2)), "OK", "")
	requireStatus(t, follow("POST", "/api/transaction/commit", multiH("test", "fr"), ""), "OK", "")
	r := follow("PUT", "/api/test/order_events/_stream_load", hdrs{"format": "json", "label": "ev1"}, `{"event_id":1,"order_id":1,"kind":"created"}`)
	assert.Equal(t, "Success", r.str("Status"), r.raw)
	assert.Equal(t, 2, countRows(t, e, "orders"))
	assert.Equal(t, 2, countRows(t, e, "order_items"))
	assert.Equal(t, 1, countRows(t, e, "order_events"))
	t.Log("a load sent to the BE for a table the FE never planned is unknown there")
	requireStatus(t, c.do("PUT", e.BEURL()+"/api/transaction/load", jsonLoadH("test", "fr", "order_events"), "{}"), "TXN_NOT_EXISTS", "Transaction with label fr not exists")
}

func TestClassicIdleAndPreparedTimeouts(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	requireStatus(t, c.begin(hdrs{"db": "test", "label": "i1", "table": "orders", "idle_transaction_timeout": "x"}), "INVALID_ARGUMENT", "Invalid timeout format")
	requireStatus(t, c.begin(hdrs{"db": "test", "label": "i1", "table": "orders", "idle_transaction_timeout": "1"}), "OK", "")
	requireStatus(t, c.load(classicH("i1"), orderRows(1, 1)), "OK", "")
	require.Eventually(t, func() bool { return c.state("test", "i1") == "ABORTED" }, 3*time.Second, 20*time.Millisecond)
	e.mu.Lock()
	reason := e.latestLocked("test", "i1").reason
	e.mu.Unlock()
	assert.Equal(t, "transaction is aborted by idle timeout 1 seconds.", reason)

	requireStatus(t, c.begin(ctlH("p1")), "OK", "")
	requireStatus(t, c.load(classicH("p1"), orderRows(1, 1)), "OK", "")
	requireStatus(t, c.do("POST", "/api/transaction/prepare", hdrs{"db": "test", "label": "p1", "prepared_timeout": "0"}, ""), "INVALID_ARGUMENT", "Invalid prepared_timeout: 0")
	requireStatus(t, c.do("POST", "/api/transaction/prepare", hdrs{"db": "test", "label": "p1", "prepared_timeout": "1"}, ""), "OK", "")
	assert.Equal(t, "PREPARED", c.state("test", "p1"))
	require.Eventually(t, func() bool { return c.state("test", "p1") == "ABORTED" }, 3*time.Second, 20*time.Millisecond)
}
