package kafka_txn

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// rebuildOrderLocked refreshes the sorted round-robin order of the assigned
// partitions after the assignment changed.
func (in *Input) rebuildOrderLocked() {
	in.order = in.order[:0]
	for id := range in.parts {
		in.order = append(in.order, id)
	}
	sort.Strings(in.order)
	in.rr = 0
}

// onAssigned creates the state of newly assigned partitions, each with a new
// assignment epoch from the registry.
func (in *Input) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	var ids []string
	in.mu.Lock()
	for topic, parts := range assigned {
		for _, p := range parts {
			id := contract.KafkaPartition(topic, p)
			if _, exists := in.parts[id]; exists {
				continue
			}
			ps := &partState{
				topic: topic, part: p, id: id, label: strconv.Itoa(int(p)),
				firstOffset: -1, nextFetch: -1, deliveredNext: -1, ackedNext: -1,
				committedThru: -1, lastCommitted: -1, groupOffset: -1, hwm: -1, failedAt: -1,
			}
			if off, ok := in.groupOffsets[id]; ok {
				ps.groupOffset = off
			}
			in.m.initPartition(ps)
			ps.lastFlush = time.Now()
			if in.conf.batching.benthos {
				b, err := in.conf.batching.policy.NewBatcher(in.mgr)
				if err != nil {
					// The policy was built once in the constructor, so this
					// cannot fail; fall back to fetch-sized batches.
					in.log.Errorf("Creating the batching policy of %s: %v", id, err)
				} else {
					ps.batcher = b
				}
			}
			// A new assignment epoch: a batch of an earlier assignment that
			// reaches the assembler or the output late is dropped there.
			ps.epoch = in.reg.Assign(id)
			in.parts[id] = ps
			ids = append(ids, id)
			// The output publishes only for rows it received in this
			// assignment.
			in.reg.Forget(id)
		}
	}
	in.rebuildOrderLocked()
	in.signalLocked()
	in.mu.Unlock()
	// franz-go hands the assignment over after its sync was answered
	// without error: the sync's send time renews the lease (lease.go). The
	// new partitions are in in.parts before the lease is read, so a
	// heartbeat's renewal either sees them or is seen here.
	until := in.lease.Assigned()
	if len(ids) > 0 {
		sort.Strings(ids)
		if !until.IsZero() {
			in.reg.Renew(ids, until)
		}
		in.log.Infof("Assigned partitions %v", ids)
	}
}

// adjustOffsets starts a newly assigned partition after the output's durable
// progress (exactly-once mode: the END offset through which StarRocks holds
// the partition's source transactions) when that is ahead of the group's
// committed offset, so that a crash between a StarRocks commit and the next
// offset commit re-reads nothing. Without progress the group offset stands.
func (in *Input) adjustOffsets(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	in.mu.Lock()
	for topic, parts := range offsets {
		for p, o := range parts {
			// A partition without a committed offset has the reset offset
			// here, negative.
			if off := o.EpochOffset().Offset; off >= 0 {
				id := contract.KafkaPartition(topic, p)
				in.groupOffsets[id] = off
				if ps := in.parts[id]; ps != nil {
					ps.groupOffset = off
				}
			}
		}
	}
	in.mu.Unlock()
	if !in.conf.startAfterProgress {
		return offsets, nil
	}
	for topic, parts := range offsets {
		for p, o := range parts {
			id := contract.KafkaPartition(topic, p)
			pctx, cancel := context.WithTimeout(ctx, in.conf.RevokeTimeout)
			end, ok, err := in.reg.Progress(pctx, id)
			cancel()
			if err != nil {
				in.log.Warnf("Reading the output's progress of %s failed, starting at the group's offset (replays are dropped by the output): %v", id, err)
				continue
			}
			if !ok {
				continue
			}
			if cur := o.EpochOffset().Offset; end+1 > cur {
				parts[p] = kgo.NewOffset().At(end + 1)
				in.log.Infof("Starting %s at offset %d after the output's committed progress (group offset %d)", id, end+1, cur)
			}
		}
	}
	return offsets, nil
}

// onRevoked fences, commits and releases revoked partitions.
func (in *Input) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	in.release(ctx, cl, revoked, true)
}

// onLost fences and releases lost partitions without committing: another
// member may already own them.
func (in *Input) onLost(ctx context.Context, cl *kgo.Client, lost map[string][]int32) {
	in.release(ctx, cl, lost, false)
}

// release gives up partitions: it stops their delivery, fences them in the
// output (bounded by revoke_timeout), commits them (on a revoke, not on a
// loss) and forgets them.
func (in *Input) release(ctx context.Context, cl *kgo.Client, tps map[string][]int32, commit bool) {
	var ids []string
	var lastDelivery time.Time
	in.mu.Lock()
	for topic, parts := range tps {
		for _, p := range parts {
			id := contract.KafkaPartition(topic, p)
			ps := in.parts[id]
			if ps == nil {
				continue
			}
			// From here on acknowledgements of the partition mark nothing,
			// and nothing more of it is delivered.
			ps.revoking = true
			ps.dropPending()
			ids = append(ids, id)
			if ps.lastDelivery.After(lastDelivery) {
				lastDelivery = ps.lastDelivery
			}
		}
	}
	in.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	sort.Strings(ids)

	// Wait a moment for a batch on its way to the output, fence, and commit
	// on a revoke (internal/kafka).
	var commitFn func(context.Context) error
	if commit {
		commitFn = func(ctx context.Context) error { return in.commit(ctx, cl, ids) }
	}
	err := in.conf.Release(ctx, in.log, ids, lastDelivery, in.reg.Fence, commitFn)
	in.mu.Lock()
	for _, id := range ids {
		if ps := in.parts[id]; ps != nil {
			in.m.fences.Incr(1, ps.topic, ps.label)
		}
	}
	in.mu.Unlock()
	if err != nil {
		in.log.Warnf("Committing revoked partitions %v: %v", ids, err)
	}

	var batchers []*service.Batcher
	in.mu.Lock()
	for _, id := range ids {
		ps := in.parts[id]
		if ps == nil {
			continue
		}
		if ps.batcher != nil {
			batchers = append(batchers, ps.batcher)
		}
		in.m.inFlight.Set(0, ps.topic, ps.label)
		in.m.paused.Set(0, ps.topic, ps.label)
		in.m.lag.Set(0, ps.topic, ps.label)
		in.m.committedLag.Set(0, ps.topic, ps.label)
		delete(in.parts, id)
		delete(in.groupOffsets, id)
		if ps.paused && in.cl != nil {
			in.cl.ResumeFetchPartitions(map[string][]int32{ps.topic: {ps.part}})
		}
	}
	in.rebuildOrderLocked()
	in.signalLocked()
	in.mu.Unlock()
	// After the fence: the output holds nothing of them any more.
	in.reg.Unlease(ids)
	for _, b := range batchers {
		_ = b.Close(context.Background())
	}
	if commit {
		in.log.Infof("Revoked partitions %v (fenced, committed, released)", ids)
	} else {
		in.log.Warnf("Lost partitions %v (fenced, not committed)", ids)
	}
}
