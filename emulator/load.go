package emulator

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/starrocks-txn/benthos-starrocks/internal/bufpool"
)

const mb = 1 << 20

// sizeErr checks the cumulative body bytes of a BE context (see ctxBytes)
// against the BE limits and returns the BE's error text, or "".
func (e *Emulator) sizeErr(total int64, h map[string]string) string {
	if max := int64(e.cfg.StreamingLoadMaxMB) * mb; total > max {
		return fmt.Sprintf("body size %d exceed limit %d, please check streaming_load_max_mb", total, max)
	}
	jsonMax := int64(e.cfg.JSONMaxBatchMB) * mb
	if strings.EqualFold(h["format"], "json") && !strings.EqualFold(h["ignore_json_size"], "true") && total > jsonMax {
		return fmt.Sprintf("The size of this batch exceed the max size [%d] of json type data data [%d]. Set ignore_json_size to skip the check, although it may lead huge memory consuming.", jsonMax, total)
	}
	return ""
}

// ctxBytes is the body bytes counted by the BE context a load lands in: the
// whole classic transaction, or in multi mode the table's channel
// (label, table, 0).
func ctxBytes(t *txn, tl *tableLoad) int64 {
	if t.multi {
		return tl.bytes
	}
	return t.bytes
}

// ingest is the BE /api/transaction/load: it finds the transaction context
// (a classic transaction by label, or the multi task's channel for the
// table), checks the parameters, reads and parses the body and keeps the
// rows for the commit. Rows become visible only at commit.
func (e *Emulator) ingest(q *req) {
	q.op = "load"
	e.ctr.loads.Add(1)
	shape := beShape(q)
	if q.multi {
		// Multi loads are checked by the FE first: its error shapes.
		shape = e.feShape(q)
	}
	fail := func(status, msg string) { writeJSON(q.w, http.StatusOK, beReply(status, msg, q.label)) }
	if q.label == "" {
		fail("INVALID_ARGUMENT", "Invalid label ")
		return
	}
	if _, done := e.takeFault(q, shape); done {
		return
	}
	e.mu.Lock()
	var t *txn
	var tl *tableLoad
	// A multi load (transaction_type: multi) only ever reaches its task's
	// channel (label, table, 0), never a classic context with the same
	// label; a load without it finds the classic context first.
	if c := e.beContexts[q.label]; c != nil && !q.multi {
		t, tl = c, c.tables[0]
	} else if m := e.multi[q.label]; m != nil && m.byTable[q.table] != nil {
		t, tl = m, m.byTable[q.table]
	}
	if t == nil {
		e.mu.Unlock()
		fail("TXN_NOT_EXISTS", fmt.Sprintf("Transaction with label %s not exists", q.label))
		return
	}
	if q.db != t.db {
		e.mu.Unlock()
		fail("INVALID_ARGUMENT", fmt.Sprintf("Request database %s not equal transaction database %s", q.db, t.db))
		return
	}
	if !t.multi && q.table != t.table {
		e.mu.Unlock()
		fail("INVALID_ARGUMENT", fmt.Sprintf("Request table %s not equal transaction table %s", q.table, t.table))
		return
	}
	if tl.busy {
		e.mu.Unlock()
		fail("TXN_IN_PROCESSING", e.ver.inProcessingMsg())
		return
	}
	if !loadable(t) {
		e.mu.Unlock()
		fail("ABORTED", "current transaction is aborted")
		return
	}
	// An _on_header error rolls back a transaction the BE owns (classic).
	failHeader := func(status, msg string) {
		if !t.multi {
			e.abortLocked(t, msg)
		}
		e.mu.Unlock()
		fail(status, msg)
	}
	h := dataHeaders(q.r)
	params, err := parseParams(h)
	if err != nil {
		failHeader("INVALID_ARGUMENT", err.Error())
		return
	}
	if !tl.planned {
		// The first load plans the table (streamLoadPut); a plan error
		// answers ANALYSIS_ERROR and rolls the transaction back
		// (test_stream_load_exception_handling).
		if err := e.store.PlanLoad(t.db, tl.name, params); err != nil {
			failHeader("ANALYSIS_ERROR", err.Error())
			return
		}
		tl.headers, tl.params, tl.planned = h, params, true
	} else if !sameParams(params, h, tl.params, tl.headers) {
		failHeader("INVALID_ARGUMENT", "load request not equal last.")
		return
	}
	if q.r.ContentLength > 0 {
		if msg := e.sizeErr(ctxBytes(t, tl)+q.r.ContentLength, h); msg != "" {
			failHeader("INTERNAL_ERROR", msg)
			return
		}
	}
	tl.busy = true
	t.beLoadBytes = 0
	limit := int64(e.cfg.StreamingLoadMaxMB)*mb - ctxBytes(t, tl) + 1
	e.mu.Unlock()

	body, err := readBody(q.r, limit, &e.bodies)
	if err != nil {
		e.mu.Lock()
		tl.busy = false
		e.mu.Unlock()
		e.log.Debug("load body read failed", "label", q.label, "table", q.table, "error", err)
		return
	}
	n := int64(len(body))
	e.ctr.bytes.Add(n)
	e.mu.Lock()
	if msg := e.sizeErr(ctxBytes(t, tl)+n, h); msg != "" {
		tl.busy = false
		failHeader("INTERNAL_ERROR", msg)
		return
	}
	params = tl.params
	e.mu.Unlock()

	var parseErr string
	data, err := decompress(h, body)
	if err != nil {
		parseErr = err.Error()
	}
	var p *parsedLoad
	if parseErr == "" {
		// tl.busy makes this load the stream's only user.
		p, err = e.store.ParseStream(t.db, tl.name, data, params, &tl.stream)
		if err != nil {
			parseErr = err.Error()
		}
	}
	// Nothing parsed keeps any of the body (store's
	// FuzzParseKeepsNothingOfTheBody): its buffer serves the next load.
	e.bodies.Put(body)
	e.mu.Lock()
	tl.busy = false
	if !loadable(t) {
		e.mu.Unlock()
		fail("ABORTED", "current transaction is aborted")
		return
	}
	if p != nil {
		e.addParsedLocked(t, tl, p)
	}
	if parseErr != "" && tl.parseErr == "" {
		tl.parseErr = parseErr
	}
	t.bytes += n
	tl.bytes += n
	t.beLoadBytes = n
	tl.loads++
	t.lastActive = e.now()
	res := txnResult("OK", "").with("Label", t.label).with("TxnId", t.id).with("LoadBytes", n).
		with("StreamLoadPlanTimeMs", 0).with("ReceivedDataTimeMs", 0)
	e.mu.Unlock()
	writeJSON(q.w, http.StatusOK, res)
}

