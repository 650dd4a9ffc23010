package debezium_txn

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// txnMetaSeeds are transaction topic payloads the scan decides itself: the
// ordinary BEGIN and END, white space, escapes, null and incomplete
// entries, members encoding/json takes of more than one type (some decode
// to an error after the scan, as after encoding/json).
var txnMetaSeeds = []string{
	`{"status":"BEGIN","id":"571","ts_ms":1486500577125,"event_count":null,"data_collections":null}`,
	`{"status":"END","id":"571","ts_ms":1486500577691,"event_count":2,"data_collections":[{"data_collection":"s1.a","event_count":1},{"data_collection":"s1.b","event_count":1}]}`,
	`{"status":"END","id":"0e4d:10","event_count":"2","data_collections":[{"data_collection":"shop.orders","event_count":"1"},{"data_collection":"shop.items","event_count":1}]}`,
	` { "status" : "END" , "id" : "x" , "event_count" : 1 , "data_collections" : [ { "data_collection" : "a.b" , "event_count" : 1 } ] } `,
	`{"status":"END","id":"x","event_count":1,"data_collections":[]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[null]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[null,{"data_collection":"a","event_count":1}]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[{"data_collection":"a"}]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[{"event_count":1}]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[{"data_collection":"a","event_count":-1}]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[{"data_collection":null,"event_count":null}]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[{"data_collection":"caf\u00e9.t\"","event_count":1}]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[{"data_collection":"a","event_count":1,"x":[1,{"y":2}]}]}`,
	`{"status":"END","id":"x","event_count":null}`,
	`{"status":"END","id":17,"event_count":1}`,
	`{"status":"END","id":{"a":[1]},"event_count":1}`,
	`{"status":"END","id":null,"event_count":1}`,
	`{"status":"END","id":"\u0078\ud83d\ude00","event_count":1}`,
	`{"status":"BEGIN","id":""}`,
	`{"status":"\u0042EGIN","id":"x"}`,
	`{"status":"begin","id":"x"}`,
	`{"status":null,"id":"x"}`,
}

// txnMetaDeclined are records the scan must leave to encoding/json:
// case-folded, escaped and duplicate keys, members of a type encoding/json
// refuses, a "payload" member, invalid JSON, values that are not objects.
var txnMetaDeclined = []string{
	`{"status":"END","id":"x","event_count":1,"data_collections":[{"data_collection":5,"event_count":1}]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[{"data_collection":"a","event_count":1.5}]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[{"Data_Collection":"a","event_count":1}]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[{"data_collection":"a","data_collection":"b","event_count":1}]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[1]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":["a"]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":[[]]}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":{}}`,
	`{"status":"END","id":"x","event_count":1,"data_collections":"a"}`,
	`{"status":"END","id":"x","event_count":true}`,
	`{"status":"END","id":"x","event_count":"1e3"}`,
	`{"status":"END","id":"x","event_count":99999999999999999999}`,
	`{"status":5,"id":"x"}`,
	`{"Status":"BEGIN","id":"x"}`,
	`{"st\u0061tus":"BEGIN","id":"x"}`,
	`{"status":"BEGIN","status":"END","id":"x"}`,
	`{"status":"BEGIN","id":"x","payload":null}`,
	`{"id":"x","payload":{"status":"BEGIN","id":"y"}}`,
	`{"id":"x","Payload":{"status":"BEGIN","id":"y"}}`,
	`{"status":"BEGIN","id":"x"} x`,
	`{"status":"BEGIN","id":"x"`,
	`{"status":"BEGIN","id":"x",}`,
	`[]`,
	`null`,
	`5`,
	``,
}

// FuzzTxnMetaScanEqualsSlow: a transaction topic record decodes to the
// same metadata, or the same error, with the payload scanned (and the
// collection names interned) as with encoding/json alone — the payload
// alone and inside the JsonConverter's envelope.
func FuzzTxnMetaScanEqualsSlow(f *testing.F) {
	const sch = `{"schema":{"type":"struct","fields":[{"type":"string","field":"status"}]},"payload":`
	for _, p := range append(txnMetaSeeds, txnMetaDeclined...) {
		f.Add([]byte(p))
		f.Add([]byte(sch + p + "}"))
	}
	// After the schema above is recognised by its bytes: values that
	// start with it and are not that schema, another schema, invalid ones
	// (one that splitEnvelope skips, twice: an invalid schema is never
	// recognised).
	const begin = `{"status":"BEGIN","id":"x"}`
	for _, v := range []string{
		`{"schema":{"type":"struct","fields":[{"type":"string","field":"status"}]}x,"payload":` + begin + `}`,
		`{"schema":{"type":"struct","fields":[{"type":"string","field":"status"}]}},"payload":` + begin + `}`,
		`{"schema":{"type":"struct","fields":[{"type":"string","field":"status"}]},"payload":` + begin + `,"payload":{}}`,
		`{"schema":{"type":"struct","fields":[{"type":"string","field":"status"}],"x":1},"payload":` + begin + `}`,
		`{"schema":{"type":"struct","fields":[}]},"payload":` + begin + `}`,
		`{"schema":{"type":"struct","fields":[1,]},"payload":` + begin + `}`,
		`{"schema":{"type":"struct","fields":[1,]},"payload":{"status":"BEGIN","id":"y"}}`,
		// As long as the recognised schema and as its bytes but for
		// one or two: recognised only when every byte is the same.
		`{"schema":{"type":"struct","fields":[{"type":"string","field":"status"}}],"payload":` + begin + `}`,
		`{"schema":{"type":"struct","fields":[{"type":"string","field":"status"]}},"payload":` + begin + `}`,
		`{"schema":{"type":"struct","fields":[{"type":"string","field":"status"}]},"payload":` + begin + `}`,
		`{"payload":` + begin + `,"schema":{"type":"struct","fields":[{"type":"string","field":"status"}]}}`,
	} {
		f.Add([]byte(v))
	}
	d := newDecoder(valueWriter{loc: time.UTC})
	f.Fuzz(func(t *testing.T, v []byte) {
		got, gerr := d.decodeTxnMeta(v)
		want, werr := decodeTxnMetaWith(v, false)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("%q: scan error %v, encoding/json error %v", v, gerr, werr)
		}
		if !assert.Equal(t, want, got, "%q", v) {
			t.FailNow()
		}
	})
}

// The scan decides the records it is for, not handing them to
// encoding/json, and leaves the others to it.
func TestScanTxnMetaDecidesTheOrdinaryShapes(t *testing.T) {
	d := newDecoder(valueWriter{loc: time.UTC})
	for _, s := range txnMetaSeeds {
		var w wireTxnMeta
		assert.True(t, scanTxnMeta([]byte(s), &w, d), s)
	}
	for _, s := range txnMetaDeclined {
		var w wireTxnMeta
		assert.False(t, scanTxnMeta([]byte(s), &w, d), s)
	}
	// The collection names of ENDs are one string each however many ENDs
	// name them.
	m1, err := d.decodeTxnMeta([]byte(txnMetaSeeds[1]))
	require.NoError(t, err)
	m2, err := d.decodeTxnMeta([]byte(txnMetaSeeds[1]))
	require.NoError(t, err)
	require.Len(t, m2.collections, 2)
	assert.Equal(t, unsafe.StringData(m1.collections[0].name), unsafe.StringData(m2.collections[0].name))
}
