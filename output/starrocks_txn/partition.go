package starrocks_txn

import (
	"fmt"
	"time"
)

// Partition state: what applying a message does to its partition (the open
// source transaction, the high-water mark, replays StarRocks holds already,
// abort markers), switches that freeze a partition's complete transactions
// for its database workers, and stalls.

// pkey identifies one ordered source stream: the assembler instance that
// numbered it and the partition.
type pkey struct{ source, partition string }

func (k pkey) String() string {
	if k.source == "" {
		return k.partition
	}
	return k.partition + "@" + k.source
}

// partition is the state of one (seq source, partition): its open source
// transaction, the completed ones not yet frozen (the active chunks of its
// regions) and the order in which they must resolve.
type partition struct {
	key pkey
	// hwm is the highest starrocks_source_offset admitted.
	hwm    int64
	hasHWM bool
	// open is the source transaction receiving messages; active the complete
	// ones not frozen yet; order every transaction from the first one not
	// resolved on, in source order (lifecycle.go).
	open         *srcTxn
	active       []*srcTxn
	order        []*srcTxn
	lastSwitch   time.Time
	lastActivity time.Time
	// stalled is why the partition stopped at source transaction stalledTxn
	// (no dead_letter); held are the messages admitted after it.
	stalled    error
	stalledTxn string
	held       []*item
	// fenced is set once a fence that took the partition ended: nothing is
	// published for it any more.
	fenced bool
	// published is the last committed-through offset published for it.
	published    int64
	hasPublished bool
	// replayNoted is set once a dropped replay of the partition was logged.
	replayNoted bool
	// parked holds, by transaction id, messages with a malformed
	// starrocks_seq whose transaction is not open yet: they join it, and
	// poison it, when it opens (applyUnsequenced); parkedAt is when
	// the first of them came.
	parked   map[string][]*item
	parkedAt map[string]time.Time
}

// quiescent reports whether the partition state holds nothing: no open,
// complete, unresolved, held or parked transaction, no stall.
func (p *partition) quiescent() bool {
	return p.open == nil && len(p.active) == 0 && len(p.order) == 0 && p.stalled == nil && len(p.held) == 0 && len(p.parked) == 0
}

func (k *core) partition(key pkey) *partition {
	p := k.parts[key]
	if p == nil {
		p = &partition{key: key}
		k.parts[key] = p
		k.fx.count(ctrDeadLettered, 0, partitionLabel(p))
	}
	return p
}

// staleEpoch reports whether a message belongs to an assignment of its
// partition that is over (contract.KeyPartitionEpoch older than the current
// one, or fenced). Without the key nothing is checked.
func (o *Output) staleEpoch(it *item) bool {
	return it.meta.HasEpoch && it.meta.Partition != "" && o.reg.Stale(it.meta.Partition, it.meta.Epoch)
}

// releaseStale acknowledges a message of an assignment that is over
// without applying it: the fence dropped the rest of its source transaction,
// and the partition's owner reads it again.
func (k *core) releaseStale(it *item, now time.Time) {
	k.fx.count(ctrStaleEpoch, 1, it.meta.Partition)
	k.fx.logf(logDebug, it.meta.Partition, "A message at offset %d of assignment epoch %d arrived after the partition was fenced or re-assigned (epoch %d): released without being applied", it.meta.SourceOffset, it.meta.Epoch, k.fx.currentEpoch(it.meta.Partition))
	if now.Sub(k.lastStaleWarn) >= reportEvery {
		k.lastStaleWarn = now
		k.fx.logf(logWarn, it.meta.Partition, "Messages of assignment epoch %d arrived after a rebalance took the partition; they are acknowledged without being applied (the partition's owner reads them again)", it.meta.Epoch)
	}
	k.itemDone(it)
}

