// This file holds the assembler's state types: a source transaction being
// assembled, its buffered events, the side rows and each partition's queue.

package debezium_txn

import (
	"time"
)

// txnStatus is where a transaction is.
type txnStatus uint8

const (
	txnOpen txnStatus = iota
	txnEmitted
	txnCommitted
)

// txnEvent is one buffered event of a transaction.
type txnEvent struct {
	ev     event
	rec    recMeta
	topic  string
	size   int64
	loaded bool // not a truncate or a message event
}

// recMeta is the Kafka coordinates of a record, for the message metadata.
// The key is a copy: a fetched record's bytes share the fetch's buffer,
// which a buffered event must not keep alive.
type recMeta struct {
	tp     tp
	offset int64
	key    string
	ts     time.Time
}

// txnState is one source transaction being assembled.
type txnState struct {
	id        string
	status    txnStatus
	hasEnd    bool
	endOffset int64
	endAt     time.Time
	firstAt   time.Time
	// counts holds per topic the events read and, from the END on, the
	// events it counts for the collections mapped there (consumed topics
	// only).
	counts smallMap[string, topicCount]
	// colls are the END's collections, for messages.
	colls  []collectionCount
	events []*txnEvent
	// keys holds the (topic and collection: an index of ranges,
	// data_collection_order) of the events read, to drop re-sent ones.
	keys smallMap[eventKey, struct{}]
	// first holds per partition the offset of its first event.
	first smallMap[tp, int64]
	// ranges summarises the data_collection_orders seen per topic and
	// collection; kept after emission to prove later events re-sends.
	ranges dcoRanges
	bytes  int64
	// whole: StarRocks holds the whole transaction already (exactly_once
	// progress): every later event of it is a re-read.
	whole bool
	// err makes the transaction unemittable: counts above the END's, a
	// truncate under on_truncate: error, too many events.
	err error
}

// topicCount is what a transaction has of one topic.
type topicCount struct {
	// seen counts the events read.
	seen int64
	// want is the events the END counts, when counted is set: the END
	// maps a collection to the topic (its count may be 0).
	want    int64
	counted bool
}

// eventKey identifies an event in its transaction: the index of its
// topic and collection in ranges, and its data_collection_order.
type eventKey struct {
	r   int
	dco int64
}

// seen returns the events read of topic.
func (t *txnState) seen(topic string) int64 {
	if c := t.counts.get(topic); c != nil {
		return c.seen
	}
	return 0
}

// want returns the events the END counts on topic (0 before the END).
func (t *txnState) want(topic string) int64 {
	if c := t.counts.get(topic); c != nil {
		return c.want
	}
	return 0
}

// covered reports that every consumed topic holds at least the END's count.
func (t *txnState) covered() bool {
	for _, c := range t.counts.entries {
		if c.val.counted && c.val.seen < c.val.want {
			return false
		}
	}
	return true
}

func (t *txnState) complete() bool {
	if !t.hasEnd {
		return false
	}
	for _, c := range t.counts.entries {
		if c.val.counted && c.val.seen != c.val.want {
			return false
		}
	}
	return true
}

// namesOf returns the END's collections that map to topic.
func (a *assembler) namesOf(t *txnState, topic string) []string {
	var out []string
	for _, c := range t.colls {
		if a.topicOfCollection(c.name) == topic {
			out = append(out, c.name)
		}
	}
	return out
}

// sideRow is a snapshot or untransacted row: a one-row transaction of its
// side partition (ARCHITECTURE.md §13.4).
type sideRow struct {
	ev       event
	rec      recMeta
	size     int64
	gate     bool // of an initial or blocking snapshot
	emitted  bool
	released bool // committed or skipped
}

// heldEvent is an offset of a partition held by a transaction.
type heldEvent struct {
	offset int64
	txn    *txnState
}

// partState is what the assembler keeps per data partition.
type partState struct {
	tp      tp
	next    int64 // offset after the last record fed, -1 before the first
	started bool
	// txnEvents and sides hold, in offset order, the offsets not yet
	// released; released ones are popped from the front lazily.
	txnEvents []heldEvent
	sides     []*sideRow
	pending   int // sides not yet emitted
	// snapOpen: an initial or blocking snapshot of this partition is not
	// over (ARCHITECTURE.md §13.5); lastGate is the offset of its last
	// gating snapshot row.
	snapOpen bool
	lastGate int64
	// failed stops the partition at failedAt: nothing there or after is
	// processed or committed.
	failed   error
	failedAt int64
}

func (p *partState) headTxnEvent() (heldEvent, bool) {
	for len(p.txnEvents) > 0 {
		h := p.txnEvents[0]
		if h.txn.status != txnCommitted {
			return h, true
		}
		p.txnEvents[0] = heldEvent{}
		p.txnEvents = p.txnEvents[1:]
	}
	return heldEvent{}, false
}

func (p *partState) headSide() (*sideRow, bool) {
	for len(p.sides) > 0 {
		s := p.sides[0]
		if !s.released {
			return s, true
		}
		p.sides[0] = nil
		p.sides = p.sides[1:]
	}
	return nil, false
}
