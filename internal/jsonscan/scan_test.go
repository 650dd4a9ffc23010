package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// The differential checks: each compares one scanner function with
// encoding/json on one input and fails on any disagreement. The fuzz targets
// (fuzz_test.go) and the generated-input properties below share them.

// refFields is encoding/json's view of the members testFields extracts: one
// json.RawMessage field per name, as the txn_assembler decoders declare them.
type refFields struct {
	Type  json.RawMessage `json:"type"`
	TxnID json.RawMessage `json:"txnId"`
	JSON  json.RawMessage `json:"json"`
	Op    json.RawMessage `json:"op"`
	Data  json.RawMessage `json:"data"`
}

var testFields = NewFields("type", "txnId", "json", "op", "data")

func (r *refFields) values() []json.RawMessage {
	return []json.RawMessage{r.Type, r.TxnID, r.JSON, r.Op, r.Data}
}

// depth is the deepest nesting of objects and arrays outside strings: a
// scan may be Unusual only beyond MaxDepth.
func depth(b []byte) int {
	d, deepest, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case inStr && c == '"':
			inStr = false
		case inStr:
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

func checkValid(t require.TestingT, b []byte) {
	want := json.Valid(b)
	switch st := Valid(b); st {
	case OK:
		require.True(t, want, "Valid accepted %q, which encoding/json rejects", b)
	case Invalid:
		require.False(t, want, "Valid rejected %q, which encoding/json accepts", b)
	default:
		require.Greater(t, depth(b), MaxDepth, "Valid gave up on %q", b)
	}
}

func checkScan(t require.TestingT, b []byte) {
	out := make([]Value, testFields.Len())
	st := testFields.Scan(b, out)
	checkScanUnquote(t, b, st, out)
	checkScanKeys(t, b, st, out)
	valid := json.Valid(b)
	switch st {
	case Invalid:
		require.False(t, valid, "Scan rejected %q, which encoding/json accepts", b)
		return
	case Unusual:
		return
	}
	require.True(t, valid, "Scan accepted %q, which encoding/json rejects", b)
	var ref refFields
	require.NoError(t, json.Unmarshal(b, &ref), "Scan accepted %q", b)
	for i, raw := range ref.values() {
		got := out[i]
		if raw == nil {
			require.Equal(t, KindNone, got.Kind, "member %d of %q", i, b)
			require.Nil(t, got.Raw)
			continue
		}
		require.Equal(t, string(raw), string(got.Raw), "member %d of %q", i, b)
		require.Equal(t, kindOf(raw), got.Kind, "member %d of %q", i, b)
		if got.Kind == KindString {
			var s string
			require.NoError(t, json.Unmarshal(raw, &s))
			require.Equal(t, s, got.String(), "decoded member %d of %q", i, b)
			if got.Plain {
				c, ok := got.Content()
				require.True(t, ok)
				require.Equal(t, s, string(c), "a Plain string's content is its value")
			}
		}
	}
}

// checkScanUnquote checks ScanUnquote against Scan and AppendUnquoted for
// every member: the same status and values, and when OK the member's
// decoded content appended to what dst held.
func checkScanUnquote(t require.TestingT, b []byte, st Status, out []Value) {
	for k := range testFields.Len() {
		got := make([]Value, testFields.Len())
		gotSt, dst := testFields.ScanUnquote(b, got, k, []byte("pre"))
		require.Equal(t, st, gotSt, "ScanUnquote of member %d of %q", k, b)
		if st != OK {
			continue
		}
		require.Equal(t, out, got, "ScanUnquote's values of %q", b)
		want := "pre"
		if out[k].Kind == KindString {
			want += string(AppendUnquoted(nil, out[k].Raw))
		}
		require.Equal(t, want, string(dst), "ScanUnquote's content of member %d of %q", k, b)
	}
}

// refKeys is encoding/json's view of the top-level keys of the object raw:
// each key read as a token (decoded as encoding/json decodes strings), in
// the order written, added to a KeysHash.
func refKeys(t require.TestingT, raw []byte) schema.KeysHash {
	var h schema.KeysHash
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok, "%q is an object", raw)
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		h.AddString(tok.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return h
}

// checkScanKeys checks ScanKeys and ScanUnquoteKeys against Scan, Scan
// with ScanUnquote, and refKeys for every member: the same status and
// values, and when OK the member's keys when it is an object, nothing
// otherwise.
func checkScanKeys(t require.TestingT, b []byte, st Status, out []Value) {
	for k := range testFields.Len() {
		got := make([]Value, testFields.Len())
		var keys schema.KeysHash
		require.Equal(t, st, testFields.ScanKeys(b, got, k, &keys), "ScanKeys of member %d of %q", k, b)
		var keys2 schema.KeysHash
		got2 := make([]Value, testFields.Len())
		st2, dst := testFields.ScanUnquoteKeys(b, got2, k, []byte("pre"), &keys2)
		require.Equal(t, st, st2, "ScanUnquoteKeys of member %d of %q", k, b)
		if st != OK {
			continue
		}
		require.Equal(t, out, got, "ScanKeys's values of %q", b)
		require.Equal(t, out, got2, "ScanUnquoteKeys's values of %q", b)
		var want schema.KeysHash
		if out[k].Kind == KindObject {
			want = refKeys(t, out[k].Raw)
		}
		require.Equal(t, want, keys, "ScanKeys's keys of member %d of %q", k, b)
		require.Equal(t, want, keys2, "ScanUnquoteKeys's keys of member %d of %q", k, b)
		wantDst := "pre"
		if out[k].Kind == KindString {
			wantDst += string(AppendUnquoted(nil, out[k].Raw))
		}
		require.Equal(t, wantDst, string(dst), "ScanUnquoteKeys's content of member %d of %q", k, b)
	}
}

// checkObjectKeys checks ObjectKeys against json.Valid and refKeys.
func checkObjectKeys(t require.TestingT, b []byte) {
	st, keys := ObjectKeys(b)
	valid := json.Valid(b)
	isObject := len(bytes.TrimLeft(b, " \t\r\n")) > 0 && bytes.TrimLeft(b, " \t\r\n")[0] == '{'
	switch st {
	case Invalid:
		require.False(t, valid, "ObjectKeys rejected %q, which encoding/json accepts", b)
	case Unusual:
		require.True(t, !valid || !isObject || depth(b) > MaxDepth, "ObjectKeys gave up on %q", b)
	case OK:
		require.True(t, valid && isObject, "ObjectKeys accepted %q", b)
		require.Equal(t, refKeys(t, b), keys, "ObjectKeys's keys of %q", b)
	}
}

func kindOf(raw []byte) Kind {
	switch raw[0] {
	case '"':
		return KindString
	case '{':
		return KindObject
	case '[':
		return KindArray
	case 't':
		return KindTrue
	case 'f':
		return KindFalse
	case 'n':
		return KindNull
	}
	return KindNumber
}

func checkUnquote(t require.TestingT, content []byte) {
	lit := append(append([]byte{'"'}, content...), '"')
	st := Valid(lit)
	var s string
	err := json.Unmarshal(lit, &s)
	if st != OK {
		require.Equal(t, Invalid, st)
		require.Error(t, err, "Valid rejected the literal %q", lit)
		return
	}
	require.NoError(t, err, "Valid accepted the literal %q", lit)
	require.Equal(t, s, string(AppendUnquoted(nil, lit)), "unquoting %q", lit)
	require.Equal(t, s, Value{Raw: lit, Kind: KindString}.String())
}

// reencode is what txn_assembler's slow path does to a row: decode with
// UseNumber, encode without HTML escaping.
func reencode(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func checkRow(t require.TestingT, b []byte) {
	st, row := ScanRow(b, "__op")
	valid := json.Valid(b)
	switch st {
	case Invalid:
		require.False(t, valid, "ScanRow rejected %q, which encoding/json accepts", b)
		return
	case Unusual:
		if valid && depth(b) <= MaxDepth {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			var v any
			require.NoError(t, dec.Decode(&v))
			_, isObject := v.(map[string]any)
			require.False(t, isObject, "ScanRow gave up on the object %q", b)
		}
		return
	}
	require.True(t, valid, "ScanRow accepted %q, which encoding/json rejects", b)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m), "ScanRow accepted %q as an object", b)
	require.Equal(t, refKeys(t, b), row.Keys, "ScanRow's keys of %q", b)
	if !row.Canonical {
		require.Nil(t, row.Member.Raw, "a member is reported for canonical rows only")
		return
	}
	again, err := reencode(b)
	require.NoError(t, err)
	require.Equal(t, string(b), string(again), "ScanRow called %q canonical", b)
	if raw, ok := m["__op"]; ok {
		require.Equal(t, string(raw), string(row.Member.Raw))
	} else {
		require.Nil(t, row.Member.Raw)
	}
}

