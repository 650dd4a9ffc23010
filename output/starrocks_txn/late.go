package starrocks_txn

import (
	"fmt"
	"time"
)

// A message late after its gap was skipped (ARCHITECTURE.md §4.1). At the
// skip the output cannot tell a dropped message from a slow one (a stalled
// processor, a long GC between the txn_assembler and this output), so it
// goes on after sequence_gap_timeout. When the message comes after all,
// the sequencer knows it was skipped (sequencer.takeSkipped) and it is not
// taken for a replay: it is applied where that is still correct, and
// otherwise refused alone, never poisoning a transaction it does not
// belong to.

// applyLate applies a message whose seq a gap skip passed over:
//
//   - nothing later of its partition was admitted (the gap's other messages
//     were other partitions'), or it carries no offset: applied as any
//     message;
//   - its transaction is still its partition's open one: it joins it at its
//     place by starrocks_source_offset, and the transaction commits whole
//     (joinLate);
//   - otherwise its transaction ended without it, or later transactions of
//     the partition were admitted: it cannot be applied in order, and is
//     poisoned alone (dead_letter, or its partition stalls), with an error
//     that says it was late and what to raise.
func (k *core) applyLate(it *item, now time.Time) {
	if k.epochCheck(it, now) || k.progressHold(it) {
		return
	}
	p := k.partition(it.pk)
	var prog *progressEntry
	if it.pk.partition != noContractPartition {
		prog = k.progress[it.pk.partition]
	}
	off := it.meta.SourceOffset
	if !it.meta.HasOffset || !p.hasHWM || off > p.hwm || p.stalled != nil || prog.coversMessage(off) {
		k.fx.logf(logWarn, p.key.String(), "A message of source transaction %q (starrocks_seq %d) arrived after sequence_gap_timeout (%v) had skipped it; nothing later of its partition was admitted, so it is applied in order", it.meta.TxnID, it.meta.Seq, k.conf.sequenceGapTimeout)
		k.apply(it, now)
		return
	}
	p.lastActivity = now
	if t := p.open; t != nil && t.id == it.meta.TxnID && !it.unsureEnd {
		if it.meta.TxnAbort {
			k.fx.logf(logWarn, p.key.String(), "The abort marker of source transaction %q (starrocks_source_offset %d) arrived after sequence_gap_timeout (%v) had skipped it; its transaction is still open and is skipped", t.id, off, k.conf.sequenceGapTimeout)
			k.abort(p, it)
			return
		}
		k.fx.logf(logWarn, p.key.String(), "A message of source transaction %q (starrocks_source_offset %d) arrived after sequence_gap_timeout (%v) had skipped it; its transaction is still open, so it joins it at its place", t.id, off, k.conf.sequenceGapTimeout)
		k.joinLate(p, t, it, prog, now)
		return
	}
	if n := len(p.order); n > 0 {
		// The late messages of one transaction (a late batch) go together.
		if last := p.order[n-1]; last.late && last.id == it.meta.TxnID && last.state == txnPoisoned && !last.inDeadLetter {
			last.items = append(last.items, it)
			return
		}
	}
	lone := newTxn(p, it.meta.TxnID, it.sourceTime())
	lone.late = true
	lone.items = append(lone.items, it)
	lone.poison = fmt.Errorf("the message at starrocks_source_offset %d of source transaction %q arrived after sequence_gap_timeout (%v) had skipped it, when its transaction had ended without it or later transactions of partition %s were admitted: it cannot be applied in order (whatever of its transaction came in time is applied without it); raise sequence_gap_timeout above the longest time a message can take from the txn_assembler to this output", off, it.meta.TxnID, k.conf.sequenceGapTimeout, p.key)
	p.order = append(p.order, lone)
	k.poison(lone)
}

// joinLate adds a late message to its partition's open transaction t at its
// place: the transaction's messages, and its rows of the message's table,
// stay in starrocks_source_offset order, so a later change of a row in the
// same transaction still wins. It ends t only when it is an END above every
// message of t.
func (k *core) joinLate(p *partition, t *srcTxn, it *item, prog *progressEntry, now time.Time) {
	k.appendTo(p, it)
	items := t.items
	last := len(items) - 1
	pos := last
	for pos > 0 && items[pos-1].meta.HasOffset && items[pos-1].meta.SourceOffset > it.meta.SourceOffset {
		pos--
	}
	copy(items[pos+1:], items[pos:last])
	items[pos] = it
	if it.isRow && it.poison == nil && t.state == txnOpen {
		// appendTo added its row last among its table's rows (as it adds
		// the row of every row message without a poison of its own); its
		// place is after the rows of the messages before it.
		before := 0
		for _, x := range items[:pos] {
			if x.isRow && x.poison == nil && x.table == it.table {
				before++
			}
		}
		rows := t.rowsOf(it.table)
		if n := len(rows) - 1; before < n {
			copy(rows[before+1:], rows[before:n])
			rows[before] = it.body
		}
	}
	if it.meta.TxnEnd && pos == last {
		k.complete(p, t, it, false, prog, now)
	}
}
