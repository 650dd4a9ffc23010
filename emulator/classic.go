package emulator

import (
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/emulator/store"
)

type storeChanges = store.TableChange

type parsedLoad = store.Parsed

// parseParams applies the BE header rules to a load's data headers.
func parseParams(h map[string]string) (store.LoadParams, error) {
	p, err := store.ParseLoadParams(h)
	if err != nil {
		return p, err
	}
	if err := checkCompression(h); err != nil {
		return p, err
	}
	return p, nil
}

// feClassic handles classic (single-table) operations on the FE: begin and
// load go to the BE; prepare/commit/rollback are answered by the FE from the
// transaction's status, or sent to the BE while it is PREPARE.
func (e *Emulator) feClassic(q *req) {
	if !e.ver.multiTable() {
		e.feClassicV3(q)
		return
	}
	if _, ok := e.store.DatabaseID(q.db); !ok {
		// TransactionWithoutChannelHandler.handle (and getTxnOperationHandler before it)
		// checks the database of every op before any routing.
		writeJSON(q.w, http.StatusOK, e.feFailed(fmt.Sprintf("Database[%s] does not exist.", q.db)))
		return
	}
	switch q.op {
	case "begin":
		if e.beLn != nil {
			e.redirectToBE(q.w, q.r)
			return
		}
		e.classicBegin(q)
		return
	case "load":
		if msg := e.coordinatorErr(q.db, q.label); msg != "" {
			writeJSON(q.w, http.StatusOK, e.feFailed(msg))
			return
		}
		if e.beLn != nil {
			e.redirectToBE(q.w, q.r)
			return
		}
		e.ingest(q)
		return
	}
	e.mu.Lock()
	t := e.latestLocked(q.db, q.label)
	if t == nil {
		outcome, cached := e.outcomes[outcomeKey(q.db, q.label)]
		e.mu.Unlock()
		if cached && q.op != "prepare" {
			writeJSON(q.w, http.StatusOK, e.cachedOutcomeReply(q.op, outcome, q.label))
			return
		}
		writeJSON(q.w, http.StatusOK, e.feFailed(e.noTxnMsg(q.db, q.label)))
		return
	}
	st := t.labelState()
	if t.multi && st == statusPrepare {
		// A multi transaction addressed without transaction_type: the
		// classic handler looks for a BE coordinator that does not exist.
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, e.feFailed(fmt.Sprintf("Transaction with label %s has no backend", q.label)))
		return
	}
	if q.op == "prepare" || st == statusPrepare {
		e.mu.Unlock()
		if e.beLn != nil {
			e.redirectToBE(q.w, q.r)
			return
		}
		e.beOp(q)
		return
	}
	e.mu.Unlock()
	e.feDecide(q, t)
}

// noTxnMsg is the FE's error for a commit, prepare or rollback of a label it holds no
// transaction state of.
func (e *Emulator) noTxnMsg(db, label string) string {
	if !e.ver.multiTable() {
		return noTxnByLabel(label)
	}
	return fmt.Sprintf("No transaction found with db[%s] and label[%s]", db, label)
}

