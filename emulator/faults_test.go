package emulator

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFaultStatusReplies: each status fault answers its status once, has no
// side effect, and the next request behaves normally. The exception is
// internal_error on a commit: a failed commit, which aborts the
// transaction as StarRocks does.
func TestFaultStatusReplies(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	dbID, _ := e.Store().DatabaseID("test")
	cases := []struct {
		action Action
		status string
		msg    string
		extra  string
		// commitAborts: the faulted commit aborted the transaction.
		commitAborts bool
	}{
		{ActTxnInProcessing, "TXN_IN_PROCESSING", "Transaction is in processing", "Label", false},
		{ActInternalError, "INTERNAL_ERROR", "injected internal error", "", true},
		{ActTxnNotExists, "TXN_NOT_EXISTS", "Transaction with label f1 not exists", "", false},
		{ActRunningTxnLimit, "FAILED", pfx + runningLimitMsg(dbID, 1000, 1000), "", false},
		{ActLabelAlreadyExists, "LABEL_ALREADY_EXISTS", "Label [f1] has already been used.", "ExistingJobStatus", false},
	}
	for _, tc := range cases {
		t.Run(string(tc.action), func(t *testing.T) {
			for _, op := range []Op{OpBegin, OpCommit, OpRollback} {
				require.NoError(t, e.Faults().Add(Fault{Op: op, Action: tc.action}))
			}
			r := c.begin(multiH("test", "f1"))
			requireStatus(t, r, tc.status, tc.msg)
			if tc.extra != "" {
				assert.Contains(t, r.m, tc.extra)
			}
			requireStatus(t, c.begin(multiH("test", "f1")), "OK", "")
			requireStatus(t, c.load(jsonLoadH("test", "f1", "orders"), orderRows(1, 1)), "OK", "")
			requireStatus(t, c.rollback(multiH("test", "f1")), tc.status, tc.msg)
			assert.Equal(t, "PREPARE", c.state("test", "f1"), "the faulted rollback did nothing")
			requireStatus(t, c.commit(multiH("test", "f1")), tc.status, tc.msg)
			if tc.commitAborts {
				assert.Equal(t, "ABORTED", c.state("test", "f1"), "the failed commit aborted the transaction")
				r := c.rollback(multiH("test", "f1"))
				require.Equal(t, "OK", r.str("Status"), r.raw)
				assert.Contains(t, r.str("Message"), "has already aborted", r.raw)
			} else {
				assert.Equal(t, "PREPARE", c.state("test", "f1"), "the faulted commit did nothing")
				requireStatus(t, c.rollback(multiH("test", "f1")), "OK", "stream load f1 abort")
			}
			assert.Equal(t, 0, countRows(t, e, "orders"), "nothing of the faulted transaction is visible")
			assert.Empty(t, e.Faults().Pending())
			e.mu.Lock()
			delete(e.multi, "f1")
			e.mu.Unlock()
		})
	}
	t.Run("load TXN_IN_PROCESSING ingests nothing", func(t *testing.T) {
		c.multiTxn("f2", [2]string{"orders", orderRows(1, 1)})
		require.NoError(t, e.Faults().Add(Fault{Op: OpLoad, Action: ActTxnInProcessing, Table: "orders"}))
		r := c.load(jsonLoadH("test", "f2", "order_items"), itemRows(1, 1))
		requireStatus(t, r, "OK", "")
		r = c.load(jsonLoadH("test", "f2", "orders"), orderRows(2, 5))
		requireStatus(t, r, "TXN_IN_PROCESSING", "Transaction is in processing")
		assert.Equal(t, "f2", r.str("Label"))
		requireStatus(t, c.commit(multiH("test", "f2")), "OK", "")
		assert.Equal(t, 1, countRows(t, e, "orders"))
	})
	t.Run("load faults use the FE shape in multi mode, the BE shape in classic mode", func(t *testing.T) {
		c.multiTxn("f4", [2]string{"orders", orderRows(1, 1)})
		require.NoError(t, e.Faults().Add(Fault{Op: OpLoad, Action: ActRunningTxnLimit}))
		requireStatus(t, c.load(jsonLoadH("test", "f4", "orders"), orderRows(2, 1)), "FAILED", pfx+runningLimitMsg(dbID, 1000, 1000))
		requireStatus(t, c.rollback(multiH("test", "f4")), "OK", "stream load f4 abort")
		requireStatus(t, c.begin(ctlH("f5")), "OK", "")
		require.NoError(t, e.Faults().Add(Fault{Op: OpLoad, Action: ActRunningTxnLimit}))
		requireStatus(t, c.load(classicH("f5"), orderRows(2, 1)), "ANALYSIS_ERROR", runningLimitMsg(dbID, 1000, 1000))
		require.NoError(t, e.Faults().Add(Fault{Op: OpLoad, Action: ActTxnInProcessing}))
		r := c.load(classicH("f5"), orderRows(2, 1))
		assert.Equal(t, `{"Status":"TXN_IN_PROCESSING","Label":"f5","Message":"Transaction is in processing"}`, r.raw)
	})
	t.Run("get_load_state and stream_load", func(t *testing.T) {
		require.NoError(t, e.Faults().Add(Fault{Op: OpGetLoadState, Action: ActInternalError, DB: "test"}))
		r := c.do("GET", "/api/test/get_load_state?label=f2", nil, "")
		assert.Equal(t, "FAILED", r.str("status"))
		assert.Equal(t, "injected internal error", r.str("msg"))
		assert.Equal(t, "VISIBLE", c.state("test", "f2"))
		require.NoError(t, e.Faults().Add(Fault{Op: OpStreamLoad, Action: ActLabelAlreadyExists}))
		r = c.do("PUT", "/api/test/orders/_stream_load", hdrs{"label": "sl"}, "")
		assert.Equal(t, "Label Already Exists", r.str("Status"), r.raw)
	})
	t.Run("db filter", func(t *testing.T) {
		require.NoError(t, e.Faults().Add(Fault{Op: OpBegin, Action: ActInternalError, DB: "other"}))
		requireStatus(t, c.begin(multiH("test", "f3")), "OK", "")
		assert.Len(t, e.Faults().Pending(), 1)
		e.Faults().Clear()
		assert.Empty(t, e.Faults().Pending())
	})
}

