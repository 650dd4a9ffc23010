package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// errNoRowsImported is ERR_NO_ROWS_IMPORTED (5603).
const errNoRowsImported = "No rows were imported from upstream. Possible causes: 1) all rows were filtered by load conditions, 2) all rows failed data quality/validation checks, or 3) upstream has no data. If this is acceptable, set `ADMIN SET FRONTEND CONFIG ('empty_load_as_error' = 'false')` to ignore empty loads"

// maxControlBody bounds the body read on begin/prepare/commit/rollback.
const maxControlBody = 1 << 20

// defaultLateCommitDelay is how long ActCommitLate and ActAbortPending keep
// a transaction in flight when the fault gives no delay.
const defaultLateCommitDelay = 3 * time.Second

// feTransaction handles /api/transaction/{op} on the FE.
func (e *Emulator) feTransaction(q *req, opStr string) {
	op := strings.ToLower(opStr)
	switch op {
	case "begin", "load", "prepare", "commit", "rollback":
	default:
		writeJSON(q.w, http.StatusOK, e.feFailed("Unknown transaction operation: "+opStr))
		return
	}
	q.op = op
	if q.db == "" {
		writeJSON(q.w, http.StatusOK, e.feFailed("No database selected."))
		return
	}
	if q.label == "" {
		writeJSON(q.w, http.StatusOK, e.feFailed("Empty label."))
		return
	}
	switch chID, chNum := q.header("channel_id"), q.header("channel_num"); {
	case chID == "" && chNum != "":
		writeJSON(q.w, http.StatusOK, e.feFailed("Must provide channel_id when stream load begin."))
		return
	case chID != "" && chNum == "":
		writeJSON(q.w, http.StatusOK, e.feFailed("Must provide channel_num when stream load begin."))
		return
	case chID != "":
		writeJSON(q.w, http.StatusOK, e.feFailed("Parallel transaction stream load (channel_id/channel_num) is not supported by the emulator"))
		return
	}
	if op != "load" {
		body, err := io.ReadAll(io.LimitReader(q.r.Body, maxControlBody))
		if err != nil {
			return
		}
		if s := strings.TrimSpace(string(body)); s != "" && !json.Valid(body) {
			writeJSON(q.w, http.StatusBadRequest, restResult(false, "Malformed json tablets, label is "+q.label))
			return
		}
	}
	to, bad := parseTimeout(q.header("timeout"))
	if bad != "" {
		writeJSON(q.w, http.StatusOK, txnResult("FAILED", bad))
		return
	}
	q.timeout = to
	switch op {
	case "begin":
		e.ctr.begins.Add(1)
	case "prepare":
		e.ctr.prepares.Add(1)
	case "commit":
		e.ctr.commits.Add(1)
	case "rollback":
		e.ctr.rollbacks.Add(1)
	}
	if q.multi {
		switch op {
		case "begin":
			e.multiBegin(q)
		case "load":
			e.multiLoad(q)
		case "prepare":
			// The multi-statement handler has no TXN_PREPARE case.
			writeJSON(q.w, http.StatusOK, e.feFailed("Unsupported operation: TXN_PREPARE"))
		case "commit":
			e.multiCommit(q)
		case "rollback":
			e.multiRollback(q)
		}
		return
	}
	e.feClassic(q)
}

