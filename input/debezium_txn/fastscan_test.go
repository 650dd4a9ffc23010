package debezium_txn

import (
	"bytes"
	"encoding/json"
	"math/big"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusSeeds returns the []byte values of the committed corpus of the
// named fuzz targets (go test's "go test fuzz v1" files).
func corpusSeeds(t testing.TB, targets ...string) [][]byte {
	var out [][]byte
	for _, target := range targets {
		dir := filepath.Join("testdata", "fuzz", target)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			for _, line := range strings.Split(string(b), "\n") {
				if q, ok := strings.CutPrefix(line, "[]byte("); ok {
					s, err := strconv.Unquote(strings.TrimSuffix(q, ")"))
					require.NoError(t, err, "%s/%s", target, e.Name())
					out = append(out, []byte(s))
				}
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// envelopeSeeds are shapes the scan must decide like encoding/json: the
// ordinary ones, and each way it must decline (case-folded, escaped,
// duplicate keys, members of another type, numbers that are not integers).
var envelopeSeeds = []string{
	mysqlCreate,
	`{"op":"c","after":{"a":1},"source":null,"transaction":null}`,
	`{"op":"c","after":null,"before":{"a":1}}`,
	`{"op":"u","after":{"a":1},"source":{"connector":"postgresql","db":"d","schema":"public","table":"t","snapshot":"LAST"}}`,
	`{"op":"r","after":{},"source":{"snapshot":true}}`,
	`{"op":"r","after":{},"source":{"snapshot":null,"db":null}}`,
	`{"op":"c","after":{},"transaction":{"id":"x:1","total_order":"3","data_collection_order":"1"}}`,
	`{"op":"c","after":{},"transaction":{"id":17,"total_order":3,"data_collection_order":1}}`,
	`{"op":"c","after":{},"transaction":{"id":{"a":1},"total_order":-3,"data_collection_order":+1}}`,
	`{"op":"c","after":{},"transaction":{"id":"x","total_order":1.5,"data_collection_order":1}}`,
	`{"op":"c","after":{},"transaction":{"id":"x","total_order":"\u0031","data_collection_order":1}}`,
	`{"op":"c","after":{},"transaction":{"id":"x","total_order":99999999999999999999,"data_collection_order":1}}`,
	`{"op":"c","after":{},"transaction":{"id":"x","total_order":-9223372036854775808,"data_collection_order":9223372036854775807}}`,
	`{"op":"c","after":{},"transaction":{"id":"x","data_collection_order":"null"}}`,
	`{"op":"c","after":{},"transaction":{"id":"x\u00e9\"","total_order":null,"data_collection_order":1}}`,
	`{"op":"c","after":{},"transaction":{"ID":"x","data_collection_order":1}}`,
	`{"op":"c","after":{},"transaction":[1]}`,
	`{"op":"c","after":{},"transaction":"x"}`,
	`{"op":"c","after":{},"source":"x"}`,
	`{"op":"c","after":{},"source":{"table":5}}`,
	`{"op":"c","after":{},"source":{"table":"a","table":"b"}}`,
	`{"op":"c","after":{},"source":{"Table":"a"}}`,
	`{"op":"c","after":{},"source":{"t\u0061ble":"a"}}`,
	`{"op":"c","after":{},"source":{"table":"caf\u00e9","db":"\u00fcber"}}`,
	`{"Op":"c","after":{}}`,
	`{"op":"c","op":"u","after":{}}`,
	`{"op":5,"after":{}}`,
	`{"op":null,"after":{}}`,
	`{"op":"cc","after":{}}`,
	`{"schema":{"a":1},"payload":{"op":"c","after":{}}}`,
	`{"schema":null,"payload":null}`,
	`{"op":"c","after":{}} x`,
	`{"op":"c","after":{}`,
	`[1]`,
	`"x"`,
	``,
	` {"op" : "d" , "before" : { "a" : 1 } } `,
}

// FuzzScanEnvelopeEqualsEncodingJSON: whenever scanEnvelope decides, its
// envelope is exactly what json.Unmarshal decodes — member for member,
// absent or null kept apart — and json.Unmarshal accepts the text.
func FuzzScanEnvelopeEqualsEncodingJSON(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	for _, s := range corpusSeeds(f, "FuzzDecodeEnvelope", "FuzzDecodeFastEqualsSlow") {
		f.Add(s)
	}
	d := newDecoder(valueWriter{loc: time.UTC})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got wireEnvelope
		if !d.scanEnvelope(b, &got) {
			return
		}
		var want wireEnvelope
		require.NoError(t, json.Unmarshal(b, &want), "the scan accepted %q", b)
		raws := func(e *wireEnvelope) []json.RawMessage {
			return []json.RawMessage{e.Schema, e.Payload, e.Before, e.After, e.Source.Snapshot}
		}
		for i, w := range raws(&want) {
			g := raws(&got)[i]
			if (w == nil) != (g == nil) || !bytes.Equal(w, g) {
				t.Fatalf("%q: raw member %d: scan %q, encoding/json %q", b, i, g, w)
			}
		}
		if got.Op != want.Op || got.Source.Connector != want.Source.Connector || got.Source.DB != want.Source.DB ||
			got.Source.Schema != want.Source.Schema || got.Source.Table != want.Source.Table {
			t.Fatalf("%q: scan %+v, encoding/json %+v", b, got, want)
		}
		if (got.Transaction == nil) != (want.Transaction == nil) ||
			(got.Transaction != nil && *got.Transaction != *want.Transaction) {
			t.Fatalf("%q: transaction: scan %+v, encoding/json %+v", b, got.Transaction, want.Transaction)
		}
	})
}

// The scan decides the envelopes it is for: each seed above that
// encoding/json decodes without a question is scanned, not handed back.
func TestScanEnvelopeDecidesTheOrdinaryShapes(t *testing.T) {
	d := newDecoder(valueWriter{loc: time.UTC})
	for _, s := range []string{mysqlCreate, envelopeSeeds[1], envelopeSeeds[3], envelopeSeeds[6], envelopeSeeds[7], envelopeSeeds[12]} {
		var env wireEnvelope
		assert.True(t, d.scanEnvelope([]byte(s), &env), s)
	}
	for _, s := range []string{envelopeSeeds[9], envelopeSeeds[15], envelopeSeeds[20], envelopeSeeds[21], envelopeSeeds[25], envelopeSeeds[26]} {
		var env wireEnvelope
		assert.False(t, d.scanEnvelope([]byte(s), &env), s)
	}
}

// FuzzDecimalFastEqualsBigInt: the decimal fast path renders what
// decimalText renders with math/big, for every value of up to eight bytes
// and every scale it takes.
func FuzzDecimalFastEqualsBigInt(f *testing.F) {
	for _, b := range [][]byte{nil, {0}, {0x80}, {0xff}, {0x7f, 0xff}, {0x80, 0, 0, 0, 0, 0, 0, 0}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, big.NewInt(1234567).Bytes(), {0xfe, 0xd4}} {
		for _, scale := range []int32{0, 1, 2, 7, 19, 20, 30, maxDecimalScale} {
			f.Add(b, scale)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, scale int32) {
		if len(b) > 8 || scale < 0 || scale > maxDecimalScale {
			return
		}
		want, err := decimalText(b, scale)
		require.NoError(t, err)
		assert.Equal(t, `"`+want+`"`, string(appendDecimal(nil, b, scale)), "% x scale %d", b, scale)
	})
}

// The decimal fast path takes only what it renders exactly and leaves the
// rest (escapes, long or invalid base64, negative scales) to convert's
// general path, so convert's output and errors stay what they were.
func TestDecimalFastPathDeclines(t *testing.T) {
	for _, raw := range []string{`"\u0041Q=="`, `"AAAAAAAAAAAA"`, `"!!"`, `"AQ"`, `5`, `"é"`} {
		_, ok := appendDecimalFast(nil, []byte(raw), 2)
		assert.False(t, ok, raw)
	}
	_, ok := appendDecimalFast(nil, []byte(`"AQ=="`), -1)
	assert.False(t, ok)
	out, ok := appendDecimalFast(nil, []byte(`"AQ=="`), 2)
	assert.True(t, ok)
	assert.Equal(t, `"0.01"`, string(out))
	r := rand.New(rand.NewSource(1))
	w := valueWriter{loc: time.UTC}
	for i := 0; i < 2000; i++ {
		b := make([]byte, r.Intn(9))
		r.Read(b)
		scale := int32(r.Intn(25))
		raw, _ := json.Marshal(b) // base64 text, as the JsonConverter writes it
		got, err := w.convert(nil, fieldConv{kind: convDecimal, scale: scale}, raw)
		require.NoError(t, err)
		want, err := decimalText(b, scale)
		require.NoError(t, err)
		require.Equal(t, `"`+want+`"`, string(got), "% x scale %d", b, scale)
	}
}

// appendDatetime and appendFraction write what datetimeText and fraction
// write.
func TestAppendDatetimeEqualsDatetimeText(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 5000; i++ {
		ns := r.Int63n(1e9)
		switch i % 3 {
		case 0:
			ns = 0
		case 1:
			ns -= ns % 1000
		}
		tm := time.Unix(r.Int63n(1<<36)-1<<35, ns).UTC()
		require.Equal(t, datetimeText(tm), string(appendDatetime(nil, tm)), tm)
		require.Equal(t, fraction(ns), string(appendFraction(nil, ns)), ns)
	}
}

// FuzzSplitHintEqualsSplit: splitting with an earlier event's schema as
// the hint finds what splitting without it finds, whatever follows the
// hint's bytes.
func FuzzSplitHintEqualsSplit(f *testing.F) {
	const s1 = `{"schema":{"type":"struct","fields":[{"field":"a","name":"x\"}]{"}]},"payload":{"op":"c","after":{"a":"}]"}}}`
	for _, pair := range [][2]string{
		{s1, s1},
		{s1, `{"schema":{"type":"struct","fields":[{"field":"a","name":"x\"}]{"}]}, "payload":{"op":"d"}}`},
		{s1, `{"schema":{"type":"struct","fields":[{"field":"a","name":"x\"}]{"}]}}},"payload":{}}`},
		{s1, `{"schema":{"type":"struct","fields":[{"field":"a","name":"x\"}]{"}]}x,"payload":{}}`},
		{s1, `{"payload":{},"schema":{"type":"struct","fields":[{"field":"a","name":"x\"}]{"}]}}`},
		{s1, `{"schema":{"type":"struct","fields":[{"field":"a","name":"x\"}]{"}]},"schema":{},"payload":{}}`},
		{s1, `{"schema":{"type":"struct","fields":[{"field":"a","name":"x\"}]{"}]`},
		{`{"schema":{},"payload":{}}`, `{"schema":{}},"payload":{}}`},
		{`{"schema":"s","payload":[1]}`, `{"schema":"s","payload":[1]}`},
		{`{"schema":null,"payload":null}`, `{"schema":nullx,"payload":null}`},
	} {
		f.Add([]byte(pair[0]), []byte(pair[1]))
	}
	f.Fuzz(func(t *testing.T, first, v []byte) {
		hint, _, ok := splitEnvelope(first)
		if !ok || len(hint) == 0 || hint[0] != '{' {
			hint = nil
		}
		s, p, hit, ok := splitEnvelopeHint(v, hint)
		ws, wp, wok := splitEnvelope(v)
		if ok != wok || !bytes.Equal(s, ws) || !bytes.Equal(p, wp) {
			t.Fatalf("hint %q, %q: with the hint %q %q %v, without %q %q %v", hint, v, s, p, ok, ws, wp, wok)
		}
		if hit && !bytes.Equal(s, hint) {
			t.Fatalf("a hit on a schema that is not the hint: %q", v)
		}
	})
}

// FuzzKeyColumnsScanEqualsSlow: the columns of a key without a schema are
// what encoding/json's tokens give, after any earlier key (the scan reuses
// the last key's columns when the names repeat).
func FuzzKeyColumnsScanEqualsSlow(f *testing.F) {
	for _, pair := range [][2]string{
		{`{"id":1}`, `{"id":2}`},
		{`{"id":1}`, `{"id":1,"b":2}`},
		{`{"id":1,"b":2}`, `{"id":1}`},
		{`{"a":1}`, `{"b":1}`},
		{`{}`, `{}`},
		{`{"id":1}`, ` { "id" : [1, {"x":2}] , "k\u00e9y":"v" } `},
		{`{"id":1}`, `{"id":1} x`},
		{`{"id":1}`, `[1]`},
		{`{"id":1}`, `"s"`},
		{`{"id":1}`, `{"id":1,"id":2}`},
		{`{"id":1}`, `{"i<d":1}`},
	} {
		f.Add([]byte(pair[0]), []byte(pair[1]))
	}
	d := newDecoder(valueWriter{loc: time.UTC})
	f.Fuzz(func(t *testing.T, first, key []byte) {
		d.keyColumnsScan(first)
		got, ok := d.keyColumnsScan(key)
		if !ok {
			return
		}
		want := keyColumnsSlow(key)
		if !assert.Equal(t, want, got, "%q after %q", key, first) {
			t.FailNow()
		}
	})
}

// FuzzTxnMetaFastEqualsSlow: a transaction topic record decodes to the same
// metadata, or the same error, with the envelope taken apart as with the
// whole value decoded.
func FuzzTxnMetaFastEqualsSlow(f *testing.F) {
	const sch = `{"schema":{"type":"struct","fields":[{"type":"string","field":"status"}]},"payload":`
	for _, p := range []string{
		`{"status":"END","id":"x:1","event_count":2,"data_collections":[{"data_collection":"inv.t","event_count":2}]}`,
		`{"status":"BEGIN","id":"x:1"}`,
		`{"status":"END","id":"x:1","event_count":"2","data_collections":[]}`,
		`null`, `5`, `{"status":"END"}`, `{"status":5}`, `{"status":"END","id":"x","event_count":1.5}`,
	} {
		f.Add([]byte(sch + p + "}"))
		f.Add([]byte(p))
	}
	f.Add([]byte(`{"schema":{"a":},"payload":{"status":"BEGIN","id":"x"}}`))
	f.Add([]byte(`{"schema":{"a":1},"payload":{"status":"BEGIN","id":"x"},"payload":{}}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		got, gerr := decodeTxnMetaWith(v, true)
		want, werr := decodeTxnMetaWith(v, false)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("%q: fast error %v, slow error %v", v, gerr, werr)
		}
		assert.Equal(t, want, got, "%q", v)
	})
}
