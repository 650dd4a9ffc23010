package txnassembler

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
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

// workloadBatches renders the workload generator's traffic (the bench's and
// the demo's) as the kafka_txn input delivers it: envelope or maxwell
// bodies with the input's nine metadata keys, in batches of batchSize of
// one partition each, offsets increasing per partition.
func workloadBatches(tb testing.TB, format string, txns, batchSize int) []service.MessageBatch {
	tb.Helper()
	const parts = 4
	gen := workload.NewGenerator(workload.Options{Partitions: parts, Seed: 1, Events: true})
	pending := make([]service.MessageBatch, parts)
	offsets := make([]int64, parts)
	var out []service.MessageBatch
	for i := 0; i < txns; i++ {
		t := gen.Next(int32(i % parts))
		var bodies [][]byte
		var err error
		if format == formatMaxwell {
			bodies = maxwellRows(t, 1000+int64(i))
		} else if bodies, err = workload.Envelope(t); err != nil {
			tb.Fatal(err)
		}
		p := t.Partition
		for _, body := range bodies {
			pending[p] = append(pending[p], inputMsg("cdc", p, offsets[p], t.ID, body))
			offsets[p]++
			if len(pending[p]) == batchSize {
				out = append(out, pending[p])
				pending[p] = nil
			}
		}
	}
	for _, b := range pending {
		if len(b) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// maxwellRows renders a workload transaction as maxwell would: one row per
// change, xid and commit on the last.
func maxwellRows(t workload.Txn, xid int64) [][]byte {
	out := make([][]byte, 0, len(t.Changes))
	for i, c := range t.Changes {
		row := map[string]any{"database": workload.Database, "table": c.Table, "type": "insert", "ts": 1477053217,
			"xid": xid, "position": "master.000006:800911", "data": c.Row}
		if c.Delete {
			row["type"] = "delete"
			data := map[string]any{}
			for k, v := range c.Row {
				if k != contract.OpField {
					data[k] = v
				}
			}
			row["data"] = data
		}
		if i == len(t.Changes)-1 {
			row["commit"] = true
		} else {
			row["xoffset"] = i
		}
		b, _ := json.Marshal(row)
		out = append(out, b)
	}
	return out
}

// inputMsg is a record as kafka_txn delivers it, with its nine metadata
// keys.
func inputMsg(topic string, partition int32, offset int64, key string, body []byte) *service.Message {
	m := service.NewMessage(body)
	m.MetaSetMut("kafka_key", key)
	m.MetaSetMut("kafka_topic", topic)
	m.MetaSetMut("kafka_partition", int(partition))
	m.MetaSetMut("kafka_offset", int(offset))
	m.MetaSetMut("kafka_timestamp_unix", int64(1764600000))
	m.MetaSetMut("kafka_timestamp_ms", int64(1764600000000))
	m.MetaSetMut("kafka_tombstone_message", false)
	m.MetaSetMut(contract.KeyPartitionEpoch, "1")
	m.MetaSetMut("kafka_lag", int64(0))
	return m
}

// benchmarkWorkload measures ProcessBatch per message (one op is one
// message) on the workload's traffic. The processor stamps its input
// messages in place, so every batch is built afresh from the workload's
// records with the timer stopped, as kafka_txn builds it.
func benchmarkWorkload(b *testing.B, format string) {
	conf, err := processorSpec().ParseYAML("format: "+format, nil)
	if err != nil {
		b.Fatal(err)
	}
	p, err := newFromConfig(conf, service.MockResources())
	if err != nil {
		b.Fatal(err)
	}
	batches := workloadBatches(b, format, 2000, 1000)
	fresh := func(batch service.MessageBatch) service.MessageBatch {
		out := make(service.MessageBatch, len(batch))
		for i, m := range batch {
			body, _ := m.AsBytes()
			part, _ := m.MetaGetMut("kafka_partition")
			off, _ := m.MetaGetMut("kafka_offset")
			key, _ := m.MetaGet("kafka_key")
			out[i] = inputMsg("cdc", int32(part.(int)), int64(off.(int)), key, body)
		}
		return out
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for n, i := 0, 0; n < b.N; i++ {
		if i == len(batches) {
			i = 0
			p.parts = map[string]*partState{}
		}
		b.StopTimer()
		batch := fresh(batches[i])
		b.StartTimer()
		start := processCPU(b)
		out, err := p.ProcessBatch(context.Background(), batch)
		cpu += processCPU(b) - start
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range out[0] {
			if m.GetError() != nil {
				b.Fatal(m.GetError())
			}
		}
		n += len(batch)
	}
	// CPU time (the garbage collector's included) is what a loaded machine
	// does not distort the way it distorts wall time.
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkProcessBatchEnvelope(b *testing.B) { benchmarkWorkload(b, formatEnvelope) }
func BenchmarkProcessBatchMaxwell(b *testing.B)  { benchmarkWorkload(b, formatMaxwell) }

// Decoder benchmarks: one event per op, the single-pass decoder against
// the encoding/json one, on the workload's DATA events (rows as JSON
// strings; a delete carries __op) and on maxwell rows.
var (
	benchEnvelopeRow    = []byte(`{"database":"test","json":"{\"customer_id\":4242,\"order_id\":17,\"order_status\":\"created\",\"total_amount\":\"1234.56\",\"updated_at\":\"2026-11-29 12:00:00\"}","partition":1,"table":"orders","txnId":"p1-t17","type":"DATA"}`)
	benchEnvelopeDelete = []byte(`{"database":"test","json":"{\"__op\":1,\"item_id\":3,\"order_id\":17}","partition":1,"table":"order_items","txnId":"p1-t17","type":"DATA"}`)
	benchMaxwellRow     = []byte(`{"database":"shop","table":"orders","type":"insert","ts":1477053217,"xid":23396,"xoffset":0,"position":"master.000006:800911","data":{"customer_id":4242,"order_id":17,"order_status":"created","total_amount":"1234.56"}}`)
)

func benchmarkDecode(b *testing.B, body []byte, decode func(*service.Message) (event, error)) {
	msg := service.NewMessage(body)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for i := 0; i < b.N; i++ {
		ev, err := decode(msg)
		if err != nil || ev.kind == kindUnknown {
			b.Fatal(ev, err)
		}
	}
}

func fastOnly(decode func(*fastDecoder, *service.Message) (event, bool)) func(*service.Message) (event, error) {
	d := &fastDecoder{}
	return func(msg *service.Message) (event, error) {
		ev, ok := decode(d, msg)
		if !ok {
			return ev, errors.New("the fast path declined")
		}
		return ev, nil
	}
}

func BenchmarkDecodeEnvelopeFast(b *testing.B) {
	benchmarkDecode(b, benchEnvelopeRow, fastOnly((*fastDecoder).envelopeFast))
}
func BenchmarkDecodeEnvelopeJSON(b *testing.B) { benchmarkDecode(b, benchEnvelopeRow, decodeEnvelope) }
func BenchmarkDecodeEnvelopeDeleteFast(b *testing.B) {
	benchmarkDecode(b, benchEnvelopeDelete, fastOnly((*fastDecoder).envelopeFast))
}
func BenchmarkDecodeEnvelopeDeleteJSON(b *testing.B) {
	benchmarkDecode(b, benchEnvelopeDelete, decodeEnvelope)
}
func BenchmarkDecodeMaxwellFast(b *testing.B) {
	benchmarkDecode(b, benchMaxwellRow, fastOnly((*fastDecoder).maxwellFast))
}
func BenchmarkDecodeMaxwellJSON(b *testing.B) { benchmarkDecode(b, benchMaxwellRow, decodeMaxwell) }
