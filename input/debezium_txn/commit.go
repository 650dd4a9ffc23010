package debezium_txn

// Home of G58 (ARCHITECTURE.md §11.3): Debezium: offsets never pass what StarRocks has not
// committed. Main test: TestFloors.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// committed records a committed-through source offset the output published
// (ARCHITECTURE.md §4.6) for the database partition or for a side partition.
func (a *assembler) committed(partition string, offset int64) {
	if partition == a.cfg.partition {
		end := endOffsetOf(offset)
		for len(a.emitted) > 0 && a.emitted[0].endOffset <= end {
			a.release(a.emitted[0])
			a.emitted[0] = nil
			a.emitted = a.emitted[1:]
		}
		return
	}
	i := strings.LastIndexByte(partition, '/')
	if i < 0 {
		return
	}
	n, err := strconv.ParseInt(partition[i+1:], 10, 32)
	if err != nil {
		return
	}
	p := a.parts[tp{partition[:i], int32(n)}]
	if p == nil {
		return
	}
	for _, s := range p.sides {
		if s.rec.offset > offset {
			break
		}
		if s.emitted {
			a.releaseSide(s)
		}
	}
	p.headSide()
}

// acked records that an emission was acknowledged. Used when no output
// publishes committed-through offsets: the acknowledgement is then all
// there is.
func (a *assembler) acked(em *emission) {
	if em.txn != nil {
		a.release(em.txn)
		return
	}
	for _, s := range em.sides {
		a.releaseSide(s)
	}
}

// floors returns the offsets to commit: per data partition the lowest
// offset still held by something StarRocks has not committed (or the next
// offset to read), and for the transaction topic the lowest END offset of a
// transaction not committed (ARCHITECTURE.md §13.6). A partition with
// nothing read has no floor.
func (a *assembler) floors() (data map[tp]int64, txn int64) {
	data = map[tp]int64{}
	for t, p := range a.parts {
		f := p.next
		if h, ok := p.headTxnEvent(); ok && (f < 0 || h.offset < f) {
			f = h.offset
		}
		if s, ok := p.headSide(); ok && (f < 0 || s.rec.offset < f) {
			f = s.rec.offset
		}
		if p.failed != nil && (f < 0 || p.failedAt < f) {
			f = p.failedAt
		}
		if f >= 0 {
			data[t] = f
		}
	}
	for len(a.endHeld) > 0 && a.endHeld[0].txn.status == txnCommitted {
		a.endHeld[0] = heldEvent{}
		a.endHeld = a.endHeld[1:]
	}
	txn = a.txnNext
	if len(a.endHeld) > 0 {
		txn = a.endHeld[0].offset
	}
	if a.txnFailed != nil && a.txnFailedAt < txn {
		txn = a.txnFailedAt
	}
	return data, txn
}

// problem is one condition to report.
type problem struct {
	// key identifies the condition for rate limiting.
	key string
	msg string
	// missing marks a transaction that lacks events (counted by the
	// incomplete-reports metric).
	missing bool
}

// maxReported bounds how many transactions one report names.
const maxReported = 3

