package txnassembler

import (
	"context"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// benchBatches builds batches of 100 events: transactions of one BEGIN, eight
// rows and one END (envelope) or of eight rows (maxwell), over four
// partitions.
func benchBatches(b *testing.B, format string, n int) []service.MessageBatch {
	b.Helper()
	var out []service.MessageBatch
	offsets := map[int32]int64{}
	var batch service.MessageBatch
	add := func(part int32, body string) {
		batch = append(batch, kafkaMsg("cdc", part, offsets[part], body))
		offsets[part]++
		if len(batch) == 100 {
			out = append(out, batch)
			batch = nil
		}
	}
	for i := 0; len(out) < n; i++ {
		part := int32(i % 4)
		txn := "t" + string(rune('a'+i%26)) + string(rune('a'+(i/26)%26))
		switch format {
		case formatEnvelope:
			add(part, envelope(int(part), txn, "TXN_BEGIN", "", "", ""))
			for r := 0; r < 8; r++ {
				add(part, envelope(int(part), txn, "DATA", "test", "orders", `{"order_id":1,"customer_id":100,"total_amount":99.99,"order_status":"created"}`))
			}
			add(part, envelope(int(part), txn, "TXN_END", "", "", ""))
		case formatMaxwell:
			for r := 0; r < 7; r++ {
				add(part, maxwellRow1)
			}
			add(part, maxwellRow2)
		}
	}
	return out
}

func benchmarkFormat(b *testing.B, format string) {
	conf, err := processorSpec().ParseYAML("format: "+format, nil)
	if err != nil {
		b.Fatal(err)
	}
	p, err := newFromConfig(conf, service.MockResources())
	if err != nil {
		b.Fatal(err)
	}
	batches := benchBatches(b, format, 50)
	b.ReportAllocs()
	b.ResetTimer()
	msgs := 0
	for i := 0; i < b.N; i++ {
		// A fresh partition state per round keeps offsets increasing.
		if i%len(batches) == 0 {
			p.parts = map[string]*partState{}
		}
		batch := batches[i%len(batches)]
		if _, err := p.ProcessBatch(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
		msgs += len(batch)
	}
	b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkEnvelope(b *testing.B) { benchmarkFormat(b, formatEnvelope) }
func BenchmarkMaxwell(b *testing.B)  { benchmarkFormat(b, formatMaxwell) }
