package starrocks_txn

// Home of G1 (ARCHITECTURE.md §11.1): a source transaction is never split and never partly
// visible. Main test: TestSwitchNeverSplitsTransaction.
//
// Home of G6 (ARCHITECTURE.md §11.1): offsets strictly increase per partition; a regression
// poisons its whole transaction. Main test: TestOffsetRegressionIsNeverApplied.
//
// Home of G30 (ARCHITECTURE.md §11.1): a message of an assignment that is over is never applied.
// Main test: TestStaleEpochTailAfterFenceIsNeverCommitted.
//
// Home of G32 (ARCHITECTURE.md §11.1): a partition's messages wait for its own progress read,
// read again after a fence. Main test: TestExactlyOnceProgressReadHoldsOnlyItsPartition.
//
// Home of G34 (ARCHITECTURE.md §11.1): exactly_once: a transaction lacking
// starrocks_source_offset is refused whole, naming the key. Main test:
// TestExactlyOnceRefusesATransactionWithoutSourceOffsets.

import (
	"fmt"
	"strings"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// debeziumSeqSource starts the starrocks_seq_source of the debezium_txn
// input, whose one partition per connector carries every table.
const debeziumSeqSource = "debezium_txn-"

// Partition state: what applying a message does to its partition (apply,
// in named steps: the open source transaction, the high-water mark, replays
// StarRocks holds already, abort markers, the END), messages parked for
// their transaction, switches that freeze a partition's complete
// transactions for its database workers, and stalls.

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
	// (no dead_letter); held are the messages admitted after it. A stall
	// caused by a table or its schema is tried again (stallRetry) at
	// stallRetryAt (schema.go: retryStalls; zero: at the next tick plus
	// stall_retry_interval).
	stalled      error
	stalledTxn   string
	held         []*item
	stallRetry   bool
	stallRetryAt time.Time
	// gated are the complete transactions held for a schema check, in
	// order: the first one's check runs, the rest wait behind it
	// (schema.go). A check StarRocks did not answer is started again at
	// checkRetryAt (zero: none due), after checkRetries tries.
	gated        []*srcTxn
	checkRetryAt time.Time
	checkRetries int
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
	return p.open == nil && len(p.active) == 0 && len(p.order) == 0 && p.stalled == nil && len(p.held) == 0 && len(p.parked) == 0 && len(p.gated) == 0
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

// apply applies one admitted message to its partition, in named steps,
// each of which may take the message and end the apply: a message already
// released or of an assignment that is over (epochCheck), one whose
// partition's progress is not known yet (progressHold), one behind a stall
// (stallHold), a replay StarRocks holds (replayHeld); then the high-water
// mark (hwm), an abort marker (abort), the close of a transaction whose END
// was malformed (closeUnsure), the open transaction it joins (appendTo),
// and once the message ends its transaction, the END's handling (complete).
func (k *core) apply(it *item, now time.Time) {
	if k.epochCheck(it, now) || k.progressHold(it) {
		return
	}
	p := k.partition(it.pk)
	p.lastActivity = now
	if k.stallHold(p, it) {
		return
	}
	k.requireOffset(it)
	// What StarRocks holds of the partition: read before its first message
	// when the tracker keeps progress (exactly_once), nil or empty else.
	var prog *progressEntry
	if it.pk.partition != noContractPartition {
		prog = k.progress[it.pk.partition]
	}
	if k.replayHeld(p, it, prog) {
		return
	}
	regressed := k.hwm(p, it)
	if it.meta.TxnAbort && !regressed {
		k.abort(p, it)
		return
	}
	k.closeUnsure(p, it)
	t := k.appendTo(p, it)
	if !k.ends(it, regressed) {
		return
	}
	k.complete(p, t, it, regressed, prog, now)
}

// epochCheck takes a message that must never be applied: one a fence
// released while it waited for a sequence gap, and one of an assignment
// that is over (staleEpoch), which is acknowledged unapplied
// (releaseStale) and never recreates a fenced partition.
func (k *core) epochCheck(it *item, now time.Time) bool {
	if it.finished {
		return true
	}
	if k.fx.staleEpoch(it) {
		k.releaseStale(it, now)
		return true
	}
	return false
}

// progressHold takes a message whose partition's progress the tracker has
// not learnt yet (learnsPartitions: writer rows or exactly_once): it waits,
// with the partition's later messages, until the read is done (waitProgress,
// progressRead), while other partitions go on. Messages without the
// contract never wait. One without an offset waits too under exactly_once
// (where it poisons its transaction, requireOffset): applied ahead of its
// partition's waiting messages it would open its transaction without
// them and split it.
//
// A partition whose name the progress table cannot hold (progressName) is
// never read: its messages are refused by requireOffset.
func (k *core) progressHold(it *item) bool {
	return k.learns && it.pk.partition != noContractPartition && (it.meta.HasOffset || k.conf.exactlyOnce) &&
		(!k.conf.exactlyOnce || progressName(it.pk.partition) == nil) && k.waitProgress(it)
}

// requireOffset is the exactly_once offset rule (ARCHITECTURE.md §7): every
// message must carry starrocks_source_offset, since the progress that tells
// a replay from new data is an offset. A message without one — or with the
// txn_assembler's arrival counter in its place, which parseContract took
// away (contract.Meta.ArrivalOffset) — poisons the source transaction it
// belongs to (or, without the contract, the one it is), which is then
// refused whole: dead-lettered or its partition stalled, never loaded in
// part and never acknowledged in part. Loaded, a replay of it after a
// restart could not be recognised and would be loaded again; and a counter
// starts at 0 again with the process, so a restarted pipeline's new
// transactions would fall at or below the progress and be dropped as
// replays.
//
// A message of a partition whose name the progress table cannot hold
// (progressName) poisons its transaction too: its progress would be read
// under another name, and its replays after a restart loaded again.
func (k *core) requireOffset(it *item) {
	if !k.conf.exactlyOnce || it.poison != nil {
		return
	}
	if it.pk.partition != noContractPartition {
		if err := progressName(it.pk.partition); err != nil {
			it.poison = fmt.Errorf("semantic exactly_once keeps each partition's progress in the progress table under its name (%s), and the partition of source transaction %q cannot be kept there: %w; StarRocks would hold its row under another name, so a replay after a restart could not be told from new data and would be loaded twice; set %s to valid UTF-8 text (e.g. topic/partition), or use semantic at_least_once", contract.KeyPartition, it.meta.TxnID, err, contract.KeyPartition)
			return
		}
	}
	if it.meta.HasOffset {
		return
	}
	if it.meta.ArrivalOffset {
		it.poison = fmt.Errorf("semantic exactly_once needs %s to be the source position and this message of source transaction %q has only the txn_assembler's arrival counter: its source gave no offset (the processor's source_offset field is not set and the message has no kafka_offset metadata), and the counter starts at 0 again at every start, so after a restart new transactions would be taken for replays and dropped; set the txn_assembler's source_offset field to the source's position (a whole number strictly increasing per partition, e.g. ${! this.position }), read the source from Kafka (kafka_offset), or use semantic at_least_once", contract.KeySourceOffset, it.meta.TxnID)
		return
	}
	it.poison = fmt.Errorf("semantic exactly_once needs %s on every message and this message of source transaction %q has none: without it a replay after a restart cannot be told from new data and would be loaded twice; the txn_assembler processor stamps it from its source_offset field or the kafka_offset metadata (never from its arrival counter) and the debezium_txn input stamps it, a custom mapping must set it (the source position, a whole number strictly increasing per partition), or use semantic at_least_once", contract.KeySourceOffset, it.meta.TxnID)
}

// stallHold takes a message of a stalled partition: it is held, unapplied,
// until the partition is fenced or the output stops.
func (k *core) stallHold(p *partition, it *item) bool {
	if p.stalled == nil {
		return false
	}
	p.held = append(p.held, it)
	return true
}

// replayHeld takes a message at or below the partition's durable progress
// while no transaction is open (exactly_once: StarRocks already holds every
// source transaction there): a replay, acknowledged without being loaded.
// It raises the high-water mark, and at a transaction's END or abort
// publishes the offset, so that the input may commit past it — only at a
// boundary, so that a restart never begins inside a transaction.
func (k *core) replayHeld(p *partition, it *item, prog *progressEntry) bool {
	if !prog.coversMessage(it.meta.SourceOffset) || !it.meta.HasOffset || p.open != nil {
		return false
	}
	if !p.hasHWM || it.meta.SourceOffset > p.hwm {
		p.hwm, p.hasHWM = it.meta.SourceOffset, true
	}
	k.noteReplay(p, it.meta.SourceOffset)
	k.fx.count(ctrReplaysDropped, 1, it.pk.partition)
	k.itemDone(it)
	if it.meta.TxnEnd || it.meta.TxnAbort {
		k.publish(p, it.meta.SourceOffset)
	}
	return true
}

// hwm is the high-water mark rule: a message at or below the partition's
// highest starrocks_source_offset (a replay or a reorder) is never applied;
// it poisons the source transaction it belongs to — the partition's open
// one, or one it opens — which then goes whole to dead_letter (or stalls the
// partition) once it ends; a regressed END or abort marker ends it. It
// reports whether the message regressed; otherwise the mark moves to it.
func (k *core) hwm(p *partition, it *item) (regressed bool) {
	if it.pk.partition == noContractPartition || !it.meta.HasOffset {
		return false
	}
	if !p.hasHWM || it.meta.SourceOffset > p.hwm {
		p.hwm, p.hasHWM = it.meta.SourceOffset, true
		return false
	}
	k.fx.logf(logError, it.pk.String(), "A message of source transaction %q at starrocks_source_offset %d is not above %d already admitted: a replay or a reorder, never applied; its source transaction is poisoned whole", it.meta.TxnID, it.meta.SourceOffset, p.hwm)
	if it.poison == nil {
		it.poison = fmt.Errorf("starrocks_source_offset %d at or below the partition's high-water mark %d", it.meta.SourceOffset, p.hwm)
	}
	return true
}

// abort applies an abort marker: the partition's open transaction (or, when
// none is open, a transaction of the marker alone) is skipped, its messages
// acknowledged and nothing of it loaded; it resolves at the marker's offset.
func (k *core) abort(p *partition, it *item) {
	t := p.open
	if t != nil {
		p.open = nil
	} else {
		t = newTxn(p, it.meta.TxnID, time.Time{})
	}
	t.hasEnd, t.endOffset = it.meta.HasOffset, it.meta.SourceOffset
	t.items = append(t.items, it)
	p.order = append(p.order, t)
	k.move(t, txnSkipped)
}

// closeUnsure ends the open transaction whose END was malformed when a
// message names another transaction: that one ended, poisoned, before it,
// at the high-water mark.
func (k *core) closeUnsure(p *partition, it *item) {
	t := p.open
	if t == nil || !t.unsureEnd || it.meta.TxnID == "" || it.meta.TxnID == t.id {
		return
	}
	p.open = nil
	t.hasEnd, t.endOffset = p.hasHWM, p.hwm
	p.order = append(p.order, t)
	k.poison(t)
}

// appendTo adds the message to the partition's open transaction, opening
// one when there is none (with the messages of it parked before it opened,
// which poison it). A message's poison becomes its transaction's; a row
// counts in buffered (addRow), and a transaction's rows must all go to one
// database.
func (k *core) appendTo(p *partition, it *item) *srcTxn {
	t := p.open
	if t == nil {
		t = newTxn(p, it.meta.TxnID, it.sourceTime())
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
	if t0 := it.sourceTime(); t0.Before(t.t0) {
		t.t0 = t0
	}
	if it.poison != nil && t.poison == nil {
		t.poison = it.poison
	}
	if (it.isRow || it.change != nil) && it.poison == nil {
		switch {
		case t.db == "":
			t.db = it.db
		case t.db != it.db && t.poison == nil:
			t.poison = fmt.Errorf("source transaction %q writes to two databases, %s and %s; a StarRocks transaction spans one", t.id, t.db, it.db)
		}
		if it.isRow {
			k.addRow(t, it)
		}
		k.noteNeed(t, it)
	}
	return t
}

// ends reports whether the message completes its transaction: an END, any
// message without the contract (each its own transaction), or a regressed
// abort marker. A message with a malformed starrocks_seq that does not is
// reported: its seq could not be waited for.
func (k *core) ends(it *item, regressed bool) bool {
	if it.meta.TxnEnd || it.pk.partition == noContractPartition || (regressed && it.meta.TxnAbort) {
		return true
	}
	if it.unsequenced {
		k.fx.logf(logError, it.pk.String(), "A message of source transaction %q has a malformed starrocks_seq (its seq cannot be waited for, so admission reports a gap there): the transaction is poisoned", it.meta.TxnID)
	}
	return false
}

// complete handles the END of transaction t, which message it ended: t
// leaves the open slot for the partition's order, resolving at the END's
// offset (at the high-water mark when the END regressed). Then the first
// rule that applies decides: a transaction this database holds already
// (exactly_once, a replay after a restart or a re-assignment) is skipped
// and acknowledged without being loaded; a poisoned one is poisoned
// (dead_letter, or a stall); one without rows is skipped; any other becomes
// active (activate).
func (k *core) complete(p *partition, t *srcTxn, it *item, regressed bool, prog *progressEntry, now time.Time) {
	p.open = nil
	t.hasEnd, t.endOffset = it.meta.HasOffset, it.meta.SourceOffset
	if regressed && p.hasHWM {
		t.endOffset = p.hwm
	}
	p.order = append(p.order, t)
	switch {
	case t.hasEnd && prog.covers(t.db, t.endOffset):
		k.noteReplay(p, t.endOffset)
		k.fx.count(ctrReplaysDropped, int64(len(t.items)), it.pk.partition)
		k.move(t, txnSkipped)
	case t.poison != nil:
		k.poison(t)
	case len(t.needs) > 0 || len(p.gated) > 0:
		// A schema to check, or an earlier transaction gated for one: it
		// waits, in order (schema.go).
		k.gate(p, t)
	case len(t.tables) == 0:
		k.move(t, txnSkipped)
	default:
		k.activate(p, t, now)
	}
}

// activate puts a complete transaction with rows into its partition's
// active chunks and switches the partition when miniInterval has passed
// since its last switch (ARCHITECTURE.md §4.2): an END is where a switch
// may happen, so that a switch freezes whole transactions only.
//
// A transaction whose rows need a schema check waits before this, gated
// (schema.go: gate), with every later transaction of its partition.
func (k *core) activate(p *partition, t *srcTxn, now time.Time) {
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
			t := newTxn(p, id, items[0].sourceTime())
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
//
// With exactly_once a partition whose earlier poisoned transaction is on
// its way to dead_letter is not switched (deadLetterHolds): its complete
// transactions stay active until the write ends, and the source-idle
// switch (switchIdle) freezes them then.
func (k *core) switchPartition(p *partition, now time.Time) {
	if k.deadLetterHolds(p) {
		return
	}
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
// complete transaction of the partition are held (their WriteBatch calls do
// not return) until the partition is fenced, the stall is tried again
// (schema.go: retryStalls) or the output stops.
//
// The partition's open transaction, if any, stays its open transaction:
// stallHold holds the rest of its messages with everything else that comes,
// and when a stall is tried again they complete it in order (a transaction
// moved out of the open slot half received would be lost to both: its
// first part held for good, its rest opening a new transaction of the same
// id that loads alone, partly visible); a fence takes it as the open one.
func (k *core) stall(p *partition, t *srcTxn) {
	if p.stalled != nil {
		return
	}
	p.stalled, p.stalledTxn = t.poison, t.id
	p.stallRetry, p.stallRetryAt = t.schemaStall, time.Time{}
	p.gated = nil
	whole := ""
	if strings.HasPrefix(p.key.source, debeziumSeqSource) {
		whole = " (with debezium_txn this partition is the whole connector: its commit order is global, so every table of the connector waits)"
	}
	if t.schemaStall {
		k.fx.logf(logError, p.key.String(), "The partition stalled at source transaction %q%s: %v; it is tried again every stall_retry_interval (%v) and goes on, without a restart, once StarRocks takes it; or set dead_letter to divert it", t.id, whole, t.poison, k.conf.stallRetryInterval)
	} else {
		k.fx.logf(logError, p.key.String(), "The partition stalled at source transaction %q%s: %v; set dead_letter to divert poisoned transactions, or fix the cause and restart", t.id, whole, t.poison)
	}
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
}