func (e *Emulator) multiBegin(q *req) {
	if _, done := e.takeFault(q, e.feShape(q)); done {
		return
	}
	dbID, ok := e.store.DatabaseID(q.db)
	if !ok {
		writeJSON(q.w, http.StatusOK, e.feFailed(fmt.Sprintf("Database[%s] does not exist", q.db)))
		return
	}
	if !labelRe.MatchString(q.label) {
		writeJSON(q.w, http.StatusOK, e.feFailed(labelFormatMsg(q.label)))
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := e.multi[q.label]; t != nil {
		if t.state == stateCommitted || t.state == stateFinished {
			writeJSON(q.w, http.StatusOK, txnResult("LABEL_ALREADY_EXISTS",
				fmt.Sprintf("Label [%s] has already been used.", q.label)).with("ExistingJobStatus", t.state))
			return
		}
		writeJSON(q.w, http.StatusOK, txnResult("LABEL_ALREADY_EXISTS",
			fmt.Sprintf("Transaction already started with label [%s], txnId: %d", q.label, t.id)).
			with("ExistingJobStatus", t.state).with("TxnId", t.id))
		return
	}
	for name := range e.dbs {
		if u := e.usedLocked(name, q.label); u != nil {
			writeJSON(q.w, http.StatusOK, txnResult("LABEL_ALREADY_EXISTS",
				fmt.Sprintf("Label [%s] has already been used.", q.label)).
				with("ExistingJobStatus", u.labelState()).with("Db", name))
			return
		}
	}
	timeout := q.timeout
	if timeout <= 0 {
		timeout = e.cfg.DefaultTxnTimeout
	}
	t := &txn{
		id: e.newIDLocked(), label: q.label, db: q.db, dbID: dbID, multi: true, state: stateBegin,
		created: e.now(), timeout: timeout, byTable: map[string]*tableLoad{},
	}
	e.multi[q.label] = t
	e.log.Debug("multi transaction begun", "label", t.label, "txn_id", t.id, "db", t.db)
	writeJSON(q.w, http.StatusOK, txnResult("OK", ""))
}

// multiLoad is the FE side of a multi load: checks, plans the table on its
// first load, then redirects to the BE (or ingests when there is none).
func (e *Emulator) multiLoad(q *req) {
	e.mu.Lock()
	t := e.multi[q.label]
	if t == nil {
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, e.feFailed(fmt.Sprintf("stream load task %s does not exist", q.label)))
		return
	}
	if q.db != t.db {
		msg := fmt.Sprintf("Request database %s not equal transaction database %s", q.db, t.db)
		if t.state == stateBegin {
			e.abortLocked(t, "LOAD exception: "+msg)
		}
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, e.feFailed(msg))
		return
	}
	if msg := notLoadableMsg(t); msg != "" {
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, e.feFailed(msg))
		return
	}
	if t.byTable[q.table] == nil {
		fail := func(msg string) {
			e.abortLocked(t, "LOAD exception: "+msg)
			e.mu.Unlock()
			writeJSON(q.w, http.StatusOK, e.feFailed(msg))
		}
		if _, err := e.store.Table(q.db, q.table); err != nil {
			fail(err.Error())
			return
		}
		if !t.registered {
			// StreamLoadMultiStmtTask.tryLoad activates the table in the
			// explicit transaction (upsertTransactionState: the label
			// check, then the running limit; either failure aborts the
			// whole transaction) once the table is found and before the
			// sub-task parses its headers and plans. So a first load whose
			// plan fails leaves a registered transaction, aborted:
			// get_load_state answers ABORTED, not UNKNOWN.
			if u := e.usedLocked(t.db, t.label); u != nil {
				msg := fmt.Sprintf("Label [%s] has already been used.", t.label)
				e.abortLocked(t, "LOAD exception: "+msg)
				e.mu.Unlock()
				writeJSON(q.w, http.StatusOK, txnResult("LABEL_ALREADY_EXISTS", msg).
					with("ExistingJobStatus", jobStatus(u.labelState())))
				return
			}
			if msg := e.limitErrLocked(t.db, t.dbID); msg != "" {
				fail(msg)
				return
			}
			e.registerLocked(t)
		}
		h := dataHeaders(q.r)
		params, err := parseParams(h)
		if err != nil {
			fail(err.Error())
			return
		}
		if err := e.store.PlanLoad(q.db, q.table, params); err != nil {
			fail(err.Error())
			return
		}
		tl := &tableLoad{name: q.table, subID: e.newIDLocked(), headers: h, params: params, planned: true}
		t.tables = append(t.tables, tl)
		t.byTable[q.table] = tl
	}
	e.mu.Unlock()
	if e.beLn != nil {
		e.redirectToBE(q.w, q.r)
		return
	}
	e.ingest(q)
}

func notLoadableMsg(t *txn) string {
	switch t.state {
	case stateCancelled:
		return fmt.Sprintf("stream load task %s has already been cancelled: %s", t.label, t.reason)
	case stateAborting:
		return fmt.Sprintf("stream load task %s is aborting: %s", t.label, t.reason)
	case stateCommitted:
		return fmt.Sprintf("stream load task %s has already been commited", t.label)
	case stateFinished:
		return fmt.Sprintf("stream load task %s has already been finished", t.label)
	case stateCommitting:
		return fmt.Sprintf("stream load task %s is committing, can not accept new loads", t.label)
	}
	return ""
}

// multiCommitReply carries the entries the last table's prepareChannel
// added; a transaction without a table has none of the channel ones.
func multiCommitReply(status, msg string, t *txn) reply {
	r := txnResult(status, msg).with("Label", t.label).with("TxnId", t.id)
	if len(t.tables) == 0 {
		return r
	}
	return r.with("ChannelId", 0).with("Prepared Channel Num", 1)
}

