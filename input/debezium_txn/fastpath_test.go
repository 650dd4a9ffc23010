package debezium_txn

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// splitEnvelope finds what encoding/json finds for the JsonConverter's
// envelope shape, and declines everything else.
func TestSplitEnvelopeMatchesEncodingJSON(t *testing.T) {
	for _, v := range []string{
		`{"schema":{"type":"struct","fields":[{"field":"a","name":"x\"}]{"}]},"payload":{"op":"c","after":{"a":"}]"}}}`,
		" {\n \"schema\" : null , \"payload\" : {\"op\":\"d\",\"before\":{}} }\n",
		`{"schema":"s","payload":[1,2]}`,
		`{"payload":{"op":"c","after":{}},"schema":{"fields":[]}}`,
		`{"schema":{"a":[{"b":"\\\"}"}]},"payload":{}}`,
	} {
		schema, payload, ok := splitEnvelope([]byte(v))
		require.True(t, ok, v)
		var want struct {
			Schema  json.RawMessage `json:"schema"`
			Payload json.RawMessage `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(v), &want))
		assert.Equal(t, string(want.Schema), string(schema), v)
		assert.Equal(t, string(want.Payload), string(payload), v)
	}
	for _, v := range []string{
		mysqlCreate,
		`{"payload":{},"payload":{}}`,
		`{"schema":{},"schema":{}}`,
		`{"schema":{},"payload":{},"extra":1}`,
		`{"schema":{},"payload":{}} x`,
		`{"schema":{"a":"unterminated},"payload":{}}`,
		`{"schema":{{},"payload":{}}`,
		`[]`,
		``,
	} {
		_, _, ok := splitEnvelope([]byte(v))
		assert.False(t, ok, v)
	}
}

// FuzzDecodeFastEqualsSlow: the decoder with the schema fast path returns
// exactly what it returns on encoding/json alone — the same event, or an
// error in both.
func FuzzDecodeFastEqualsSlow(f *testing.F) {
	// The envelope corpus seeds this target too.
	entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzDecodeEnvelope"))
	require.NoError(f, err)
	require.NotEmpty(f, entries)
	f.Add([]byte(`{"schema":{"type":"struct","fields":[{"field":"after","type":"struct","fields":[{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"},"field":"p"}]}]},"payload":{"after":{"p":"MDk="},"op":"c","source":{}}}`))
	f.Add([]byte(`{"schema":{"fields":[{"field":"after","fields":[{"name":"io.debezium.time.Date","field":"d"}]}]} ,"payload":{"after":{"d":1},"op":"u","source":{},"transaction":{"id":"x","total_order":"2","data_collection_order":1}}}`))
	f.Add([]byte(`{"schema":{"a":},"payload":{"op":"c","after":{}}}`))
	f.Add([]byte(`{"schema":null,"payload":null}`))
	f.Add([]byte(mysqlCreate))
	// The row image's members, converted or not, under keys encoding/json
	// re-encodes (escaped, non-ASCII, HTML characters, duplicates) and
	// values with white space.
	const sch = `{"schema":{"type":"struct","fields":[{"field":"after","type":"struct","fields":[{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"},"field":"p"},{"type":"int64","name":"io.debezium.time.Timestamp","field":"t<"},{"type":"int64","name":"io.debezium.time.MicroTimestamp","field":"é"}]}]},"payload":`
	for _, p := range []string{
		`{"after":{"p":"MDk=","t<":1764417600123,"é":1764417600123456,"x":[1, {"a" : 2}]},"op":"c","source":{}}`,
		`{"after":{"p":"MDk=","t<":0,"é":-1,"a&b":"<>","p":null},"op":"u","source":{}}`,
		`{"after":{ "p" : "/w==" , "p":"gAAAAAAAAAA=" },"op":"c","source":{}}`,
		`{"before":{"p":"AQIDBAUGBwgJ"},"op":"d","source":{}}`,
		`{"before":{},"op":"d","source":{}}`,
		`{"after":{"p":"MDk="},"op":"c","source":{}}`,
		`{"after":{"p":12.5},"op":"c","source":{}}`,
		`{"after":{"p":"MDk"},"op":"c","source":{}}`,
		`{"after":{"t<":"17"},"op":"c","source":{}}`,
	} {
		f.Add([]byte(sch + p + "}"))
	}
	fast := newDecoder(valueWriter{loc: time.UTC})
	slow := newDecoder(valueWriter{loc: time.UTC})
	slow.slowOnly = true
	f.Fuzz(func(t *testing.T, v []byte) {
		ef, errF := fast.decode(v)
		es, errS := slow.decode(v)
		if (errF == nil) != (errS == nil) {
			t.Fatalf("%q: fast path error %v, encoding/json error %v", v, errF, errS)
		}
		if errF != nil {
			return
		}
		if !bytes.Equal(ef.row, es.row) || ef.op != es.op || ef.txID != es.txID || ef.dco != es.dco ||
			ef.totalOrder != es.totalOrder || ef.table != es.table || ef.snapshot != es.snapshot || ef.hasTxn != es.hasTxn ||
			ef.connector != es.connector || ef.db != es.db || ef.schema != es.schema {
			t.Fatalf("%q: fast path %+v, encoding/json %+v", v, ef, es)
		}
	})
}
