package debezium_txn

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// positionBits is how many low bits of starrocks_source_offset hold an
// event's position in its transaction; the END offset on the transaction
// topic is above them (ARCHITECTURE.md §13.4).
const positionBits = 24

// maxTxnEvents is the largest transaction the numbering can hold.
const maxTxnEvents = 1 << positionBits

// sourceOffset numbers the i-th emitted event of the transaction whose END
// is at endOffset.
func sourceOffset(endOffset int64, i int) int64 { return endOffset<<positionBits | int64(i) }

// endOffsetOf maps a published committed-through source offset back to the
// END offset of its transaction.
func endOffsetOf(source int64) int64 { return source >> positionBits }

// tp names a Kafka topic partition.
type tp struct {
	topic string
	part  int32
}

func (t tp) String() string { return t.topic + "/" + strconv.Itoa(int(t.part)) }

// What the assembler does with events that carry no transaction block and
// with truncates.
const (
	untransactedError     = "error"
	untransactedSingleRow = "single_row"
	truncateError         = "error"
	truncateSkip          = "skip"
)

// assemblerConfig is what the pure assembler needs to know.
type assemblerConfig struct {
	// partition is the starrocks_partition of every transaction event.
	partition string
	// txnTopic is the transaction topic.
	txnTopic string
	// topicOf maps a Debezium data collection to its topic.
	topicOf func(collection string) string
	// mapped reports whether some collection can map to a topic (nil:
	// every topic can).
	mapped func(topic string) bool
	// consumed reports whether the input reads a topic.
	consumed func(topic string) bool
	// maxBufferedBytes bounds buffered, unemitted events.
	maxBufferedBytes int64
	// missingTimeout is how long a transaction may miss events (or be held)
	// before it is reported.
	missingTimeout time.Duration
	// resendWindow is how many completed transaction ids are remembered.
	resendWindow int
	// skip lists the transactions the operator gave up (skip_transactions).
	skip         map[string]bool
	untransacted string
	truncate     string
	valueWriter  valueWriter
}

// assemblerStats counts what the assembler did, for the metrics.
type assemblerStats struct {
	txnsEmitted, eventsEmitted           int64
	snapshotRows, untransactedRows       int64
	duplicates, resentSkipped, tombstone int64
	progressSkipped, truncatesSkipped    int64
	emptyTxns, operatorSkipped           int64
	// boundHits counts the times the buffer reached max_buffered_bytes.
	boundHits int64
}

// assembler assembles Debezium source transactions across the data
// partitions and emits them whole in END order (ARCHITECTURE.md §13). It is
// pure — no clocks, no Kafka — and not safe for concurrent use.
type assembler struct {
	cfg assemblerConfig
	dec *decoder
	// freeMsgs are row slices of emissions whose messages are made
	// (emit.go), for the next emissions.
	freeMsgs [][]outMsg
	parts    map[tp]*partState
	// sorted is parts in topic, partition order (rebuilt when a partition
	// is added).
	sorted []*partState
	// assigned lists the data partitions that must have started before a
	// transaction is emitted (the start gate).
	assigned map[tp]bool
	txns     map[string]*txnState
	// ends holds, in END order, the transactions whose END was read and
	// that are not emitted yet.
	ends []*txnState
	// emitted holds, in END order, emitted transactions not committed.
	emitted []*txnState
	// endHeld holds the END offsets of transactions not committed, in
	// order: the transaction topic's floor is the first.
	endHeld []heldEvent
	txnNext int64
	txnHWM  int64
	// txnFailed stops the transaction topic at txnFailedAt: an unreadable
	// metadata record leaves every later boundary unknown.
	txnFailed   error
	txnFailedAt int64
	// done remembers completed transactions (a ring of resendWindow ids).
	done     map[string]doneTxn
	doneRing []string
	doneAt   int
	// progressEnd: transactions whose END is at or below it are already in
	// StarRocks (exactly_once); sideProgress the same per side partition.
	progressEnd  int64
	sideProgress map[tp]int64
	// skipped holds transactions skipped by the progress whose counted
	// events are not all read yet: their events are recognised however
	// many transactions were skipped (the done ring may forget them first).
	skipped map[string]*txnState
	// stopErr stops every emission: an event on a topic its collection
	// does not map to, or of a transaction loaded without it, means END
	// counts cannot be trusted (ARCHITECTURE.md §13.3).
	stopErr error
	// notes are errors for the input to log (skipped transactions).
	notes []string
	// topicCache caches the topic of an event's source collection,
	// collTopics that of a collection an END names.
	topicCache map[sourceKey]string
	collTopics map[string]string
	// Snapshot gate state (snapshot.go).
	gateUncommitted int
	lastPending     bool
	snapEnds        map[tp]int64
	listing         *endsListing
	listingInFlight bool
	buffered        int64
	// full: the buffer bound holds (bound.go).
	full bool
	// slab holds the txnEvents newTxnEvent hands out next, freeEvents
	// those of emitted transactions whose messages are made (emit.go:
	// recycleMsgs), handed out first.
	slab       []txnEvent
	freeEvents []*txnEvent
	stats      assemblerStats
}