func TestFaultTransport(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	c.multiTxn("tp", [2]string{"orders", orderRows(1, 1)})

	t.Run("http error", func(t *testing.T) {
		require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActHTTPError, HTTPCode: 502}))
		r := c.commit(multiH("test", "tp"))
		assert.Equal(t, http.StatusBadGateway, r.code)
		assert.Equal(t, "PREPARE", c.state("test", "tp"))
	})
	t.Run("reset in the middle of a load body", func(t *testing.T) {
		require.NoError(t, e.Faults().Add(Fault{Op: OpLoad, Action: ActReset}))
		body := orderRows(2, 2000)
		req, err := http.NewRequest(http.MethodPut, e.FEURL()+"/api/transaction/load", strings.NewReader(body))
		require.NoError(t, err)
		req.SetBasicAuth("root", "")
		for k, v := range jsonLoadH("test", "tp", "orders") {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = res.Body.Close()
		}
		require.Error(t, err, "the connection is reset")
		requireStatus(t, c.load(jsonLoadH("test", "tp", "orders"), orderRows(5000, 1)), "OK", "")
	})
	t.Run("redirect to the same FE, as a follower does", func(t *testing.T) {
		require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActRedirect}))
		r := c.commit(multiH("test", "tp"))
		assert.Equal(t, http.StatusTemporaryRedirect, r.code)
		assert.Equal(t, e.FEURL()+"/api/transaction/commit", r.hdr.Get("Location"))
		assert.Equal(t, "PREPARE", c.state("test", "tp"))
	})
	t.Run("delay", func(t *testing.T) {
		require.NoError(t, e.Faults().Add(Fault{Op: OpGetLoadState, Action: ActDelay, Delay: 300 * time.Millisecond}))
		start := time.Now()
		assert.Equal(t, "PREPARE", c.state("test", "tp"))
		assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	})
	requireStatus(t, c.commit(multiH("test", "tp")), "OK", "")
	assert.Equal(t, 2, countRows(t, e, "orders"), "the reset load ingested nothing")
}

