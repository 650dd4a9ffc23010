package starrocks

import (
	"net/http"
	"regexp"
	"strings"
)

// Operation names, as used in Error.Op and by Classify.
const (
	OpBegin      = "begin"
	OpLoad       = "load"
	OpPrepare    = "prepare"
	OpCommit     = "commit"
	OpRollback   = "rollback"
	OpLoadState  = "get_load_state"
	OpCancel     = "cancel"
	OpStreamLoad = "stream_load"
)

type opSet uint16

const (
	setBegin opSet = 1 << iota
	setLoad
	setPrepare
	setCommit
	setRollback
	setLoadState
	setCancel
	setStreamLoad

	setAll     = setBegin | setLoad | setPrepare | setCommit | setRollback | setLoadState | setCancel | setStreamLoad
	setControl = setBegin | setPrepare | setCommit | setRollback | setLoadState | setCancel
	// setWrite are the operations that carry data or open a transaction:
	// their failures are not "decide by label state" ones.
	setWrite = setBegin | setLoad | setPrepare | setStreamLoad
)

var opSets = map[string]opSet{
	OpBegin: setBegin, OpLoad: setLoad, OpPrepare: setPrepare, OpCommit: setCommit,
	OpRollback: setRollback, OpLoadState: setLoadState, OpCancel: setCancel, OpStreamLoad: setStreamLoad,
}

// codeMatch says which HTTP outcomes a rule applies to.
type codeMatch int

const (
	anyCode  codeMatch = iota
	noReply            // transport error, timeout, reset, redirect failure: HTTP code 0
	code2xx            // a reply with a 2xx code
	codeAuth           // 401 or 403
	code5xx            // 500..599
	code4xx            // 400..499 except 401, 403, 408 and 429
)

func (m codeMatch) matches(code int) bool {
	switch m {
	case noReply:
		return code == 0
	case code2xx:
		return code >= 200 && code < 300
	case codeAuth:
		return code == 401 || code == 403
	case code5xx:
		return code >= 500 && code < 600
	case code4xx:
		return code >= 400 && code < 500 && code != 401 && code != 403 &&
			code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
	}
	return true
}

// classRule is one row of the classification table. A rule matches when the
// operation is in ops, the HTTP code matches, the status is one of statuses
// (case-insensitive; none listed = any), the message matches msg (nil = any)
// and ExistingJobStatus equals existing ("" = any).
type classRule struct {
	ops      opSet
	code     codeMatch
	statuses []string
	msg      *regexp.Regexp
	existing string
	class    Class
}

func texts(alternatives ...string) *regexp.Regexp {
	quoted := make([]string, len(alternatives))
	for i, a := range alternatives {
		quoted[i] = regexp.QuoteMeta(a)
	}
	return regexp.MustCompile(`(?i)` + strings.Join(quoted, "|"))
}

// dataAbortTexts are the server texts that mean "aborted because of the
// data": the ERR_NO_ROWS_IMPORTED wordings of every version, the multi-table
// filter-ratio failure and the classic/plain one. Replaying the same rows
// fails the same way.
var dataAbortTexts = texts(
	"No rows were imported",
	"No partitions have data",
	"all partitions have no load data",
	"abnormal data more than max filter rate",
	"too many filtered rows",
)

