package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Op is the kind of request a fault applies to.
type Op string

// Operations faults can target. Every HTTP operation of the FE and BE is
// one; OpMySQL is any statement on the MySQL port (Fault.Statement narrows
// it).
const (
	OpBegin        Op = "begin"
	OpLoad         Op = "load"
	OpPrepare      Op = "prepare"
	OpCommit       Op = "commit"
	OpRollback     Op = "rollback"
	OpGetLoadState Op = "get_load_state"
	OpStreamLoad   Op = "stream_load"
	OpCancel       Op = "cancel"
	OpMySQL        Op = "mysql"
	// OpAlterJob is a schema change job (ALTER TABLE … ADD/DROP/MODIFY COLUMN that runs in
	// the background): its fault is taken when the job is created (alterjobfault.go).
	OpAlterJob Op = "alter_job"
)

// httpOps are the HTTP operations, in the order error messages list them.
var httpOps = []Op{OpBegin, OpLoad, OpPrepare, OpCommit, OpRollback, OpGetLoadState, OpStreamLoad, OpCancel}

// Action is what a fault does to the request it hits. The five outcomes
// of a remote call each have an action valid for every operation:
//
//	refused definitely          the status actions (and ActSQLError on the MySQL port)
//	not applied, reset          ActReset
//	applied, reply lost         ActReplyLost (alias <op>_reply_lost); ActNoAnswer
//	applied, reply too late     ActReplyLate
//	slow                        ActDelay
type Action string

// Fault actions. The status actions answer with that status (or message)
// and have no side effect: the operation does not happen (except
// internal_error on a commit, which aborts the transaction as a failed
// commit does in StarRocks).
const (
	// ActTxnInProcessing answers TXN_IN_PROCESSING (nothing ingested).
	ActTxnInProcessing Action = "txn_in_processing"
	// ActInternalError answers INTERNAL_ERROR. On a commit (or a classic
	// prepare) of a transaction that is still open it is a failed commit,
	// and StarRocks aborts the transaction whose commit failed: the BE
	// rolls a classic one back, the FE moves a multi-table task to
	// ABORTING and rolls it back. get_load_state then answers ABORTED, a
	// second commit FAILED and a rollback OK. On every other request it
	// has no side effect.
	ActInternalError Action = "internal_error"
	// ActTxnNotExists answers TXN_NOT_EXISTS.
	ActTxnNotExists Action = "txn_not_exists"
	// ActRunningTxnLimit answers the running-transaction limit error.
	ActRunningTxnLimit Action = "running_txn_limit"
	// ActLabelAlreadyExists answers LABEL_ALREADY_EXISTS.
	ActLabelAlreadyExists Action = "label_already_exists"
	// ActHTTPError answers HTTPCode (default 503) with a short text body;
	// nothing happens.
	ActHTTPError Action = "http_error"
	// ActReset closes the connection abruptly before the operation runs
	// (for a load: after reading part of the body; on the MySQL port:
	// before the statement executes). Nothing happens server-side; the
	// client sees a connection reset (or EOF).
	ActReset Action = "reset"
	// ActDelay waits Delay, then handles the request normally.
	ActDelay Action = "delay"
	// ActRedirect answers 307 to the same URL on the same node, as a
	// follower FE redirecting to the leader does; nothing else happens.
	ActRedirect Action = "redirect"

	// ActReplyLost runs the operation to its end (a load's rows are
	// ingested, a begin's transaction exists, a commit is VISIBLE, a
	// rollback has aborted, a statement has executed), then drops the
	// connection without sending the reply. The client sees a connection
	// reset or EOF at once and cannot tell whether the operation happened.
	// "<op>_reply_lost" (load_reply_lost, commit_reply_lost, …) is the
	// same action restricted to that op.
	ActReplyLost Action = "reply_lost"
	// ActReplyLate runs the operation to its end, then holds its reply for
	// Delay (default 3 s) before sending it. A client whose timeout is
	// shorter gives up first and never sees the reply, although the
	// operation took effect; a patient one sees the normal reply late.
	ActReplyLate Action = "reply_late"
	// ActNoAnswer runs the operation to its end, then sends nothing until
	// Delay passes (default: until the client gives up) and resets the
	// connection.
	ActNoAnswer Action = "no_answer"
	// ActSQLError (op mysql) refuses the statement with a MySQL error
	// (Code, default 1064, SQLSTATE HY000, and Message) without executing
	// it.
	ActSQLError Action = "error"

	// Per-op names of ActReplyLost.
	ActBeginReplyLost        Action = "begin_reply_lost"
	ActLoadReplyLost         Action = "load_reply_lost"
	ActPrepareReplyLost      Action = "prepare_reply_lost"
	ActCommitReplyLost       Action = "commit_reply_lost"
	ActRollbackReplyLost     Action = "rollback_reply_lost"
	ActGetLoadStateReplyLost Action = "get_load_state_reply_lost"
	ActStreamLoadReplyLost   Action = "stream_load_reply_lost"
	ActCancelReplyLost       Action = "cancel_reply_lost"
	ActMySQLReplyLost        Action = "mysql_reply_lost"

	// ActCommitReportFailure commits, then answers FAILED (Message).
	ActCommitReportFailure Action = "commit_report_failure"
	// ActCommitReset is the older name of ActCommitReplyLost: it commits,
	// then resets the connection.
	ActCommitReset Action = "commit_reset"
	// ActCommitNoAnswer is ActNoAnswer for commits: it commits, then holds
	// the request for Delay (default until the client gives up) and resets
	// the connection.
	ActCommitNoAnswer Action = "commit_no_answer"
	// ActCommitLate answers FAILED at once, keeps the transaction committed
	// but not visible (label state COMMITTED; a multi-table task's PREPARE)
	// for Delay (default 3 s), then makes it VISIBLE. Later commits of its
	// tables become visible after it (publish.go).
	ActCommitLate Action = "commit_late"
	// ActCommitAbort answers FAILED and truly aborts the transaction.
	ActCommitAbort Action = "commit_abort"
	// ActAbortPending (rollback of a multi transaction) answers OK "abort
	// initiated, rollback pending" and keeps the task ABORTING for Delay
	// (default 3 s) before it is CANCELLED.
	ActAbortPending Action = "abort_pending"
	// ActCancel (op alter_job) ends the job CANCELLED when it would finish,
	// Msg Message (default "user cancelled"), as a CANCEL ALTER racing it.
	ActCancel Action = "cancel"
)

