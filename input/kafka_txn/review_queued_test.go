package kafka_txn

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// The running count of queued records (queuedCount) is never below the
// true sum of the partitions' queues, whatever mix of fetches, takes,
// revokes, drops, re-assignments and closes changes them; so the read-ahead
// question answers as a full sum of the partitions being fetched would.
func TestReviewQueuedCountNeverBelowTheQueues(t *testing.T) {
	res, _ := newResources()
	in := newTestInput(t, res, `
seed_brokers: [ "127.0.0.1:1" ]
topics: [ t ]
consumer_group: g-review-queued
`)
	in.readAhead = readAheadLimit{records: 40, bytes: 1 << 20}
	rng := rand.New(rand.NewPCG(1, 2))
	parts := []int32{0, 1, 2, 3}
	in.Assign(context.Background(), map[string][]int32{"t": parts})
	for step := 0; step < 20000; step++ {
		p := parts[rng.IntN(len(parts))]
		in.mu.Lock()
		ps := in.parts[contract.KafkaPartition("t", p)]
		switch op := rng.IntN(10); {
		case op < 4 && ps != nil && !ps.revoking:
			var recs []*kgo.Record
			for i := rng.IntN(8); i > 0; i-- {
				recs = append(recs, &kgo.Record{Topic: "t", Partition: p, Offset: max(ps.nextFetch, 0) + int64(i), Value: make([]byte, rng.IntN(100))})
			}
			ps.addFetched(kgo.FetchTopicPartition{Topic: "t", FetchPartition: kgo.FetchPartition{Partition: p, Records: recs, HighWatermark: -1}})
		case op < 7 && ps != nil && len(ps.queue) > 0:
			ps.popQueue()
		case op == 7 && ps != nil:
			ps.paused = !ps.paused
		case op == 8 && ps != nil:
			ids, _ := in.StopLocked(map[string][]int32{"t": {p}}, rng.IntN(2) == 0)
			if rng.IntN(2) == 0 {
				in.DropLocked(ids, false)()
			}
		}
		in.mu.Unlock()
		if rng.IntN(50) == 0 {
			in.Assign(context.Background(), map[string][]int32{"t": parts})
		}
		if rng.IntN(2000) == 0 {
			in.Closed(context.Background())
			in.Assign(context.Background(), map[string][]int32{"t": parts})
		}
		in.mu.Lock()
		recs, bytes, frecs, fbytes := 0, 0, 0, 0
		for _, ps := range in.parts {
			recs += len(ps.queue)
			bytes += ps.queueBytes
			if !ps.paused && ps.failed == nil && !ps.revoking {
				frecs += len(ps.queue)
				fbytes += ps.queueBytes
			}
		}
		require.GreaterOrEqual(t, in.queued.records, recs, "step %d", step)
		require.GreaterOrEqual(t, in.queued.bytes, bytes, "step %d", step)
		require.Equal(t, frecs >= in.readAhead.records || fbytes >= in.readAhead.bytes, in.readAheadFull(), "step %d", step)
		in.mu.Unlock()
	}
}