// feDecide is TransactionWithoutChannelHandler's commit or rollback of a transaction that
// is no longer running (t, PREPARED or over), which the FE answers itself: it commits or
// aborts a PREPARED one (commitPreparedTransaction, abortTransaction "User Aborted") and
// answers the others from their state. Faults of op commit and rollback hit it here.
func (e *Emulator) feDecide(q *req, t *txn) {
	f, done := e.takeFault(q, e.feShape(q))
	if done {
		return
	}
	e.mu.Lock()
	if t2 := e.latestLocked(q.db, q.label); t2 != t {
		t = t2
		if t == nil {
			e.mu.Unlock()
			writeJSON(q.w, http.StatusOK, e.feFailed(e.noTxnMsg(q.db, q.label)))
			return
		}
	}
	st := t.labelState()
	withID := func(r reply) reply { return r.with("TxnId", t.id).with("Label", t.label) }
	var res reply
	switch {
	case q.op == "commit" && st == statusPrepared:
		if f != nil && f.Action == ActCommitAbort {
			msg := f.Message
			if msg == "" {
				msg = fmt.Sprintf("Transaction %d commit failed and was aborted (injected fault), label is %s", t.id, t.label)
			}
			e.abortLocked(t, msg)
			e.mu.Unlock()
			writeJSON(q.w, http.StatusOK, withID(txnResult("FAILED", msg)).withStatus(f.Status))
			return
		}
		t.status = statusCommitted
		changes := t.changes()
		e.enterLocked(t, changes)
		e.mu.Unlock()
		e.runCommit(q, t, changes, f, withID(txnResult("OK", "")),
			func(msg string) reply { return withID(txnResult("FAILED", msg)) }, e.fePreparedWait(q))
		return
	case q.op == "commit" && (st == statusCommitted || st == statusVisible):
		res = withID(txnResult("OK", fmt.Sprintf("Transaction %d has already committed, label is %s", t.id, t.label)))
	case q.op == "commit":
		res = e.feFailed(fmt.Sprintf("Can not commit %s transaction %d, label is %s", st, t.id, t.label))
	case st == statusPrepared:
		e.abortLocked(t, reasonUser)
		res = withID(txnResult("OK", ""))
	case st == statusAborted:
		res = withID(txnResult("OK", fmt.Sprintf("Transaction %d has already aborted, label is %s", t.id, t.label)))
	default:
		res = e.feFailed(fmt.Sprintf("Can not abort %s transaction %d, label is %s", st, t.id, t.label))
	}
	e.mu.Unlock()
	writeJSON(q.w, http.StatusOK, res)
}

// coordinatorErr is the FE's answer when it cannot route a classic load to
// its coordinator BE (TransactionLoadCoordinatorMgr.get): the label was
// never begun (or its state is gone), or it is a multi-table transaction,
// whose coordinator is the FE. "" when the load can go on; the BE then
// answers TXN_NOT_EXISTS for a transaction that is over
// (test_stream_load_basic_txn: never begun FAILED, after commit or
// rollback TXN_NOT_EXISTS).
func (e *Emulator) coordinatorErr(db, label string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.beContexts[label] != nil {
		return ""
	}
	t := e.latestLocked(db, label)
	switch {
	case t == nil:
		return fmt.Sprintf("Can't find the transaction with db [%s] and label[%s]. The possible reasons: 1. FE leader is started or switched; 2. The transaction timeouts and is cleaned.", db, label)
	case t.multi:
		return fmt.Sprintf("The source type for transaction stream load with db [%s] and label[%s] should be BE, but is FE.", db, label)
	}
	return ""
}

// cachedOutcomeReply answers commit/rollback of an evicted transaction from
// its cached final state (4.x: TransactionWithoutChannelHandler's
// commitEvictedTransactionByLabel and rollbackEvictedTransactionByLabel;
// their refusals are exceptions, printed with their class).
func (e *Emulator) cachedOutcomeReply(op, state, label string) reply {
	committed := state == statusCommitted || state == statusVisible
	switch {
	case op == "commit" && committed:
		return txnResult("OK", "Transaction has already committed, label is "+label).with("Label", label)
	case op == "commit":
		return e.feFailed("Can not commit ABORTED transaction, label is " + label)
	case committed:
		return e.feFailed("Can not abort COMMITTED transaction, label is " + label)
	}
	return txnResult("OK", "Transaction has already aborted, label is "+label).with("Label", label)
}

// beTransaction handles /api/transaction/{op} on the BE listener.
func (e *Emulator) beTransaction(q *req, op string) {
	q.op = op
	if op == "list" {
		// The BE answers list before it looks at any header: no label or
		// db needed, and transaction_type is not refused.
		e.beList(q)
		return
	}
	if q.label == "" && op != "load" {
		// TransactionManagerAction::handle checks the label before
		// anything else but list (the load action has its own check).
		writeJSON(q.w, http.StatusOK, beReply("INVALID_ARGUMENT", "empty label", q.label))
		return
	}
	if q.header("transaction_type") != "" && op != "load" && e.ver.multiTable() {
		// any transaction_type at all, not only multi; a 3.x BE does not
		// look at the header (§12.1)
		writeJSON(q.w, http.StatusOK, beReply("INVALID_ARGUMENT", "Multi-statement transaction requests can only be sent to FE nodes, not BE nodes", q.label))
		return
	}
	switch op {
	case "begin":
		e.classicBegin(q)
	case "load":
		e.ingest(q)
	case "prepare", "commit", "rollback":
		e.beOp(q)
	default:
		msg := "Unknown transaction operation: " + op
		if !e.ver.multiTable() {
			msg = "unsupport transaction operation " + op // 3.3.7 TransactionManagerAction::handle
		}
		writeJSON(q.w, http.StatusOK, beReply("INVALID_ARGUMENT", msg, q.label))
	}
}