// apply applies one admitted message to its partition.
func (k *core) apply(it *item, now time.Time) {
	if it.finished {
		// Released by a fence while it waited for a sequence gap.
		return
	}
	if k.fx.staleEpoch(it) {
		// Never applied, and never recreates a fenced partition.
		k.releaseStale(it, now)
		return
	}
	if k.learns && it.pk.partition != noContractPartition && it.meta.HasOffset && k.waitProgress(it) {
		return
	}
	p := k.partition(it.pk)
	p.lastActivity = now
	if p.stalled != nil {
		// Held until the partition is fenced or the output stops.
		p.held = append(p.held, it)
		return
	}
	noContract := it.pk.partition == noContractPartition
	// What StarRocks holds of the partition: read before its first message
	// when the tracker keeps progress (exactly_once), nil or empty else.
	var prog *progressEntry
	if !noContract {
		prog = k.progress[it.pk.partition]
	}
	if prog.coversMessage(it.meta.SourceOffset) && it.meta.HasOffset && p.open == nil {
		// exactly_once: StarRocks already holds every source transaction
		// at or below the partition's durable progress. A replay: it is
		// acknowledged without being loaded.
		if !p.hasHWM || it.meta.SourceOffset > p.hwm {
			p.hwm, p.hasHWM = it.meta.SourceOffset, true
		}
		k.noteReplay(p, it.meta.SourceOffset)
		k.fx.count(ctrReplaysDropped, 1, it.pk.partition)
		k.itemDone(it)
		if it.meta.TxnEnd || it.meta.TxnAbort {
			// The end of a source transaction StarRocks holds: the input
			// may commit past it. Only at a boundary, so that a restart
			// never begins inside a transaction.
			k.publish(p, it.meta.SourceOffset)
		}
		return
	}
	// A message at or below the partition's high-water mark (a replay or a
	// reorder) is never applied: it poisons the source transaction it
	// belongs to — the partition's open one, or one it opens — which then
	// goes whole to dead_letter (or stalls the partition) once it ends; a
	// regressed END or abort marker ends it.
	regressed := false
	if !noContract && it.meta.HasOffset {
		if p.hasHWM && it.meta.SourceOffset <= p.hwm {
			k.fx.logf(logError, it.pk.String(), "A message of source transaction %q at starrocks_source_offset %d is not above %d already admitted: a replay or a reorder, never applied; its source transaction is poisoned whole", it.meta.TxnID, it.meta.SourceOffset, p.hwm)
			regressed = true
			if it.poison == nil {
				it.poison = fmt.Errorf("starrocks_source_offset %d at or below the partition's high-water mark %d", it.meta.SourceOffset, p.hwm)
			}
		} else {
			p.hwm, p.hasHWM = it.meta.SourceOffset, true
		}
	}
	if it.meta.TxnAbort && !regressed {
		if t := p.open; t != nil {
			p.open = nil
			t.hasEnd, t.endOffset = it.meta.HasOffset, it.meta.SourceOffset
			t.items = append(t.items, it)
			p.order = append(p.order, t)
			k.move(t, txnSkipped)
			return
		}
		t := newTxn(p, it.meta.TxnID, time.Time{})
		t.items = []*item{it}
		t.hasEnd, t.endOffset = it.meta.HasOffset, it.meta.SourceOffset
		p.order = append(p.order, t)
		k.move(t, txnSkipped)
		return
	}
	if t := p.open; t != nil && t.unsureEnd && it.meta.TxnID != "" && it.meta.TxnID != t.id {
		// The open transaction's END was malformed and this message names
		// another transaction: that one ended, poisoned, before it.
		p.open = nil
		t.hasEnd, t.endOffset = p.hasHWM, p.hwm
		p.order = append(p.order, t)
		k.poison(t)
	}
	t := p.open
	if t == nil {
		t = newTxn(p, it.meta.TxnID, it.t0)
		p.open = t
		if parked := p.parked[t.id]; len(parked) > 0 {
			// Messages of it with a malformed starrocks_seq came first.
			t.items = append(t.items, parked...)
			t.poison = parked[0].poison
			delete(p.parked, t.id)
			delete(p.parkedAt, t.id)
		}
	}
	t.items = append(t.items, it)
	t.unsureEnd = t.unsureEnd || it.unsureEnd
	if it.t0.Before(t.t0) {
		t.t0 = it.t0
	}
	if it.poison != nil && t.poison == nil {
		t.poison = it.poison
	}
	if it.isRow && it.poison == nil {
		switch {
		case t.db == "":
			t.db = it.db
		case t.db != it.db && t.poison == nil:
			t.poison = fmt.Errorf("source transaction %q writes to two databases, %s and %s; a StarRocks transaction spans one", t.id, t.db, it.db)
		}
		k.addRow(t, it)
	}
	if !it.meta.TxnEnd && !noContract && !(regressed && it.meta.TxnAbort) {
		if it.unsequenced {
			k.fx.logf(logError, it.pk.String(), "A message of source transaction %q has a malformed starrocks_seq (its seq cannot be waited for, so admission reports a gap there): the transaction is poisoned", it.meta.TxnID)
		}
		return
	}
	// The source transaction is complete.
	p.open = nil
	t.hasEnd, t.endOffset = it.meta.HasOffset, it.meta.SourceOffset
	if regressed && p.hasHWM {
		// Its END is behind: it resolves at the high-water mark.
		t.endOffset = p.hwm
	}
	p.order = append(p.order, t)
	if t.hasEnd && prog.covers(t.db, t.endOffset) {
		// exactly_once: this database already holds the transaction (a
		// replay after a restart or a re-assignment): acknowledged, not
		// loaded again.
		k.noteReplay(p, t.endOffset)
		k.fx.count(ctrReplaysDropped, int64(len(t.items)), it.pk.partition)
		k.move(t, txnSkipped)
		return
	}
	if t.poison != nil {
		k.poison(t)
		return
	}
	if len(t.rows) == 0 {
		k.move(t, txnSkipped)
		return
	}
	if !k.move(t, txnActive) {
		return
	}
	p.active = append(p.active, t)
	if now.Sub(p.lastSwitch) >= k.conf.miniInterval() {
		k.switchPartition(p, now)
	}
}

