package debezium_txn

// Home of G57 (ARCHITECTURE.md §11.3): Debezium: a source transaction is emitted whole, in END
// order. Main test: TestEmitInEndOrder.

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
)

// outMsg is one message of an emission: a row and its contract.
type outMsg struct {
	// partition is the starrocks_partition: the database partition for a
	// transaction event, the side partition (<topic>/<partition>) for a
	// snapshot or untransacted row.
	partition    string
	side         bool
	txnID        string
	sourceOffset int64
	end          bool
	ev           *event
	rec          recMeta
}

// emission is one complete transaction, or a run of side rows of one
// partition (each its own one-row transaction).
type emission struct {
	txn   *txnState
	sides []*sideRow
	// msgs are the rows to render; the input gives them back
	// (recycleMsgs) once it has made their messages, keeping their count
	// and first transaction id.
	msgs    []outMsg
	n       int
	firstID string
	// events are the emitted transaction's buffered events, which msgs
	// point into: given back with msgs.
	events []*txnEvent
}

// maxFreeMsgs bounds the row slices kept for reuse, maxFreeEvents the
// buffered events (~260 bytes each). A free event keeps its whole slab of
// eventSlab alive, so the bound is also what free events can pin at worst:
// 1 024 × 32 × ~260 bytes, about 8.5 MB (8 192 pinned up to ~68 MB).
const (
	maxFreeMsgs   = 64
	maxFreeEvents = 1024
)

// takeMsgs returns an empty slice for n rows, reused when one is free.
func (a *assembler) takeMsgs(n int) []outMsg {
	for i := len(a.freeMsgs) - 1; i >= 0; i-- {
		if m := a.freeMsgs[i]; cap(m) >= n {
			last := len(a.freeMsgs) - 1
			a.freeMsgs[i], a.freeMsgs[last] = a.freeMsgs[last], nil
			a.freeMsgs = a.freeMsgs[:last]
			return m[:0]
		}
	}
	return make([]outMsg, 0, max(n, txnEventsReserved))
}

// recycleMsgs records the count and first transaction id of em's rows,
// whose messages are made, and keeps their slice and the transaction's
// events for later ones. Nothing else points at the events: the
// transaction dropped them when it was emitted (nextTxn), and a message
// holds copies of what it took from its event (its row slice, strings,
// the source table), so reusing an event changes no message
// (TestEmittedEventsReused).
func (a *assembler) recycleMsgs(em *emission) {
	em.n = len(em.msgs)
	if em.n > 0 {
		em.firstID = em.msgs[0].txnID
	}
	if len(a.freeMsgs) < maxFreeMsgs {
		clear(em.msgs)
		a.freeMsgs = append(a.freeMsgs, em.msgs[:0])
	}
	em.msgs = nil
	for _, e := range em.events {
		if len(a.freeEvents) >= maxFreeEvents {
			break
		}
		*e = txnEvent{}
		a.freeEvents = append(a.freeEvents, e)
	}
	em.events = nil
}

// next returns the next emission that every rule of ARCHITECTURE.md §13.5
// allows, or nil (always nil once emission is stopped). maxSide bounds the length of a run of side rows.
func (a *assembler) next(maxSide int) *emission {
	if a.stopErr != nil {
		return nil
	}
	if em := a.nextSides(maxSide); em != nil {
		return em
	}
	return a.nextTxn()
}

// nextSides returns a run of side rows of the first partition (in topic,
// partition order) whose first pending side row has no uncommitted
// transaction event before it.
func (a *assembler) nextSides(maxSide int) *emission {
	if maxSide < 1 {
		maxSide = 1
	}
	for _, p := range a.sortedParts() {
		if p.pending == 0 {
			continue
		}
		a.popReleasedSides(p)
		first := len(p.sides) - p.pending
		limit := int64(-1)
		if h, ok := p.headTxnEvent(); ok {
			limit = h.offset
		}
		em := &emission{msgs: a.takeMsgs(min(p.pending, maxSide))}
		for i := first; i < len(p.sides) && len(em.sides) < maxSide; i++ {
			s := p.sides[i]
			if limit >= 0 && s.rec.offset > limit {
				break
			}
			s.emitted = true
			p.pending--
			a.buffered -= s.size
			em.sides = append(em.sides, s)
			em.msgs = append(em.msgs, outMsg{
				partition: s.rec.tp.String(), side: true,
				txnID:        sideTxnID(s),
				sourceOffset: s.rec.offset, end: true, ev: &s.ev, rec: s.rec,
			})
		}
		if len(em.sides) > 0 {
			return em
		}
	}
	return nil
}