func newAssembler(cfg assemblerConfig) *assembler {
	if cfg.resendWindow <= 0 {
		cfg.resendWindow = 1
	}
	return &assembler{
		cfg:          cfg,
		dec:          newDecoder(cfg.valueWriter),
		parts:        map[tp]*partState{},
		assigned:     map[tp]bool{},
		txns:         map[string]*txnState{},
		done:         map[string]doneTxn{},
		skipped:      map[string]*txnState{},
		topicCache:   map[sourceKey]string{},
		collTopics:   map[string]string{},
		doneRing:     make([]string, cfg.resendWindow),
		txnNext:      -1,
		txnHWM:       -1,
		progressEnd:  -1,
		sideProgress: map[tp]int64{},
	}
}

// assign declares a data partition of the assignment. A topic no
// collection maps to stops emission at once: its events would be counted
// by END events on other topics (ARCHITECTURE.md §13.3).
func (a *assembler) assign(t tp) {
	a.assigned[t] = true
	p := a.part(t)
	if a.cfg.mapped != nil && !a.cfg.mapped(t.topic) && p.failed == nil {
		err := fmt.Errorf("topic %s is read (topics) but no collection maps to it: it is not named <topic_prefix>.<collection> and no collection_topics entry names it; a routing SMT renamed it, so set collection_topics to map every collection it carries (as END events name them) to %q; nothing is emitted until then", t.topic, t.topic)
		a.fail(p, -1, err)
		a.stop(err)
	}
}

// stop stops every emission with err (the first one is kept).
func (a *assembler) stop(err error) {
	if a.stopErr == nil {
		a.stopErr = err
	}
}

func (a *assembler) part(t tp) *partState {
	p := a.parts[t]
	if p == nil {
		p = &partState{tp: t, next: -1, lastGate: -1, failedAt: -1}
		a.parts[t] = p
		a.sorted = nil
	}
	return p
}

// markEmpty records that a partition has nothing to read from its start
// position (start gate), or is read up to end (snapshot-last barrier).
func (a *assembler) markEmpty(t tp) {
	a.part(t).started = true
}

// setProgress makes transactions whose END offset is at or below end count
// as committed when they are read (exactly_once: StarRocks holds them).
func (a *assembler) setProgress(end int64) {
	if end > a.progressEnd {
		a.progressEnd = end
	}
}

// setSideProgress does the same for the side rows of a partition.
func (a *assembler) setSideProgress(t tp, offset int64) {
	if cur, ok := a.sideProgress[t]; !ok || offset > cur {
		a.sideProgress[t] = offset
	}
}

// errPartitionStopped is returned for records of a stopped partition.
var errPartitionStopped = errors.New("partition stopped")

// addData feeds one record of a data partition. A returned error stops the
// partition (it names topic, partition and offset); nothing at or after
// the record is processed or committed.
func (a *assembler) addData(rec recMeta, value []byte, now time.Time) error {
	return a.addDecoded(decodeRecord(a.dec, []byte(rec.key), value), rec, now)
}

// decoded is a data record decoded ahead of the assembler (the input
// decodes outside its lock).
type decoded struct {
	tombstone bool
	ev        event
	err       error
	size      int64
}

// decodeRecord decodes one data record's value; its key gives the row's
// primary key.
func decodeRecord(d *decoder, key, value []byte) decoded {
	if isNullValue(value) {
		return decoded{tombstone: true}
	}
	e, err := d.decodeKeyed(key, value)
	return decoded{ev: e, err: err, size: int64(len(value))}
}

