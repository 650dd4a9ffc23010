// This file holds the assembler's side of the buffer bound (ARCHITECTURE.md
// §13.8): when it holds, and what must still be read while it does.

package debezium_txn

// boundSlackShare sets how far below max_buffered_bytes the buffer must
// fall, once at the bound, before everything is read again: half of it.
const boundSlackShare = 2

// atBound reports whether the bound holds: from max_buffered_bytes on, and
// until the buffer has fallen to half of it. Every time the bound is
// reached, the partitions paused lose the fetch franz-go holds or has in
// flight for them (it throws paused partitions' fetched data away, and
// it is fetched again on resume): resuming every partition as soon as one
// transaction is emitted would pause most of them again at the next fetch,
// and with an eighth of slack a 160 000-transaction backlog still threw
// away two fetched batches of every five (docs/benchmark.md). Half makes
// those pauses a quarter as frequent for the same memory bound.
func (a *assembler) atBound() bool {
	limit := a.cfg.maxBufferedBytes
	switch {
	case limit <= 0:
		a.full = false
	case a.buffered >= limit:
		if !a.full {
			a.stats.boundHits++
		}
		a.full = true
	case a.buffered < limit-limit/boundSlackShare:
		a.full = false
	}
	return a.full
}

// readSet is what stays read at the bound.
type readSet struct {
	parts    map[tp]bool
	txnTopic bool
}

// mustRead returns what stays read at the bound for the oldest transaction
// by END order (the head) to be emitted (ARCHITECTURE.md §13.8): the
// partitions a gate holding it waits for, and every partition of a topic it
// still misses events of, unless that partition has already delivered an
// event of a later transaction — Kafka keeps a partition's order and
// Debezium writes in commit order, so the head has nothing more there. The
// transaction topic is read only while no END is known for the buffered
// events: more END events cannot complete the head.
func (a *assembler) mustRead() readSet {
	var head *txnState
	for _, t := range a.ends {
		if t.status == txnOpen {
			head = t
			break
		}
	}
	if head == nil {
		return readSet{txnTopic: true}
	}
	rs := readSet{parts: map[tp]bool{}}
	for _, p := range a.sortedParts() {
		if a.assigned[p.tp] && !p.started {
			rs.parts[p.tp] = true // start gate
		}
	}
	if !a.beforeSnapshot(head) {
		for _, p := range a.openParts(head) {
			rs.parts[p.tp] = true // snapshot gate
		}
	}
	if head.err != nil {
		return rs
	}
	for _, p := range a.sortedParts() {
		if p.failed == nil && head.seen(p.tp.topic) < head.want(p.tp.topic) && !a.pastHead(p, head) {
			rs.parts[p.tp] = true
		}
	}
	return rs
}

// pastHead reports that a partition's latest transaction event belongs to
// a transaction after head in commit order.
func (a *assembler) pastHead(p *partState, head *txnState) bool {
	n := len(p.txnEvents)
	if n == 0 {
		return false
	}
	x := p.txnEvents[n-1].txn
	return x != head && x.status == txnOpen && (!x.hasEnd || x.endOffset > head.endOffset)
}