// applyUnsequenced applies a message with a malformed starrocks_seq
// that names its partition and transaction: it cannot wait for its turn in
// the sequencer, so it joins its transaction at once when that is the
// partition's open one, and otherwise waits (parked) for it to open. It
// poisons that transaction either way. One whose transaction does not open
// within sequence_gap_timeout (it ended before the message came, or never
// comes) is poisoned alone by checkParked: it can no longer join its
// transaction.
func (k *core) applyUnsequenced(it *item, now time.Time) {
	if k.fx.staleEpoch(it) {
		k.releaseStale(it, now)
		return
	}
	p := k.partition(it.pk)
	if p.open != nil && p.open.id == it.meta.TxnID {
		k.apply(it, now)
		return
	}
	if p.parked == nil {
		p.parked, p.parkedAt = map[string][]*item{}, map[string]time.Time{}
	}
	if _, ok := p.parkedAt[it.meta.TxnID]; !ok {
		p.parkedAt[it.meta.TxnID] = now
	}
	p.parked[it.meta.TxnID] = append(p.parked[it.meta.TxnID], it)
}

// checkParked poisons the parked messages whose transaction did not
// open within sequence_gap_timeout, each transaction's together.
func (k *core) checkParked(now time.Time) {
	for _, p := range k.parts {
		for _, id := range sortedKeys(p.parkedAt) {
			if now.Sub(p.parkedAt[id]) < k.conf.sequenceGapTimeout {
				continue
			}
			items := p.parked[id]
			delete(p.parked, id)
			delete(p.parkedAt, id)
			t := newTxn(p, id, items[0].t0)
			t.items = items
			t.poison = fmt.Errorf("%v; the transaction did not open within sequence_gap_timeout (%v) after this message came (it ended before, or never came), so the message is poisoned without it", items[0].poison, k.conf.sequenceGapTimeout)
			p.order = append(p.order, t)
			k.poison(t)
		}
	}
}

// noteReplay logs, once per partition state, that replays are being
// acknowledged without loading.
func (k *core) noteReplay(p *partition, offset int64) {
	if p.replayNoted {
		return
	}
	p.replayNoted = true
	k.fx.logf(logInfo, p.key.String(), "Acknowledging without loading: dropping replays StarRocks already holds (exactly_once, pipeline %s), from offset %d up to the progress", k.conf.pipelineID, offset)
}

// switchPartition freezes the active chunks of every region of the partition at
// once. Only complete source transactions are ever in them, so a switch is
// always at a clean boundary: a transaction whose END is on one table has
// its rows on every other table frozen with it.
func (k *core) switchPartition(p *partition, now time.Time) {
	p.lastSwitch = now
	if len(p.active) == 0 {
		return
	}
	for _, t := range p.active {
		q := k.db(t.db)
		if q == nil {
			// A database worker per database, at most max_databases: a
			// transaction to one more cannot be loaded.
			t.poison = fmt.Errorf("source transaction %q writes to database %s, which would need a database worker beyond max_databases (%d running): raise max_databases, or check the database names the data carries", t.id, t.db, k.conf.maxDatabases)
			k.poison(t)
			continue
		}
		if !k.move(t, txnQueued) {
			continue
		}
		q.queue = append(q.queue, t)
		q.lastTraffic = now
		k.fx.wakeWorker(q)
	}
	p.active = nil
}

// switchIdle is the manager's source-idle fallback: a partition whose
// completed transactions wait in active chunks is switched once miniInterval
// has passed since its last switch.
func (k *core) switchIdle(now time.Time) {
	mini := k.conf.miniInterval()
	for _, p := range k.parts {
		if len(p.active) > 0 && now.Sub(p.lastSwitch) >= mini {
			k.switchPartition(p, now)
		}
	}
}

// cut is the commit cut: every completed transaction is frozen.
func (k *core) cut(now time.Time) {
	for _, p := range k.parts {
		if len(p.active) > 0 {
			k.switchPartition(p, now)
		}
	}
}

// stall stops a partition at a poisoned transaction: it and every later
// transaction of the partition are held (their WriteBatch calls do not
// return) until the partition is fenced or the output stops.
func (k *core) stall(p *partition, t *srcTxn) {
	if p.stalled != nil {
		return
	}
	p.stalled, p.stalledTxn = t.poison, t.id
	k.fx.logf(logError, p.key.String(), "The partition stalled at source transaction %q: %v; set dead_letter to divert poisoned transactions, or fix the cause and restart", t.id, t.poison)
	k.fx.gauge(gaugeStalledPartition, 1, partitionLabel(p))
	k.fx.count(ctrPartitionStalls, 1, "")
	drop := func(x *srcTxn) {
		if x != t && x.state.live() {
			k.move(x, txnStalled)
		}
	}
	// Everything after t in the partition is held back with it.
	after := false
	for _, x := range p.order {
		if x == t {
			after = true
			continue
		}
		if after {
			drop(x)
		}
	}
	for _, x := range p.active {
		drop(x)
	}
	p.active = nil
	if p.open != nil {
		drop(p.open)
		p.open = nil
	}
}
