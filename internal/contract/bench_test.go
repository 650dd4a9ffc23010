package contract

import (
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// inputMessage is a record as the kafka_txn input delivers it: a row body
// and the input's nine metadata keys.
func inputMessage() *service.Message {
	m := service.NewMessage([]byte(`{"order_id":1,"customer_id":100,"total_amount":"99.99","order_status":"created"}`))
	m.MetaSetMut("kafka_key", "p0-t1")
	m.MetaSetMut("kafka_topic", "cdc")
	m.MetaSetMut("kafka_partition", 0)
	m.MetaSetMut("kafka_offset", 12345)
	m.MetaSetMut("kafka_timestamp_unix", int64(1764600000))
	m.MetaSetMut("kafka_timestamp_ms", int64(1764600000000))
	m.MetaSetMut("kafka_tombstone_message", false)
	m.MetaSetMut(KeyPartitionEpoch, "1")
	m.MetaSetMut("kafka_lag", int64(0))
	return m
}

func benchMeta(i int) Meta {
	return Meta{Partition: "cdc/0", Database: "test", Table: "orders", TxnID: "p0-t17", SeqSource: "0a1b2c3d4e5f",
		HasSeq: true, Seq: int64(100000 + i), HasOffset: true, SourceOffset: int64(5000000 + i), HasEpoch: true, Epoch: 1}
}

var sinkMsg *service.Message

// The write benchmarks include the copy of the input message that every
// emitted message starts from, and its first metadata write (the copy of
// the input's metadata map), as in the assembler.

func BenchmarkWriteCopyOnly(b *testing.B) {
	src := inputMessage()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m := src.Copy()
		m.MetaDelete(KeyTxnEnd)
		sinkMsg = m
	}
}

func BenchmarkWriteReferenceStrings(b *testing.B) {
	src := inputMessage()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m := src.Copy()
		writeReference(m, benchMeta(i))
		sinkMsg = m
	}
}

func BenchmarkWrite(b *testing.B) {
	src := inputMessage()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m := src.Copy()
		Write(m, benchMeta(i))
		sinkMsg = m
	}
}

func BenchmarkWriterWriteRow(b *testing.B) {
	src := inputMessage()
	body, _ := src.AsBytes()
	var w Writer
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m := src.Copy()
		w.WriteRow(m, benchMeta(i), body, false)
		sinkMsg = m
	}
}

var sinkMeta Meta

func BenchmarkReadStrings(b *testing.B) {
	m := inputMessage()
	writeReference(m, benchMeta(1)) // a hand-written mapping's contract
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		meta, err := Read(m)
		if err != nil {
			b.Fatal(err)
		}
		sinkMeta = meta
	}
}

func BenchmarkReadTyped(b *testing.B) {
	m := inputMessage()
	var w Writer
	body, _ := m.AsBytes()
	w.WriteRow(m, benchMeta(1), body, false)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p := Parse(m)
		if !p.Typed() {
			b.Fatal("not typed")
		}
		if _, ok := p.Row(body); !ok {
			b.Fatal("no row facts")
		}
		sinkMeta = p.Meta
	}
}
