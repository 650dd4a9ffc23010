package debezium_txn

import (
	"math/big"
	"testing"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// The decoder: a schemaless event (the row passes through) and one with the
// JsonConverter's schema (decimals and timestamps rewritten), each with the
// fast paths and on encoding/json alone (slow), side by side.
func BenchmarkDecode(b *testing.B) {
	withSchema := []byte(`{"schema":{"type":"struct","fields":[{"type":"struct","optional":true,"field":"after","fields":[
	 {"type":"int64","field":"order_id"},{"type":"int64","field":"customer_id"},
	 {"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"},"field":"total_amount"},
	 {"type":"string","field":"order_status"},{"type":"int64","name":"io.debezium.time.Timestamp","field":"updated_at"}]}]},
	 "payload":{"before":null,"after":{"order_id":1001,"customer_id":4711,"total_amount":"` + b64(big.NewInt(1234567)) + `","order_status":"created","updated_at":1764417600000},
	 "source":{"version":"2.7.0.Final","connector":"mysql","name":"dbserver1","ts_ms":1764417600000,"snapshot":"false","db":"test","table":"orders","server_id":223344},
	 "op":"c","ts_ms":1764417600125,"transaction":{"id":"3e11fa47-71ca-11e1-9e33-c80aa9429562:17","total_order":3,"data_collection_order":1}}}`)
	for _, c := range []struct {
		name string
		v    []byte
	}{{"schemaless", []byte(mysqlCreate)}, {"schema", withSchema}} {
		for _, slow := range []bool{false, true} {
			name := c.name
			if slow {
				name += "/slow"
			}
			b.Run(name, func(b *testing.B) {
				d := newDecoder(valueWriter{loc: time.UTC})
				d.slowOnly = slow
				b.SetBytes(int64(len(c.v)))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := d.decode(c.v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// The assembler end to end on workload traffic: decode, assemble, emit and
// release, per event fed.
func BenchmarkAssemble(b *testing.B) {
	for _, schemas := range []bool{false, true} {
		b.Run(map[bool]string{false: "schemaless", true: "schema"}[schemas], func(b *testing.B) { benchAssemble(b, schemas) })
	}
}

func benchAssemble(b *testing.B, schemas bool) {
	src := workload.NewDebeziumSource(workload.DebeziumOptions{Partitions: 4, Schemas: schemas, LargeEvery: 20, Seed: 1})
	var recs []workload.Record
	for len(recs) < 50000 {
		recs = append(recs, src.Next().Records...)
	}
	consumed := map[string]bool{}
	for _, t := range src.DataTopics() {
		consumed[t] = true
	}
	cfg := assemblerConfig{
		partition: src.TransactionTopic(), txnTopic: src.TransactionTopic(),
		topicOf:          func(c string) string { return "dbserver1." + c },
		consumed:         func(t string) bool { return consumed[t] },
		maxBufferedBytes: 1 << 40, missingTimeout: time.Minute, resendWindow: 100000,
		untransacted: untransactedError, truncate: truncateError, valueWriter: valueWriter{loc: time.UTC},
	}
	b.ReportAllocs()
	b.ResetTimer()
	fed := 0
	for fed < b.N {
		b.StopTimer()
		a := newAssembler(cfg)
		offs := map[tp]int64{}
		for t := range src.AllTopics() {
			for p := int32(0); p < 4; p++ {
				if consumed[t] {
					a.assign(tp{t, p})
					a.markEmpty(tp{t, p})
				}
			}
		}
		a.txnStart(0)
		now := time.Unix(0, 0)
		b.StartTimer()
		for _, r := range recs {
			if fed >= b.N {
				break
			}
			k := tp{r.Topic, r.Partition}
			switch {
			case r.Topic == src.TransactionTopic():
				_ = a.addTxnMeta(offs[k], r.Value, now)
			case consumed[r.Topic]:
				_ = a.addData(recMeta{tp: k, offset: offs[k]}, r.Value, now)
			default:
				continue
			}
			offs[k]++
			fed++
			for em := a.next(1000); em != nil; em = a.next(1000) {
				a.acked(em)
			}
		}
	}
}