func (e *Emulator) multiCommit(q *req) {
	f, done := e.takeCommitFault(q, e.feShape(q))
	if done {
		return
	}
	e.mu.Lock()
	t := e.multi[q.label]
	if t == nil {
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, e.feFailed(fmt.Sprintf("stream load task %s does not exist", q.label)))
		return
	}
	if q.db != t.db {
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, e.feFailed(fmt.Sprintf("Request database %s not equal transaction database %s", q.db, t.db)))
		return
	}
	var res reply
	switch t.state {
	case stateCommitted, stateFinished:
		res = txnResult("OK", fmt.Sprintf("Transaction %d has already committed, label is %s", t.id, t.label)).
			with("Label", t.label).with("TxnId", t.id)
	case stateCancelled:
		res = txnResult("FAILED", fmt.Sprintf("Can not commit CANCELLED transaction %d, label is %s", t.id, t.label))
	case stateAborting:
		res = txnResult("FAILED", fmt.Sprintf("Transaction %d is aborting (reason: %s), label is %s", t.id, t.reason, t.label))
	case stateCommitting:
		res = txnResult("FAILED", fmt.Sprintf("Transaction %d is already committing, label is %s", t.id, t.label))
	}
	if res != nil && commitFailure(f) {
		// The state checks run before the commit; a transaction that is
		// over is not touched by the failure.
		res = e.feShape(q)("INTERNAL_ERROR", injectedMsg(f, "injected internal error"))
	}
	if res != nil {
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, res)
		return
	}
	if commitFailure(f) {
		msg := injectedMsg(f, "injected internal error")
		e.abortLocked(t, msg)
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, e.feShape(q)("INTERNAL_ERROR", msg))
		return
	}
	e.endStreamsLocked(t)
	if msg := e.checkMultiLocked(t); msg != "" {
		e.abortLocked(t, msg)
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, multiCommitReply("FAILED", msg, t))
		return
	}
	if f != nil && f.Action == ActCommitAbort {
		msg := f.Message
		if msg == "" {
			msg = fmt.Sprintf("Transaction %d commit failed and was aborted (injected fault), label is %s", t.id, t.label)
		}
		e.abortLocked(t, msg)
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, multiCommitReply("FAILED", msg, t).withStatus(f.Status))
		return
	}
	t.state = stateCommitting
	changes := t.changes()
	e.enterLocked(t, changes)
	e.mu.Unlock()
	ok := multiCommitReply("OK", "", t)
	e.runCommit(q, t, changes, f, ok,
		func(msg string) reply { return multiCommitReply("FAILED", msg, t) },
		e.multiWait(t, ok))
}

// checkMultiLocked runs the commit-time data-quality checks of every table
// in load order and returns the first failure, wrapped as waitCoordFinish
// does. A transaction with no load at all passes: StarRocks commits an
// empty multi-table transaction (test_stream_load_multi_table_rollback,
// test_multi_txn_edge_cases). A table whose rows were rejected is named,
// with the tracking URL of its rejected rows, as newer builds do
// (test_multi_table_all_rows_rejected_tracking).
func (e *Emulator) checkMultiLocked(t *txn) string {
	for _, tl := range t.tables {
		var text string
		rejected := func(why string) string {
			file := e.recordErrorsLocked(t, tl, nil)
			return fmt.Sprintf("Failed to load table %s: %s, tracking_url: %s", tl.name, why, e.errorURL(file))
		}
		switch {
		case tl.loaded == 0 && tl.filtered > 0:
			text = rejected(errNoRowsImported)
		case tl.loaded == 0:
			text = errNoRowsImported
		case float64(tl.filtered) > float64(tl.filtered+tl.loaded)*tl.params.MaxFilterRatio:
			text = rejected("abnormal data more than max filter rate")
		case tl.parseErr != "":
			text = tl.parseErr
		default:
			continue
		}
		return fmt.Sprintf("STREAM_LOAD_TASK:%d, label{%s}, error_msg{cancel stream task for exception: %s}", tl.subID, t.label, text)
	}
	return ""
}