// problems lists what holds the stream now: stopped partitions,
// transactions with an error, transactions that miss events or are held for
// longer than missing_events_timeout, events without an END, and the
// buffer bound.
func (a *assembler) problems(now time.Time) []problem {
	var out []problem
	if a.stopErr != nil {
		out = append(out, problem{key: "stopped", msg: fmt.Sprintf("nothing is emitted any more: %v; fix the configuration and restart (the committed offsets re-read everything not loaded)", a.stopErr)})
	}
	if a.txnFailed != nil {
		out = append(out, problem{key: "failed:" + a.cfg.txnTopic, msg: fmt.Sprintf("the transaction topic is stopped at offset %d, no later transaction is emitted: %v", a.txnFailedAt, a.txnFailed)})
	}
	for _, p := range a.sortedParts() {
		if p.failed != nil {
			at := "at offset " + itoa(p.failedAt)
			if p.failedAt < 0 {
				at = "before its first record"
			}
			out = append(out, problem{key: "failed:" + p.tp.String(), msg: fmt.Sprintf("partition %s is stopped %s, nothing there or after is emitted or committed: %v", p.tp, at, p.failed)})
		}
	}
	reported := 0
	for i, t := range a.ends {
		if t.status != txnOpen || reported >= maxReported {
			continue
		}
		if t.err != nil {
			out = append(out, problem{key: "err:" + t.id, msg: fmt.Sprintf("transaction %q (END at %s offset %d) is held and never loaded partly: %v", t.id, a.cfg.txnTopic, t.endOffset, t.err)})
			reported++
			continue
		}
		if now.Sub(t.endAt) < a.cfg.missingTimeout {
			continue
		}
		if !t.complete() {
			out = append(out, problem{key: "missing:" + t.id, missing: true, msg: fmt.Sprintf("transaction %q (END at %s offset %d, %s ago) still misses events, so it and every later transaction wait (never loaded partly): %s",
				t.id, a.cfg.txnTopic, t.endOffset, now.Sub(t.endAt).Round(time.Millisecond), a.describeCounts(t))})
			reported++
			continue
		}
		if i == 0 {
			if why := a.holdReason(t); why != "" {
				out = append(out, problem{key: "held:" + t.id, msg: fmt.Sprintf("transaction %q (END at %s offset %d) is complete but held for %s: %s", t.id, a.cfg.txnTopic, t.endOffset, now.Sub(t.endAt).Round(time.Millisecond), why)})
				reported++
			}
		}
	}
	if a.txnHWM >= 0 && a.txnNext >= a.txnHWM {
		var orphans []*txnState
		for _, t := range a.txns {
			if t.status == txnOpen && !t.hasEnd && now.Sub(t.firstAt) >= a.cfg.missingTimeout {
				orphans = append(orphans, t)
			}
		}
		sort.Slice(orphans, func(i, j int) bool { return orphans[i].id < orphans[j].id })
		for i, t := range orphans {
			if i >= maxReported {
				break
			}
			out = append(out, problem{key: "orphan:" + t.id, missing: true, msg: fmt.Sprintf("events of transaction %q arrived %s ago (%s) but %s, read to its end, has no END for it: check transaction_topic and that the connector has provide.transaction.metadata=true; the events are held, never dropped",
				t.id, now.Sub(t.firstAt).Round(time.Millisecond), a.describeSeen(t), a.cfg.txnTopic)})
		}
	}
	if a.cfg.maxBufferedBytes > 0 && a.buffered >= a.cfg.maxBufferedBytes {
		head := "no transaction END has been read for the buffered events yet"
		for _, t := range a.ends {
			if t.status == txnOpen {
				head = fmt.Sprintf("the oldest transaction %q: %s", t.id, a.describeCounts(t))
				break
			}
		}
		out = append(out, problem{key: "buffer", msg: fmt.Sprintf("%d bytes of incomplete transactions are buffered, at max_buffered_bytes (%d): only the partitions the oldest transaction may still need (or a gate holding it waits for) are read; %s; raise max_buffered_bytes above the largest transactions in flight", a.buffered, a.cfg.maxBufferedBytes, head)})
	}
	return out
}

// describeCounts names each consumed topic of a transaction, its
// collections and the events seen of those expected.
func (a *assembler) describeCounts(t *txnState) string {
	var topics []string
	for _, c := range t.counts.entries {
		if c.val.counted {
			topics = append(topics, c.key)
		}
	}
	sort.Strings(topics)
	var parts []string
	for _, topic := range topics {
		part := fmt.Sprintf("topic %s (collections %s): seen %d of %d", topic, strings.Join(a.namesOf(t, topic), ", "), t.seen(topic), t.want(topic))
		if !a.reads(topic) {
			// A topic that matches but has no partition here yet: a new
			// table's topic is read once the client's metadata shows it.
			part += " — no partition of this topic is read here yet (a topic new under regexp_topics is read within metadata_max_age; if it stays unread, check that it exists and that the consumer may read it)"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "no consumed collection"
	}
	return strings.Join(parts, "; ")
}

// reads reports whether a partition of topic is assigned here.
func (a *assembler) reads(topic string) bool {
	for key := range a.parts {
		if key.topic == topic {
			return true
		}
	}
	return false
}

func (a *assembler) describeSeen(t *txnState) string {
	var topics []string
	for _, c := range t.counts.entries {
		if c.val.seen > 0 {
			topics = append(topics, c.key)
		}
	}
	sort.Strings(topics)
	var parts []string
	for _, topic := range topics {
		parts = append(parts, fmt.Sprintf("%d in %s", t.seen(topic), topic))
	}
	return strings.Join(parts, ", ")
}
