// This file holds the message builder: the Benthos message of an emitted
// row, made cheaply, since it runs under the input's lock for every row.

package debezium_txn

import (
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
)

// msgKeys are the metadata keys an emitted message usually carries: the
// template holds them all, so that a message's map is made once at its
// final size (from an empty message the ninth key turns Go's small map
// into a table, and the table doubles on the way to seventeen).
var msgKeys = []string{
	consumer.MetaKey, consumer.MetaTopic, consumer.MetaPartition, consumer.MetaOffset,
	consumer.MetaTimestampMs, consumer.MetaTimestampSec,
	MetaOp, MetaDB, MetaSchema, MetaTable, MetaSnapshot,
	contract.KeyPartition, contract.KeyDatabase, contract.KeyTable, contract.KeyTxnID,
	contract.KeyPartitionEpoch, contract.KeyTyped, contract.KeySeq,
}

// msgBuilder makes the messages of one input. The messages carry the same
// metadata, key for key and type for type, as setting each key on a new
// message does (TestMessageBuilderEqualsPlainMessages); values that repeat
// from row to row are converted to interface values once. It is used under
// the input's lock.
type msgBuilder struct {
	tmpl *service.Message
	// parts holds each partition's boxed topic and partition number.
	parts map[tp]partBoxes
	// ts is the last record timestamp, tsMs and tsSec its boxed forms.
	ts                              time.Time
	tsMs, tsSec                     any
	tsSet                           bool
	op, db, schema, table, snapshot boxes
}

type partBoxes struct{ topic, part any }

func newMsgBuilder() *msgBuilder {
	tmpl := service.NewMessage(nil)
	for _, k := range msgKeys {
		tmpl.MetaSetMut(k, "")
	}
	return &msgBuilder{tmpl: tmpl, parts: map[tp]partBoxes{}}
}

// message returns a new message of om's row with the record's and the
// event's metadata (the contract is written by the caller).
func (b *msgBuilder) message(om outMsg) *service.Message {
	msg := b.tmpl.Copy()
	msg.SetBytes(om.ev.row)
	pb, ok := b.parts[om.rec.tp]
	if !ok {
		if len(b.parts) >= maxPlans {
			clear(b.parts)
		}
		pb = partBoxes{topic: om.rec.tp.topic, part: int(om.rec.tp.part)}
		b.parts[om.rec.tp] = pb
	}
	msg.MetaSetMut(consumer.MetaKey, om.rec.key)
	msg.MetaSetMut(consumer.MetaTopic, pb.topic)
	msg.MetaSetMut(consumer.MetaPartition, pb.part)
	msg.MetaSetMut(consumer.MetaOffset, int(om.rec.offset))
	if om.rec.ts.IsZero() {
		msg.MetaDelete(consumer.MetaTimestampMs)
		msg.MetaDelete(consumer.MetaTimestampSec)
	} else {
		if !b.tsSet || !om.rec.ts.Equal(b.ts) {
			b.ts, b.tsSet = om.rec.ts, true
			b.tsMs, b.tsSec = om.rec.ts.UnixMilli(), om.rec.ts.Unix()
		}
		msg.MetaSetMut(consumer.MetaTimestampMs, b.tsMs)
		msg.MetaSetMut(consumer.MetaTimestampSec, b.tsSec)
	}
	msg.MetaSetMut(MetaOp, b.op.box(string(om.ev.op)))
	msg.MetaSetMut(MetaDB, b.db.box(om.ev.db))
	msg.MetaSetMut(MetaSchema, b.schema.box(om.ev.schema))
	msg.MetaSetMut(MetaTable, b.table.box(om.ev.table))
	msg.MetaSetMut(MetaSnapshot, b.snapshot.box(om.ev.snapshot))
	// The contract's keys of the template are the writer's to set or
	// delete (starrocks_seq, a typed key, it deletes; it is set again
	// when the batch goes out).
	return msg
}

// boxes remembers the last few strings boxed for one key.
type boxes struct {
	s    [4]string
	v    [4]any
	next uint8
}

func (c *boxes) box(s string) any {
	for i := range c.v {
		if c.v[i] != nil && c.s[i] == s {
			return c.v[i]
		}
	}
	v := any(s)
	i := c.next % uint8(len(c.v))
	c.s[i], c.v[i] = s, v
	c.next++
	return v
}
