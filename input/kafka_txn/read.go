package kafka_txn

import (
	"context"
	"fmt"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// signalLocked wakes every ReadBatch that waits for records, an
// acknowledgement or a change of the assignment.
func (in *Input) signalLocked() {
	close(in.notify)
	in.notify = make(chan struct{})
}

// ReadBatch returns the next batch of one partition.
func (in *Input) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	for {
		in.mu.Lock()
		if in.closed {
			in.mu.Unlock()
			return nil, nil, service.ErrEndOfInput
		}
		if in.cl == nil {
			in.mu.Unlock()
			return nil, nil, service.ErrNotConnected
		}
		batch, ack, wait := in.nextBatchLocked(ctx)
		notify := in.notify
		in.mu.Unlock()
		if batch != nil {
			return batch, ack, nil
		}
		var timer *time.Timer
		var timeout <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil, nil, ctx.Err()
		case <-notify:
		case <-timeout:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// nextBatchLocked visits the partitions round-robin and returns the first
// batch that is due, or the time until a batching period ends.
func (in *Input) nextBatchLocked(ctx context.Context) (service.MessageBatch, service.AckFunc, time.Duration) {
	var wait time.Duration
	n := len(in.order)
	for i := 0; i < n; i++ {
		ps := in.parts[in.order[(in.rr+i)%n]]
		if ps == nil || ps.failed != nil || ps.revoking {
			continue
		}
		ready := in.fillLocked(ps)
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
		if batch, ack := in.flushLocked(ctx, ps); batch != nil {
			return batch, ack, 0
		}
	}
	return nil, nil, wait
}

// fillLocked moves fetched records into the partition's batch while the
// partition is below checkpoint_limit, and reports whether the batch is due.
func (in *Input) fillLocked(ps *partState) bool {
	room := in.conf.checkpointLimit - ps.unacked - len(ps.batching)
	for room > 0 && len(ps.queue) > 0 {
		rec := ps.queue[0]
		ps.queue[0] = nil
		ps.queue = ps.queue[1:]
		if ps.builder == nil {
			ps.builder = newRecordBuilder(ps.topic, ps.part, ps.epoch)
		}
		msg := ps.builder.message(rec, max(ps.hwm-rec.Offset-1, 0), ps.hwm >= 0)
		ps.batching = append(ps.batching, rec)
		room--
		if ps.batcher == nil {
			ps.batchMsgs = append(ps.batchMsgs, msg)
			continue
		}
		if ps.batcher.Add(msg) {
			return true
		}
	}
	if len(ps.queue) == 0 {
		ps.queue = nil
	}
	if len(ps.batching) == 0 {
		return false
	}
	// Without a policy a batch is what was fetched; at the limit the batch
	// must go out, or the partition would wait for itself.
	return ps.batcher == nil || room <= 0
}

// flushLocked delivers the partition's batch: it records the batch as
// pending (so that its acknowledgement can move the commit point) and
// returns it with its AckFunc. A batch its processors emptied is
// acknowledged at once.
func (in *Input) flushLocked(ctx context.Context, ps *partState) (service.MessageBatch, service.AckFunc) {
	recs := ps.batching
	batch := ps.batchMsgs
	ps.batching, ps.batchMsgs = nil, nil
	if len(recs) == 0 {
		return nil, nil
	}
	if ps.batcher != nil {
		var err error
		if batch, err = ps.batcher.Flush(ctx); err != nil {
			in.log.Errorf("Batching processors failed on %s offsets %d-%d: %v", ps.id, recs[0].Offset, recs[len(recs)-1].Offset, err)
		}
	}
	pb := &pendingBatch{first: recs[0].Offset, last: recs[len(recs)-1].Offset, n: len(recs)}
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
	in.signalLocked()
}
