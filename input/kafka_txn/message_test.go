package kafka_txn

import (
	"strconv"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"pgregory.net/rapid"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
)

// recordToMessage converts a record, with its headers, the kafka_*
// metadata, the partition's epoch and its lag when hasLag: what
// recordBuilder.message builds faster, kept as its reference.
func recordToMessage(r *kgo.Record, epoch uint64, lag int64, hasLag bool) *service.Message {
	msg := service.NewMessage(r.Value)
	// Headers first, so that a header never overwrites a kafka_ key.
	for _, h := range r.Headers {
		msg.MetaSetMut(h.Key, string(h.Value))
	}
	msg.MetaSetMut(consumer.MetaKey, string(r.Key))
	msg.MetaSetMut(consumer.MetaTopic, r.Topic)
	msg.MetaSetMut(consumer.MetaPartition, int(r.Partition))
	msg.MetaSetMut(consumer.MetaOffset, int(r.Offset))
	msg.MetaSetMut(consumer.MetaTimestampSec, r.Timestamp.Unix())
	msg.MetaSetMut(consumer.MetaTimestampMs, r.Timestamp.UnixMilli())
	msg.MetaSetMut(MetaTombstone, r.Value == nil)
	msg.MetaSetMut(contract.KeyPartitionEpoch, strconv.FormatUint(epoch, 10))
	if hasLag {
		msg.MetaSetMut(MetaLag, lag)
	}
	return msg
}

// metaOf renders every metadata key of a message with its Go type and
// value, and the body.
func metaOf(t require.TestingT, msg *service.Message) map[string]string {
	out := map[string]string{}
	_ = msg.MetaWalkMut(func(k string, v any) error {
		out[k] = typeOf(v) + ":" + strconv.Quote(anyString(v))
		return nil
	})
	b, err := msg.AsBytes()
	require.NoError(t, err)
	out["(body)"] = strconv.Quote(string(b))
	if b == nil {
		out["(body)"] = "nil"
	}
	return out
}

func typeOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int:
		return "int"
	case int64:
		return "int64"
	case bool:
		return "bool"
	}
	return "other"
}

func anyString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	return "?"
}

// The builder makes exactly the messages recordToMessage makes, over
// sequences of records whose keys, timestamps, headers, tombstones and lag
// repeat or change, and its messages do not share metadata.
func TestRecordBuilderEqualsRecordToMessage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		epoch := rapid.Uint64Range(0, 300).Draw(t, "epoch")
		part := rapid.Int32Range(0, 600).Draw(t, "partition")
		b := newRecordBuilder("cdc", part, epoch)
		var msgs []*service.Message
		var wants []map[string]string
		base := time.Unix(1764600000, 0)
		for i, n := 0, rapid.IntRange(1, 8).Draw(t, "records"); i < n; i++ {
			r := &kgo.Record{Topic: "cdc", Partition: part, Offset: rapid.Int64Range(0, 1<<40).Draw(t, "offset"),
				Timestamp: base.Add(time.Duration(rapid.IntRange(0, 2).Draw(t, "ts")) * time.Millisecond)}
			switch rapid.IntRange(0, 3).Draw(t, "key") {
			case 0:
			case 1:
				r.Key = []byte{}
			default:
				r.Key = []byte(rapid.SampledFrom([]string{"p0-t1", "p0-t2", ""}).Draw(t, "keytext"))
			}
			if rapid.Bool().Draw(t, "value") {
				r.Value = []byte(`{"type":"DATA"}`)
			}
			for j, m := 0, rapid.IntRange(0, 2).Draw(t, "headers"); j < m; j++ {
				r.Headers = append(r.Headers, kgo.RecordHeader{
					Key:   rapid.SampledFrom([]string{"trace", consumer.MetaKey, consumer.MetaOffset, contract.KeyPartitionEpoch, MetaLag}).Draw(t, "hkey"),
					Value: []byte(rapid.SampledFrom([]string{"x", ""}).Draw(t, "hval")),
				})
			}
			lag := rapid.Int64Range(0, 300).Draw(t, "lag")
			hasLag := rapid.Bool().Draw(t, "hasLag")
			got := b.message(r, lag, hasLag)
			want := metaOf(t, recordToMessage(r, epoch, lag, hasLag))
			require.Equal(t, want, metaOf(t, got), "record %d", i)
			msgs, wants = append(msgs, got), append(wants, want)
		}
		for i, m := range msgs {
			require.Equal(t, wants[i], metaOf(t, m), "message %d was changed by a later one", i)
		}
	})
}

// BenchmarkRecordToMessage measures building the message of a record
// (metadata included), the way fillLocked does it and the reference way,
// followed by the five metadata writes of the assembler's contract.
func BenchmarkRecordToMessage(b *testing.B) {
	recs := make([]*kgo.Record, 1000)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "cdc", Partition: 3, Offset: int64(1000000 + i), Key: []byte("p3-t" + strconv.Itoa(i/7)),
			Value:     []byte(`{"partition":3,"txnId":"p3-t17","type":"DATA","database":"test","table":"orders","json":"{}"}`),
			Timestamp: time.UnixMilli(1764600000000 + int64(i/50))}
	}
	contractWrites := func(m *service.Message) {
		m.MetaSetMut(contract.KeyPartition, "cdc/3")
		m.MetaSetMut(contract.KeyDatabase, "test")
		m.MetaSetMut(contract.KeyTable, "orders")
		m.MetaSetMut(contract.KeyTxnID, "p3-t17")
		m.MetaSetMut(contract.KeyTyped, recs)
	}
	var sink *service.Message
	b.Run("builder", func(b *testing.B) {
		rb := newRecordBuilder("cdc", 3, 1)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			r := recs[i%len(recs)]
			sink = rb.message(r, 500-int64(i%500), true)
			contractWrites(sink)
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			r := recs[i%len(recs)]
			sink = recordToMessage(r, 1, 500-int64(i%500), true)
			contractWrites(sink)
		}
	})
	_ = sink
}
