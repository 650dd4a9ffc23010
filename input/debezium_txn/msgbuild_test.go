package debezium_txn

import (
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
)

// plainMessage is how a message was made before the builder: a new
// message, each key set on it.
func plainMessage(om outMsg) *service.Message {
	msg := service.NewMessage(om.ev.row)
	msg.MetaSetMut(consumer.MetaKey, om.rec.key)
	msg.MetaSetMut(consumer.MetaTopic, om.rec.tp.topic)
	msg.MetaSetMut(consumer.MetaPartition, int(om.rec.tp.part))
	msg.MetaSetMut(consumer.MetaOffset, int(om.rec.offset))
	if !om.rec.ts.IsZero() {
		msg.MetaSetMut(consumer.MetaTimestampMs, om.rec.ts.UnixMilli())
		msg.MetaSetMut(consumer.MetaTimestampSec, om.rec.ts.Unix())
	}
	msg.MetaSetMut(MetaOp, string(om.ev.op))
	msg.MetaSetMut(MetaDB, om.ev.db)
	msg.MetaSetMut(MetaSchema, om.ev.schema)
	msg.MetaSetMut(MetaTable, om.ev.table)
	msg.MetaSetMut(MetaSnapshot, om.ev.snapshot)
	return msg
}

func metadataOf(t *testing.T, msg *service.Message) map[string]any {
	out := map[string]any{}
	require.NoError(t, msg.MetaWalkMut(func(k string, v any) error {
		out[k] = v
		return nil
	}))
	return out
}

// The builder's messages carry the same body and metadata, key for key and
// type for type, as messages made key by key, with the contract written
// on both the same way (contract keys set, emptied ones absent, timestamps
// absent for a record without one), over rows whose values repeat and
// change; and still do once every later message is built (the builder
// changes its template as rows go).
func TestMessageBuilderEqualsPlainMessages(t *testing.T) {
	type built struct {
		got  *service.Message
		body []byte
		meta map[string]any
	}
	var all []built
	b := newMsgBuilder()
	var cwB, cwP contract.Writer
	ts := time.UnixMilli(1764417600123)
	evs := []event{
		{op: opCreate, row: []byte(`{"id":1}`), db: "shop", table: "orders", snapshot: "false", connector: "mysql"},
		{op: opDelete, row: []byte(`{"__op":1,"id":1}`), db: "shop", schema: "", table: "items"},
		{op: opRead, row: []byte(`{"id":2}`), db: "inv", schema: "public", table: "t", snapshot: "last", connector: "postgresql"},
		{op: opTruncate, db: "shop", table: "orders"},
	}
	for i := 0; i < 40; i++ {
		ev := evs[i%len(evs)]
		rec := recMeta{tp: tp{"dbserver1.shop." + ev.table, int32(i % 3)}, offset: int64(i), key: `{"id":` + itoa(int64(i%5)) + `}`}
		if i%7 != 0 {
			rec.ts = ts.Add(time.Duration(i/4) * time.Millisecond)
		}
		om := outMsg{partition: "dbserver1.transaction", txnID: "tx" + itoa(int64(i/3)), sourceOffset: int64(i) << 24, end: i%3 == 2, ev: &ev, rec: rec}
		meta := contract.Meta{Partition: om.partition, Database: ev.db, Table: ev.table, TxnID: om.txnID, TxnEnd: om.end,
			HasSeq: true, SeqSource: "s", HasOffset: true, SourceOffset: om.sourceOffset, HasEpoch: true, Epoch: uint64(i / 10)}
		if i%11 == 0 {
			meta.Database = ""
		}
		got, want := b.message(om), plainMessage(om)
		if len(ev.row) > 0 {
			cwB.WriteRow(got, meta, ev.row, ev.op == opDelete)
			cwP.WriteRow(want, meta, ev.row, ev.op == opDelete)
		} else {
			cwB.Write(got, meta)
			cwP.Write(want, meta)
		}
		gb, err := got.AsBytes()
		require.NoError(t, err)
		wb, err := want.AsBytes()
		require.NoError(t, err)
		assert.Equal(t, wb, gb, "message %d", i)
		gm, wm := metadataOf(t, got), metadataOf(t, want)
		// The typed contract values are distinct pointers to equal stamps.
		assert.Equal(t, wm[contract.KeyTyped], gm[contract.KeyTyped], "message %d", i)
		delete(gm, contract.KeyTyped)
		delete(wm, contract.KeyTyped)
		assert.Equal(t, wm, gm, "message %d", i)
		all = append(all, built{got: got, body: wb, meta: wm})
	}
	for i, m := range all {
		gb, err := m.got.AsBytes()
		require.NoError(t, err)
		assert.Equal(t, m.body, gb, "message %d at the end", i)
		gm := metadataOf(t, m.got)
		delete(gm, contract.KeyTyped)
		assert.Equal(t, m.meta, gm, "message %d at the end", i)
	}
}

// BenchmarkMessageBuilder builds the messages of transactions of five rows
// over two tables, the contract written as the input does.
func BenchmarkMessageBuilder(b *testing.B) {
	mb := newMsgBuilder()
	var cw contract.Writer
	ts := time.UnixMilli(1764417600123)
	evs := []event{
		{op: opCreate, row: []byte(`{"id":1}`), db: "shop", table: "orders", snapshot: "false", connector: "mysql"},
		{op: opUpdate, row: []byte(`{"id":2}`), db: "shop", table: "items", snapshot: "false", connector: "mysql"},
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ev := &evs[i%5/3]
		rec := recMeta{tp: tp{"dbserver1.shop." + ev.table, int32(i % 4)}, offset: int64(i), key: `{"id":1}`, ts: ts.Add(time.Duration(i/5) * time.Millisecond)}
		om := outMsg{partition: "dbserver1.transaction", txnID: "tx", sourceOffset: int64(i) << 24, end: i%5 == 4, ev: ev, rec: rec}
		msg := mb.message(om)
		cw.WriteRowFacts(msg, contract.Meta{Partition: om.partition, Database: ev.db, Table: ev.table, TxnID: om.txnID, TxnEnd: om.end,
			HasSeq: true, SeqSource: "s", HasOffset: true, SourceOffset: om.sourceOffset, HasEpoch: true, Epoch: 3}, ev.row, contract.RowFacts{})
	}
}