// beList is the BE /api/transaction/list (list_transactions): one
// pretty-printed object per transaction context the BE holds, concatenated
// with no enclosing array and no separator; an empty body when it holds
// none. The BE's contexts are the open classic transactions, from begin
// until prepare, commit, rollback or abort removes them; multi-table
// transactions live in per-table channel contexts, which list does not
// show, and plain stream loads have none. The BE walks a hash map; the
// emulator lists in TxnId (begin) order.
func (e *Emulator) beList(q *req) {
	e.mu.Lock()
	ctxs := make([]*txn, 0, len(e.beContexts))
	for _, t := range e.beContexts {
		ctxs = append(ctxs, t)
	}
	sort.Slice(ctxs, func(i, j int) bool { return ctxs[i].id < ctxs[j].id })
	var body bytes.Buffer
	var err error
	for _, t := range ctxs {
		var b []byte
		if b, err = listEntry(t).pretty(); err != nil {
			break
		}
		body.Write(b)
	}
	e.mu.Unlock()
	if err != nil {
		writeJSON(q.w, http.StatusOK, beReply("INTERNAL_ERROR", fmt.Sprintf("listing the transactions: %v", err), ""))
		return
	}
	q.w.Header().Set("Content-Type", "application/json")
	q.w.WriteHeader(http.StatusOK)
	_, _ = q.w.Write(body.Bytes())
}

// listEntry is one context of the list reply. A context locked by a load in
// progress shows InProcessing true and no Status. Row counters stay 0: the
// BE learns them only when the load fragment finishes, at prepare or
// commit, which removes the context. LoadBytes is the latest load
// request's; the BE times nothing the emulator spends, so the times are 0.
// Timestamps are Unix seconds.
func listEntry(t *txn) reply {
	var r reply
	if t.tables[0].busy {
		r = reply{{"InProcessing", true}}
	} else {
		r = reply{{"Status", "OK"}, {"InProcessing", false}}
	}
	return r.with("Label", t.label).with("TxnId", t.id).
		with("NumberTotalRows", 0).with("NumberLoadedRows", 0).
		with("NumberFilteredRows", 0).with("NumberUnselectedRows", 0).
		with("LoadBytes", t.beLoadBytes).with("StreamLoadPlanTimeMs", 0).
		with("ReceivedDataTimeMs", 0).with("WriteDataTimeMs", 0).
		with("BeginTimestamp", t.created.Unix()).with("LastActiveTimestamp", t.lastActive.Unix()).
		with("TransactionTimeoutSec", t.beTimeoutSec).with("IdleTransactionTimeoutSec", t.beIdleSec)
}

