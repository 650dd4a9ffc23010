// This file holds the read side: ReadBatch, building the Benthos messages of
// the emitted transactions and acknowledging them.

package debezium_txn

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

//------------------------------------------------------------------------------

// NextBatchLocked returns the next batch of whole emitted transactions.
func (in *Input) NextBatchLocked(ctx context.Context) (service.MessageBatch, service.AckFunc, time.Duration) {
	return in.nextBatchLocked(ctx)
}

// nextBatchLocked collects ready emissions into a batch, whole emissions
// only, within checkpoint_limit (one emission always goes when nothing is
// in flight, so a transaction larger than the limit never deadlocks).
func (in *Input) nextBatchLocked(ctx context.Context) (service.MessageBatch, service.AckFunc, time.Duration) {
	a := in.asm
	if a == nil || in.revoking || in.stopped != nil || in.partial != nil {
		return nil, nil, 0
	}
	capMsgs := defaultBatchCap
	if in.batcher != nil && in.conf.batching.Count > 0 {
		capMsgs = in.conf.batching.Count
	}
	var ems []*emission
	var msgs service.MessageBatch
	inBatcher := 0
	for _, em := range in.batchEms {
		inBatcher += em.n
	}
	buffered, heads := a.buffered, len(a.ends)
	full := false
	for !full {
		n := in.unacked + len(msgs) + inBatcher
		if n >= in.conf.checkpointLimit && n > 0 {
			break
		}
		if in.batcher == nil && len(msgs) >= capMsgs {
			break
		}
		em := a.next(max(capMsgs-len(msgs)-inBatcher, 1))
		if em == nil {
			break
		}
		in.lastEmit = time.Now()
		for _, om := range em.msgs {
			msg := in.messageLocked(om)
			if in.batcher != nil {
				if in.batcher.Add(msg) {
					full = true
				}
				continue
			}
			msgs = append(msgs, msg)
		}
		a.recycleMsgs(em)
		if in.batcher != nil {
			in.batchEms = append(in.batchEms, em)
			inBatcher += em.n
		} else {
			ems = append(ems, em)
		}
	}
	for _, n := range a.notes {
		in.log.Errorf("%s", n)
	}
	a.notes = nil
	if a.buffered != buffered || len(a.ends) != heads {
		// Emitting freed buffer space and moved the oldest transaction:
		// what the next one needs is resumed now. The poll loop looks
		// again only when a fetch returns, and at the bound none may be
		// in flight, everything read being paused (ARCHITECTURE.md §13.8).
		in.updatePausesLocked()
		in.readAheadTakenLocked()
	}
	in.syncMetricsLocked()
	var wait time.Duration
	if in.batcher != nil {
		if len(in.batchEms) == 0 {
			return nil, nil, 0
		}
		if !full {
			if d, timed := in.batcher.UntilNext(); timed && d > periodDue {
				return nil, nil, d
			}
		}
		flushed, err := in.batcher.Flush(ctx)
		if err != nil {
			in.log.Errorf("Batching processors failed on transaction %s: %v", in.batchEms[0].firstID, err)
		}
		msgs, ems, in.batchEms = flushed, in.batchEms, nil
	}
	if len(ems) == 0 {
		return nil, nil, wait
	}
	n := 0
	for _, em := range ems {
		n += em.n
	}
	for _, msg := range msgs {
		in.seq++
		msg.MetaSetMut(contract.KeySeq, strconv.FormatInt(in.seq, 10))
	}
	in.unacked += n
	in.m.inFlight.Set(int64(in.unacked))
	if len(msgs) == 0 {
		// The batching processors left nothing: nothing to wait for.
		in.ackLocked(in.gen, ems, n, nil)
		return nil, nil, 0
	}
	gen := in.gen
	return msgs, func(_ context.Context, err error) error {
		in.mu.Lock()
		defer in.mu.Unlock()
		in.ackLocked(gen, ems, n, err)
		return nil
	}, 0
}

// messageLocked renders one emitted row with its metadata and the contract
// (the sequence number is stamped when the batch goes out).
func (in *Input) messageLocked(om outMsg) *service.Message {
	if in.mb == nil {
		in.mb = newMsgBuilder()
	}
	msg := in.mb.message(om)
	db, table := om.ev.defaultDatabase(), om.ev.table
	if in.conf.database != nil {
		s, err := in.conf.database.TryString(msg)
		if err != nil {
			msg.SetError(fmt.Errorf("interpolating database: %w", err))
		}
		db = s
	}
	if in.conf.table != nil {
		s, err := in.conf.table.TryString(msg)
		if err != nil {
			msg.SetError(fmt.Errorf("interpolating table: %w", err))
		}
		table = s
	}
	epoch := in.epoch
	if om.side {
		epoch = in.sideEpochLocked(om.rec.tp)
	}
	meta := contract.Meta{
		Partition: om.partition, Database: db, Table: table, TxnID: om.txnID, TxnEnd: om.end,
		HasSeq: true, SeqSource: in.seqSource,
		HasOffset: true, SourceOffset: om.sourceOffset,
		HasEpoch: true, Epoch: epoch,
	}
	if len(om.ev.row) > 0 {
		// The decoder built the row: one JSON object, "__op": 1 only on a
		// delete; with schemas, its source table (ARCHITECTURE.md §14.1).
		in.cw.WriteRowFacts(msg, meta, om.ev.row, contract.RowFacts{Delete: om.ev.op == opDelete, Schema: om.ev.source})
	} else {
		in.cw.Write(msg, meta)
	}
	return msg
}

// sideEpochLocked returns the assignment epoch of a side partition, claimed
// at its first row of the assignment (an epoch and the lease).
func (in *Input) sideEpochLocked(p tp) uint64 {
	if e, ok := in.sideEpochs[p]; ok {
		return e
	}
	e := in.ClaimLocked(p.String())
	in.sideEpochs[p] = e
	return e
}

// ackLocked records the outcome of a delivered batch. Acknowledgements of an
// earlier assignment, or during a revoke, mark nothing: they are the output
// releasing fenced batches, not commits.
func (in *Input) ackLocked(gen uint64, ems []*emission, n int, err error) {
	if gen != in.gen || in.revoking || in.asm == nil {
		return
	}
	in.unacked -= n
	in.m.inFlight.Set(int64(in.unacked))
	if err != nil {
		if in.stopped == nil {
			in.stopped = fmt.Errorf("the output rejected the batch starting with transaction %q: %w; nothing past it is emitted or committed: fix the cause and restart the stream", ems[0].firstID, err)
			in.m.stopped.Set(1)
			in.log.Errorf("%v", in.stopped)
		}
		return
	}
	if !in.reg.Tracking() {
		for _, em := range ems {
			in.asm.acked(em)
		}
	}
	in.afterFeedLocked()
	in.SignalLocked()
}

// CommittedLocked receives the output's committed-through offsets.
func (in *Input) CommittedLocked(partition string, offset int64) {
	if in.asm == nil {
		return
	}
	in.asm.committed(partition, offset)
	in.afterFeedLocked()
	in.SignalLocked()
}
