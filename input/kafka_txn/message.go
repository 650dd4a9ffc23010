package kafka_txn

import (
	"bytes"
	"strconv"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
)

// recordBuilder turns the records of one partition assignment into
// messages, cheaply: it is on the input's critical path for every record.
//
// Each message starts as a copy of a template that already holds every
// metadata key the input sets, so that the message's metadata map is made
// once at its final size (from an empty message, the ninth key would turn
// Go's small map into a table, copying it); and the values that repeat
// from record to record (topic, partition, epoch, and the key and
// timestamps of consecutive records, which CDC sources often share) are
// converted to interface values once. The result is the same metadata, key
// for key and type for type, as recordToMessage's.
//
// A recordBuilder is used under the input's mutex.
type recordBuilder struct {
	tmpl *service.Message
	// topic, part and epoch are boxed once per assignment.
	topic, part, epoch any
	// key and keyBox are the last key seen and its boxed string.
	key    []byte
	keyBox any
	// ts is the last timestamp seen, tsSec and tsMs its boxed forms.
	ts         time.Time
	tsSec      any
	tsMs       any
	tsComputed bool
}

// templateKeys are the keys every message of the input carries (MetaLag is
// removed again while the high watermark is unknown).
var templateKeys = []string{consumer.MetaKey, consumer.MetaTopic, consumer.MetaPartition, consumer.MetaOffset, consumer.MetaTimestampSec, consumer.MetaTimestampMs,
	MetaTombstone, contract.KeyPartitionEpoch, MetaLag}

func newRecordBuilder(topic string, part int32, epoch uint64) *recordBuilder {
	tmpl := service.NewMessage(nil)
	for _, k := range templateKeys {
		tmpl.MetaSetMut(k, "")
	}
	return &recordBuilder{
		tmpl:  tmpl,
		topic: topic,
		part:  int(part),
		epoch: strconv.FormatUint(epoch, 10),
	}
}

// message builds the message of r; lag is its kafka_lag when hasLag.
func (b *recordBuilder) message(r *kgo.Record, lag int64, hasLag bool) *service.Message {
	msg := b.tmpl.Copy()
	msg.SetBytes(r.Value)
	if !hasLag {
		// Before the headers: a header of that name stays.
		msg.MetaDelete(MetaLag)
	}
	// Headers first, so that a header never overwrites a kafka_ key.
	for _, h := range r.Headers {
		msg.MetaSetMut(h.Key, string(h.Value))
	}
	if b.keyBox == nil || !bytes.Equal(b.key, r.Key) {
		b.key = append(b.key[:0], r.Key...)
		b.keyBox = string(r.Key)
	}
	msg.MetaSetMut(consumer.MetaKey, b.keyBox)
	msg.MetaSetMut(consumer.MetaTopic, b.topic)
	msg.MetaSetMut(consumer.MetaPartition, b.part)
	msg.MetaSetMut(consumer.MetaOffset, int(r.Offset))
	if !b.tsComputed || !r.Timestamp.Equal(b.ts) {
		b.ts, b.tsComputed = r.Timestamp, true
		b.tsSec, b.tsMs = r.Timestamp.Unix(), r.Timestamp.UnixMilli()
	}
	msg.MetaSetMut(consumer.MetaTimestampSec, b.tsSec)
	msg.MetaSetMut(consumer.MetaTimestampMs, b.tsMs)
	msg.MetaSetMut(MetaTombstone, r.Value == nil)
	msg.MetaSetMut(contract.KeyPartitionEpoch, b.epoch)
	if hasLag {
		msg.MetaSetMut(MetaLag, lag)
	}
	return msg
}
