package kafka_txn

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkReadCommitted measures delivery of committed producer
// transactions (100 records each, 4 partitions) through ReadBatch with
// acknowledgements, batches of up to 1000 per partition.
func BenchmarkReadCommitted(b *testing.B) {
	const parts = 4
	c := newCluster(b, parts)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("bench"))
	require.NoError(b, err)
	defer cl.Close()
	ctx := context.Background()
	total := b.N
	for i := 0; i < total; i += 100 {
		require.NoError(b, cl.BeginTransaction())
		for j := i; j < i+100 && j < total; j++ {
			cl.Produce(ctx, &kgo.Record{Partition: int32(j % parts), Value: []byte(`{"type":"DATA","i":` + strconv.Itoa(j) + `}`)}, nil)
		}
		require.NoError(b, cl.Flush(ctx))
		require.NoError(b, cl.EndTransaction(ctx, kgo.TryCommit))
	}
	res, _ := newResources()
	conf, err := ConfigSpec().ParseYAML(testYAML(c, fmt.Sprintf("bench-%d", total), "batching:\n  count: 1000\n  period: 10ms\n"), nil)
	require.NoError(b, err)
	in, err := New(conf, res)
	require.NoError(b, err)
	require.NoError(b, in.Connect(ctx))
	defer func() { _ = in.Close(ctx) }()
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < total; {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		batch, ack, err := in.ReadBatch(rctx)
		cancel()
		require.NoError(b, err)
		n += len(batch)
		require.NoError(b, ack(ctx, nil))
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "msg/s")
}