func checkAll(t require.TestingT, b []byte) {
	checkValid(t, b)
	checkScan(t, b)
	checkRow(t, b)
	checkObjectKeys(t, b)
	checkUnquote(t, b)
}

// hostile are inputs written to hit each fallback and each rule of the
// grammar; they are also the fuzz targets' seeds.
var hostile = []string{
	``, ` `, `{}`, ` {} `, `{ }`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e+3`, `"s"`,
	`{"type":"DATA"}`, `{"type":"DATA",}`, `{"type" "DATA"}`, `{"type":}`, `{"type":"DATA"}x`, `{"type":"DATA"}{}`,
	`{"TYPE":"DATA"}`, `{"Type":"DATA","type":"END"}`, `{"type":"a","type":"b"}`, `{"t\u0079pe":"DATA"}`,
	`{"txnıd":"x"}`, `{"txnId":"x","ſ":1}`, `{"json":"{\"a\":1}"}`, `{"json":{"a":[1,{"b":null}]}}`,
	`{"op":1}`, `{"op":01}`, `{"op":1.}`, `{"op":.5}`, `{"op":1e}`, `{"op":-}`, `{"op":1E-7}`, `{"op":-0.0e0}`,
	`{"op":+1}`, `{"op":0x10}`, `{"op":NaN}`, `{"op":Infinity}`, `{"op":tru}`, `{"op":nul}`, `{"op":truex}`,
	`{"data":"\ud83d\ude00"}`, `{"data":"\ud83d"}`, `{"data":"\ude00\ud83d"}`, `{"data":"\ud83dx"}`, `{"data":"\ud83d\u0041"}`,
	`{"data":"\u00e9\u2028\u2029"}`, "{\"data\":\"\xff\xfe\"}", "{\"data\":\"\xed\xa0\x80\"}", "{\"data\":\"é\"}",
	"{\"data\":\"a\x01b\"}", "{\"data\":\"tab\there\"}", `{"data":"\x41"}`, `{"data":"\'"}`, `{"data":"\uD83D\uDE00"}`,
	`{"data":"\u00"}`, `{"data":"\u00zz"}`, `{"data":"\`, `{"data":"abc`, `{"data":"a\"b\\c\/d\b\f\n\r\t"}`,
	"{\"data\":\"\x7f<>&\"}", `{"a":{"b":{"c":{"d":[[[[[]]]]]}}}}`, strings.Repeat("[", 70) + strings.Repeat("]", 70),
	`{"x":` + strings.Repeat("[", 80) + strings.Repeat("]", 80) + `}`, strings.Repeat("[", 70) + strings.Repeat("]", 69),
	`{"__op":1,"a":2}`, `{"__op":1,"__op":0}`, `{"__o\u0070":1}`, `{"__op":0,"b":"x"}`, `{"a":1,"__op":0}`,
	`{"__op":"1"}`, `{"__op": 1}`, `{"b":{"z":1,"a":2},"__op":1}`, `{"__op":1,"b":{"a":2,"z":1}}`, `{"__op":1,"b":[{"y":1,"x":2}]}`,
	`{"__op":1,"s":"a\"b"}`, `{"__op":1,"s":"é"}`, `{"__op":1,"s":"\u2028"}`, "{\"__op\":1,\"s\":\"\xe2\x80\xa8\"}",
	`{"__op":1,"n":1.50,"m":1e5,"k":-0}`, `{"":1,"__op":0}`, `{"__op":0,"":1}`, "\f{}", "{}\f", "\u00a0{}", "{\"a\":1}\n",
	`{"order_id":1,"customer_id":100,"total_amount":99.99,"order_status":"created"}`,
	`{"a":1,"a":2}`, `{"a\u00e9":1,"aé":2}`, `{"\u005f_op":1,"b":2}`, "{\"\xff\":1,\"\xfe\":2}", `{"json":{"a":1,"a":1,"__op":1}}`,
	`{"data":{"x\ny":1,"\ud83d":2,"":3}}`, `{"json":{"` + strings.Repeat("k", 300) + `\u00e9":1}}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"order_id\":1,\"__op\":1}"}`,
	`{"database":"shop","table":"orders","type":"insert","ts":1477053217,"xid":23396,"commit":true,"data":{"id":1,"customer_id":42}}`,
}

func TestHostileInputs(t *testing.T) {
	for _, h := range hostile {
		checkAll(t, []byte(h))
	}
}

func TestScanExtractsMembers(t *testing.T) {
	out := make([]Value, testFields.Len())
	b := []byte(` {"x":[1,{"type":2}], "type" : "DATA","json":"{\"a\":1}","op":null,"data":{"k":true}} `)
	require.Equal(t, OK, testFields.Scan(b, out))
	assert.Equal(t, `"DATA"`, string(out[0].Raw))
	assert.True(t, out[0].Plain, "a nested member of the same name is not the top-level one")
	assert.Equal(t, KindNone, out[1].Kind, "txnId is absent")
	assert.Equal(t, `{"a":1}`, out[2].String())
	assert.False(t, out[2].Plain)
	assert.Equal(t, KindNull, out[3].Kind)
	assert.True(t, out[3].Absent())
	assert.Equal(t, KindObject, out[4].Kind)

	for _, unusual := range []string{`{"Type":"DATA"}`, `{"type":1,"type":2}`, `{"t\u0079pe":1}`, `{"tÿpe":1}`, `[]`} {
		assert.Equal(t, Unusual, testFields.Scan([]byte(unusual), out), unusual)
	}
	for _, invalid := range []string{`{"type":"DATA"`, `{"type":01}`, `{"a":1,}`, `{} {}`} {
		assert.Equal(t, Invalid, testFields.Scan([]byte(invalid), out), invalid)
	}
}

func TestScanRowCanonical(t *testing.T) {
	for b, canonical := range map[string]bool{
		`{"__op":1,"a":2}`:    true,
		`{"a":2,"__op":1}`:    false, // keys out of order
		`{"__op":1, "a":2}`:   false,
		`{"__op":1,"a":"\n"}`: false,
		`{"__op":1,"a":"é"}`:  true,
		`{}`:                  true,
		`{"b":{"a":1,"a":2}}`: false,
	} {
		st, row := ScanRow([]byte(b), "__op")
		require.Equal(t, OK, st, b)
		assert.Equal(t, canonical, row.Canonical, b)
	}
	st, row := ScanRow([]byte(`{"__op":1,"a":2}`), "__op")
	require.Equal(t, OK, st)
	assert.Equal(t, "1", string(row.Member.Raw))
}

// genJSON draws JSON-like text: mostly valid, with the grammar's corner
// cases and the scanner's fallbacks (escaped, folded and duplicate keys,
// invalid UTF-8, deep nesting) mixed in, and sometimes broken on purpose.
func genJSON(t *rapid.T, label string, d int) string {
	kinds := []string{"object", "object", "array", "string", "number", "literal"}
	if d > 3 {
		kinds = []string{"string", "number", "literal"}
	}
	switch rapid.SampledFrom(kinds).Draw(t, label+"/kind") {
	case "object":
		n := rapid.IntRange(0, 5).Draw(t, label+"/n")
		var sb strings.Builder
		sb.WriteString("{")
		for i := 0; i < n; i++ {
			if i > 0 {
				sb.WriteString(rapid.SampledFrom([]string{",", ",", ", ", ",\n"}).Draw(t, label+"/sep"))
			}
			sb.WriteString(genString(t, label+"/key", true))
			sb.WriteString(rapid.SampledFrom([]string{":", ":", " : "}).Draw(t, label+"/colon"))
			sb.WriteString(genJSON(t, label+"/v", d+1))
		}
		sb.WriteString("}")
		return sb.String()
	case "array":
		n := rapid.IntRange(0, 4).Draw(t, label+"/n")
		parts := make([]string, n)
		for i := range parts {
			parts[i] = genJSON(t, label+"/e", d+1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case "string":
		return genString(t, label+"/s", false)
	case "number":
		return rapid.SampledFrom([]string{"0", "1", "-1", "10", "007", "1.5", "1.", ".5", "-0", "1e3", "1E+3", "1e-3", "1e", "2.50", "1e400", "-", "+1", "123456789012345678901234567890"}).Draw(t, label+"/num")
	}
	return rapid.SampledFrom([]string{"true", "false", "null", "nul", "True", "truee"}).Draw(t, label+"/lit")
}

func genString(t *rapid.T, label string, key bool) string {
	pieces := []string{"a", "type", "txnId", "json", "op", "data", "__op", "TYPE", "Op", "\\u0074ype", "\\\"", "\\\\", "\\/",
		"\\n", "\\t", "\\u00e9", "\\ud83d\\ude00", "\\ud83d", "\\ude00", "é", "\u2028", "\xff", "\xed\xa0\x80", "\x01", "\\x",
		"\\u12", "ſ", "K", "<&>", " ", "\x7f", "0"}
	n := rapid.IntRange(0, 3).Draw(t, label+"/n")
	if key {
		n = rapid.IntRange(1, 2).Draw(t, label+"/n")
	}
	var sb strings.Builder
	sb.WriteString(`"`)
	for i := 0; i < n; i++ {
		sb.WriteString(rapid.SampledFrom(pieces).Draw(t, label+"/p"))
	}
	if rapid.IntRange(0, 40).Draw(t, label+"/unterminated") == 0 {
		return sb.String()
	}
	sb.WriteString(`"`)
	return sb.String()
}

func TestGeneratedInputs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := []byte(genJSON(t, "doc", 0))
		if rapid.IntRange(0, 9).Draw(t, "mutate") == 0 && len(b) > 0 {
			// Break it: drop or duplicate one byte.
			i := rapid.IntRange(0, len(b)-1).Draw(t, "at")
			if rapid.Bool().Draw(t, "drop") {
				b = append(b[:i:i], b[i+1:]...)
			} else {
				b = append(b[:i+1:i+1], b[i:]...)
			}
		}
		checkAll(t, b)
	})
}

