package emulator

import (
	"fmt"
	"io"
	"net/http"
)

// Taking and firing a fault: the generic actions every op shares (status replies, HTTP
// errors, resets, delays, redirects) are answered at once, with the reply shapes of the FE
// and the BE; the op-specific ones, and a commit failure that must abort the transaction, go
// back to the handler.

// go on (no fault, a delay that passed, or an op-specific action).
func (e *Emulator) fire(q *req, f *Fault, shape func(status, msg string) reply) bool {
	if f == nil {
		return false
	}
	e.ctr.faultsFired.Add(1)
	e.log.Debug("fault fired", "op", f.Op, "action", f.Action, "label", q.label, "table", q.table)
	if f.Action.afterApply() {
		q.hold(f)
		return false
	}
	msg := f.Message
	switch f.Action {
	case ActDelay:
		e.sleep(q.r.Context(), f.Delay)
		return false
	case ActRedirect:
		base := e.FEURL()
		if q.node == "be" {
			base = e.BEURL()
		}
		loc := base + q.r.URL.Path
		if q.r.URL.RawQuery != "" {
			loc += "?" + q.r.URL.RawQuery
		}
		e.ctr.redirects.Add(1)
		q.w.Header().Set("Location", loc)
		q.w.WriteHeader(http.StatusTemporaryRedirect)
		return true
	case ActHTTPError:
		code := f.HTTPCode
		if code == 0 {
			code = http.StatusServiceUnavailable
		}
		http.Error(q.w, fmt.Sprintf("injected HTTP %d", code), code)
		return true
	case ActReset:
		if q.op == "load" || q.op == "stream_load" {
			// Read part of the body so the reset happens mid-transfer.
			half := q.r.ContentLength / 2
			if half <= 0 {
				half = 1
			}
			_, _ = io.CopyN(io.Discard, q.r.Body, half)
		}
		hijackReset(q.w)
		return true
	case ActTxnInProcessing:
		if msg == "" {
			msg = e.ver.inProcessingMsg()
		}
		writeJSON(q.w, http.StatusOK, shape("TXN_IN_PROCESSING", msg))
		return true
	case ActInternalError:
		if msg == "" {
			msg = "injected internal error"
		}
		writeJSON(q.w, http.StatusOK, shape("INTERNAL_ERROR", msg))
		return true
	case ActTxnNotExists:
		if msg == "" {
			msg = fmt.Sprintf("Transaction with label %s not exists", q.label)
		}
		writeJSON(q.w, http.StatusOK, shape("TXN_NOT_EXISTS", msg))
		return true
	case ActRunningTxnLimit:
		if msg == "" {
			dbID, _ := e.store.DatabaseID(q.db)
			e.mu.Lock()
			n := e.runningLocked(q.db)
			e.mu.Unlock()
			msg = runningLimitMsg(dbID, max(n, e.cfg.MaxRunningTxnPerDB), e.cfg.MaxRunningTxnPerDB)
		}
		writeJSON(q.w, http.StatusOK, shape("RUNNING_TXN_LIMIT", msg))
		return true
	case ActLabelAlreadyExists:
		if msg == "" {
			msg = fmt.Sprintf("Label [%s] has already been used.", q.label)
		}
		writeJSON(q.w, http.StatusOK, shape("LABEL_ALREADY_EXISTS", msg))
		return true
	}
	return false
}

// feShape shapes fault replies of FE transaction operations.
func (e *Emulator) feShape(q *req) func(status, msg string) reply {
	return func(status, msg string) reply {
		switch status {
		case "RUNNING_TXN_LIMIT":
			return e.feFailed(msg)
		case "LABEL_ALREADY_EXISTS":
			return txnResult(status, msg).with("ExistingJobStatus", "RUNNING")
		case "TXN_IN_PROCESSING":
			return txnResult(status, msg).with("Label", q.label)
		}
		return txnResult(status, msg)
	}
}

// beShape shapes fault replies of BE transaction operations.
func beShape(q *req) func(status, msg string) reply {
	return func(status, msg string) reply {
		switch status {
		case "RUNNING_TXN_LIMIT":
			return beReply("ANALYSIS_ERROR", msg, q.label)
		case "LABEL_ALREADY_EXISTS":
			return reply{{"Status", status}, {"ExistingJobStatus", "RUNNING"}, {"Message", msg}}
		}
		return beReply(status, msg, q.label)
	}
}

// takeFault consumes the fault for q's op, answering generic actions; it
// returns the fault (for op-specific actions) and whether q was answered.
func (e *Emulator) takeFault(q *req, shape func(status, msg string) reply) (*Fault, bool) {
	return e.takeFaultFor(q, shape, false)
}

// takeCommitFault is takeFault for the commit handlers that own a
// transaction still open: an internal_error is returned instead of
// answered, so the handler fails the commit the way StarRocks does, which
// aborts the transaction (see commitFailure).
func (e *Emulator) takeCommitFault(q *req, shape func(status, msg string) reply) (*Fault, bool) {
	return e.takeFaultFor(q, shape, true)
}

func (e *Emulator) takeFaultFor(q *req, shape func(status, msg string) reply, commit bool) (*Fault, bool) {
	f := e.faults.take(Op(q.op), q.db, q.table, q.label)
	if commit && commitFailure(f) {
		e.ctr.faultsFired.Add(1)
		e.log.Debug("fault fired", "op", f.Op, "action", f.Action, "label", q.label, "table", q.table)
		return f, false
	}
	if e.fire(q, f, shape) {
		return nil, true
	}
	if f != nil && f.Action == ActDelay {
		return nil, false
	}
	return f, false
}

// commitFailure reports whether f makes a commit (or a classic prepare)
// fail on the server. StarRocks aborts every transaction whose commit
// failed there: the BE's commit_transaction rolls the transaction back
// when _commit_transaction returns an error (need_rollback is set from
// begin on), and the FE's multi-statement commitTxn moves a failed task to
// ABORTING and rolls it back. get_load_state then answers ABORTED, a
// second commit FAILED and a rollback OK.
func commitFailure(f *Fault) bool {
	return f != nil && f.Action == ActInternalError && (f.Op == OpCommit || f.Op == OpPrepare)
}

// injectedMsg is the Message of a fault reply: its own, or def.
func injectedMsg(f *Fault, def string) string {
	if f.Message != "" {
		return f.Message
	}
	return def
}