// readBody reads at most limit bytes of the body, in one allocation when
// its length is known — a buffer of pool when that is set.
func readBody(r *http.Request, limit int64, pool *bufpool.FreeList) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n < limit {
		var buf []byte
		if pool != nil {
			buf = pool.Get(int(n))[:n]
		} else {
			buf = make([]byte, n)
		}
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return nil, fmt.Errorf("reading the load body: %w", err)
		}
		return buf, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit))
	if err != nil {
		return nil, fmt.Errorf("reading the load body: %w", err)
	}
	return b, nil
}

func loadable(t *txn) bool {
	if t.multi {
		return t.state == stateBegin
	}
	return t.status == statusPrepare
}

// streamLoadReply is the plain Stream Load reply.
func (e *Emulator) streamLoadReply(t *txn, label, status, msg string) reply {
	var id, loaded, filtered, unsel, bytes, ms int64
	if t != nil {
		id = t.id
		loaded, filtered, unsel, bytes = t.totals()
		ms = e.now().Sub(t.created).Milliseconds()
	}
	return reply{{"TxnId", id}, {"Label", label}, {"Status", status}, {"Message", msg},
		{"NumberTotalRows", loaded + filtered + unsel}, {"NumberLoadedRows", loaded},
		{"NumberFilteredRows", filtered}, {"NumberUnselectedRows", unsel}, {"LoadBytes", bytes},
		{"LoadTimeMs", ms}, {"BeginTxnTimeMs", 0}, {"StreamLoadPlanTimeMs", 0}, {"ReadDataTimeMs", 0},
		{"WriteDataTimeMs", 0}, {"CommitAndPublishTimeMs", 0}}
}