// TestGeneratedAreMostlyDecided guards the point of the scanner: on ordinary
// CDC text it decides by itself and falls back only for the unusual.
func TestGeneratedAreMostlyDecided(t *testing.T) {
	out := make([]Value, testFields.Len())
	for _, b := range []string{
		`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"order_id\":1,\"total_amount\":\"99.99\"}"}`,
		`{"database":"shop","table":"orders","type":"insert","ts":1477053217,"xid":23396,"commit":true,"data":{"id":1,"customer_id":42}}`,
	} {
		assert.Equal(t, OK, testFields.Scan([]byte(b), out), b)
	}
}

// The keys of a row, as each scan reports them: the same names give the
// same hash in any order and however they are escaped, __op aside; nested
// keys do not count.
func TestKeysOfRows(t *testing.T) {
	hash := func(names ...string) schema.KeysHash {
		var h schema.KeysHash
		for _, n := range names {
			h.AddString(n)
		}
		return h
	}
	for row, want := range map[string]schema.KeysHash{
		`{"a":1,"b":{"c":2}}`:            hash("a", "b"),
		`{"b":[{"z":1}],"a":null}`:       hash("a", "b"),
		`{"\u0061":1,"b":2,"__op":1}`:    hash("a", "b"),
		`{"é":1}`:                        hash("é"),
		`{"\u00e9":1}`:                   hash("é"),
		`{}`:                             hash(),
		`{"a":1,"a":2}`:                  hash("a", "a"),
		"{\"\xff\":1}":                   hash("\uFFFD"),
		`{"__o\u0070":1,"x\"y":true}`:    hash(`x"y`),
		` {"a" : 1 , "b" : "\u0062"} `:   hash("a", "b"),
		`{"order_id":1,"customer_id":2}`: hash("customer_id", "order_id"),
	} {
		st, keys := ObjectKeys([]byte(row))
		require.Equal(t, OK, st, row)
		assert.Equal(t, want, keys, "ObjectKeys %s", row)
		st, r := ScanRow([]byte(row), "__op")
		require.Equal(t, OK, st, row)
		assert.Equal(t, want, r.Keys, "ScanRow %s", row)
		var k schema.KeysHash
		out := make([]Value, testFields.Len())
		require.Equal(t, OK, testFields.ScanKeys([]byte(`{"type":"DATA","data":`+row+`}`), out, 4, &k), row)
		assert.Equal(t, want, k, "ScanKeys %s", row)
	}
}
