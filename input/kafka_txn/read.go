package kafka_txn

// Home of G53 (ARCHITECTURE.md §11.2): a nack is not replayed: the partition stops at it and
// nothing past it is committed. Main test: TestNackStopsPartitionAndCommitsNothingPastIt.

import (
	"context"
	"fmt"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// NextBatchLocked returns the next batch: the due parts of one or more
// partitions (batching.go), in partition order, each part in offset order.
func (in *Input) NextBatchLocked(ctx context.Context) (service.MessageBatch, service.AckFunc, time.Duration) {
	// What it takes from the queues may make room for the poll loop.
	defer in.readAheadTakenLocked()
	if in.conf.batching.benthos {
		return in.nextPolicyBatchLocked(ctx)
	}
	return in.nextBatchLocked()
}

// delivered is one partition's part of a delivered batch.
type delivered struct {
	ps *partState
	pb *pendingBatch
}

// nextBatchLocked visits the partitions round-robin and joins the due part
// of each into one batch until it holds batching.count messages (or, with
// coalesce off, after the first part), or returns the time until a
// batching period ends.
func (in *Input) nextBatchLocked() (service.MessageBatch, service.AckFunc, time.Duration) {
	ends := in.txnEnds()
	now := time.Now()
	var wait time.Duration
	var out service.MessageBatch
	var parts []delivered
	n := len(in.order)
	last := -1
	for i := 0; i < n; i++ {
		idx := (in.rr + i) % n
		ps := in.parts[in.order[idx]]
		if ps == nil || ps.failed != nil || ps.revoking {
			continue
		}
		in.fillLocked(ps, ends)
		cut, w, open := in.dueLocked(ps, ends, now)
		if cut == 0 {
			if w > 0 && (wait == 0 || w < wait) {
				wait = w
			}
			continue
		}
		if open && len(parts) > 0 {
			// A part that may end inside a transaction goes alone: the
			// batch ends before it, so it is first in the next one.
			break
		}
		msgs, pb := in.takeLocked(ps, cut, now)
		out = append(out, msgs...)
		parts = append(parts, delivered{ps, pb})
		last = idx
		if open || !in.conf.coalesce || len(out) >= in.conf.batching.coalesceLimit() {
			break
		}
	}
	if len(parts) == 0 {
		return nil, nil, wait
	}
	// Said at debug level: the binary's lint warns about such a
	// configuration, and an info line would land in a stdout output's data.
	if ends == nil && !in.warnedNoEnds {
		in.warnedNoEnds = true
		in.log.Debugf("kafka_txn cannot tell where source transactions end (no txn_assembler under input.processors, no batching.check): each batch holds one partition and may end inside a source transaction, which the output then holds until the next batch; add the txn_assembler processor under input.processors, or a batching.check")
	}
	in.rr = (last + 1) % n
	return out, func(_ context.Context, err error) error {
		in.mu.Lock()
		defer in.mu.Unlock()
		for _, d := range parts {
			in.ackLocked(d.ps, d.pb, err)
		}
		return nil
	}, 0
}

// deliverLocked records a delivered part of a partition as pending (so that
// its acknowledgement can move the commit point) and updates the
// partition's gauges.
func (in *Input) deliverLocked(ps *partState, first, last int64, n int) *pendingBatch {
	pb := &pendingBatch{first: first, last: last, n: n}
	ps.pending = append(ps.pending, pb)
	wasAtLimit := ps.unacked >= in.conf.checkpointLimit
	ps.unacked += pb.n
	ps.deliveredNext = pb.last + 1
	ps.lastDelivery = time.Now()
	if !wasAtLimit && ps.unacked >= in.conf.checkpointLimit {
		ps.limitSince = time.Now()
	}
	in.m.inFlight.Set(int64(ps.unacked), ps.topic, ps.label)
	in.updateLagLocked(ps)
	in.updatePauseLocked(ps)
	return pb
}

// nextPolicyBatchLocked is nextBatchLocked for a batching policy with
// processors, which Benthos's batcher applies: it returns the first
// partition's batch that is due, whole, or the time until a batching period
// ends.
func (in *Input) nextPolicyBatchLocked(ctx context.Context) (service.MessageBatch, service.AckFunc, time.Duration) {
	var wait time.Duration
	n := len(in.order)
	for i := 0; i < n; i++ {
		ps := in.parts[in.order[(in.rr+i)%n]]
		if ps == nil || ps.failed != nil || ps.revoking {
			continue
		}
		ready := in.fillPolicyLocked(ps)
		if !ready && len(ps.batching) > 0 && ps.batcher != nil {
			if d, timed := ps.batcher.UntilNext(); timed {
				if d <= periodDue {
					ready = true
				} else if wait == 0 || d < wait {
					wait = d
				}
			}
		}
		if !ready {
			continue
		}
		in.rr = (in.rr + i + 1) % n
		if batch, ack := in.flushPolicyLocked(ctx, ps); batch != nil {
			return batch, ack, 0
		}
	}
	return nil, nil, wait
}

// fillPolicyLocked moves fetched records into the partition's batcher while
// the partition is below checkpoint_limit, and reports whether the batch is
// due.
func (in *Input) fillPolicyLocked(ps *partState) bool {
	room := in.conf.checkpointLimit - ps.unacked - len(ps.batching)
	for room > 0 && len(ps.queue) > 0 {
		rec := ps.popQueue()
		msg := ps.messageOf(rec)
		ps.batching = append(ps.batching, rec)
		room--
		if ps.batcher.Add(msg) {
			return true
		}
	}
	if len(ps.batching) == 0 {
		return false
	}
	// At the limit the batch must go out, or the partition would wait for
	// itself.
	return room <= 0
}

// flushPolicyLocked delivers the partition's batch through its batcher and
// returns it with its AckFunc. A batch its processors emptied is
// acknowledged at once.
func (in *Input) flushPolicyLocked(ctx context.Context, ps *partState) (service.MessageBatch, service.AckFunc) {
	recs := ps.batching
	ps.batching = nil
	if len(recs) == 0 {
		return nil, nil
	}
	batch, err := ps.batcher.Flush(ctx)
	if err != nil {
		in.log.Errorf("Batching processors failed on %s offsets %d-%d: %v", ps.id, recs[0].Offset, recs[len(recs)-1].Offset, err)
	}
	pb := in.deliverLocked(ps, recs[0].Offset, recs[len(recs)-1].Offset, len(recs))
	if len(batch) == 0 {
		// The batching processors left nothing: the records are handled.
		in.ackLocked(ps, pb, nil)
		return nil, nil
	}
	return batch, func(_ context.Context, err error) error {
		in.mu.Lock()
		defer in.mu.Unlock()
		in.ackLocked(ps, pb, err)
		return nil
	}
}

// ackLocked records the outcome of a delivered batch. Acknowledgements of a
// partition that is being revoked, or of an earlier assignment, mark nothing.
func (in *Input) ackLocked(ps *partState, pb *pendingBatch, err error) {
	if in.parts[ps.id] != ps || ps.revoking {
		in.log.Debugf("Ignoring the acknowledgement of %s offsets %d-%d: the partition was revoked", ps.id, pb.first, pb.last)
		return
	}
	if pb.acked || pb.nacked {
		return
	}
	if err != nil {
		pb.nacked = true
		in.m.nacks.Incr(1, ps.topic, ps.label)
		if ps.failed == nil {
			ps.failed = fmt.Errorf("partition %s is stopped: the batch at offsets %d-%d was rejected by the output: %w", ps.id, pb.first, pb.last, err)
			ps.failedAt = pb.first
			ps.lastStallReport = time.Now()
			in.log.Errorf("%v; nothing at or past offset %d is committed and the partition is not replayed: fix the cause and restart the stream", ps.failed, pb.first)
			in.updatePauseLocked(ps)
		}
		return
	}
	pb.acked = true
	ps.unacked -= pb.n
	ps.lastAck = time.Now()
	for len(ps.pending) > 0 && ps.pending[0].acked {
		ps.ackedNext = ps.pending[0].last + 1
		ps.pending[0] = nil
		ps.pending = ps.pending[1:]
	}
	in.m.inFlight.Set(int64(ps.unacked), ps.topic, ps.label)
	in.updatePauseLocked(ps)
	in.SignalLocked()
}
