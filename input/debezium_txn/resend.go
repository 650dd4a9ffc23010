// This file holds the re-send proof: the data_collection_order ranges seen
// per transaction, the done ring of completed transactions and the
// accounting of transactions skipped whole.

package debezium_txn

// Home of G60 (ARCHITECTURE.md §11.3): Debezium: re-sent events and transactions are loaded
// once. Main test: TestResentEventsAndTransactions.

import (
	"fmt"
)

// collKey is a collection in a topic: the topic an event was read from
// and its source coordinates.
type collKey struct {
	topic, db, schema, table string
}

// collKeyOf is the collKey of an event read from topic.
func collKeyOf(topic string, e *event) collKey {
	return collKey{topic: topic, db: e.db, schema: e.schema, table: e.table}
}

// dcoRange is the data_collection_orders seen of one collection in one
// topic: how many distinct ones, the lowest and the highest.
type dcoRange struct {
	key         collKey
	n, min, max int64
}

// dcoRanges holds a transaction's ranges; a slice, as a transaction touches
// few collections and the done ring keeps resend_window of them.
type dcoRanges []dcoRange

// index returns the index of key's range, -1 when there is none.
func (rs dcoRanges) index(key collKey) int {
	for i := range rs {
		if rs[i].key == key {
			return i
		}
	}
	return -1
}

// find returns the range of key, nil when there is none.
func (rs dcoRanges) find(key collKey) *dcoRange {
	if i := rs.index(key); i >= 0 {
		return &rs[i]
	}
	return nil
}

func (r *dcoRange) add(dco int64) {
	if r.n == 0 || dco < r.min {
		r.min = dco
	}
	if r.n == 0 || dco > r.max {
		r.max = dco
	}
	r.n++
}

// has proves that dco was seen: the distinct orders seen fill [min, max].
func (r *dcoRange) has(dco int64) bool {
	return r != nil && r.n == r.max-r.min+1 && dco >= r.min && dco <= r.max
}

// doneTxn is what is remembered of a completed transaction: enough to tell
// a re-sent event of it from one it was loaded without.
type doneTxn struct {
	whole  bool
	ranges dcoRanges
}

// resent reports whether an event (its collection in its topic, dco) of
// the transaction is proven a re-send.
func (d doneTxn) resent(rangeKey collKey, dco int64) bool {
	return d.whole || d.ranges.find(rangeKey).has(dco)
}

// remember adds a completed transaction to the resend memory.
func (a *assembler) remember(id string, d doneTxn) {
	if _, ok := a.done[id]; ok {
		a.done[id] = d
		return
	}
	if old := a.doneRing[a.doneAt]; old != "" {
		delete(a.done, old)
	}
	a.doneRing[a.doneAt] = id
	a.doneAt = (a.doneAt + 1) % len(a.doneRing)
	a.done[id] = d
}

// skipWhole releases a transaction none of whose events is to be loaded
// (StarRocks holds it, or skip_transactions lists it). Until its counted
// events are read it stays known as skipped: the done ring can forget it
// before they arrive, and they would then wait for an END forever.
func (a *assembler) skipWhole(t *txnState) {
	t.whole = true
	keys := t.keys
	a.release(t)
	if !t.covered() {
		t.keys = keys
		a.skipped[t.id] = t
	}
}

// loadedWithout is the error for an event of a transaction that was
// emitted or completed without it.
func (a *assembler) loadedWithout(e event, rec recMeta) error {
	return fmt.Errorf("%s offset %d: an event of transaction %q (collection %s, data_collection_order %d) arrived after the transaction was emitted without it, and it is not a re-send of an event loaded: its END counted no such event on topic %s (a collection_topics entry or a topic in topics is missing); nothing more is emitted", rec.tp, rec.offset, e.txID, e.sourceName(), e.dco, rec.tp.topic)
}

// countSkipped counts a re-read event of a transaction skipped by the
// progress; once every counted event was read, the transaction is only
// remembered in the done ring.
func (a *assembler) countSkipped(s *txnState, key collKey, dco int64) {
	r := s.ranges.index(key)
	if r < 0 {
		// The range only names the event for the dedup: a skipped
		// transaction is remembered whole, its ranges prove nothing.
		s.ranges = append(s.ranges, dcoRange{key: key})
		r = len(s.ranges) - 1
	}
	if _, added := s.keys.put(eventKey{r: r, dco: dco}); !added {
		return
	}
	c, _ := s.counts.put(key.topic)
	c.seen++
	if s.covered() {
		s.keys = smallMap[eventKey, struct{}]{}
		delete(a.skipped, s.id)
	}
}
