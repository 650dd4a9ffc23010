package workload

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
)

// WriteBatch writes what Write writes one transaction at a time: every
// record on its partition in the same order, the model and the stats
// alike; and a partition's records share Kafka batches (fewer batches than
// records), which is what it is for.
func TestDebeziumWriteBatchEqualsWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 30
	produce := func(batched bool) (map[string][]string, *DebeziumProducer, *Model, int) {
		c := kafka.New(t)
		src := NewDebeziumSource(DebeziumOptions{Partitions: 2, Schemas: true, Seed: 5})
		require.NoError(t, CreateDebeziumTopics(ctx, c.Brokers(), src))
		model := NewModel()
		prod, err := NewDebeziumProducer(DebeziumProducerOptions{Brokers: c.Brokers()}, src, model)
		require.NoError(t, err)
		t.Cleanup(prod.Close)
		var txns []DebeziumTxn
		for i := 0; i < n; i++ {
			txns = append(txns, src.Next())
		}
		if batched {
			require.NoError(t, prod.WriteBatch(ctx, txns[:n/2]))
			require.NoError(t, prod.WriteBatch(ctx, txns[n/2:]))
		} else {
			for _, tx := range txns {
				require.NoError(t, prod.Write(ctx, tx))
			}
		}
		var batches batchCounter
		var topics []string
		for tp := range src.AllTopics() {
			topics = append(topics, tp)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers()...), kgo.ConsumeTopics(topics...),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(&batches))
		require.NoError(t, err)
		defer cl.Close()
		want := int(prod.Stats.Records.Load())
		got := map[string][]string{}
		read := 0
		for read < want && ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				k := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
				got[k] = append(got[k], string(r.Key)+"="+string(r.Value))
				read++
			})
		}
		require.Equal(t, want, read)
		return got, prod, model, int(batches.n.Load())
	}
	one, p1, m1, b1 := produce(false)
	all, p2, m2, b2 := produce(true)
	// Per transaction a partition gets one or two records; batched, the
	// fifteen transactions of a call share each partition's batch.
	assert.Less(t, b2*3, b1, "batches: %d written one transaction at a time, %d batched", b1, b2)
	assert.Equal(t, one, all, "every partition's records, in order")
	assert.Equal(t, p1.Stats.Txns.Load(), p2.Stats.Txns.Load())
	assert.Equal(t, p1.Stats.Events.Load(), p2.Stats.Events.Load())
	assert.Equal(t, p1.Stats.Records.Load(), p2.Stats.Records.Load())
	assert.Equal(t, p1.Stats.Largest.Load(), p2.Stats.Largest.Load())
	assert.Equal(t, int64(n), p2.Stats.Txns.Load())
	assert.Equal(t, m1.Snapshot(), m2.Snapshot(), "the model")
}

// batchCounter counts the record batches a consumer reads.
type batchCounter struct{ n atomic.Int64 }

func (b *batchCounter) OnFetchBatchRead(kgo.BrokerMetadata, string, int32, kgo.FetchBatchMetrics) {
	b.n.Add(1)
}