func sideTxnID(s *sideRow) string {
	kind := "row"
	if s.ev.op == opRead {
		kind = "snapshot"
	}
	return kind + ":" + s.rec.tp.String() + "@" + itoa(s.rec.offset)
}

// popReleasedSides drops released side rows from the front of the queue.
func (a *assembler) popReleasedSides(p *partState) { p.headSide() }

func (a *assembler) sortedParts() []*partState {
	if a.sorted != nil {
		return a.sorted
	}
	out := make([]*partState, 0, len(a.parts))
	for _, p := range a.parts {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].tp.topic != out[j].tp.topic {
			return out[i].tp.topic < out[j].tp.topic
		}
		return out[i].tp.part < out[j].tp.part
	})
	a.sorted = out
	return out
}

// holdReason says why the oldest complete transaction is not emitted yet;
// "" when it may go.
func (a *assembler) holdReason(t *txnState) string {
	for _, p := range a.sortedParts() {
		if a.assigned[p.tp] && !p.started {
			return "waiting for the first record of " + p.tp.String() + " (a partition not read yet may hold snapshot rows)"
		}
	}
	if why := a.snapshotHold(t); why != "" {
		return why
	}
	for _, f := range t.first.entries {
		part, off := f.key, f.val
		if s, ok := a.part(part).headSide(); ok && s.rec.offset < off {
			return "the side row at " + part.String() + " offset " + itoa(s.rec.offset) + " before its event at offset " + itoa(off) + " is not committed yet"
		}
	}
	return ""
}

// nextTxn returns the oldest transaction by END order when it is complete
// and nothing holds it. A transaction with no consumed event is released at
// once and the next one considered.
func (a *assembler) nextTxn() *emission {
	for len(a.ends) > 0 {
		t := a.ends[0]
		if t.status != txnOpen {
			a.ends[0] = nil
			a.ends = a.ends[1:]
			continue
		}
		if (t.err != nil || !t.complete()) && a.cfg.skip[t.id] {
			a.ends[0] = nil
			a.ends = a.ends[1:]
			a.stats.operatorSkipped++
			why := a.describeCounts(t)
			if t.err != nil {
				why = t.err.Error()
			}
			a.notes = append(a.notes, "transaction "+strconv.Quote(t.id)+" (END at "+a.cfg.txnTopic+" offset "+itoa(t.endOffset)+") is skipped because skip_transactions lists it: none of its events is loaded ("+why+"); re-apply its rows from the source if they are needed")
			a.skipWhole(t)
			continue
		}
		if t.err != nil || !t.complete() || a.holdReason(t) != "" {
			return nil
		}
		a.ends[0] = nil
		a.ends = a.ends[1:]
		msgs := a.takeMsgs(len(t.events))
		for _, e := range t.events {
			if e.loaded {
				msgs = append(msgs, outMsg{partition: a.cfg.partition, txnID: t.id, ev: &e.ev, rec: e.rec})
			}
		}
		if len(msgs) == 0 {
			if len(a.freeMsgs) < maxFreeMsgs {
				a.freeMsgs = append(a.freeMsgs, msgs)
			}
			a.stats.emptyTxns++
			a.release(t)
			continue
		}
		byOrder := func(x, y outMsg) int { return cmp.Compare(x.ev.totalOrder, y.ev.totalOrder) }
		if !slices.IsSortedFunc(msgs, byOrder) {
			slices.SortStableFunc(msgs, byOrder)
		}
		for i := range msgs {
			msgs[i].sourceOffset, msgs[i].end = sourceOffset(t.endOffset, i), i == len(msgs)-1
		}
		em := &emission{txn: t, msgs: msgs, events: t.events}
		t.status = txnEmitted
		a.buffered -= t.bytes
		t.events, t.keys = nil, smallMap[eventKey, struct{}]{}
		a.emitted = append(a.emitted, t)
		a.stats.txnsEmitted++
		a.stats.eventsEmitted += int64(len(msgs))
		return em
	}
	return nil
}