// addDecoded feeds one decoded data record (addData).
func (a *assembler) addDecoded(dr decoded, rec recMeta, now time.Time) error {
	p := a.part(rec.tp)
	if p.failed != nil {
		return errPartitionStopped
	}
	if rec.offset < p.next {
		return nil
	}
	p.next = rec.offset + 1
	p.started = true
	if dr.tombstone {
		a.stats.tombstone++
		p.snapOpen = false
		return nil
	}
	e, err, size := dr.ev, dr.err, dr.size
	if err != nil {
		if errors.Is(err, errNotJSON) {
			return a.fail(p, rec.offset, fmt.Errorf("%s offset %d: %w", rec.tp, rec.offset, err))
		}
		return a.fail(p, rec.offset, fmt.Errorf("%s offset %d: %w (the input reads the full Debezium envelope, without the ExtractNewRecordState SMT, and only topics of data change events)", rec.tp, rec.offset, err))
	}
	if !e.hasTxn {
		if e.isSnapshotRow() {
			return a.addSide(p, rec, e, size, e.gatesStreaming())
		}
		if a.cfg.untransacted != untransactedSingleRow {
			return a.fail(p, rec.offset, fmt.Errorf("%s offset %d: a %c event of %s without a transaction block after streaming began: enable provide.transaction.metadata on the connector, or set events_without_transaction: single_row to load such events as one-row transactions", rec.tp, rec.offset, e.op, e.sourceName()))
		}
		p.snapOpen = false
		return a.addSide(p, rec, e, size, false)
	}
	p.snapOpen = false
	if topic := a.topicFor(&e); topic != rec.tp.topic {
		err := fmt.Errorf("%s offset %d: an event of collection %s (transaction %q) was read from topic %s, but END events count that collection on topic %s: a routing SMT renamed the topic; set collection_topics: {%q: %q}; nothing more is emitted, so no transaction is loaded without the collection's events", rec.tp, rec.offset, e.sourceName(), e.txID, rec.tp.topic, topic, e.sourceName(), rec.tp.topic)
		a.stop(err)
		return a.fail(p, rec.offset, err)
	}
	if err := a.addTxnEvent(p, rec, e, size, now); err != nil {
		a.stop(err)
		return a.fail(p, rec.offset, err)
	}
	return nil
}

// sourceKey is an event's source coordinates, for topicCache.
type sourceKey struct{ connector, db, schema, table string }

// topicFor returns the topic an event's source collection maps to.
func (a *assembler) topicFor(e *event) string {
	k := sourceKey{e.connector, e.db, e.schema, e.table}
	if t, ok := a.topicCache[k]; ok {
		return t
	}
	if len(a.topicCache) >= maxPlans {
		clear(a.topicCache)
	}
	t := a.cfg.topicOf(e.sourceName())
	a.topicCache[k] = t
	return t
}

func (a *assembler) fail(p *partState, offset int64, err error) error {
	p.failed, p.failedAt = err, offset
	return err
}

func (a *assembler) addSide(p *partState, rec recMeta, e event, size int64, gate bool) error {
	if gate {
		p.snapOpen = true
		p.lastGate = rec.offset
		if e.snapshot == snapshotLast {
			a.lastPending = true
		}
	}
	a.checkSnapEnd(p)
	if prog, ok := a.sideProgress[rec.tp]; ok && rec.offset <= prog {
		a.stats.progressSkipped++
		return nil
	}
	if e.row == nil {
		if e.op == opTruncate && a.cfg.truncate != truncateSkip {
			return a.fail(p, rec.offset, fmt.Errorf("%s offset %d: a truncate of %s: StarRocks cannot truncate inside a load transaction; truncate the target table by hand and set on_truncate: skip to go on", rec.tp, rec.offset, e.sourceName()))
		}
		if e.op == opTruncate {
			a.stats.truncatesSkipped++
		}
		return nil
	}
	s := &sideRow{ev: e, rec: rec, size: size, gate: gate}
	p.sides = append(p.sides, s)
	p.pending++
	a.buffered += size
	if gate {
		a.gateUncommitted++
	}
	if e.op == opRead {
		a.stats.snapshotRows++
	} else {
		a.stats.untransactedRows++
	}
	return nil
}