// TestFaultCommit: commits that commit but report failure, never answer or
// reset; one that completes late; one that truly aborts.
func TestFaultCommit(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)

	t.Run("reports failure although committed", func(t *testing.T) {
		c.multiTxn("k1", [2]string{"orders", orderRows(1, 1)})
		require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActCommitReportFailure, Message: "boom"}))
		requireStatus(t, c.commit(multiH("test", "k1")), "FAILED", "boom")
		assert.Equal(t, "VISIBLE", c.state("test", "k1"))
		assert.Equal(t, 1, countRows(t, e, "orders"))
	})
	t.Run("reset although committed", func(t *testing.T) {
		c.multiTxn("k2", [2]string{"orders", orderRows(2, 1)})
		require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActCommitReset}))
		req, _ := http.NewRequest(http.MethodPost, e.FEURL()+"/api/transaction/commit", nil)
		req.SetBasicAuth("root", "")
		for k, v := range multiH("test", "k2") {
			req.Header.Set(k, v)
		}
		_, err := http.DefaultClient.Do(req)
		require.Error(t, err)
		assert.Equal(t, "VISIBLE", c.state("test", "k2"))
	})
	t.Run("never answers although committed", func(t *testing.T) {
		c.multiTxn("k3", [2]string{"orders", orderRows(3, 1)})
		require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActCommitNoAnswer}))
		req, _ := http.NewRequest(http.MethodPost, e.FEURL()+"/api/transaction/commit", nil)
		req.SetBasicAuth("root", "")
		for k, v := range multiH("test", "k3") {
			req.Header.Set(k, v)
		}
		_, err := (&http.Client{Timeout: 300 * time.Millisecond}).Do(req)
		require.Error(t, err)
		assert.Equal(t, "VISIBLE", c.state("test", "k3"))
	})
	t.Run("late: PREPARE meanwhile, then VISIBLE", func(t *testing.T) {
		c.multiTxn("k4", [2]string{"orders", orderRows(4, 1)})
		require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActCommitLate, Delay: 1500 * time.Millisecond}))
		r := c.commit(multiH("test", "k4"))
		assert.Equal(t, "FAILED", r.str("Status"))
		assert.Equal(t, "PREPARE", c.state("test", "k4"))
		assert.Equal(t, 3, countRows(t, e, "orders"))
		require.Eventually(t, func() bool { return c.state("test", "k4") == "VISIBLE" }, 3*time.Second, 20*time.Millisecond)
		assert.Equal(t, 4, countRows(t, e, "orders"))
	})
	t.Run("truly aborts", func(t *testing.T) {
		c.multiTxn("k5", [2]string{"orders", orderRows(5, 1)})
		require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActCommitAbort}))
		r := c.commit(multiH("test", "k5"))
		assert.Equal(t, "FAILED", r.str("Status"))
		assert.Equal(t, "ABORTED", c.state("test", "k5"))
		assert.Equal(t, 4, countRows(t, e, "orders"))
	})
	t.Run("classic commit reports failure although committed", func(t *testing.T) {
		requireStatus(t, c.begin(ctlH("k6")), "OK", "")
		requireStatus(t, c.load(classicH("k6"), orderRows(6, 1)), "OK", "")
		requireStatus(t, c.prepare(ctlH("k6")), "OK", "")
		require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActCommitReportFailure, Status: "PUBLISH_TIMEOUT"}))
		r := c.commit(ctlH("k6"))
		assert.Equal(t, "PUBLISH_TIMEOUT", r.str("Status"), r.raw)
		assert.Equal(t, "VISIBLE", c.state("test", "k6"))
	})
}

func TestRestart(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	c.multiTxn("done", [2]string{"orders", orderRows(1, 1)})
	requireStatus(t, c.commit(multiH("test", "done")), "OK", "")
	c.multiTxn("open", [2]string{"orders", orderRows(2, 1)})
	c.multiTxn("empty")
	requireStatus(t, c.begin(ctlH("cl")), "OK", "")

	r := c.do("POST", "/_emulator/restart", nil, "")
	require.Equal(t, 200, r.code)
	assert.Equal(t, "ABORTED", c.state("test", "open"))
	assert.Equal(t, "ABORTED", c.state("test", "cl"))
	assert.Equal(t, "VISIBLE", c.state("test", "done"))
	requireStatus(t, c.load(jsonLoadH("test", "open", "orders"), orderRows(3, 1)), "FAILED", pfx+"stream load task open has already been cancelled: cancelled after FE restart")
	requireStatus(t, c.load(jsonLoadH("test", "empty", "orders"), orderRows(3, 1)), "FAILED", pfx+"stream load task empty has already been cancelled: cancelled after FE restart")
	requireStatus(t, c.load(classicH("cl"), orderRows(3, 1)), "TXN_NOT_EXISTS", "Transaction with label cl not exists")
	assert.Equal(t, 1, countRows(t, e, "orders"))
}

