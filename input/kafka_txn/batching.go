package kafka_txn

// Home of G51 (ARCHITECTURE.md §11.2): a partition is delivered in offset order, each batch
// carrying whole source transactions. Main test: TestCheckDeliversWholeTransactions.

import (
	"time"

	"github.com/redpanda-data/benthos/v4/public/bloblang"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// Batching (ARCHITECTURE.md §6). The output holds every WriteBatch call
// until the source transactions of its messages are committed, and runs at
// most max_in_flight calls. A call whose last source transaction continues
// in a batch not yet delivered waits for that batch; with many partitions,
// every call could wait so, and nothing more could be delivered: a
// deadlock. So the input delivers whole source transactions only: a
// partition's part of a batch ends at the partition's last record that
// ends a transaction (txnEnds), and the records after it wait for their
// transaction's end, unless that transaction alone fills checkpoint_limit
// (then it is delivered as it is, and the partition reports the stall it
// always did). Every delivered call is then committable at the next commit,
// whatever the partition count and max_in_flight.
//
// And the due parts of several partitions are joined into one batch of up
// to batching.count messages (coalesce), so that the number of calls in
// flight, each holding a max_in_flight slot until its commit, grows with the
// throughput and not with the partitions: with one partition per batch,
// 256 partitions flushed every period give batches of a few records.

// defaultCoalesceLimit bounds a joined batch when the policy sets no count.
const defaultCoalesceLimit = 1000

// batchRule is the batching policy as this input applies it itself: every
// policy but one with processors, which Benthos's batcher applies (benthos
// set: one partition per batch, not cut at transaction ends).
type batchRule struct {
	policy   service.BatchPolicy
	benthos  bool
	count    int
	byteSize int
	period   time.Duration
	// check is the policy's check: a record for which it is true ends a
	// source transaction (when no txn_assembler says where they end).
	check *bloblang.Executor
}

// noop reports a rule with no trigger: a batch is what was fetched.
func (r batchRule) noop() bool { return r.count <= 0 && r.byteSize <= 0 && r.period <= 0 }

// coalesceLimit is the size at which a joined batch is complete.
func (r batchRule) coalesceLimit() int {
	if r.count > 0 {
		return r.count
	}
	return defaultCoalesceLimit
}

// txnEnds returns what tells the input where source transactions end: the
// stream's txn_assembler (through the registry), else the policy's check,
// else nil (batches are then cut only by the policy).
func (in *Input) txnEnds() registry.EndFunc {
	if fn := in.reg.TxnEnds(); fn != nil {
		return fn
	}
	if exe := in.conf.batching.check; exe != nil {
		return func(msg *service.Message) bool {
			// As Benthos's batcher evaluates a check: a query on the
			// message.
			res, err := msg.BloblangQuery(exe)
			if err != nil || res == nil {
				return false
			}
			v, err := res.AsStructured()
			b, _ := v.(bool)
			return err == nil && b
		}
	}
	return nil
}

// popQueue takes the partition's next fetched record.
func (ps *partState) popQueue() *kgo.Record {
	rec := ps.queue[0]
	ps.queue[0] = nil
	ps.queue = ps.queue[1:]
	ps.queueBytes -= len(rec.Value)
	ps.queued.add(-1, -len(rec.Value))
	if len(ps.queue) == 0 {
		ps.queue = nil
	}
	return rec
}

// messageOf builds the message of one of the partition's records.
func (ps *partState) messageOf(rec *kgo.Record) *service.Message {
	if ps.builder == nil {
		ps.builder = newRecordBuilder(ps.topic, ps.part, ps.epoch)
	}
	return ps.builder.message(rec, max(ps.hwm-rec.Offset-1, 0), ps.hwm >= 0)
}

// fillLocked moves fetched records into the partition's pending records
// while the partition is below checkpoint_limit: up to batching.count of
// them, or past it while no record among them ends a transaction (the
// transaction is delivered whole).
func (in *Input) fillLocked(ps *partState, ends registry.EndFunc) {
	r := in.conf.batching
	room := in.conf.checkpointLimit - ps.unacked - len(ps.batching)
	for room > 0 && len(ps.queue) > 0 {
		if r.count > 0 && len(ps.batching) >= r.count && (ends == nil || ps.lastEnd(ends) > 0) {
			return
		}
		rec := ps.popQueue()
		ps.batching = append(ps.batching, rec)
		ps.batchMsgs = append(ps.batchMsgs, ps.messageOf(rec))
		ps.batchBytes += len(rec.Value)
		room--
	}
}

// dueLocked returns how many of the partition's pending records go out now
// (0: none), or else how long until its batching period ends (0: until more
// records or an acknowledgement arrive).
//
// open reports that the part ends inside a source transaction (one that alone
// fills checkpoint_limit) or that where it ends is not known (no end
// detection): such a part goes out in a batch of its own, so that a
// transaction that cannot complete there never holds another partition's
// rows unacknowledged with it.
func (in *Input) dueLocked(ps *partState, ends registry.EndFunc, now time.Time) (cut int, wait time.Duration, open bool) {
	n := len(ps.batchMsgs)
	if n == 0 {
		return 0, 0, false
	}
	cut = n
	if ends != nil {
		cut = ps.lastEnd(ends)
	}
	full := in.conf.checkpointLimit-ps.unacked-n <= 0
	if cut == 0 {
		// Only an open source transaction: it waits for its end, unless
		// it alone fills checkpoint_limit.
		if full && ps.unacked == 0 {
			return n, 0, true
		}
		return 0, 0, false
	}
	cut, wait = in.dueEndedLocked(ps, cut, full, now)
	return cut, wait, ends == nil
}

// dueEndedLocked is dueLocked for a part whose first cut records end at a
// source-transaction end (or all of them, without end detection).
func (in *Input) dueEndedLocked(ps *partState, cut int, full bool, now time.Time) (int, time.Duration) {
	n := len(ps.batchMsgs)
	r := in.conf.batching
	switch {
	case r.noop(), full,
		r.count > 0 && n >= r.count,
		r.byteSize > 0 && ps.batchBytes >= r.byteSize:
		return cut, 0
	case r.period > 0:
		if d := ps.lastFlush.Add(r.period).Sub(now); d > periodDue {
			return 0, d
		}
		return cut, 0
	}
	return 0, 0
}

// takeLocked delivers the first cut pending records of the partition.
func (in *Input) takeLocked(ps *partState, cut int, now time.Time) (service.MessageBatch, *pendingBatch) {
	recs, msgs := ps.batching[:cut], ps.batchMsgs[:cut:cut]
	pb := in.deliverLocked(ps, recs[0].Offset, recs[cut-1].Offset, cut)
	// The rest moves to new slices, so that the delivered records and
	// messages are not kept alive by the partition.
	var restRecs []*kgo.Record
	var restMsgs service.MessageBatch
	bytes := 0
	if rest := len(ps.batching) - cut; rest > 0 {
		restRecs = append(make([]*kgo.Record, 0, rest), ps.batching[cut:]...)
		restMsgs = append(make(service.MessageBatch, 0, rest), ps.batchMsgs[cut:]...)
		for _, r := range restRecs {
			bytes += len(r.Value)
		}
	}
	ps.batching, ps.batchMsgs, ps.batchBytes = restRecs, restMsgs, bytes
	ps.endIdx = max(ps.endIdx-cut, 0)
	ps.endChecked = max(ps.endChecked-cut, 0)
	ps.lastFlush = now
	return msgs, pb
}

// lastEnd returns how many of the partition's pending records go up to and
// including the last that ends a source transaction (0: none does). Each
// record is asked about at most once, from the newest back to the last end
// found before, so the cost is the length of a transaction's tail, not of
// the batch.
func (ps *partState) lastEnd(ends registry.EndFunc) int {
	for i := len(ps.batchMsgs) - 1; i >= ps.endChecked; i-- {
		if ends(ps.batchMsgs[i]) {
			ps.endIdx = i + 1
			break
		}
	}
	ps.endChecked = len(ps.batchMsgs)
	return ps.endIdx
}

// dropPending forgets the partition's fetched and pending records (a
// revoke: the next owner reads them again).
func (ps *partState) dropPending() {
	ps.queued.add(-len(ps.queue), -ps.queueBytes)
	ps.queue, ps.batching, ps.batchMsgs = nil, nil, nil
	ps.queueBytes, ps.batchBytes, ps.endIdx, ps.endChecked = 0, 0, 0, 0
}
