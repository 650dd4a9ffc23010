package kafka_txn

// Home of G56 (ARCHITECTURE.md §11.2): checkpoint_limit bounds a partition's unacknowledged
// messages; a partition held there is reported. Main test:
// TestCheckpointLimitPausesAndReportsStall.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// updatePauseLocked pauses fetching of a partition that holds checkpoint_limit
// messages (fetched, batching or unacknowledged) or is stopped by a nack, and
// resumes it otherwise.
func (in *Input) updatePauseLocked(ps *partState) {
	if in.cl == nil || ps.revoking {
		return
	}
	want := ps.wantPaused(in.conf.checkpointLimit)
	if want == ps.paused {
		return
	}
	ps.paused = want
	if want {
		// Its queue no longer counts against the read-ahead.
		in.readAheadTakenLocked()
	}
	tp := map[string][]int32{ps.topic: {ps.part}}
	if want {
		in.cl.PauseFetchPartitions(tp)
		in.m.paused.Set(1, ps.topic, ps.label)
	} else {
		in.cl.ResumeFetchPartitions(tp)
		in.m.paused.Set(0, ps.topic, ps.label)
	}
}

// updateLagLocked publishes the partition's lag gauges, each when its value
// changed: a poll visits every partition its fetches name, with hundreds of
// partitions mostly ones with nothing new, whose lags are what they were.
func (in *Input) updateLagLocked(ps *partState) {
	if lag, ok := ps.lag(); ok && ps.lagSet.changed(lag) {
		in.m.lag.Set(lag, ps.topic, ps.label)
	}
	if lag, ok := ps.committedLag(); ok && ps.committedLagSet.changed(lag) {
		in.m.committedLag.Set(lag, ps.topic, ps.label)
	}
}

// refreshPausedHWM reads the high watermarks of paused partitions: no fetch
// reports them while fetching is paused, and the lag gauges must keep rising
// while a partition is stalled at checkpoint_limit or by a nack.
func (in *Input) refreshPausedHWM(ctx context.Context, cl *kgo.Client) {
	in.mu.Lock()
	seen := map[string]bool{}
	var topics []string
	for _, ps := range in.parts {
		if ps.paused && !ps.revoking && !seen[ps.topic] {
			seen[ps.topic] = true
			topics = append(topics, ps.topic)
		}
	}
	in.mu.Unlock()
	if len(topics) == 0 {
		return
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		if ctx.Err() == nil && in.logLim.Due("hwm:"+err.Error()) {
			in.log.Debugf("Reading the high watermarks of paused partitions: %v", err)
		}
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	ends.Each(func(o kadm.ListedOffset) {
		ps := in.parts[contract.KafkaPartition(o.Topic, o.Partition)]
		if o.Err != nil || ps == nil || !ps.paused || ps.revoking || o.Offset <= ps.hwm {
			return
		}
		ps.hwm = o.Offset
		in.updateLagLocked(ps)
	})
}

// Fetched spreads a poll's records over the partitions' queues, where
// NextBatchLocked picks them up.
func (in *Input) Fetched(fetches kgo.Fetches) func() {
	return func() {
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			ps := in.parts[contract.KafkaPartition(fp.Topic, fp.Partition)]
			if ps == nil || ps.revoking {
				return
			}
			ps.addFetched(fp)
			in.updatePauseLocked(ps)
			in.updateLagLocked(ps)
		})
	}
}

// addFetched queues the records of one fetch of the partition. A record
// below the next offset to fetch is skipped: a partition is never delivered
// backwards.
func (ps *partState) addFetched(fp kgo.FetchTopicPartition) {
	if fp.HighWatermark >= 0 {
		ps.hwm = fp.HighWatermark
	}
	for _, r := range fp.Records {
		if r.Offset < ps.nextFetch {
			continue
		}
		if ps.firstOffset < 0 {
			ps.firstOffset = r.Offset
		}
		ps.nextFetch = r.Offset + 1
		ps.queue = append(ps.queue, r)
		ps.queueBytes += len(r.Value)
		ps.queued.add(1, len(r.Value))
	}
}

// wantPaused reports whether fetching of the partition must pause: it holds
// limit messages (fetched, batching or unacknowledged) or a nack stopped it.
func (ps *partState) wantPaused(limit int) bool {
	return ps.failed != nil || ps.unacked+len(ps.batching)+len(ps.queue) >= limit
}

// lag is the high watermark minus the next offset to deliver (transaction
// markers count); ok is false until both are known.
func (ps *partState) lag() (int64, bool) {
	next := ps.deliveredNext
	if next < 0 {
		next = ps.firstOffset
	}
	if ps.hwm < 0 || next < 0 {
		return 0, false
	}
	return max(ps.hwm-next, 0), true
}
