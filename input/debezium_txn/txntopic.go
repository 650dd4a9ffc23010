// This file feeds the assembler from the transaction topic: BEGIN and END
// records, control records and the topic's high watermark.

package debezium_txn

import (
	"fmt"
	"time"
)

// addTxnMeta feeds one record of the transaction topic.
func (a *assembler) addTxnMeta(offset int64, value []byte, now time.Time) error {
	if a.txnFailed != nil {
		return errPartitionStopped
	}
	if offset < a.txnNext {
		return nil
	}
	a.txnNext = offset + 1
	if isNullValue(value) {
		return nil
	}
	m, err := a.dec.decodeTxnMeta(value)
	if err != nil {
		a.txnFailed = fmt.Errorf("%s offset %d: %w (is transaction_topic the connector's transaction topic?)", tp{a.cfg.txnTopic, 0}, offset, err)
		a.txnFailedAt = offset
		return a.txnFailed
	}
	if !m.end {
		return nil
	}
	if _, ok := a.done[m.id]; ok {
		// Debezium re-sent a transaction that already completed here.
		a.stats.resentSkipped++
		return nil
	}
	t := a.txns[m.id]
	if t == nil {
		t = &txnState{id: m.id, firstAt: now}
		a.txns[m.id] = t
	}
	if t.hasEnd {
		// A second END of the same id (a re-send): the first decides.
		a.stats.duplicates++
		return nil
	}
	t.hasEnd, t.endOffset, t.endAt = true, offset, now
	// The END counts toward max_buffered_bytes like an event: it is held
	// until the transaction is emitted, and the transaction topic may be
	// read far ahead of the data topics (ARCHITECTURE.md §13.8).
	t.bytes += int64(len(value))
	a.buffered += int64(len(value))
	t.colls = m.collections
	for _, c := range m.collections {
		topic := a.topicOfCollection(c.name)
		if !a.cfg.consumed(topic) {
			continue
		}
		tc, _ := t.counts.put(topic)
		tc.want += c.count
		tc.counted = true
	}
	var total int64
	for _, c := range t.counts.entries {
		if c.val.seen > c.val.want && t.err == nil {
			t.err = a.overcount(t, c.key)
		}
		total += c.val.want
	}
	if total >= maxTxnEvents && t.err == nil {
		t.err = fmt.Errorf("transaction %q has %d events in the consumed topics, more than the %d one transaction can hold", t.id, total, maxTxnEvents-1)
	}
	if offset <= a.progressEnd {
		// exactly_once: StarRocks already holds it. Until its counted
		// events are read it stays known as skipped: the done ring can
		// forget it before its events, re-read from the data floors,
		// arrive, and they would then wait for an END forever.
		a.stats.progressSkipped++
		a.skipWhole(t)
		return nil
	}
	a.endHeld = append(a.endHeld, heldEvent{offset: offset, txn: t})
	a.ends = append(a.ends, t)
	return nil
}

func (a *assembler) overcount(t *txnState, topic string) error {
	return fmt.Errorf("transaction %q: topic %s holds %d events of it, but its END counts %d for the collections mapped to that topic (%v): a collection_topics entry is missing or wrong", t.id, topic, t.seen(topic), t.want(topic), a.namesOf(t, topic))
}

// topicOfCollection is cfg.topicOf, cached: END events name the same
// collections again and again.
func (a *assembler) topicOfCollection(c string) string {
	if t, ok := a.collTopics[c]; ok {
		return t
	}
	if len(a.collTopics) >= maxPlans {
		clear(a.collTopics)
	}
	t := a.cfg.topicOf(c)
	a.collTopics[c] = t
	return t
}

// controlRecord advances a partition past a Kafka transaction marker.
func (a *assembler) controlRecord(t tp, offset int64) {
	if t.topic == a.cfg.txnTopic {
		if offset >= a.txnNext {
			a.txnNext = offset + 1
		}
		return
	}
	p := a.part(t)
	if p.failed != nil || offset < p.next {
		return
	}
	p.next = offset + 1
	p.started = true
	a.checkSnapEnd(p)
}

// txnStart records where reading the transaction topic starts.
func (a *assembler) txnStart(offset int64) {
	if a.txnNext < 0 {
		a.txnNext = offset
	}
}

// txnHighWatermark records the transaction topic's high watermark.
func (a *assembler) txnHighWatermark(hwm int64) {
	if hwm > a.txnHWM {
		a.txnHWM = hwm
	}
}