// runCommit applies a transaction that passed its checks, in its turn of the
// publish order (publish.go), and answers as the commit fault (if any) says;
// a commit held behind an earlier one of its tables past w.bound answers
// w.timedOut and is applied in its turn.
func (e *Emulator) runCommit(q *req, t *txn, changes []storeChanges, f *Fault, ok reply, failed func(string) reply, w publishWait) {
	action := Action("")
	if f != nil {
		action = f.Action
	}
	switch action {
	case ActCommitLate:
		msg := f.Message
		if msg == "" {
			msg = fmt.Sprintf("Transaction %d commit is still in progress (injected fault: publish pending), label is %s", t.id, t.label)
		}
		delay := f.Delay
		if delay <= 0 {
			delay = defaultLateCommitDelay
		}
		writeJSON(q.w, http.StatusOK, failed(msg).withStatus(f.Status))
		e.bg.Add(1)
		go func() {
			defer e.bg.Done()
			e.sleep(context.Background(), delay)
			if err := e.completeCommit(t, changes); err != nil {
				e.log.Error("late commit failed", "label", t.label, "error", err)
			}
		}()
		return
	}
	err, inTime := e.publish(q.r.Context(), t, changes, w)
	switch {
	case err != nil:
		writeJSON(q.w, http.StatusOK, failed(err.Error()))
		return
	case !inTime:
		// The after-apply faults act on this reply as on any other.
		writeJSON(q.w, http.StatusOK, w.timedOut())
		return
	}
	switch action {
	case ActCommitReportFailure:
		msg := f.Message
		if msg == "" {
			msg = fmt.Sprintf("Transaction %d commit failed: publish timeout (injected fault), label is %s", t.id, t.label)
		}
		writeJSON(q.w, http.StatusOK, failed(msg).withStatus(f.Status))
	default:
		// Also the after-apply faults: release acts on the held reply.
		writeJSON(q.w, http.StatusOK, ok)
	}
}

// completeCommit applies the changes and makes t visible, once every
// transaction committed before it on one of its tables is applied
// (publish.go). Its turn ends whatever the outcome.
func (e *Emulator) completeCommit(t *txn, changes []storeChanges) error {
	if e.pub.wait(t.pubTicket) {
		e.ctr.publishHeld.Add(1)
	}
	defer e.pub.leave(t.pubTicket)
	var meta any
	if e.cfg.DataDir != "" {
		// the commit's record carries the VISIBLE state: both survive a restart or neither
		e.mu.Lock()
		now := e.now()
		saved := t.committedAt
		t.committedAt, t.finishedAt = now, now
		meta = t.record(statusVisible)
		t.committedAt, t.finishedAt = saved, time.Time{}
		e.mu.Unlock()
	}
	err := e.store.ApplyWithMeta(changes, meta)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.abortLocked(t, err.Error())
		return fmt.Errorf("applying transaction %d: %w", t.id, err)
	}
	t.committedAt = e.now()
	if t.multi {
		t.state = stateFinished
	} else {
		t.status = statusVisible
	}
	loaded, _, _, _ := t.totals()
	e.ctr.committed.Add(1)
	e.ctr.rows.Add(loaded)
	e.log.Debug("transaction visible", "label", t.label, "txn_id", t.id, "rows", loaded)
	e.finishLocked(t)
	return nil
}

func (e *Emulator) multiRollback(q *req) {
	f, done := e.takeFault(q, e.feShape(q))
	if done {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.multi[q.label]
	if t == nil {
		writeJSON(q.w, http.StatusOK, e.feFailed(fmt.Sprintf("stream load task%sdoes not exist", q.label)))
		return
	}
	var res reply
	switch t.state {
	case stateBegin:
		if f != nil && f.Action == ActAbortPending {
			delay := f.Delay
			if delay <= 0 {
				delay = defaultLateCommitDelay
			}
			t.state = stateAborting
			t.reason = "user rollback"
			t.abortingUntil = e.now().Add(delay)
			res = txnResult("OK", fmt.Sprintf("stream load %s abort initiated, rollback pending (background retry will continue)", t.label))
			break
		}
		e.abortLocked(t, "user rollback")
		res = txnResult("OK", fmt.Sprintf("stream load %s abort", t.label))
	case stateCancelled:
		res = txnResult("OK", fmt.Sprintf("Transaction %d has already aborted, label is %s", t.id, t.label)).
			with("Label", t.label).with("TxnId", t.id)
	case stateAborting:
		res = txnResult("OK", fmt.Sprintf("Transaction %d abort is already in progress, label is %s. Background retry will continue.", t.id, t.label))
	case stateCommitting:
		res = txnResult("FAILED", fmt.Sprintf("Can not abort transaction %d during committing, label is %s", t.id, t.label))
	case stateCommitted, stateFinished:
		// manualCancelTask names both final states VISIBLE.
		res = txnResult("FAILED", fmt.Sprintf("Can not abort VISIBLE transaction %d, label is %s", t.id, t.label))
	}
	writeJSON(q.w, http.StatusOK, res)
}
