package txnassembler

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

func TestEnvelopeTransaction(t *testing.T) {
	p, _ := newProc(t, `format: envelope`)
	out := run(t, p,
		kafkaMsg("cdc", 3, 100, `{"partition":3,"txnId":"t-17","type":"TXN_BEGIN"}`),
		kafkaMsg("cdc", 3, 101, `{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"order_id\":1,\"customer_id\":100,\"total_amount\":99.99,\"order_status\":\"created\"}"}`),
		kafkaMsg("cdc", 3, 102, `{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"order_items","json":{"item_id":10,"order_id":1,"product_name":"product-0","quantity":1,"price":49.99}}`),
		kafkaMsg("cdc", 3, 103, `{"partition":3,"txnId":"t-17","type":"TXN_END"}`),
	)
	require.Len(t, out, 3, "the BEGIN is dropped")
	got := readAll(t, out)

	assert.Equal(t, "cdc/3", got[0].Partition)
	assert.Equal(t, "test", got[0].Database)
	assert.Equal(t, "orders", got[0].Table)
	assert.Equal(t, "t-17", got[0].TxnID)
	assert.False(t, got[0].TxnEnd)
	assert.False(t, got[0].Marker)
	assert.Equal(t, int64(101), got[0].SourceOffset)
	assert.JSONEq(t, `{"order_id":1,"customer_id":100,"total_amount":99.99,"order_status":"created","__op":0}`, got[0].Body)
	assert.NoError(t, got[0].Err)

	assert.Equal(t, "order_items", got[1].Table)
	assert.JSONEq(t, `{"item_id":10,"order_id":1,"product_name":"product-0","quantity":1,"price":49.99,"__op":0}`, got[1].Body)
	assert.Equal(t, int64(102), got[1].SourceOffset)

	end := got[2]
	assert.True(t, end.TxnEnd)
	assert.True(t, end.Marker)
	assert.False(t, end.TxnAbort)
	assert.Empty(t, end.Body, "an END marker is body-less")
	assert.Empty(t, end.Table)
	assert.Equal(t, "t-17", end.TxnID)
	assert.Equal(t, int64(103), end.SourceOffset, "the marker carries the END event's own offset")

	for i, g := range got {
		assert.Equal(t, int64(i+1), g.Seq, "seqs are dense from 1")
		assert.Equal(t, p.SeqSource(), g.SeqSource)
	}
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{12}$`), p.SeqSource())

	// The keys users route on are plain strings; the others live in the
	// typed value and materialize as the decided plain strings.
	v, _ := out[1].MetaGet(contract.KeyTable)
	assert.Equal(t, got[1].Table, v)
	v, _ = out[2].MetaGet(contract.KeyTxnID)
	assert.Equal(t, "t-17", v)
	_, exists := out[2].MetaGet(contract.KeySeq)
	assert.False(t, exists, "the sequence is in the typed value only")
	m := contract.Materialized(out[2])
	v, _ = m.MetaGet(contract.KeyTxnEnd)
	assert.Equal(t, "true", v)
	v, _ = m.MetaGet(contract.KeySeq)
	assert.Equal(t, "3", v)
	v, _ = m.MetaGet(contract.KeySourceOffset)
	assert.Equal(t, "103", v)
	_, exists = contract.Materialized(out[0]).MetaGet(contract.KeyTxnEnd)
	assert.False(t, exists, "flags are absent, not false")
	// The original metadata is kept.
	v, _ = out[0].MetaGet("kafka_key")
	assert.Equal(t, "k", v)
}

func TestEnvelopeDeletes(t *testing.T) {
	p, _ := newProc(t, `{}`)
	out := run(t, p,
		kafkaMsg("cdc", 0, 1, `{"partition":0,"txnId":"t1","type":"DATA","database":"test","table":"orders","op":"delete","json":{"order_id":1}}`),
		kafkaMsg("cdc", 0, 2, `{"partition":0,"txnId":"t1","type":"DATA","database":"test","table":"orders","op":"d","json":{"order_id":2}}`),
		kafkaMsg("cdc", 0, 3, `{"partition":0,"txnId":"t1","type":"DATA","database":"test","table":"orders","op":"UPDATE","json":{"order_id":3}}`),
		kafkaMsg("cdc", 0, 4, `{"partition":0,"txnId":"t1","type":"DATA","database":"test","table":"orders","json":{"order_id":4,"__op":1}}`),
		kafkaMsg("cdc", 0, 5, `{"partition":0,"txnId":"t1","type":"DATA","database":"test","table":"orders","op":0,"json":{"order_id":5,"__op":1}}`),
		kafkaMsg("cdc", 0, 6, `{"partition":0,"txnId":"t1","type":"DATA","database":"test","table":"orders","op":"explode","json":{"order_id":6}}`),
	)
	got := readAll(t, out)
	require.Len(t, got, 6)
	assert.Equal(t, float64(1), row(t, got[0].Body)["__op"])
	assert.Equal(t, float64(1), row(t, got[1].Body)["__op"])
	assert.Equal(t, float64(0), row(t, got[2].Body)["__op"])
	assert.Equal(t, float64(1), row(t, got[3].Body)["__op"], "an __op already in the row is kept")
	assert.Equal(t, float64(0), row(t, got[4].Body)["__op"], "op wins over the row's __op")
	require.Error(t, got[5].Err)
	assert.Contains(t, got[5].Err.Error(), `field "op"`)
	assert.Equal(t, "t1", got[5].TxnID, "a bad row still carries its transaction")
}

func TestEnvelopeWithoutKafkaMetadata(t *testing.T) {
	p, _ := newProc(t, `format: envelope`)
	out := run(t, p,
		service.NewMessage([]byte(envelope(3, "t-1", "TXN_BEGIN", "", "", ""))),
		service.NewMessage([]byte(envelope(3, "t-1", "DATA", "test", "orders", `{"order_id":1}`))),
		service.NewMessage([]byte(envelope(5, "t-9", "DATA", "test", "orders", `{"order_id":9}`))),
		service.NewMessage([]byte(envelope(3, "t-1", "TXN_END", "", "", ""))),
	)
	got := readAll(t, out)
	require.Len(t, got, 3)
	assert.Equal(t, "3", got[0].Partition, "the envelope's partition field is the fallback")
	assert.Equal(t, "5", got[1].Partition)
	assert.Equal(t, "3", got[2].Partition)
	// Offsets are a per-partition arrival counter, counting dropped events.
	assert.Equal(t, int64(1), got[0].SourceOffset)
	assert.Equal(t, int64(0), got[1].SourceOffset)
	assert.Equal(t, int64(2), got[2].SourceOffset)
	assert.True(t, got[2].TxnEnd)
	for _, g := range got {
		assert.NoError(t, g.Err)
	}
}

// The arrival counter is no source position: every message it numbers —
// rows, END and abort markers, flagged messages — says so in the contract
// (contract.Meta.ArrivalOffset), and is not materialized as
// starrocks_source_offset; a message with kafka_offset, or with the
// source_offset field set, carries a position, in the same batch too.
func TestArrivalCounterIsMarkedAsNoSourcePosition(t *testing.T) {
	p, _ := newProc(t, `format: envelope`)
	out := run(t, p,
		service.NewMessage([]byte(envelope(3, "t-1", "TXN_BEGIN", "", "", ""))),
		service.NewMessage([]byte(envelope(3, "t-1", "DATA", "test", "orders", `{"order_id":1}`))),
		service.NewMessage([]byte(envelope(3, "t-2", "TXN_BEGIN", "", "", ""))),
		service.NewMessage([]byte(envelope(3, "t-2", "DATA", "test", "orders", `{"order_id":2}`))),
		service.NewMessage([]byte(`{"partition":3,"txnId":"t-2","type":"NONSENSE"}`)),
		service.NewMessage([]byte(envelope(3, "t-2", "TXN_END", "", "", ""))),
		kafkaMsg("cdc", 0, 40, envelope(0, "k-1", "DATA", "test", "orders", `{"order_id":3}`)),
		kafkaMsg("cdc", 0, 41, envelope(0, "k-1", "TXN_END", "", "", "")),
		service.NewMessage([]byte(envelope(3, "t-3", "DATA", "test", "orders", `{"order_id":4}`))),
	)
	got := readAll(t, out)
	require.Len(t, got, 8, "row, abort, row, flagged, END; the Kafka row and END; a row")
	for i, g := range got {
		kafka := g.Partition == "cdc/0"
		assert.True(t, g.HasOffset, "message %d has an offset", i)
		assert.Equal(t, !kafka, g.ArrivalOffset, "message %d (%s, %q): the counter is marked, a Kafka offset is not", i, g.Partition, g.TxnID)
		c := contract.Materialized(out[i])
		_, set := c.MetaGetMut(contract.KeySourceOffset)
		assert.Equal(t, kafka, set, "message %d: only a position is materialized", i)
	}
	assert.True(t, got[1].TxnAbort, "the abort marker of t-1")
	assert.Error(t, got[3].Err, "the flagged message")
	assert.Equal(t, int64(40), got[5].SourceOffset)

	q, _ := newProc(t, "source_offset: '${! @pos }'")
	m := service.NewMessage([]byte(envelope(3, "t-1", "DATA", "test", "orders", `{"order_id":1}`)))
	m.MetaSetMut("pos", "77")
	g := read(t, run(t, q, m)[0])
	assert.Equal(t, int64(77), g.SourceOffset)
	assert.False(t, g.ArrivalOffset, "source_offset gives a position")
}

func TestConfiguredPartitionAndOffset(t *testing.T) {
	p, _ := newProc(t, `
partition: '${! @stream }'
source_offset: '${! @pos }'
`)
	msg := func(pos int, body string) *service.Message {
		m := service.NewMessage([]byte(body))
		m.MetaSetMut("stream", "s1")
		m.MetaSetMut("pos", strconv.Itoa(pos))
		return m
	}
	out := run(t, p,
		msg(10, envelope(1, "a", "DATA", "db", "t", `{"x":1}`)),
		msg(11, envelope(1, "a", "TXN_END", "", "", "")),
	)
	got := readAll(t, out)
	require.Len(t, got, 2)
	assert.Equal(t, "s1", got[0].Partition)
	assert.Equal(t, int64(10), got[0].SourceOffset)
	assert.Equal(t, int64(11), got[1].SourceOffset)

	bad := service.NewMessage([]byte(envelope(1, "b", "DATA", "db", "t", `{"x":1}`)))
	bad.MetaSetMut("stream", "s1")
	bad.MetaSetMut("pos", "twelve")
	g := read(t, run(t, p, bad)[0])
	require.Error(t, g.Err)
	assert.Contains(t, g.Err.Error(), `field "source_offset"`)
	assert.Contains(t, g.Err.Error(), `partition "s1"`)
}

func TestTableMappingAndDatabase(t *testing.T) {
	p, _ := newProc(t, `
table_mapping:
  shop.order_lines: order_items
  shop.legacy: archive.old_orders
  events: all_events
database: analytics
`)
	out := run(t, p,
		kafkaMsg("c", 0, 1, envelope(0, "t", "DATA", "shop", "order_lines", `{"a":1}`)),
		kafkaMsg("c", 0, 2, envelope(0, "t", "DATA", "shop", "legacy", `{"a":1}`)),
		kafkaMsg("c", 0, 3, envelope(0, "t", "DATA", "other", "events", `{"a":1}`)),
		kafkaMsg("c", 0, 4, envelope(0, "t", "DATA", "", "orders", `{"a":1}`)),
	)
	got := readAll(t, out)
	require.Len(t, got, 4)
	assert.Equal(t, [2]string{"analytics", "order_items"}, [2]string{got[0].Database, got[0].Table})
	assert.Equal(t, [2]string{"archive", "old_orders"}, [2]string{got[1].Database, got[1].Table})
	assert.Equal(t, [2]string{"analytics", "all_events"}, [2]string{got[2].Database, got[2].Table})
	assert.Equal(t, [2]string{"analytics", "orders"}, [2]string{got[3].Database, got[3].Table})
	for _, g := range got {
		assert.NoError(t, g.Err)
	}
}

func TestRowBodiesAreKeptExactly(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	got := readAll(t, run(t, p,
		s.data("a", `{"big":12345678901234567890,"price":0.1000,"s":"<&>"}`),
		s.data("a", `{}`),
		s.data("a", ` { "a" : 1 } `),
		s.data("a", `{"note":"\"__op\" is a reserved key"}`),
		s.msg(`{"partition":0,"txnId":"a","type":"DATA","database":"test","table":"orders","json":{"id":5,"nested":{"__op":7}}}`),
	))
	require.Len(t, got, 5)
	assert.Equal(t, `{"big":12345678901234567890,"price":0.1000,"s":"<&>","__op":0}`, got[0].Body, "numbers and text as written")
	assert.Equal(t, `{"__op":0}`, got[1].Body)
	assert.Equal(t, `{"a" : 1,"__op":0}`, got[2].Body)
	assert.JSONEq(t, `{"note":"\"__op\" is a reserved key","__op":0}`, got[3].Body)
	assert.JSONEq(t, `{"id":5,"nested":{"__op":7},"__op":0}`, got[4].Body, "only a top-level __op counts")
	for _, g := range got {
		assert.NoError(t, g.Err)
	}
}

// The processor stamps the messages it is given in place; the same message
// twice in one batch is still decoded from its source body both times, and
// comes out as two messages.
func TestSameMessageTwiceInABatch(t *testing.T) {
	p, _ := newProc(t, `{}`)
	row := kafkaMsg("cdc", 0, 2, `{"txnId":"t-1","type":"DATA","database":"test","table":"orders","json":{"order_id":1}}`)
	out := run(t, p,
		kafkaMsg("cdc", 0, 1, `{"txnId":"t-1","type":"TXN_BEGIN"}`),
		row, row,
		kafkaMsg("cdc", 0, 3, `{"txnId":"t-1","type":"TXN_END"}`))
	require.Len(t, out, 3)
	assert.Same(t, row, out[0], "stamped in place")
	assert.NotSame(t, out[0], out[1])
	first, second := read(t, out[0]), read(t, out[1])
	assert.JSONEq(t, `{"order_id":1,"__op":0}`, first.Body)
	assert.NoError(t, first.Err)
	assert.JSONEq(t, first.Body, second.Body, "the second copy was decoded from the event, not from the stamped row")
	assert.ErrorContains(t, second.Err, "already passed", "the second copy is a replay of offset 2")
	assert.Equal(t, first.Seq+1, second.Seq)
}
