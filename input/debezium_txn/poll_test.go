package debezium_txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A poll's decoded records are what a fresh decoding gives, whatever an
// earlier poll left in the reused buffer: a control record (not decoded)
// reads as zero where an earlier poll had an event, and partitions get
// pieces of their own.
func TestDecodedBuffersReusedClean(t *testing.T) {
	in := &Input{dec: newDecoder(valueWriter{loc: time.UTC})}
	in.conf.transactionTopic = testTxnTopic
	ev := func(id int) *kgo.Record {
		return &kgo.Record{Topic: "shop.test.orders", Value: dbzEvent(opCreate, "orders", id, "tx", id, id)}
	}
	control := &kgo.Record{Topic: "shop.test.orders", Attrs: kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Control: true})}
	for round := 0; round < 20; round++ {
		// An earlier poll fills the buffer with events.
		buf := in.decodedBuffer(4)
		first, rest := in.decodePartition(kgo.FetchTopicPartition{Topic: "shop.test.orders", FetchPartition: kgo.FetchPartition{Records: []*kgo.Record{ev(1), ev(2), ev(3), ev(4)}}}, buf.recs)
		buf.recs = rest
		require.Len(t, first.decoded, 4)
		require.NotNil(t, first.decoded[1].ev.row)
		in.releaseDecoded(buf)

		// The next: a transaction topic partition (not decoded), then a
		// data partition with a control record in the middle.
		buf = in.decodedBuffer(5)
		txn, rest := in.decodePartition(kgo.FetchTopicPartition{Topic: testTxnTopic, FetchPartition: kgo.FetchPartition{Records: []*kgo.Record{{Topic: testTxnTopic, Value: dbzBegin("tx")}}}}, buf.recs)
		assert.Nil(t, txn.decoded)
		data, rest := in.decodePartition(kgo.FetchTopicPartition{Topic: "shop.test.orders", FetchPartition: kgo.FetchPartition{Records: []*kgo.Record{ev(7), control, ev(8)}}}, rest)
		buf.recs = rest
		require.Len(t, data.decoded, 3)
		want7 := decodeRecord(newDecoder(valueWriter{loc: time.UTC}), nil, ev(7).Value)
		assert.Equal(t, want7, data.decoded[0])
		assert.Equal(t, decoded{}, data.decoded[1], "round %d: the control record's slot is empty", round)
		assert.Equal(t, `{"id":8,"v":"tx-8"}`, string(data.decoded[2].ev.row))
		in.releaseDecoded(buf)
	}
}
