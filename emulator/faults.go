package emulator

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Op is the kind of request a fault applies to.
type Op string

// Operations faults can target.
const (
	OpBegin        Op = "begin"
	OpLoad         Op = "load"
	OpPrepare      Op = "prepare"
	OpCommit       Op = "commit"
	OpRollback     Op = "rollback"
	OpGetLoadState Op = "get_load_state"
	OpStreamLoad   Op = "stream_load"
	OpCancel       Op = "cancel"
)

// Action is what a fault does to the request it hits.
type Action string

// Fault actions. The status actions answer with that status (or message)
// and have no side effect: the operation does not happen.
const (
	// ActTxnInProcessing answers TXN_IN_PROCESSING (nothing ingested).
	ActTxnInProcessing Action = "txn_in_processing"
	// ActInternalError answers INTERNAL_ERROR.
	ActInternalError Action = "internal_error"
	// ActTxnNotExists answers TXN_NOT_EXISTS.
	ActTxnNotExists Action = "txn_not_exists"
	// ActRunningTxnLimit answers the running-transaction limit error.
	ActRunningTxnLimit Action = "running_txn_limit"
	// ActLabelAlreadyExists answers LABEL_ALREADY_EXISTS.
	ActLabelAlreadyExists Action = "label_already_exists"
	// ActHTTPError answers HTTPCode (default 503) with a short text body.
	ActHTTPError Action = "http_error"
	// ActReset closes the connection abruptly (for a load: after reading
	// part of the body).
	ActReset Action = "reset"
	// ActDelay waits Delay, then handles the request normally.
	ActDelay Action = "delay"
	// ActRedirect answers 307 to the same URL on the same node, as a
	// follower FE redirecting to the leader does; nothing else happens.
	ActRedirect Action = "redirect"

	// ActCommitReportFailure commits, then answers FAILED (Message).
	ActCommitReportFailure Action = "commit_report_failure"
	// ActCommitReset commits, then resets the connection.
	ActCommitReset Action = "commit_reset"
	// ActCommitNoAnswer commits, then holds the request for Delay (default
	// until the client gives up) and resets the connection.
	ActCommitNoAnswer Action = "commit_no_answer"
	// ActCommitLate answers FAILED at once, keeps the transaction committing
	// (label state PREPARE) for Delay (default 3 s), then makes it VISIBLE.
	ActCommitLate Action = "commit_late"
	// ActCommitAbort answers FAILED and truly aborts the transaction.
	ActCommitAbort Action = "commit_abort"
	// ActAbortPending (rollback of a multi transaction) answers OK "abort
	// initiated, rollback pending" and keeps the task ABORTING for Delay
	// (default 3 s) before it is CANCELLED.
	ActAbortPending Action = "abort_pending"
)

var validActions = map[Action][]Op{
	ActTxnInProcessing: nil, ActInternalError: nil, ActTxnNotExists: nil, ActRunningTxnLimit: nil,
	ActLabelAlreadyExists: nil, ActHTTPError: nil, ActReset: nil, ActDelay: nil, ActRedirect: nil,
	ActCommitReportFailure: {OpCommit}, ActCommitReset: {OpCommit}, ActCommitNoAnswer: {OpCommit},
	ActCommitLate: {OpCommit}, ActCommitAbort: {OpCommit}, ActAbortPending: {OpRollback},
}

var validOps = map[Op]bool{
	OpBegin: true, OpLoad: true, OpPrepare: true, OpCommit: true, OpRollback: true,
	OpGetLoadState: true, OpStreamLoad: true, OpCancel: true,
}

// Fault makes the next Count requests of kind Op (optionally only those for
// DB and/or Table) misbehave as Action says.
type Fault struct {
	Op     Op     `json:"op"`
	Action Action `json:"action"`
	// Count is how many requests are affected (default 1).
	Count int    `json:"count,omitempty"`
	DB    string `json:"db,omitempty"`
	Table string `json:"table,omitempty"`
	// Delay is for ActDelay, ActCommitNoAnswer, ActCommitLate and
	// ActAbortPending. Over JSON: "delay": "1.5s" or "delay_ms": 1500.
	Delay time.Duration `json:"-"`
	// HTTPCode is for ActHTTPError (default 503).
	HTTPCode int `json:"http_code,omitempty"`
	// Message overrides the reply message of status and commit actions.
	Message string `json:"message,omitempty"`
	// Status overrides the reply Status of ActCommitReportFailure,
	// ActCommitLate and ActCommitAbort (e.g. "PUBLISH_TIMEOUT").
	Status string `json:"status,omitempty"`
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

// UnmarshalJSON reads Delay from "delay" (a duration) or "delay_ms".
func (f *Fault) UnmarshalJSON(b []byte) error {
	type plainFault Fault
	var j struct {
		plainFault
		Delay   string `json:"delay"`
		DelayMS int64  `json:"delay_ms"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
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
	if !validOps[f.Op] {
		return fmt.Errorf("fault op %q is unknown: use begin, load, prepare, commit, rollback, get_load_state, stream_load or cancel", f.Op)
	}
	ops, ok := validActions[f.Action]
	if !ok {
		return fmt.Errorf("fault action %q is unknown", f.Action)
	}
	if ops != nil {
		fit := false
		for _, o := range ops {
			fit = fit || o == f.Op
		}
		if !fit {
			return fmt.Errorf("fault action %q only applies to op %q", f.Action, ops[0])
		}
	}
	if f.Count < 0 {
		return fmt.Errorf("fault count %d must not be negative", f.Count)
	}
	return nil
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
	if err := f.Validate(); err != nil {
		return err
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

// take consumes one use of the first fault matching the request.
func (fs *Faults) take(op Op, db, table string) *Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.pending {
		if f.Op != op || (f.DB != "" && f.DB != db) || (f.Table != "" && !strings.EqualFold(f.Table, table)) {
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
