package starrocks_txn

import (
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// BenchmarkParseBatch measures the per-message cost of reading the contract
// and the target table of a large batch; it must not grow with the batch
// size (it once did: interpolation copied the whole batch per message).
func BenchmarkParseBatch(b *testing.B) {
	for _, n := range []int{100, 1000, 4000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			pc, err := outputSpec().ParseYAML("load_urls: [ http://fake:8030 ]", nil)
			if err != nil {
				b.Fatal(err)
			}
			c, err := configFromParsed(pc)
			if err != nil {
				b.Fatal(err)
			}
			o := newOutput(c, nil, nil, service.MockResources())
			batch := make(service.MessageBatch, n)
			for i := range batch {
				m := service.NewMessage([]byte(`{"order_id":1,"customer_id":2}`))
				m.MetaSetMut("starrocks_database", "test")
				m.MetaSetMut("starrocks_table", "orders")
				batch[i] = m
			}
			b.ResetTimer()
			for b.Loop() {
				targets := batchTargets{db: batch.InterpolationExecutor(o.conf.database), table: batch.InterpolationExecutor(o.conf.table)}
				for i := range batch {
					o.parseBody(batch, i, o.parseContract(batch[i], &call{}, time.Now()), targets)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
		})
	}
}
