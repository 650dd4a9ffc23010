package debezium_txn

import (
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A MySQL create as Debezium's documentation shows it, numbers of the
// transaction block printed as strings.
const mysqlCreate = `{"before":null,"after":{"id":1001,"customer_id":42,"note":"a \"quoted\" note"},
 "source":{"version":"2.7.0.Final","connector":"mysql","name":"shop","ts_ms":1486500577000,"snapshot":"false","db":"shop",
   "table":"orders","server_id":223344,"gtid":"0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10","file":"mysql-bin.000003","pos":570,"row":0},
 "op":"c","ts_ms":1486500577125,
 "transaction":{"id":"0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10","total_order":"1","data_collection_order":"1"}}`

func decodeOne(t *testing.T, v string) event {
	t.Helper()
	e, err := newDecoder(valueWriter{loc: time.UTC}).decode([]byte(v))
	require.NoError(t, err)
	return e
}

func TestDecodeSchemalessCreate(t *testing.T) {
	e := decodeOne(t, mysqlCreate)
	assert.Equal(t, byte(opCreate), e.op)
	assert.True(t, e.hasTxn)
	assert.Equal(t, "0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10", e.txID)
	assert.Equal(t, int64(1), e.totalOrder)
	assert.Equal(t, int64(1), e.dco)
	assert.Equal(t, "shop", e.defaultDatabase())
	assert.Equal(t, "orders", e.table)
	assert.Equal(t, "shop.orders", e.sourceName())
	assert.JSONEq(t, `{"id":1001,"customer_id":42,"note":"a \"quoted\" note"}`, string(e.row))
	assert.False(t, e.isSnapshotRow())
}

func TestDecodeDeleteAddsOp(t *testing.T) {
	v := `{"before":{"id":7,"name":"x"},"after":null,"source":{"connector":"postgresql","db":"inv","schema":"public","table":"t"},"op":"d",
	  "transaction":{"id":"571:53","total_order":2,"data_collection_order":1}}`
	e := decodeOne(t, v)
	assert.JSONEq(t, `{"__op":1,"id":7,"name":"x"}`, string(e.row))
	// PostgreSQL: the target database is the schema.
	assert.Equal(t, "public", e.defaultDatabase())
	assert.Equal(t, "public.t", e.sourceName())
	e = decodeOne(t, `{"before":{},"op":"d","source":{"table":"t"}}`)
	assert.Equal(t, `{"__op":1}`, string(e.row))
	_, err := newDecoder(valueWriter{}).decode([]byte(`{"before":null,"op":"d","source":{}}`))
	require.ErrorContains(t, err, "missing")
}

func TestDecodeSnapshotAndTruncate(t *testing.T) {
	e := decodeOne(t, `{"before":null,"after":{"id":1},"source":{"connector":"mysql","db":"shop","table":"t","snapshot":"last"},"op":"r","transaction":null}`)
	assert.True(t, e.isSnapshotRow())
	assert.True(t, e.gatesStreaming())
	assert.Equal(t, snapshotLast, e.snapshot)
	e = decodeOne(t, `{"after":{"id":1},"source":{"snapshot":"incremental"},"op":"r"}`)
	assert.True(t, e.isSnapshotRow())
	assert.False(t, e.gatesStreaming(), "incremental snapshots interleave with streaming")
	// Debezium 1.x printed the snapshot flag as a boolean.
	e = decodeOne(t, `{"after":{"id":1},"source":{"snapshot":true},"op":"r"}`)
	assert.True(t, e.gatesStreaming())
	e = decodeOne(t, `{"source":{"connector":"postgresql","schema":"s","table":"t"},"op":"t","transaction":{"id":"9","total_order":1,"data_collection_order":1}}`)
	assert.Equal(t, byte(opTruncate), e.op)
	assert.Nil(t, e.row)
}

func TestDecodeNotAnEnvelope(t *testing.T) {
	for _, v := range []string{
		`{"id":1,"name":"flattened by ExtractNewRecordState"}`,
		`{"ts_ms":1700000000000}`,
		`{"databaseName":"shop","ddl":"CREATE TABLE t (id INT)","tableChanges":[]}`,
		`not json`,
		`{"op":"x","after":{}}`,
	} {
		_, err := newDecoder(valueWriter{}).decode([]byte(v))
		require.ErrorIs(t, err, errNotEnvelope, v)
	}
	_, err := newDecoder(valueWriter{}).decode([]byte(`{"op":"c","after":[1],"source":{}}`))
	require.ErrorContains(t, err, "not a JSON object")
	// Avro, Protobuf or JSON Schema through a schema registry: named as such.
	_, err = newDecoder(valueWriter{}).decode([]byte{0, 0, 0, 0, 7, 0x02, 'a'})
	require.ErrorIs(t, err, errNotJSON)
	require.ErrorContains(t, err, "schema id 7")
}

func TestDecodeWithSchema(t *testing.T) {
	row := `{"order_id":5,"total_amount":"` + b64(big.NewInt(12345)) + `","updated_at":` + strconv.FormatInt(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixMilli(), 10) + `,"doc":"{\"k\": 1}","flag":true,"raw":"AQID"}`
	fields := `[{"type":"int64","optional":false,"field":"order_id"},
	  {"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"},"field":"total_amount"},
	  {"type":"int64","optional":true,"name":"io.debezium.time.Timestamp","version":1,"field":"updated_at"},
	  {"type":"string","optional":true,"name":"io.debezium.data.Json","version":1,"field":"doc"},
	  {"type":"boolean","optional":true,"field":"flag"},
	  {"type":"bytes","optional":true,"field":"raw"}]`
	schema := `{"type":"struct","fields":[{"type":"struct","optional":true,"field":"before","fields":` + fields + `},
	  {"type":"struct","optional":true,"field":"after","fields":` + fields + `},{"type":"string","field":"op"}],"optional":false,"name":"shop.test.orders.Envelope"}`
	v := `{"schema":` + schema + `,"payload":{"before":null,"after":` + row + `,"op":"u","source":{"connector":"mysql","db":"test","table":"orders"},
	  "transaction":{"id":"g:1","total_order":3,"data_collection_order":2}}}`
	d := newDecoder(valueWriter{loc: time.UTC})
	e, err := d.decode([]byte(v))
	require.NoError(t, err)
	assert.Equal(t, `{"order_id":5,"total_amount":"123.45","updated_at":"2026-12-01 12:00:00","doc":{"k":1},"flag":true,"raw":"AQID"}`, string(e.row))
	assert.Equal(t, int64(3), e.totalOrder)
	assert.Len(t, d.plans, 1)
	// The same schema is planned once.
	_, err = d.decode([]byte(v))
	require.NoError(t, err)
	assert.Len(t, d.plans, 1)

	del := `{"schema":` + schema + `,"payload":{"before":` + row + `,"after":null,"op":"d","source":{"connector":"mysql","db":"test","table":"orders"}}}`
	e, err = d.decode([]byte(del))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(e.row), `{"__op":1,"order_id":5,"total_amount":"123.45"`), string(e.row))

	// The JsonConverter's tombstone with schemas.
	assert.True(t, isNullValue([]byte(`{"schema":null,"payload":null}`)))
	assert.True(t, isNullValue(nil))
	assert.False(t, isNullValue([]byte(v)))
}