// classicBegin is the BE begin_transaction and the FE's loadTxnBegin, checked in their
// order: a context the BE holds for the label (LABEL_ALREADY_EXISTS, nothing else read),
// the BE's timeout headers, then the FE's database, table, label format, label use and
// running limit. The BE does not check the table header: a begin without one (a
// multi-table begin sent to a 3.x FE) fails at the FE, `unknown table "db."`
// (docs/notes/starrocks-protocol.md §12.1).
func (e *Emulator) classicBegin(q *req) {
	q.op = "begin"
	if _, done := e.takeFault(q, beShape(q)); done {
		return
	}
	fail := func(status, msg string) { writeJSON(q.w, http.StatusOK, beReply(status, msg, q.label)) }
	if q.label == "" {
		fail("INVALID_ARGUMENT", "Invalid label ")
		return
	}
	e.mu.Lock()
	held := e.beContexts[q.label] != nil
	e.mu.Unlock()
	if held {
		writeJSON(q.w, http.StatusOK, reply{{"Status", "LABEL_ALREADY_EXISTS"}, {"ExistingJobStatus", ""}, {"Message", ""}})
		return
	}
	timeout := e.cfg.DefaultTxnTimeout
	beTimeout, beIdle := int64(-1), int64(-1)
	if v := q.header("timeout"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			fail("INVALID_ARGUMENT", "Invalid timeout format")
			return
		}
		if n > 0 {
			timeout = time.Duration(n) * time.Second
		}
		beTimeout = int64(n)
	}
	var idle time.Duration
	if v := q.header("idle_transaction_timeout"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			fail("INVALID_ARGUMENT", "Invalid timeout format")
			return
		}
		idle = time.Duration(n) * time.Second
		beIdle = int64(n)
	}
	dbID, ok := e.store.DatabaseID(q.db)
	if !ok {
		fail("ANALYSIS_ERROR", "unknown database, database="+q.db)
		return
	}
	if _, err := e.store.Table(q.db, q.table); q.table == "" || err != nil {
		fail("ANALYSIS_ERROR", fmt.Sprintf("unknown table \"%s.%s\"", q.db, q.table))
		return
	}
	if !labelRe.MatchString(q.label) {
		fail("ANALYSIS_ERROR", labelFormatMsg(q.label))
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.beContexts[q.label] != nil {
		writeJSON(q.w, http.StatusOK, reply{{"Status", "LABEL_ALREADY_EXISTS"}, {"ExistingJobStatus", ""}, {"Message", ""}})
		return
	}
	if u := e.usedLocked(q.db, q.label); u != nil {
		writeJSON(q.w, http.StatusOK, reply{{"Status", "LABEL_ALREADY_EXISTS"},
			{"ExistingJobStatus", jobStatus(u.labelState())},
			{"Message", fmt.Sprintf("Label [%s] has already been used.", q.label)}})
		return
	}
	if msg := e.limitErrLocked(q.db, dbID); msg != "" {
		fail("ANALYSIS_ERROR", msg)
		return
	}
	t := e.newClassicLocked(q.label, q.db, q.table, dbID, timeout)
	t.idleTimeout = idle
	t.beTimeoutSec, t.beIdleSec = beTimeout, beIdle
	e.beContexts[q.label] = t
	writeJSON(q.w, http.StatusOK, txnResult("OK", "").with("Label", t.label).with("TxnId", t.id).with("BeginTxnTimeMs", 0))
}

func (e *Emulator) newClassicLocked(label, db, table string, dbID int64, timeout time.Duration) *txn {
	t := &txn{
		id: e.newIDLocked(), label: label, db: db, dbID: dbID, table: table, status: statusPrepare,
		created: e.now(), timeout: timeout, byTable: map[string]*tableLoad{},
	}
	t.lastActive = t.created
	tl := &tableLoad{name: table, subID: t.id}
	t.tables = []*tableLoad{tl}
	delete(e.outcomes, outcomeKey(db, label))
	t.byTable[table] = tl
	e.registerLocked(t)
	return t
}

// countersReply is the BE prepare/commit reply with the load counters.
func (e *Emulator) countersReply(t *txn) reply {
	loaded, filtered, unsel, bytes := t.totals()
	r := txnResult("OK", "").with("Label", t.label).with("TxnId", t.id).
		with("NumberTotalRows", loaded+filtered+unsel).with("NumberLoadedRows", loaded).
		with("NumberFilteredRows", filtered).with("NumberUnselectedRows", unsel).
		with("LoadBytes", bytes).with("LoadTimeMs", e.now().Sub(t.created).Milliseconds()).
		with("StreamLoadPlanTimeMs", 0).with("ReceivedDataTimeMs", 0).with("WriteDataTimeMs", 0).
		with("CommitAndPublishTimeMs", 0)
	if f := t.tables[0].errFile; f != "" {
		r = r.with("ErrorURL", e.errorURL(f))
	}
	return r
}