// actionScope says which ops an action applies to.
type actionScope int

const (
	scopeAny  actionScope = iota // every op, HTTP and MySQL
	scopeHTTP                    // every HTTP op
	scopeOps                     // only the listed ops
)

type actionRule struct {
	scope actionScope
	ops   []Op
}

var actionRules = map[Action]actionRule{
	ActTxnInProcessing: {scope: scopeHTTP}, ActInternalError: {scope: scopeHTTP},
	ActTxnNotExists: {scope: scopeHTTP}, ActRunningTxnLimit: {scope: scopeHTTP},
	ActLabelAlreadyExists: {scope: scopeHTTP}, ActHTTPError: {scope: scopeHTTP},
	ActRedirect: {scope: scopeHTTP},
	ActReset:    {scope: scopeAny}, ActDelay: {scope: scopeAny},
	ActReplyLost: {scope: scopeAny}, ActReplyLate: {scope: scopeAny}, ActNoAnswer: {scope: scopeAny},
	ActSQLError: {scope: scopeOps, ops: []Op{OpMySQL, OpAlterJob}},
	ActCancel:   {scope: scopeOps, ops: []Op{OpAlterJob}},

	ActBeginReplyLost: {scopeOps, []Op{OpBegin}}, ActLoadReplyLost: {scopeOps, []Op{OpLoad}},
	ActPrepareReplyLost: {scopeOps, []Op{OpPrepare}}, ActCommitReplyLost: {scopeOps, []Op{OpCommit}},
	ActRollbackReplyLost: {scopeOps, []Op{OpRollback}}, ActGetLoadStateReplyLost: {scopeOps, []Op{OpGetLoadState}},
	ActStreamLoadReplyLost: {scopeOps, []Op{OpStreamLoad}}, ActCancelReplyLost: {scopeOps, []Op{OpCancel}},
	ActMySQLReplyLost: {scopeOps, []Op{OpMySQL}},

	ActCommitReportFailure: {scopeOps, []Op{OpCommit}}, ActCommitReset: {scopeOps, []Op{OpCommit}},
	ActCommitNoAnswer: {scopeOps, []Op{OpCommit}}, ActCommitLate: {scopeOps, []Op{OpCommit}},
	ActCommitAbort: {scopeOps, []Op{OpCommit}}, ActAbortPending: {scopeOps, []Op{OpRollback}},
}

