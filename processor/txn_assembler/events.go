// This file handles each recognised event kind on a partition: begin, data,
// end, abort, replays and bad input.

package txnassembler

// Home of G62 (ARCHITECTURE.md §11.4): the format's boundaries make one source transaction of a
// partition, partitions independent. Main test: TestPropertyInterleavedPartitions.
//
// Home of G63 (ARCHITECTURE.md §11.4): never merged, never ended by another transaction; a bad
// message poisons the one it names. Main test: TestInterleavedWritersAreFlaggedNeverMerged.

import (
	"fmt"
	"strconv"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

func (p *Processor) begin(w *writer, ps *partState, msg *service.Message, partition string, ev event, off int64) {
	switch {
	case ps.open == nil:
		ps.openTxn(ev.txnID, true)
		p.m.dropped.incrLabel(dropBegin)
	case ps.open.id == ev.txnID:
		// A re-sent BEGIN of the open transaction.
		p.m.dropped.incrLabel(dropBegin)
	default:
		// The source restarted: discard the open transaction in place of this
		// BEGIN, then open the new one.
		old := ps.open.id
		ps.unpoison(old)
		w.emit(msg, emission{meta: contract.Meta{
			Partition: partition, TxnID: old, TxnAbort: true, Marker: true,
			HasOffset: true, SourceOffset: off,
		}})
		p.m.aborted.incr()
		p.log.Debugf("txn_assembler: partition %q: BEGIN of %q while %q is open: %q aborted", partition, ev.txnID, old, old)
		ps.openTxn(ev.txnID, true)
	}
}

func (p *Processor) data(w *writer, ps *partState, msg *service.Message, partition string, ev event, off int64, dataErr error) {
	isEnd := ev.kind == kindDataEnd
	if ps.open == nil {
		ps.openTxn(ev.txnID, false)
	}
	open := ps.open
	e := emission{meta: contract.Meta{
		Partition: partition, Database: ev.database, Table: ev.table,
		TxnID: open.id, HasOffset: true, SourceOffset: off,
	}}
	if dataErr == nil {
		e.setBody(ev)
	}
	if dataErr != nil {
		e.keepBody = true
		e.err = flagErr(partition, ev.txnID, "%v", dataErr)
		e.reason = reasonBadInput
	}

	if open.id != ev.txnID {
		// Two writers interleave in one partition: never merge silently.
		// Flag the row under the open transaction, so that the output
		// dead-letters that one, and remember the row's own transaction as
		// incomplete.
		what := "row"
		if ev.schema || ev.ddl {
			what = "schema change"
		}
		reason := fmt.Sprintf("%s of transaction %q arrived while transaction %q is open: two writers interleave in this partition (contract violation); both transactions are incomplete and must be dead-lettered", what, ev.txnID, open.id)
		ps.poison(ev.txnID, reason)
		e.err = flagErr(partition, open.id, "field %q: %s%s", p.txnField, reason, suffix(dataErr))
		e.reason = reasonViolation
		p.m.violations.incr()
		w.emit(msg, e)
		return
	}
	if open.poison != "" && e.err == nil {
		e.err = flagErr(partition, open.id, "field %q: transaction is incomplete: %s", p.txnField, open.poison)
		e.reason = reasonIncomplete
	}
	if isEnd {
		e.meta.TxnEnd = true
		ps.unpoison(open.id)
		ps.open = nil
		p.m.ended.incr()
	}
	w.emit(msg, e)
}

func suffix(err error) string {
	if err == nil {
		return ""
	}
	return "; also: " + err.Error()
}

func (p *Processor) end(w *writer, ps *partState, msg *service.Message, partition string, ev event, off int64) {
	switch {
	case ps.open == nil:
		p.m.dropped.incrLabel(dropEnd)
	case ps.open.id != ev.txnID:
		// An END of a transaction that is not open (a duplicate, or the END
		// of an aborted or interleaved one) ends nothing. Rows of an
		// interleaved transaction were flagged already.
		p.m.dropped.incrLabel(dropEnd)
		p.m.violations.incr()
		p.log.Warnf("txn_assembler: partition %q: END of transaction %q dropped while transaction %q is open", partition, ev.txnID, ps.open.id)
	default:
		open := ps.open
		e := emission{meta: contract.Meta{
			Partition: partition, TxnID: open.id, TxnEnd: true, Marker: true,
			HasOffset: true, SourceOffset: off,
		}}
		if open.poison != "" {
			e.err = flagErr(partition, open.id, "field %q: transaction is incomplete: %s", p.txnField, open.poison)
			e.reason = reasonIncomplete
		}
		ps.unpoison(open.id)
		ps.open = nil
		p.m.ended.incr()
		w.emit(msg, e)
	}
}

func (p *Processor) abort(w *writer, ps *partState, msg *service.Message, partition string, ev event, off int64) {
	switch {
	case ps.open == nil:
		p.m.dropped.incrLabel(dropAbort)
	case ev.txnID != "" && ps.open.id != ev.txnID:
		p.m.dropped.incrLabel(dropAbort)
		p.m.violations.incr()
		p.log.Warnf("txn_assembler: partition %q: abort of transaction %q dropped while transaction %q is open", partition, ev.txnID, ps.open.id)
	default:
		old := ps.open.id
		ps.unpoison(old)
		ps.open = nil
		p.m.aborted.incr()
		w.emit(msg, emission{meta: contract.Meta{
			Partition: partition, TxnID: old, TxnAbort: true, Marker: true,
			HasOffset: true, SourceOffset: off,
		}})
	}
}

// bad flags a message that cannot take part in the state machine (it cannot
// be parsed, has an unknown type or lacks its transaction id).
func (p *Processor) bad(w *writer, ps *partState, msg *service.Message, partition string, ev event, off int64, hasOff bool, cause error, reason string) {
	e := emission{
		meta:     contract.Meta{Partition: partition, HasOffset: hasOff, SourceOffset: off},
		keepBody: true,
		reason:   reason,
	}
	switch {
	case ps.open != nil:
		// Attributed to the open transaction, which the output then
		// dead-letters whole.
		e.meta.TxnID = ps.open.id
		if ev.txnID != "" && ev.txnID != ps.open.id {
			ps.poison(ev.txnID, fmt.Sprintf("a bad message of this transaction was flagged under transaction %q", ps.open.id))
		}
		if ev.kind == kindEnd && ev.txnID == "" {
			// An END without an id still ends the open transaction, flagged.
			e.meta.TxnEnd, e.meta.Marker = true, true
			ps.open = nil
		}
	case ev.txnID != "":
		// Its own one-message transaction; later rows of that transaction
		// are flagged as incomplete.
		e.meta.TxnID = ev.txnID
		e.meta.TxnEnd = true
		ps.poison(ev.txnID, fmt.Sprintf("an earlier message of this transaction at offset %d was bad (%v)", off, cause))
	default:
		e.meta.TxnID = "invalid@" + strconv.FormatInt(off, 10)
		if !hasOff {
			e.meta.TxnID = "invalid"
		}
		e.meta.TxnEnd = true
		ps.taint = fmt.Sprintf("an unattributable bad message at offset %d preceded it and may have been its first row", off)
	}
	e.err = flagErr(partition, e.meta.TxnID, "%v", cause)
	w.emit(msg, e)
}

// replay flags a message whose offset the partition has already passed. It
// changes no state.
func (p *Processor) replay(w *writer, ps *partState, msg *service.Message, partition string, ev event, decErr error, off int64) {
	if decErr == nil && ev.kind == kindBegin {
		p.m.dropped.incrLabel(dropBegin)
		return
	}
	if decErr == nil && ev.kind == kindSkip {
		p.skip(partition, ev)
		return
	}
	txn := ev.txnID
	if txn == "" && ps.open != nil {
		txn = ps.open.id
	}
	if txn == "" {
		txn = "invalid@" + strconv.FormatInt(off, 10)
	}
	e := emission{
		meta:     contract.Meta{Partition: partition, TxnID: txn, HasOffset: true, SourceOffset: off},
		keepBody: true,
		reason:   reasonReplay,
	}
	if decErr == nil {
		switch {
		case ev.kind.isData():
			if t, err := p.target(ev); err == nil {
				e.meta.Database, e.meta.Table = t.database, t.table
				e.setBody(t)
				e.keepBody = false
			}
		case ev.kind == kindEnd || ev.kind == kindAbort:
			e.meta.Marker = true
		}
	}
	e.err = flagErr(partition, txn, "field %q: source offset %d is at or below offset %d that this partition already passed: a replay (a nacked batch re-processed) or a reorder; it is not applied", p.offsetField(), off, ps.hwm)
	w.emit(msg, e)
}
