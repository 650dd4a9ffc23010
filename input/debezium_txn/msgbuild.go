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
//
// A message is a shallow copy of the template, whose metadata map the copy
// clones on its first write (Benthos's copy on write: cloning a map made at
// its final size beats growing a fresh one). The template keeps the last
// message's values of the keys that repeat from row to row (topic,
// partition, timestamps, the event's source), changed only when a row's
// differ, so that a copy is written only where it differs from the row
// before: its record key and offset. Changing the template is safe because
// every copy is written, and so holds its own map, before the next message
// is built; a copy never sees the template change
// (TestMessageBuilderEqualsPlainMessages keeps every message and compares
// them all again at the end).
type msgBuilder struct {
	tmpl *service.Message
	// cur holds the template's value of each repeating key (nil: the
	// placeholder it was made with).
	cur [nRepeating]any
	// parts holds each partition's boxed topic and partition number.
	parts map[tp]partBoxes
	// ts is the last record timestamp, tsMs and tsSec its boxed forms.
	ts                              time.Time
	tsMs, tsSec                     any
	tsSet                           bool
	op, db, schema, table, snapshot boxes
}

// The keys whose values the template keeps, indexes into repeatingKeys.
const (
	repTopic = iota
	repPartition
	repTimestampMs
	repTimestampSec
	repOp
	repDB
	repSchema
	repTable
	repSnapshot
	nRepeating
)

var repeatingKeys = [nRepeating]string{
	consumer.MetaTopic, consumer.MetaPartition, consumer.MetaTimestampMs, consumer.MetaTimestampSec,
	MetaOp, MetaDB, MetaSchema, MetaTable, MetaSnapshot,
}

type partBoxes struct{ topic, part any }

func newMsgBuilder() *msgBuilder {
	tmpl := service.NewMessage(nil)
	for _, k := range msgKeys {
		tmpl.MetaSetMut(k, "")
	}
	return &msgBuilder{tmpl: tmpl, parts: map[tp]partBoxes{}}
}

// keep sets the template's value of repeating key i to v unless it holds
// it already (every value is a string or an integer: comparable).
func (b *msgBuilder) keep(i int, v any) {
	if b.cur[i] != v {
		b.cur[i] = v
		b.tmpl.MetaSetMut(repeatingKeys[i], v)
	}
}

// message returns a new message of om's row with the record's and the
// event's metadata (the contract is written by the caller).
func (b *msgBuilder) message(om outMsg) *service.Message {
	pb, ok := b.parts[om.rec.tp]
	if !ok {
		if len(b.parts) >= maxPlans {
			clear(b.parts)
		}
		pb = partBoxes{topic: om.rec.tp.topic, part: int(om.rec.tp.part)}
		b.parts[om.rec.tp] = pb
	}
	b.keep(repTopic, pb.topic)
	b.keep(repPartition, pb.part)
	noTs := om.rec.ts.IsZero()
	if !noTs {
		if !b.tsSet || !om.rec.ts.Equal(b.ts) {
			b.ts, b.tsSet = om.rec.ts, true
			b.tsMs, b.tsSec = om.rec.ts.UnixMilli(), om.rec.ts.Unix()
		}
		b.keep(repTimestampMs, b.tsMs)
		b.keep(repTimestampSec, b.tsSec)
	}
	b.keep(repOp, b.op.box(string(om.ev.op)))
	b.keep(repDB, b.db.box(om.ev.db))
	b.keep(repSchema, b.schema.box(om.ev.schema))
	b.keep(repTable, b.table.box(om.ev.table))
	b.keep(repSnapshot, b.snapshot.box(om.ev.snapshot))

	msg := b.tmpl.Copy()
	msg.SetBytes(om.ev.row)
	// The first write clones the template's map: from here on the
	// template may change without changing msg.
	msg.MetaSetMut(consumer.MetaKey, om.rec.key)
	msg.MetaSetMut(consumer.MetaOffset, int(om.rec.offset))
	if noTs {
		msg.MetaDelete(consumer.MetaTimestampMs)
		msg.MetaDelete(consumer.MetaTimestampSec)
	}
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