// canonical folds the aliases: every <op>_reply_lost and commit_reset are
// ActReplyLost, commit_no_answer is ActNoAnswer.
func (a Action) canonical() Action {
	switch {
	case a == ActCommitReset || (a != ActReplyLost && strings.HasSuffix(string(a), "_reply_lost")):
		return ActReplyLost
	case a == ActCommitNoAnswer:
		return ActNoAnswer
	}
	return a
}

// afterApply reports whether the action lets the operation run and acts on
// its reply.
func (a Action) afterApply() bool {
	switch a.canonical() {
	case ActReplyLost, ActReplyLate, ActNoAnswer:
		return true
	}
	return false
}

// Fault makes the next Count requests of kind Op (optionally only those for
// DB and/or Table, or on the MySQL port those matching Statement) misbehave
// as Action says.
type Fault struct {
	Op     Op     `json:"op"`
	Action Action `json:"action"`
	// Count is how many requests are affected (default 1).
	Count int    `json:"count,omitempty"`
	DB    string `json:"db,omitempty"`
	Table string `json:"table,omitempty"`
	// Statement (op mysql only) is a regular expression matched,
	// case-insensitively, against the statement text; empty matches every
	// statement.
	Statement string `json:"statement,omitempty"`
	// Label (HTTP ops only) is a regular expression matched against the
	// request's label; empty matches every request. It tells apart requests
	// no header does: a client's commit of one kind of label from its
	// commit of another.
	Label string `json:"label,omitempty"`
	// Delay is for ActDelay, ActReplyLate, ActNoAnswer, ActCommitNoAnswer,
	// ActCommitLate and ActAbortPending. Over JSON: "delay": "1.5s" or
	// "delay_ms": 1500.
	Delay time.Duration `json:"-"`
	// HTTPCode is for ActHTTPError (default 503).
	HTTPCode int `json:"http_code,omitempty"`
	// Code is the MySQL error number of ActSQLError (default 1064, the
	// number StarRocks gives most statement errors).
	Code int `json:"code,omitempty"`
	// Message overrides the reply message of status, commit and SQL error
	// actions.
	Message string `json:"message,omitempty"`
	// Status overrides the reply Status of ActCommitReportFailure,
	// ActCommitLate and ActCommitAbort (e.g. "PUBLISH_TIMEOUT").
	Status string `json:"status,omitempty"`

	stmtRe  *regexp.Regexp
	labelRe *regexp.Regexp
}

// MarshalJSON writes Delay as a duration string.
func (f Fault) MarshalJSON() ([]byte, error) {
	type plainFault Fault
	j := struct {
		plainFault
		Delay string `json:"delay,omitempty"`
	}{plainFault: plainFault(f)}
	if f.Delay > 0 {
		j.Delay = f.Delay.String()
	}
	return json.Marshal(j)
}

// faultFields are the JSON fields of a Fault, for the unknown-field error.
const faultFields = "op, action, count, db, table, statement, label, delay, delay_ms, http_code, code, message, status"

