package workload

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A read_committed consumer whose fetch responses are bounded by their
// MaxBytes (here 16 KiB over 4 partitions, as 50 MiB over 256 partitions in
// the bench) receives records of aborted producer transactions from kfake
// unless the topic is guarded; guarded, it receives exactly the committed
// source transactions.
func TestGuardFetchesKeepsAbortedRecordsOutOfReadCommittedFetches(t *testing.T) {
	const partitions, fetchMaxBytes = 4, 16 << 10
	maxBatch, err := GuardedBatchBytes(partitions, fetchMaxBytes)
	require.NoError(t, err)
	require.Equal(t, int32(2048), maxBatch)

	for _, guarded := range []bool{false, true} {
		t.Run("guarded="+strconv.FormatBool(guarded), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := kfake.NewCluster(kfake.NumBrokers(1))
			require.NoError(t, err)
			defer c.Close()
			if guarded {
				require.NoError(t, CreateGuardedTopic(c, "cdc", partitions, maxBatch))
			} else {
				require.NoError(t, c.CreateTopic("cdc", partitions, map[string]string{"max.message.bytes": strconv.Itoa(int(maxBatch))}))
			}

			g := NewGenerator(Options{Partitions: partitions, Seed: 3, Events: true})
			p, err := NewProducer(ProducerOptions{Brokers: c.ListenAddrs(), Topic: "cdc", AbortRatio: 0.3, TxnsPerKafkaTxn: 2, BatchMaxBytes: maxBatch}, g, NewModel())
			require.NoError(t, err)
			defer p.Close()
			require.NoError(t, p.Produce(ctx, 300))
			require.Greater(t, p.Stats.Aborted.Load(), int64(50))

			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("cdc"),
				kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchMaxBytes(fetchMaxBytes))
			require.NoError(t, err)
			defer cl.Close()
			var records int64
			txns := map[string]bool{}
			count := func(fs kgo.Fetches) int {
				require.NoError(t, ctx.Err())
				fs.EachRecord(func(r *kgo.Record) {
					records++
					txns[string(r.Key)] = true
				})
				return fs.NumRecords()
			}
			for records < p.Stats.Records.Load() {
				count(cl.PollFetches(ctx))
			}
			// Then until nothing more comes.
			for {
				quiet, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				n := count(cl.PollFetches(quiet))
				cancel()
				if n == 0 {
					break
				}
			}

			if !guarded {
				assert.Greater(t, records, p.Stats.Records.Load(), "kfake served records of aborted transactions")
				assert.Greater(t, int64(len(txns)), p.Stats.Committed.Load())
				return
			}
			assert.Equal(t, p.Stats.Records.Load(), records)
			assert.Equal(t, p.Stats.Committed.Load(), int64(len(txns)), "exactly the committed source transactions")
		})
	}
}