// classRules is the classification table, evaluated top-down; the first
// matching row wins; when none matches, the class is transient. The table,
// in words:
//
//	success (2xx):
//	  begin/prepare/commit/rollback/cancel/get_load_state: Status OK
//	  (a commit's "already committed" message is OK too)
//	  load/stream_load: OK, Success, Publish Timeout
//	  rollback: also Success (the connector accepts it)
//	  stream_load: Label Already Exists with ExistingJobStatus FINISHED
//	HTTP 401/403, or "Access denied" in the message     → fatal
//	commit, stream_load: no reply / 5xx                   → ambiguous
//	any other op: no reply / 5xx                          → transient
//	rollback, cancel, get_load_state: any failure         → transient
//	begin: 2xx reply without Status (no txn interface)    → fatal
//	TXN_IN_PROCESSING                                      → retry_safe
//	"… has no node." (3.x FE, no route for the label)     → transient
//	"load request not equal last." (client bug)           → fatal
//	txn gone/aborting/cancelled texts                      → transient
//	data texts (no rows imported, filter rate, filtered)   → per_transaction
//	commit: anything else                                  → ambiguous
//	unknown table/database, database mismatch,
//	  "Only primary key table support",
//	  "primary key size exceed"                           → per_transaction
//	stream_load: Label Already Exists (not FINISHED)       → ambiguous
//	INVALID_ARGUMENT, HTTP 4xx (not 408/429),
//	  "Empty label", "No database selected",
//	  "Unsupported operation" (prepare in multi mode),
//	  a BE addressed with multi requests                   → fatal
//	INTERNAL_ERROR, TXN_NOT_EXISTS, running-txn limit,
//	  "transaction timeout", LABEL_ALREADY_EXISTS (begin)  → transient
//	anything else                                          → transient
var classRules = []classRule{
	// Success.
	{ops: setControl, code: code2xx, statuses: []string{"OK"}, class: ClassOK},
	{ops: setLoad | setStreamLoad, code: code2xx, statuses: []string{"OK", "Success", "Publish Timeout"}, class: ClassOK},
	{ops: setRollback, code: code2xx, statuses: []string{"Success"}, class: ClassOK},
	{ops: setStreamLoad, code: code2xx, statuses: []string{"Label Already Exists"}, existing: "FINISHED", class: ClassOK},

	// Authentication: nothing will work until an operator fixes it.
	{ops: setAll, code: codeAuth, class: ClassFatal},
	{ops: setAll, msg: texts("Access denied"), class: ClassFatal},

	// No reply or a server error: a commit (or a plain stream load, which
	// commits) may have happened, so decide by label state; everything else
	// is replayed under a new label.
	{ops: setCommit | setStreamLoad, code: noReply, class: ClassAmbiguous},
	{ops: setCommit | setStreamLoad, code: code5xx, class: ClassAmbiguous},
	{ops: setAll, code: noReply, class: ClassTransient},
	{ops: setAll, code: code5xx, class: ClassTransient},

	// Rollback is best effort, and label-state and cancel failures are
	// retried by their callers.
	{ops: setRollback | setLoadState | setCancel, class: ClassTransient},

	// A 2xx begin reply without Status: not a StarRocks FE with the
	// transaction interface (before 2.4, or something else answering).
	{ops: setBegin, code: code2xx, statuses: []string{""}, class: ClassFatal},

	// The request was refused before anything was ingested.
	{ops: setAll, statuses: []string{"TXN_IN_PROCESSING"}, class: ClassRetrySafe},

	// A load's parameters differ from the table's first load: a client bug.
	{ops: setLoad | setStreamLoad, msg: texts("load request not equal last"), class: ClassFatal},

	// A 3.x FE that has no BE for the label (it was begun through another
	// FE, before an FE restart, or evicted from the FE's label → BE map of
	// 512 labels per BE) refuses to route the request at all: "Transaction
	// with op[commit] and label[L] has no node." Nothing was sent on, so
	// nothing happened, a commit included (docs/notes/starrocks-protocol.md
	// §12.1).
	{ops: setAll, msg: regexp.MustCompile(`(?i)with op\[\w+\] and label\[[^\]]*\] has no node`), class: ClassTransient},

	// The transaction is gone, aborting or cancelled (often because an
	// earlier request of it failed): replay under a new label. Checked before
	// the data texts because "has already been cancelled: <reason>" quotes
	// the reason of an earlier failure, not of this request.
	{ops: setWrite, msg: regexp.MustCompile(`(?i)has already been cancelled|is aborting|transaction timeout|aborted by (idle )?timeout|load is timeout|stream load task\s*\S*\s*does not exist|transaction with label \S* not exists?|no transaction found`), class: ClassTransient},

	// The data itself made the server abort.
	{ops: setLoad | setPrepare | setCommit | setStreamLoad, msg: dataAbortTexts, class: ClassPerTxn},

	// A multi-table commit that failed in a table's load coordinator (the
	// STREAM_LOAD_TASK:<id>, label{L}, error_msg{…} wrapper of §5.5) was
	// aborted by the server because of that table's rows: parse and quality
	// errors surface only at commit in multi mode. Isolating the offender
	// costs a few extra commits if the cause was passing; replaying the same
	// rows forever would never end.
	{ops: setCommit, msg: regexp.MustCompile(`STREAM_LOAD_TASK:\S*.*error_msg\{`), class: ClassPerTxn},

	// A non-OK commit reply says nothing certain about the outcome.
	{ops: setCommit, class: ClassAmbiguous},

	// The request names something that does not exist or does not fit the
	// table: the same rows fail again.
	{ops: setWrite, msg: regexp.MustCompile(`(?i)failed to find table|unknown table|unknown database|database\s*\[[^\]]*\]\s*does not exist|request database .* not equal|only primary key table support|primary key size exceed`), class: ClassPerTxn},

	// A plain stream load whose label is still running: decide by state.
	{ops: setStreamLoad, statuses: []string{"Label Already Exists", "LABEL_ALREADY_EXISTS"}, class: ClassAmbiguous},

	// Requests the server will never accept as sent: a client or
	// configuration bug (a bad data header, a BE address as load URL, an
	// operation multi mode does not have).
	{ops: setWrite, statuses: []string{"INVALID_ARGUMENT"}, class: ClassFatal},
	{ops: setWrite, code: code4xx, class: ClassFatal},
	{ops: setWrite, msg: texts("Empty label", "No database selected", "Unsupported operation", "can only be sent to FE nodes"), class: ClassFatal},

	// Spelled out for the reader; the default gives the same answer.
	{ops: setWrite, statuses: []string{"INTERNAL_ERROR", "TXN_NOT_EXISTS", "MEM_LIMIT_EXCEEDED", "ABORTED"}, class: ClassTransient},
	{ops: setBegin, statuses: []string{"LABEL_ALREADY_EXISTS"}, class: ClassTransient},
	{ops: setWrite, msg: texts("current running txns on db", "does not exist", "not exists"), class: ClassTransient},
}

// Classify maps one outcome of an operation to a Class. httpCode is 0 when
// there was no reply (transport error, timeout, reset, failed redirect);
// status, message and existingJobStatus are the reply's fields ("" when
// absent). See classRules for the table.
func Classify(op string, httpCode int, status, message, existingJobStatus string) Class {
	set, known := opSets[op]
	if !known {
		return ClassFatal
	}
	for i := range classRules {
		r := &classRules[i]
		if r.ops&set == 0 || !r.code.matches(httpCode) {
			continue
		}
		if len(r.statuses) > 0 && !equalFoldAny(status, r.statuses) {
			continue
		}
		if r.existing != "" && !strings.EqualFold(existingJobStatus, r.existing) {
			continue
		}
		if r.msg != nil && !r.msg.MatchString(message) {
			continue
		}
		return r.class
	}
	// Only begin, load, prepare and stream_load get here (the commit,
	// rollback, cancel and get_load_state rows match everything).
	return ClassTransient
}

func equalFoldAny(s string, options []string) bool {
	for _, o := range options {
		if strings.EqualFold(s, o) {
			return true
		}
	}
	return false
}