// UnmarshalJSON reads Delay from "delay" (a duration) or "delay_ms". An
// unknown field is an error naming it: a misspelt one ("acton", "cnt")
// would otherwise leave a fault that fires differently from what was asked.
func (f *Fault) UnmarshalJSON(b []byte) error {
	type plainFault Fault
	var j struct {
		plainFault
		Delay   string `json:"delay"`
		DelayMS int64  `json:"delay_ms"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fmt.Errorf("the fault field %s is unknown (a fault has %s)", name, faultFields)
		}
		return err
	}
	*f = Fault(j.plainFault)
	switch {
	case j.Delay != "":
		d, err := time.ParseDuration(j.Delay)
		if err != nil {
			return fmt.Errorf("parsing fault delay %q (want a duration such as \"1.5s\"): %w", j.Delay, err)
		}
		f.Delay = d
	case j.DelayMS > 0:
		f.Delay = time.Duration(j.DelayMS) * time.Millisecond
	}
	return nil
}

// Validate checks the fault names a known op and action that fit together.
func (f Fault) Validate() error {
	_, err := f.compile()
	return err
}

// compile validates f and compiles its statement pattern.
func (f Fault) compile() (*regexp.Regexp, error) {
	if f.Op != OpMySQL && f.Op != OpAlterJob && !slices.Contains(httpOps, f.Op) {
		return nil, fmt.Errorf("fault op %q is unknown: use begin, load, prepare, commit, rollback, get_load_state, stream_load, cancel, mysql or alter_job", f.Op)
	}
	if f.Op == OpAlterJob && f.Action != ActDelay && f.Action != ActCancel && f.Action != ActSQLError {
		return nil, fmt.Errorf("fault action %q does not apply to op alter_job: use delay, cancel or error", f.Action)
	}
	rule, ok := actionRules[f.Action]
	if !ok {
		return nil, fmt.Errorf("fault action %q is unknown: see the emulator package documentation for the list", f.Action)
	}
	switch {
	case rule.scope == scopeHTTP && f.Op == OpMySQL:
		return nil, fmt.Errorf("fault action %q does not apply to op mysql: use error, reset, delay, reply_lost, reply_late or no_answer", f.Action)
	case rule.scope == scopeOps && !slices.Contains(rule.ops, f.Op):
		return nil, fmt.Errorf("fault action %q only applies to op %s", f.Action, quoteOps(rule.ops))
	}
	if f.Count < 0 {
		return nil, fmt.Errorf("fault count %d must not be negative", f.Count)
	}
	if f.Delay < 0 {
		return nil, fmt.Errorf("fault delay %s must not be negative", f.Delay)
	}
	if f.Label != "" {
		if f.Op == OpMySQL || f.Op == OpAlterJob {
			return nil, fmt.Errorf("fault label %q only applies to HTTP ops", f.Label)
		}
		if _, err := regexp.Compile(f.Label); err != nil {
			return nil, fmt.Errorf("fault label %q is not a valid regular expression: %w", f.Label, err)
		}
	}
	if f.Statement == "" {
		return nil, nil
	}
	if f.Op != OpMySQL {
		return nil, fmt.Errorf("fault statement %q only applies to op mysql", f.Statement)
	}
	re, err := regexp.Compile("(?is)" + f.Statement)
	if err != nil {
		return nil, fmt.Errorf("fault statement %q is not a valid regular expression: %w", f.Statement, err)
	}
	return re, nil
}

// Faults holds the pending faults. Each is consumed atomically: exactly
// Count requests are affected, even under concurrency.
type Faults struct {
	mu      sync.Mutex
	pending []*Fault
}

func newFaults() *Faults { return &Faults{} }

// Add queues a fault; faults are matched in the order they were added.
func (fs *Faults) Add(f Fault) error {
	re, err := f.compile()
	if err != nil {
		return err
	}
	f.stmtRe = re
	if f.Label != "" {
		f.labelRe = regexp.MustCompile(f.Label)
	}
	if f.Count == 0 {
		f.Count = 1
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.pending = append(fs.pending, &f)
	return nil
}

// Clear drops every pending fault.
func (fs *Faults) Clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.pending = nil
}

// Pending returns the pending faults with their remaining counts.
func (fs *Faults) Pending() []Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]Fault, 0, len(fs.pending))
	for _, f := range fs.pending {
		out = append(out, *f)
	}
	return out
}

// take consumes one use of the first fault matching an HTTP request.
func (fs *Faults) take(op Op, db, table, label string) *Fault {
	return fs.takeIf(func(f *Fault) bool {
		return f.Op == op && (f.DB == "" || f.DB == db) && (f.Table == "" || strings.EqualFold(f.Table, table)) &&
			(f.labelRe == nil || f.labelRe.MatchString(label))
	})
}

// takeSQL consumes one use of the first MySQL fault matching a statement.
func (fs *Faults) takeSQL(stmt string) *Fault {
	return fs.takeIf(func(f *Fault) bool {
		return f.Op == OpMySQL && (f.stmtRe == nil || f.stmtRe.MatchString(stmt))
	})
}

func (fs *Faults) takeIf(match func(*Fault) bool) *Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.pending {
		if !match(f) {
			continue
		}
		f.Count--
		if f.Count <= 0 {
			fs.pending = append(fs.pending[:i:i], fs.pending[i+1:]...)
		}
		fired := *f
		return &fired
	}
	return nil
}

// quoteOps lists ops for an error: "mysql" or "mysql" or "alter_job".
func quoteOps(ops []Op) string {
	q := make([]string, len(ops))
	for i, o := range ops {
		q[i] = fmt.Sprintf("%q", o)
	}
	return strings.Join(q, " or ")
}
