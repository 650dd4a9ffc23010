package emulator

import (
	"fmt"
	"net/http"

	"github.com/starrocks-txn/benthos-starrocks/emulator/store"
)

// The FE of StarRocks 3.x (Config.StarRocksVersion below 4.0), where its transaction handling
// differs from 4.x: every request is a classic (single-table) one, since the FE knows no
// transaction_type; the FE routes them through its label → BE map (nodemap.go) rather than
// 4.x's coordinator manager; and an FE restart forgets the running transactions, which the
// FE does not journal. docs/notes/starrocks-protocol.md §12 has the facts and their sources
// (TransactionLoadAction, TransactionWithoutChannelHandler and DatabaseTransactionMgr of
// the 3.3.7 and 3.4.3 sources).

// feClassicV3 is the 3.x FE's TransactionLoadAction.executeTransaction for a request
// without channel headers:
//
//  1. getTxnOperationHandler: a commit, prepare or rollback of a label the map does not
//     hold needs the database ("Database[D] does not exist.") and a transaction state of
//     the label ("No transaction found by label L");
//  2. TransactionWithoutChannelHandler.handle: the database again; a commit or rollback of
//     a PREPARED, COMMITTED, VISIBLE or ABORTED transaction is answered by the FE itself
//     (feDecide);
//  3. getNodeId: a begin puts its label in the map, anything else needs it there
//     ("Transaction with op[load] and label[L] has no node."); then the 307 to that BE.
//
// So a multi-table begin (transaction_type: multi, no table) is an ordinary begin sent to
// the BE, which fails there with an empty table name; a prepare with transaction_type is
// an ordinary prepare. Without a BE listener the FE answers for the BE in place of the
// 307, with the BE's replies: the real FE always redirects, and the emulator's one process
// plays both nodes.
func (e *Emulator) feClassicV3(q *req) {
	fail := func(msg string) { writeJSON(q.w, http.StatusOK, e.feFailed(msg)) }
	_, dbKnown := e.store.DatabaseID(q.db)
	noDB := fmt.Sprintf("Database[%s] does not exist.", q.db)
	e.mu.Lock()
	inMap := e.nodes.has(q.label)
	e.mu.Unlock()
	if q.op != "begin" && q.op != "load" && !inMap {
		if !dbKnown {
			fail(noDB)
			return
		}
		e.mu.Lock()
		t := e.latestLocked(q.db, q.label)
		e.mu.Unlock()
		if t == nil {
			fail(noTxnByLabel(q.label))
			return
		}
	}
	if !dbKnown {
		fail(noDB)
		return
	}
	if q.op == "commit" || q.op == "rollback" {
		e.mu.Lock()
		t := e.latestLocked(q.db, q.label)
		e.mu.Unlock()
		if t == nil {
			fail(noTxnByLabel(q.label))
			return
		}
		if t.labelState() != statusPrepare {
			e.feDecide(q, t)
			return
		}
	}
	e.mu.Lock()
	routed := true
	if q.op == "begin" {
		e.nodes.put(q.label)
	} else {
		routed = e.nodes.get(q.label)
	}
	e.mu.Unlock()
	if !routed {
		fail(fmt.Sprintf("Transaction with op[%s] and label[%s] has no node.", q.op, q.label))
		return
	}
	if e.beLn != nil {
		e.redirectToBE(q.w, q.r)
		return
	}
	switch q.op {
	case "begin":
		e.classicBegin(q)
	case "load":
		e.ingest(q)
	default:
		e.beOp(q)
	}
}

// noTxnByLabel is the 3.x FE's answer for a label it holds no transaction state of: never
// begun, forgotten by an FE restart while running, or dropped by label retention (3.x has no
// outcome cache).
func noTxnByLabel(label string) string { return "No transaction found by label " + label }

// restartV3Locked is an FE restart of 3.x: DatabaseTransactionMgr journals a BE's
// transaction only from its prepare on (doWriteTxnStateEditLog skips PREPARE ones of source
// BACKEND_STREAMING: "if prepare txn lost, the following commit will just be failed"), so
// the restarted FE knows its PREPARED, committing and final transactions and has forgotten
// the running ones: get_load_state answers UNKNOWN, SHOW PROC does not list them, the label
// is free in the FE. Its label → BE map is empty: a load, or a commit of a label begun
// before, fails "… has no node." or "No transaction found by label …". The BE did not
// restart: it keeps its contexts, so a begin of a forgotten label answers
// LABEL_ALREADY_EXISTS from the BE until its timeout removes the context, and the BE's own
// prepare or commit of one fails, as the FE no longer knows the transaction.
func (e *Emulator) restartV3Locked() {
	for _, d := range e.dbs {
		for _, t := range d.running {
			if t.multi || t.status != statusPrepare {
				continue // PREPARED and committing ones are journaled
			}
			e.forgetLocked(d, t)
		}
	}
	e.nodes.clear()
	e.log.Info("emulated FE restart (3.x): running transactions and the label → BE map forgotten, prepared ones kept")
}

// forgetLocked drops a running transaction from its database's manager, as an FE that never
// journaled it: no label, no running slot, no final state. A BE context that holds it
// stays, marked feLost.
func (e *Emulator) forgetLocked(d *dbTxns, t *txn) {
	delete(d.running, t.id)
	ts := d.labels[t.label]
	for i, x := range ts {
		if x == t {
			ts = append(ts[:i:i], ts[i+1:]...)
			break
		}
	}
	if len(ts) == 0 {
		delete(d.labels, t.label)
	} else {
		d.labels[t.label] = ts
	}
	t.registered, t.feLost = false, true
}

// feLostReply is the BE's reply when it asks the FE to prepare, commit or roll back a
// transaction the FE forgot: loadTxnPrepare/Commit/Rollback fail with the
// TransactionNotFoundException's text, which the FE reports as ANALYSIS_ERROR; the BE
// drops its context.
func (e *Emulator) feLostLocked(t *txn) reply {
	msg := fmt.Sprintf("transaction not found: %d", t.id)
	if e.beContexts[t.label] == t {
		delete(e.beContexts, t.label)
	}
	t.status, t.reason = statusAborted, msg
	t.done = true
	return beReply("ANALYSIS_ERROR", msg, t.label)
}

// serverVersion is what the MySQL port says it is.
func (e *Emulator) serverVersion() store.ServerVersion {
	b := e.ver.buildVersion()
	return store.ServerVersion{Current: b, Comment: b, PreparedColumns: e.ver.preparedTimeout()}
}
