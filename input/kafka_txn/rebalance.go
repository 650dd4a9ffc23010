package kafka_txn

// Home of G54 (ARCHITECTURE.md §11.2): fenced hand-over: a revoked partition's delivery stops,
// its fence runs, the last commit covers what it committed. Main test:
// TestRevokeCommitsWhatTheFenceCommitted.
//
// Home of G55 (ARCHITECTURE.md §11.2): each assigned partition is claimed with a new assignment
// epoch and this member's group lease. Main test: TestTwoMembersSplitPartitionsAndRevokeFences.

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

// Assign creates the state of newly assigned partitions, each claimed in
// the registry (a new assignment epoch, its lease: internal/kafka/consumer).
func (in *Input) Assign(_ context.Context, assigned map[string][]int32) {
	var ids []string
	in.mu.Lock()
	defer in.mu.Unlock()
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
				queued: &in.queued,
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
			ps.epoch = in.ClaimLocked(id)
			in.parts[id] = ps
			ids = append(ids, id)
		}
	}
	in.rebuildOrderLocked()
	in.SignalLocked()
	if len(ids) > 0 {
		sort.Strings(ids)
		in.log.Infof("Assigned partitions %v", ids)
	}
}

// AdjustOffsets starts a newly assigned partition after the output's durable
// progress (exactly-once mode: the END offset through which StarRocks holds
// the partition's source transactions) when that is ahead of the group's
// committed offset, so that a crash between a StarRocks commit and the next
// offset commit re-reads nothing. Without progress the group offset stands.
func (in *Input) AdjustOffsets(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
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

// StopLocked stops the delivery of released partitions: from here on their
// acknowledgements mark nothing, and what was fetched of them is dropped.
// Their ids are fenced (internal/kafka/consumer).
func (in *Input) StopLocked(tps map[string][]int32, _ bool) ([]string, time.Time) {
	var ids []string
	var lastDelivery time.Time
	for topic, parts := range tps {
		for _, p := range parts {
			id := contract.KafkaPartition(topic, p)
			ps := in.parts[id]
			if ps == nil {
				continue
			}
			ps.revoking = true
			ps.dropPending()
			ids = append(ids, id)
			if ps.lastDelivery.After(lastDelivery) {
				lastDelivery = ps.lastDelivery
			}
		}
	}
	return ids, lastDelivery
}

// DropLocked forgets released partitions after their fence (and commit):
// their gauges go to 0, a paused one is resumed for its next owner in this
// process, and their batchers are closed once the lock is released.
func (in *Input) DropLocked(ids []string, _ bool) func() {
	var batchers []*service.Batcher
	for _, id := range ids {
		ps := in.parts[id]
		if ps == nil {
			continue
		}
		in.m.fences.Incr(1, ps.topic, ps.label)
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
	return func() {
		for _, b := range batchers {
			_ = b.Close(context.Background())
		}
	}
}