func newLabel() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// streamLoad is PUT /api/{db}/{table}/_stream_load: one auto-committed
// transaction.
func (e *Emulator) streamLoad(q *req, db, table string) {
	if q.node == "fe" && e.beLn != nil {
		e.redirectToBE(q.w, q.r)
		return
	}
	e.ctr.streamLoads.Add(1)
	q.op, q.db, q.table = "stream_load", db, table
	label := q.label
	if label == "" {
		label = newLabel()
	}
	failNoTxn := func(msg string) { writeJSON(q.w, http.StatusOK, e.streamLoadReply(nil, label, "Fail", msg)) }
	shape := func(status, msg string) reply {
		if status == "LABEL_ALREADY_EXISTS" {
			return e.streamLoadReply(nil, label, "Label Already Exists", msg).with("ExistingJobStatus", "RUNNING")
		}
		return e.streamLoadReply(nil, label, "Fail", msg)
	}
	if _, done := e.takeFault(q, shape); done {
		return
	}
	timeout, bad := parseTimeout(q.header("timeout"))
	if bad != "" {
		failNoTxn(bad)
		return
	}
	if timeout <= 0 {
		timeout = e.cfg.DefaultTxnTimeout
	}
	if !labelRe.MatchString(label) {
		failNoTxn(labelFormatMsg(label))
		return
	}
	dbID, ok := e.store.DatabaseID(db)
	if !ok {
		failNoTxn("unknown database, database=" + db)
		return
	}
	if _, err := e.store.Table(db, table); err != nil {
		failNoTxn(fmt.Sprintf("unknown table \"%s.%s\"", db, table))
		return
	}
	h := dataHeaders(q.r)
	params, err := parseParams(h)
	if err == nil {
		err = e.store.PlanLoad(db, table, params)
	}
	if err != nil {
		failNoTxn(err.Error())
		return
	}
	e.mu.Lock()
	if u := e.usedLocked(db, label); u != nil {
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, e.streamLoadReply(nil, label, "Label Already Exists",
			fmt.Sprintf("Label [%s] has already been used.", label)).with("ExistingJobStatus", jobStatus(u.labelState())))
		return
	}
	if msg := e.limitErrLocked(db, dbID); msg != "" {
		e.mu.Unlock()
		failNoTxn(msg)
		return
	}
	t := e.newClassicLocked(label, db, table, dbID, timeout)
	t.stream = true
	tl := t.tables[0]
	tl.headers, tl.params, tl.planned, tl.busy = h, params, true, true
	e.mu.Unlock()

	fail := func(msg string, withURL bool) {
		e.mu.Lock()
		e.abortLocked(t, msg)
		r := e.streamLoadReply(t, label, "Fail", msg)
		// The BE adds ErrorURL whenever the load wrote an error log,
		// whatever the failure (StreamLoadContext::to_json).
		if withURL || tl.errFile != "" {
			r = r.with("ErrorURL", e.errorURL(e.recordErrorsLocked(t, tl, nil)))
		}
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, r)
	}
	if q.r.ContentLength > 0 {
		if msg := e.sizeErr(q.r.ContentLength, h); msg != "" {
			fail(msg, false)
			return
		}
	}
	body, err := readBody(q.r, int64(e.cfg.StreamingLoadMaxMB)*mb+1, nil)
	if err != nil {
		e.mu.Lock()
		e.abortLocked(t, "reading the body failed: "+err.Error())
		e.mu.Unlock()
		return
	}
	n := int64(len(body))
	e.ctr.bytes.Add(n)
	if msg := e.sizeErr(n, h); msg != "" {
		fail(msg, false)
		return
	}
	data, err := decompress(h, body)
	if err != nil {
		fail(err.Error(), false)
		return
	}
	p, err := e.store.Parse(db, table, data, params)
	if err != nil {
		fail(err.Error(), false)
		return
	}
	e.mu.Lock()
	tl.busy = false
	t.bytes, tl.bytes, tl.loads = n, n, 1
	tl.rows, tl.loaded, tl.filtered, tl.unsel = append(tl.rows[:0:0], p.Rows), p.Loaded, p.Filtered, p.Unselected
	if len(p.Errors) > 0 {
		e.recordErrorsLocked(t, tl, p.Errors)
	}
	if t.status != statusPrepare {
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, e.streamLoadReply(t, label, "Fail", "current transaction is aborted"))
		return
	}
	e.mu.Unlock()
	e.ctr.rowsReceived.Add(p.Loaded)
	switch {
	case float64(p.Filtered) > float64(p.Filtered+p.Loaded)*params.MaxFilterRatio:
		fail("too many filtered rows", true)
		return
	case p.Loaded == 0 && !e.emptyLoadOK.Load():
		// All rows filtered within max_filter_ratio: the FE refuses the
		// empty commit, and the reply still points at the rejected rows.
		fail(e.ver.noRowsMsg(), p.Filtered > 0)
		return
	}
	e.mu.Lock()
	if t.feLost {
		// a 3.x FE restarted during the load and forgot its transaction
		e.mu.Unlock()
		fail(fmt.Sprintf("transaction not found: %d", t.id), false)
		return
	}
	t.status = statusCommitted
	changes := t.changes()
	e.enterLocked(t, changes)
	res := e.streamLoadReply(t, label, "Success", "OK")
	errURL := ""
	if tl.errFile != "" {
		errURL = e.errorURL(tl.errFile)
		res = res.with("ErrorURL", errURL)
	}
	e.mu.Unlock()
	w := e.beCommitWait(t, changes, func(msg string) reply {
		e.mu.Lock()
		r := e.streamLoadReply(t, label, "Publish Timeout", msg)
		e.mu.Unlock()
		if errURL != "" {
			r = r.with("ErrorURL", errURL)
		}
		return r
	})
	err, inTime := e.publish(q.r.Context(), t, changes, w)
	switch {
	case err != nil:
		e.mu.Lock()
		r := e.streamLoadReply(t, label, "Fail", err.Error())
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, r)
		return
	case !inTime:
		// committed; visible in its turn (publish.go)
		res = w.timedOut()
	}
	writeJSON(q.w, http.StatusOK, res)
}
