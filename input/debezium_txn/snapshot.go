package debezium_txn

// Home of G59 (ARCHITECTURE.md §11.3): Debezium: no streamed transaction over a partial
// snapshot. Main test: TestSnapshotThenStreaming.

import "strings"

// The snapshot gate (ARCHITECTURE.md §13.5): a streamed transaction never
// becomes visible on top of a partial initial or blocking snapshot.
//
// A partition's snapshot opens at its first gating snapshot row and closes at
// its first non-snapshot record. A transaction T that no event places before
// the snapshot waits while any partition's snapshot is open, unless that
// partition has been read up to end offsets listed after T's END was read:
// Debezium streams nothing during such a snapshot, so every snapshot row
// that precedes T was in Kafka when T's END was, and the listing covers it.
// The `snapshot: last` row closes every partition for good once it is read
// up to the end offsets listed after that row. Once nothing is open, T still
// waits until every snapshot row read is committed.

// endsListing is the data partitions' end offsets, listed after every END
// below `after` (the transaction topic position when it was asked for) was
// read; afterLast marks a listing asked for after a `snapshot: last` row.
type endsListing struct {
	after     int64
	afterLast bool
	ends      map[tp]int64
}

// wantEnds reports that the input should list the data partitions' end
// offsets and hand them to endsListed with the returned position and flag:
// after a `last` row, or when the oldest complete transaction waits for an
// open snapshot that no listing taken after its END covers yet.
func (a *assembler) wantEnds() (after int64, afterLast, ok bool) {
	if a.listingInFlight {
		return 0, false, false
	}
	want := a.lastPending
	if !want {
		if t := a.headComplete(); t != nil && !a.beforeSnapshot(t) && a.snapshotOpen() &&
			(a.listing == nil || a.listing.after <= t.endOffset) {
			want = true
		}
	}
	if !want {
		return 0, false, false
	}
	a.listingInFlight = true
	return a.txnNext, a.lastPending, true
}

// endsListed takes a listing asked for by wantEnds; ends is nil when the
// listing failed (it is asked for again).
func (a *assembler) endsListed(after int64, afterLast bool, ends map[tp]int64) {
	a.listingInFlight = false
	if ends == nil {
		return
	}
	a.listing = &endsListing{after: after, afterLast: afterLast, ends: ends}
	if afterLast {
		a.lastPending = false
		a.snapEnds = ends
		for _, p := range a.parts {
			a.checkSnapEnd(p)
		}
	}
}

// checkSnapEnd closes a partition's snapshot for good once it is read up to
// the end offsets listed after the snapshot's last row, when that listing
// covers the partition's last gating row.
func (a *assembler) checkSnapEnd(p *partState) {
	if !p.snapOpen || a.snapEnds == nil {
		return
	}
	if end, ok := a.snapEnds[p.tp]; ok && p.next >= end && p.lastGate < end {
		p.snapOpen = false
	}
}

// snapshotOpen reports whether some partition's snapshot is not over.
func (a *assembler) snapshotOpen() bool {
	for _, p := range a.parts {
		if p.snapOpen {
			return true
		}
	}
	return false
}

// openFor lists the partitions whose open snapshot still holds t.
func (a *assembler) openFor(t *txnState) []string {
	var names []string
	for _, p := range a.openParts(t) {
		names = append(names, p.tp.String())
	}
	return names
}

// openParts returns the partitions whose open snapshot still holds t: they
// must be read to a listed end offset or to a streamed event.
func (a *assembler) openParts(t *txnState) []*partState {
	var out []*partState
	for _, p := range a.sortedParts() {
		if !p.snapOpen {
			continue
		}
		if l := a.listing; l != nil && l.after > t.endOffset {
			if end, ok := l.ends[p.tp]; ok && p.next >= end {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// beforeSnapshot reports a transaction that precedes a snapshot and must
// not wait for it: one with an event before a snapshot row of the same
// partition, or committed at the source before a transaction that has one
// (a later END). Debezium streams nothing during such a snapshot, so the
// later transaction, and t before it, were streamed before it began. Without
// the second case t would wait for that snapshot row's commit, which waits
// for the later transaction's (rule 1 of ARCHITECTURE.md §13.5), which
// waits for t: nothing would be emitted again.
func (a *assembler) beforeSnapshot(t *txnState) bool {
	for _, f := range t.first.entries {
		if p := a.parts[f.key]; p != nil && f.val < p.lastGate {
			return true
		}
	}
	if !t.hasEnd {
		return false
	}
	for _, p := range a.sortedParts() {
		for _, h := range p.txnEvents {
			if h.offset >= p.lastGate {
				break
			}
			if x := h.txn; x.status != txnCommitted && x.hasEnd && x.endOffset > t.endOffset {
				return true
			}
		}
	}
	return false
}

// snapshotHold says why the snapshot gate holds t ("" when it does not).
func (a *assembler) snapshotHold(t *txnState) string {
	if a.beforeSnapshot(t) {
		return ""
	}
	if open := a.openFor(t); len(open) > 0 {
		if len(open) > 4 {
			open = append(open[:4], "…")
		}
		return "a snapshot is not over (" + strings.Join(open, ", ") + ")"
	}
	if a.gateUncommitted > 0 {
		return "snapshot rows are not committed yet (" + itoa(int64(a.gateUncommitted)) + ")"
	}
	return ""
}

// headComplete returns the oldest unemitted transaction by END order when
// it is complete, else nil.
func (a *assembler) headComplete() *txnState {
	for _, t := range a.ends {
		if t.status != txnOpen {
			continue
		}
		if t.err == nil && t.complete() {
			return t
		}
		return nil
	}
	return nil
}