func TestDecodeTxnMeta(t *testing.T) {
	m, err := decodeTxnMeta([]byte(`{"status":"BEGIN","id":"571","event_count":null,"data_collections":null}`))
	require.NoError(t, err)
	assert.False(t, m.end)
	m, err = decodeTxnMeta([]byte(`{"status":"END","id":"0e4d:10","ts_ms":1486500577691,"event_count":"2",
	  "data_collections":[{"data_collection":"shop.orders","event_count":1},{"data_collection":"shop.order_items","event_count":"1"}]}`))
	require.NoError(t, err)
	assert.True(t, m.end)
	assert.Equal(t, int64(2), m.eventCount)
	assert.Equal(t, []collectionCount{{"shop.orders", 1}, {"shop.order_items", 1}}, m.collections)
	// With the JsonConverter's schema.
	m, err = decodeTxnMeta([]byte(`{"schema":{"type":"struct"},"payload":{"status":"END","id":"x","event_count":1,"data_collections":[{"data_collection":"a.b","event_count":1}]}}`))
	require.NoError(t, err)
	assert.Equal(t, "x", m.id)
	for _, bad := range []string{`{"status":"END","id":"x"}`, `{"status":"MIDDLE","id":"x"}`, `{"status":"END","event_count":1}`, `[]`} {
		_, err := decodeTxnMeta([]byte(bad))
		require.Error(t, err, bad)
	}
	// A BEGIN in a schema registry's wire format names it.
	_, err = decodeTxnMeta([]byte{0, 0, 0, 1, 0, 2, 'x'})
	require.ErrorIs(t, err, errNotJSON)
	require.ErrorContains(t, err, "schema id 256")
}

// FuzzDecodeEnvelope: the decoder never panics, and what it accepts is a
// loadable row: a JSON object, a delete's carrying "__op": 1.
func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte(mysqlCreate))
	f.Add([]byte(`{"before":{"id":7},"op":"d","source":{"table":"t"}}`))
	f.Add([]byte(`{"schema":{"type":"struct","fields":[{"field":"after","type":"struct","fields":[{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"},"field":"p"},{"type":"int32","name":"io.debezium.time.Date","field":"d"}]}]},"payload":{"after":{"p":"MDk=","d":19000},"op":"c","source":{}}}`))
	d := newDecoder(valueWriter{loc: time.UTC})
	f.Fuzz(func(t *testing.T, v []byte) {
		e, err := d.decode(v)
		if err != nil || e.row == nil {
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(e.row, &obj); err != nil {
			t.Fatalf("accepted %q but produced a row that is not a JSON object: %q: %v", v, e.row, err)
		}
		if e.op == opDelete && string(obj["__op"]) != "1" {
			t.Fatalf("a delete's row lacks \"__op\": 1: %q", e.row)
		}
	})
}

// The committed seed corpus exists and holds the envelope shapes the fuzz
// target must keep accepting.
func TestFuzzCorpusPresent(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzDecodeEnvelope"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(entries), 5)
}