// beOp is the BE prepare/commit (commit_transaction) and rollback.
func (e *Emulator) beOp(q *req) {
	f, done := e.takeCommitFault(q, beShape(q))
	if done {
		return
	}
	fail := func(status, msg string) { writeJSON(q.w, http.StatusOK, beReply(status, msg, q.label)) }
	var preparedTimeout time.Duration
	// prepared_timeout exists from 3.5.4; an older BE does not read it (§12.3).
	if v := q.header("prepared_timeout"); q.op == "prepare" && v != "" && e.ver.preparedTimeout() {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			fail("INVALID_ARGUMENT", "Invalid prepared_timeout: "+v)
			return
		}
		preparedTimeout = time.Duration(n) * time.Second
	}
	e.mu.Lock()
	t := e.beContexts[q.label]
	if t == nil {
		e.mu.Unlock()
		fail("TXN_NOT_EXISTS", fmt.Sprintf("transaction with label %s not exists", q.label))
		return
	}
	if q.db != t.db {
		e.mu.Unlock()
		fail("INVALID_ARGUMENT", fmt.Sprintf("request db %s transaction db %s not match", q.db, t.db))
		return
	}
	tl := t.tables[0]
	if tl.busy {
		e.mu.Unlock()
		fail("TXN_IN_PROCESSING", e.ver.inProcessingMsg())
		return
	}
	if t.feLost {
		// The FE restarted (3.x) and forgot the transaction (classic3x.go).
		r := e.feLostLocked(t)
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, r)
		return
	}
	if q.op == "rollback" {
		e.abortLocked(t, reasonUser)
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, txnResult("OK", "").with("Label", t.label))
		return
	}
	abortStatus := "INTERNAL_ERROR"
	abort := func(msg string, withURL bool) {
		e.abortLocked(t, msg)
		r := beReply(abortStatus, msg, q.label)
		// to_resp_json adds ErrorURL whenever the load wrote an error
		// log, whatever the failure.
		if withURL || tl.errFile != "" {
			r = r.with("ErrorURL", e.errorURL(e.recordErrorsLocked(t, tl, nil)))
		}
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, r)
	}
	if commitFailure(f) {
		// _commit_transaction failed: the BE rolls the transaction back.
		abort(injectedMsg(f, "injected internal error"), false)
		return
	}
	e.endStreamsLocked(t)
	switch {
	case tl.loads == 0:
		abort(fmt.Sprintf("transaction %d hasn't send any data yet", t.id), false)
		return
	case float64(tl.filtered) > float64(tl.filtered+tl.loaded)*tl.params.MaxFilterRatio:
		abort("too many filtered rows", true)
		return
	case tl.parseErr != "":
		abort(tl.parseErr, false)
		return
	case tl.loaded == 0 && !e.emptyLoadOK.Load():
		abort(e.ver.noRowsMsg(), tl.filtered > 0)
		return
	}
	if f != nil && f.Action == ActCommitAbort {
		msg := f.Message
		if msg == "" {
			msg = fmt.Sprintf("transaction %d commit failed and was aborted (injected fault)", t.id)
		}
		if f.Status != "" {
			abortStatus = f.Status
		}
		abort(msg, false)
		return
	}
	delete(e.beContexts, t.label)
	if q.op == "prepare" {
		t.status = statusPrepared
		t.preparedAt = e.now()
		// From 3.5.4 the transaction keeps its own prepared timeout (the header, or
		// prepared_transaction_default_timeout_second now); before, the FE reads the
		// config each time it checks (0 here, txn.go reap).
		t.preparedTimeout = 0
		if e.ver.preparedTimeout() {
			t.preparedTimeout = preparedTimeout
			if t.preparedTimeout <= 0 {
				t.preparedTimeout = e.cfg.PreparedTxnTimeout
			}
		}
		e.journalPreparedLocked(t)
		res := e.countersReply(t)
		e.mu.Unlock()
		writeJSON(q.w, http.StatusOK, res)
		return
	}
	t.status = statusCommitted
	changes := t.changes()
	e.enterLocked(t, changes)
	res := e.countersReply(t)
	e.mu.Unlock()
	e.runCommit(q, t, changes, f, res, func(msg string) reply { return beReply("INTERNAL_ERROR", msg, q.label) },
		e.beCommitWait(t, changes, func(msg string) reply { return beReply("PUBLISH_TIMEOUT", msg, q.label) }))
}