// addTxnEvent adds a transaction event. An event of a transaction already
// emitted or completed is dropped only when it is proven a re-send (the
// same collection and data_collection_order was loaded, or StarRocks holds
// the transaction whole); otherwise the transaction was loaded without it
// and the returned error stops emission.
func (a *assembler) addTxnEvent(p *partState, rec recMeta, e event, size int64, now time.Time) error {
	rangeKey := collKeyOf(rec.tp.topic, &e)
	if s := a.skipped[e.txID]; s != nil {
		a.stats.duplicates++
		a.countSkipped(s, rangeKey, e.dco)
		return nil
	}
	if d, ok := a.done[e.txID]; ok {
		if !d.resent(rangeKey, e.dco) {
			return a.loadedWithout(e, rec)
		}
		a.stats.duplicates++
		return nil
	}
	t := a.txns[e.txID]
	if t == nil {
		t = &txnState{id: e.txID, firstAt: now}
		a.txns[e.txID] = t
	}
	if t.status != txnOpen {
		if !(doneTxn{whole: t.whole, ranges: t.ranges}).resent(rangeKey, e.dco) {
			return a.loadedWithout(e, rec)
		}
		a.stats.duplicates++
		return nil
	}
	if t.events == nil {
		// Room for a usual transaction's events, partitions and topics,
		// allocated once.
		t.events = make([]*txnEvent, 0, txnEventsReserved)
		t.keys.reserve(txnEventsReserved)
		t.first.reserve(txnPartsReserved)
		t.counts.reserve(txnTopicsReserved)
		t.ranges = make(dcoRanges, 0, txnTopicsReserved)
	}
	ri := t.ranges.index(rangeKey)
	if ri < 0 {
		t.ranges = append(t.ranges, dcoRange{key: rangeKey})
		ri = len(t.ranges) - 1
	}
	if _, added := t.keys.put(eventKey{r: ri, dco: e.dco}); !added {
		a.stats.duplicates++
		return nil
	}
	t.ranges[ri].add(e.dco)
	c, _ := t.counts.put(rec.tp.topic)
	c.seen++
	if t.hasEnd && c.seen > c.want && t.err == nil {
		t.err = a.overcount(t, rec.tp.topic)
	}
	loaded := e.op != opTruncate && e.op != opMessage
	if e.op == opTruncate {
		if a.cfg.truncate == truncateSkip {
			a.stats.truncatesSkipped++
		} else if t.err == nil {
			t.err = fmt.Errorf("transaction %q truncates %s (%s offset %d): StarRocks cannot truncate inside a load transaction; truncate the target table by hand and set on_truncate: skip to go on", t.id, e.sourceName(), rec.tp, rec.offset)
		}
	}
	if !loaded {
		e.row = nil
	}
	te := a.newTxnEvent()
	*te = txnEvent{ev: e, rec: rec, topic: rec.tp.topic, size: size, loaded: loaded}
	t.events = append(t.events, te)
	if f, added := t.first.put(rec.tp); added {
		*f = rec.offset
	}
	t.bytes += size
	a.buffered += size
	p.txnEvents = append(p.txnEvents, heldEvent{offset: rec.offset, txn: t})
	return nil
}

// The events, partitions and topics (and collections) a transaction's
// state has room for before it grows (the first event allocates it).
const (
	txnEventsReserved = 8
	txnPartsReserved  = 4
	txnTopicsReserved = 2
)

// eventSlab is how many buffered events newTxnEvent allocates at once.
const eventSlab = 32

// newTxnEvent returns a zero txnEvent: one an emission gave back
// (recycleMsgs), else one from the assembler's slab, one allocation per
// eventSlab events (a slab stays alive while one of its events is; events
// are released roughly in the order they were read).
func (a *assembler) newTxnEvent() *txnEvent {
	if n := len(a.freeEvents); n > 0 {
		e := a.freeEvents[n-1]
		a.freeEvents[n-1] = nil
		a.freeEvents = a.freeEvents[:n-1]
		return e
	}
	if len(a.slab) == 0 {
		a.slab = make([]txnEvent, eventSlab)
	}
	e := &a.slab[0]
	a.slab = a.slab[1:]
	return e
}

// release marks a transaction committed: its offsets stop holding the
// floors and its id is remembered.
func (a *assembler) release(t *txnState) {
	if t.status == txnCommitted {
		return
	}
	if t.status == txnOpen {
		a.buffered -= t.bytes
	}
	t.status = txnCommitted
	t.events, t.keys = nil, smallMap[eventKey, struct{}]{}
	delete(a.txns, t.id)
	a.remember(t.id, doneTxn{whole: t.whole, ranges: slices.Clip(t.ranges)})
}

// releaseSide marks a side row committed.
func (a *assembler) releaseSide(s *sideRow) {
	if s.released {
		return
	}
	if !s.emitted {
		a.buffered -= s.size
		a.part(s.rec.tp).pending--
	}
	s.released = true
	if s.gate {
		a.gateUncommitted--
	}
}
