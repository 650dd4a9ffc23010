package starrocks_txn

import (
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// BenchmarkParseBatch measures the per-message cost of reading the contract
// and the target table of a large batch; it must not grow with the batch
// size (it once did: interpolation copied the whole batch per message).
// "strings" is a contract set by hand (the body validated and its __op
// decoded by the output), "typed" one the assembler wrote with the facts it
// established about the body (contract.Writer.WriteRow), as in a pipeline.
func BenchmarkParseBatch(b *testing.B) {
	for _, form := range []string{"strings", "typed"} {
		for _, n := range []int{100, 1000, 4000} {
			b.Run(fmt.Sprintf("%s/%d", form, n), func(b *testing.B) { benchmarkParseBatch(b, form, n) })
		}
	}
}

func benchmarkParseBatch(b *testing.B, form string, n int) {
	{
		{
			pc, err := parseTestYAML("load_urls: [ http://fake:8030 ]", nil)
			if err != nil {
				b.Fatal(err)
			}
			c, err := configFromParsed(pc)
			if err != nil {
				b.Fatal(err)
			}
			o := newOutput(c, nil, nil, service.MockResources())
			batch := make(service.MessageBatch, n)
			var w contract.Writer
			for i := range batch {
				body := []byte(`{"order_id":1,"customer_id":2,"status":"created","amount":"12.50","note":"a row of a usual size"}`)
				m := service.NewMessage(nil)
				m.SetBytes(body)
				meta := contract.Meta{Partition: "cdc/0", Database: "test", Table: "orders", TxnID: fmt.Sprint(i / 5),
					SeqSource: "a1", Seq: int64(i + 1), HasSeq: true, SourceOffset: int64(i), HasOffset: true, TxnEnd: i%5 == 4}
				if form == "typed" {
					w.WriteRow(m, meta, body, false)
				} else {
					for k, v := range map[string]string{
						contract.KeyPartition: meta.Partition, contract.KeyDatabase: meta.Database, contract.KeyTable: meta.Table,
						contract.KeyTxnID: meta.TxnID, contract.KeySeqSource: meta.SeqSource, contract.KeySeq: fmt.Sprint(meta.Seq),
						contract.KeySourceOffset: fmt.Sprint(meta.SourceOffset), contract.KeyTxnEnd: fmt.Sprint(meta.TxnEnd),
					} {
						m.MetaSetMut(k, v)
					}
				}
				batch[i] = m
			}
			b.ResetTimer()
			for b.Loop() {
				targets := batchTargets{db: batch.InterpolationExecutor(o.conf.database), table: batch.InterpolationExecutor(o.conf.table)}
				block := make([]item, len(batch))
				c := &call{}
				now := time.Now()
				for i := range batch {
					o.parseBody(batch, i, o.parseContractInto(&block[i], batch[i], c, now), targets)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
		}
	}
}