// TestFaultCountIsExact: N faults affect exactly N concurrent requests.
func TestFaultCountIsExact(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	require.NoError(t, e.Faults().Add(Fault{Op: OpGetLoadState, Action: ActInternalError, Count: 7}))
	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(t, e)
			for i := 0; i < 5; i++ {
				r := c.do("GET", "/api/test/get_load_state?label=x", nil, "")
				if r.str("status") == "FAILED" {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(7), failed.Load())
	assert.Equal(t, int64(7), e.Counters().FaultsFired)
}

// TestAdminAPI drives faults and counters over HTTP.
func TestAdminAPI(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	r := c.do("POST", "/_emulator/faults", nil, `[{"op":"begin","action":"txn_in_processing","count":2},{"op":"get_load_state","action":"delay","delay":"10ms"}]`)
	require.Equal(t, 200, r.code, r.raw)
	r = c.do("GET", "/_emulator/faults", nil, "")
	var pending []Fault
	require.NoError(t, json.Unmarshal([]byte(r.raw), &pending))
	require.Len(t, pending, 2)
	assert.Equal(t, 10*time.Millisecond, pending[1].Delay)
	requireStatus(t, c.begin(multiH("test", "h1")), "TXN_IN_PROCESSING", "Transaction is in processing")
	r = c.do("DELETE", "/_emulator/faults", nil, "")
	require.Equal(t, 200, r.code)
	requireStatus(t, c.begin(multiH("test", "h1")), "OK", "")

	r = c.do("POST", "/_emulator/faults", nil, `{"op":"commit","action":"delay_ms_typo"}`)
	assert.Equal(t, http.StatusBadRequest, r.code)
	r = c.do("POST", "/_emulator/faults", nil, `{"op":"load","action":"commit_late"}`)
	assert.Equal(t, http.StatusBadRequest, r.code)
	assert.Contains(t, r.str("msg"), "only applies to op")
	r = c.do("POST", "/_emulator/faults", nil, `{"op":"rollback","action":"abort_pending","delay_ms":20}`)
	require.Equal(t, 200, r.code, r.raw)
	assert.Equal(t, 20*time.Millisecond, e.Faults().Pending()[0].Delay)

	r = c.do("GET", "/_emulator/counters", nil, "")
	var ctr Counters
	require.NoError(t, json.NewDecoder(bytes.NewReader([]byte(r.raw))).Decode(&ctr))
	assert.Equal(t, int64(2), ctr.Begins)
	assert.Equal(t, int64(1), ctr.FaultsFired)
}

// TestFaultsRefuseUnknownFields: POST /_emulator/faults refuses a fault
// with a field it does not know, naming it, and queues nothing; every field
// a fault has is accepted.
func TestFaultsRefuseUnknownFields(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	for _, body := range []string{
		`{"op":"commit","acton":"internal_error"}`,
		`[{"op":"begin","action":"internal_error"},{"op":"commit","action":"internal_error","cnt":2}]`,
	} {
		r := c.do(http.MethodPost, "/_emulator/faults", nil, body)
		assert.Equal(t, http.StatusBadRequest, r.code, r.raw)
		assert.Regexp(t, `the fault field "(acton|cnt)" is unknown \(a fault has op, action, `, r.str("msg"))
	}
	assert.Empty(t, e.Faults().Pending(), "a refused POST queues nothing")
	all := `{"op":"commit","action":"internal_error","count":1,"db":"test","table":"orders","delay":"1ms","http_code":500,"code":1,"message":"m","status":"S"}`
	r := c.do(http.MethodPost, "/_emulator/faults", nil, all)
	require.Equal(t, http.StatusOK, r.code, r.raw)
	r = c.do(http.MethodPost, "/_emulator/faults", nil, `{"op":"mysql","action":"error","statement":"x","delay_ms":1}`)
	require.Equal(t, http.StatusOK, r.code, r.raw)
	assert.Len(t, e.Faults().Pending(), 2)
}

// A fault with a label pattern takes only the requests whose label matches:
// a client's commit of one kind of label is told from its commit of
// another (the per-table fault matrix: a cycle's decision from its parts).
func TestFaultLabelPattern(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	require.NoError(t, e.Faults().Add(Fault{Op: OpBegin, Action: ActInternalError, Label: `-part$`}))
	requireStatus(t, c.begin(multiH("test", "l-whole")), "OK", "")
	requireStatus(t, c.begin(multiH("test", "l-part")), "INTERNAL_ERROR", "injected internal error")
	requireStatus(t, c.begin(multiH("test", "l-part")), "OK", "")
	assert.Empty(t, e.Faults().Pending())

	assert.ErrorContains(t, e.Faults().Add(Fault{Op: OpBegin, Action: ActReset, Label: `(`}), "not a valid regular expression")
	assert.ErrorContains(t, e.Faults().Add(Fault{Op: OpMySQL, Action: ActSQLError, Label: `x`}), "only applies to HTTP ops")
	r := c.do(http.MethodPost, "/_emulator/faults", nil, `{"op":"commit","action":"reset","label":"-p$"}`)
	require.Equal(t, http.StatusOK, r.code, r.raw)
	assert.Equal(t, "-p$", e.Faults().Pending()[0].Label)
}
