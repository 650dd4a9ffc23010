package txnassembler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// checkDecode is the differential check of one body: when the fast decoder
// of format accepts it, the event must equal the encoding/json decoder's
// and that decoder must accept it too. It returns whether the fast path
// decided.
func checkDecode(t require.TestingT, format string, body []byte) bool {
	var d fastDecoder
	msg := service.NewMessage(body)
	var want event
	var wantErr error
	var got event
	var ok bool
	switch format {
	case formatEnvelope:
		want, wantErr = decodeEnvelope(msg)
		got, ok = d.envelopeFast(msg)
	case formatMaxwell:
		want, wantErr = decodeMaxwell(msg)
		got, ok = d.maxwellFast(msg)
	default:
		panic(format)
	}
	want.del = rowIsDelete(want.rowJSON)
	if !ok {
		return false
	}
	require.NoError(t, wantErr, "the fast path accepted %q, which encoding/json rejects", body)
	require.Equal(t, want, got, "the fast path decoded %q differently", body)
	if got.rowJSON != nil {
		require.True(t, json.Valid(got.rowJSON) && got.rowJSON[0] == '{', "the row of %q is not a JSON object", body)
		require.Equal(t, tokenKeys(t, got.rowJSON), got.keys, "the keys of the row of %q", body)
	}
	return true
}

func TestFastDecodersOnHostileInputs(t *testing.T) {
	decided := 0
	for _, b := range hostileEnvelopes {
		if checkDecode(t, formatEnvelope, []byte(b)) {
			decided++
		}
	}
	for _, b := range hostileMaxwell {
		if checkDecode(t, formatMaxwell, []byte(b)) {
			decided++
		}
	}
	assert.Greater(t, decided, 30, "the fast paths decide the ordinary events themselves")

	// Events the fast paths must decide themselves (declining is always
	// correct, but slow).
	for format, bodies := range map[string][]string{
		formatEnvelope: {
			`{"partition":3,"txnId":"t-17","type":"txn_begin"}`,
			`{"txnId":17,"type":"TXN_END"}`,
			`{"partition":"3","txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"__op\":1,\"order_id\":1}"}`,
			`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":{"order_id":1},"op":"d"}`,
			`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"__op\":0,\"a\":1}","op":1}`,
		},
		formatMaxwell: {
			`{"database":"shop","table":"t","type":"weird","xid":5,"sql":null,"data":{"id":1}}`,
			`{"database":"shop","table":"t","type":"table-drop","sql":"DROP TABLE t"}`,
			`{"database":"shop","table":"orders","type":"bootstrap-insert","data":{"id":1}}`,
			`{"database":"shop","table":"orders","type":"delete","xid":5,"data":{"__op":0,"id":1}}`,
			`{"database":"shop","table":"t","type":"update","xid":"x-5","commit":false,"data":{"id":1}}`,
		},
	} {
		for _, b := range bodies {
			assert.True(t, checkDecode(t, format, []byte(b)), "%s: the fast path declined %s", format, b)
		}
	}
}

// TestFastDecodersTakeTheWorkload guards the point of the fast paths: every
// event of the workload generator's traffic is decoded without
// encoding/json.
func TestFastDecodersTakeTheWorkload(t *testing.T) {
	for _, format := range []string{formatEnvelope, formatMaxwell} {
		n := 0
		for _, batch := range workloadBatches(t, format, 300, 100) {
			for _, msg := range batch {
				b, err := msg.AsBytes()
				require.NoError(t, err)
				require.True(t, checkDecode(t, format, b), "%s: the fast path declined %s", format, b)
				n++
			}
		}
		assert.Greater(t, n, 1000, format)
	}
}

// genEnvelope draws envelope text: members in any order, sometimes
// duplicated, renamed in another case or escaped, with values of every
// kind and rows in every form.
func genEnvelope(t *rapid.T) string {
	type member struct{ k, v string }
	var ms []member
	add := func(name, label string, values ...string) {
		if rapid.IntRange(0, 9).Draw(t, label+"/absent") == 0 {
			return
		}
		k := name
		switch rapid.IntRange(0, 19).Draw(t, label+"/key") {
		case 0:
			k = strings.ToUpper(name)
		case 1:
			k = `\u00` + fmt.Sprintf("%02x", name[0]) + name[1:]
		}
		ms = append(ms, member{k, rapid.SampledFrom(values).Draw(t, label+"/v")})
		if rapid.IntRange(0, 19).Draw(t, label+"/dup") == 0 {
			ms = append(ms, member{name, rapid.SampledFrom(values).Draw(t, label+"/v2")})
		}
	}
	add("partition", "partition", `3`, `"3"`, `""`, `null`, `true`, `-0`, `1e2`)
	add("txnId", "txnId", `"t-17"`, `"t-18"`, `""`, `17`, `null`, `false`, `"t\u00e9"`, `"t\"x"`)
	add("type", "type", `"TXN_BEGIN"`, `"DATA"`, `"DATA"`, `"DATA"`, `"TXN_END"`, `"data"`, `"Txn_End"`, `"txn_begın"`, `"D\u0041TA"`, `"COMMIT"`, `""`, `1`)
	add("database", "database", `"test"`, `"shop"`, `null`, `7`, `"t\u00e9st"`)
	add("table", "table", `"orders"`, `"order_items"`, `null`, `[]`)
	add("json", "json", genRowValue(t)...)
	if rapid.Bool().Draw(t, "hasOp") {
		add("op", "op", `"insert"`, `"delete"`, `"D"`, `"1"`, `0`, `1`, `1.0`, `2`, `""`, `null`, `true`, `"upsert"`)
	}
	rapid.Permutation(ms).Draw(t, "order")
	var sb strings.Builder
	sb.WriteString("{")
	for i, m := range ms {
		if i > 0 {
			sb.WriteString(rapid.SampledFrom([]string{",", ", ", ",\n"}).Draw(t, "sep"))
		}
		sb.WriteString(`"` + m.k + `":` + m.v)
	}
	sb.WriteString("}")
	return sb.String()
}

// genRowValue draws rows as an object and as a JSON string of one, in
// canonical and other forms, with and without __op.
func genRowValue(t *rapid.T) []string {
	rows := []string{
		`{"order_id":1,"customer_id":100}`, `{"__op":1,"item_id":2,"order_id":1}`, `{"__op":0,"a":"x"}`, `{"a":1,"__op":1}`,
		`{"__op":"1","a":1}`, `{"__op":2,"a":1}`, `{"__op":1,"__op":0}`, `{"a":{"__op":1}}`, `{"b":1,"a":2,"__op":1}`,
		`{"__op":1,"a":{"z":1,"y":2}}`, `{"__op":1,"a":"<&>"}`, `{"__op":1,"a":"é"}`, `{"__op":1,"a":[{"b":1,"a":0}]}`,
		`{}`, `{ "a" : 1 }`, `{"a":1.50,"b":1e3,"c":-0,"__op":0}`, `{"a":"\n","__op":1}`, `[1]`, `{"a":`, `1`,
		`{"a":1,"a":2}`, `{"a":1,"a":2,"__op":1}`, `{"\u0061":1,"b":2}`, `{"é":1,"__op":0}`, `{"a":1,"\u005f_op":1}`,
	}
	row := rapid.SampledFrom(rows).Draw(t, "row")
	quoted, _ := json.Marshal(row) // escapes <, > and & as \u003c…, as Go producers do
	ws := " " + row + " "
	q2, _ := json.Marshal(ws)
	return []string{row, string(quoted), string(q2), `"not json"`, `null`, `3`}
}

// genMaxwell draws maxwell rows the same way.
func genMaxwell(t *rapid.T) string {
	m := map[string]string{}
	put := func(name string, values ...string) {
		if rapid.IntRange(0, 7).Draw(t, name+"/absent") > 0 {
			m[name] = rapid.SampledFrom(values).Draw(t, name)
		}
	}
	put("database", `"shop"`, `null`, `1`)
	put("table", `"orders"`, `"t"`, `null`)
	put("type", `"insert"`, `"insert"`, `"update"`, `"delete"`, `"bootstrap-insert"`, `"bootstrap-start"`, `"table-create"`, `"INSERT"`, `"weird"`, `1`)
	put("xid", `23396`, `"x-1"`, `""`, `null`, `[1]`)
	put("commit", `true`, `false`, `null`, `"true"`)
	rows := genRowValue(t)
	put("data", rows[0], rows[0], rows[1], `null`)
	put("sql", `"DROP TABLE t"`, `null`)
	put("old", `{"id":0}`)
	put("ts", `1477053217`)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rapid.Permutation(keys).Draw(t, "order")
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = `"` + k + `":` + m[k]
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func TestFastDecodersOnGeneratedInputs(t *testing.T) {
	var decided, total int
	rapid.Check(t, func(t *rapid.T) {
		total++
		if checkDecode(t, formatEnvelope, []byte(genEnvelope(t))) {
			decided++
		}
		if checkDecode(t, formatMaxwell, []byte(genMaxwell(t))) {
			decided++
		}
	})
	t.Logf("fast path decided %d of %d generated events", decided, 2*total)
	// Over 200 events the fast paths decide 10 to 30 (5–15 %): the bound
	// only proves they are reached, and must not fail on a run's luck.
	assert.Greater(t, decided, total/25, "generated inputs reach the fast paths")
}

// compareOutputs requires two processors' outputs to be the same messages:
// the same bodies, errors and metadata (every key and value as text and
// type), and the same contract as Parse reads it.
func compareOutputs(t require.TestingT, want, got service.MessageBatch, what string) {
	require.Equal(t, len(want), len(got), "%s: messages out", what)
	for i := range want {
		wb, err := want[i].AsBytes()
		require.NoError(t, err)
		gb, err := got[i].AsBytes()
		require.NoError(t, err)
		require.Equal(t, string(wb), string(gb), "%s: message %d body", what, i)
		require.Equal(t, errString(want[i].GetError()), errString(got[i].GetError()), "%s: message %d error", what, i)
		require.Equal(t, allMeta(want[i]), allMeta(got[i]), "%s: message %d metadata", what, i)
		wp, gp := contract.Parse(want[i]), contract.Parse(got[i])
		require.Equal(t, wp.Meta, gp.Meta, "%s: message %d contract", what, i)
		require.True(t, gp.Typed(), "%s: message %d carries the typed contract", what, i)
		wf, wok := wp.Row(bytes.TrimSpace(wb))
		gf, gok := gp.Row(bytes.TrimSpace(gb))
		require.Equal(t, wok, gok, "%s: message %d row facts", what, i)
		require.Equal(t, wf, gf, "%s: message %d row facts", what, i)
		if gok {
			checkRowFacts(t, gb, gf, what)
		}
	}
}

// checkRowFacts checks what the typed contract says about a row body
// against what the output would otherwise find: a JSON object, its delete
// flag as the output decides it, and the hash of its keys.
func checkRowFacts(t require.TestingT, body []byte, f contract.RowFacts, what string) {
	require.True(t, len(body) > 0 && body[0] == '{' && json.Valid(body), "%s: the typed contract vouches for %q", what, body)
	require.Equal(t, outputIsDelete(body), f.Delete, "%s: the delete flag of %q", what, body)
	require.Equal(t, tokenKeys(t, body), f.Keys, "%s: the keys of %q", what, body)
}

// tokenKeys hashes a row's top-level keys as encoding/json's tokenizer
// reads them, each as written, __op aside: what the contract's Keys must
// hold for a row body.
func tokenKeys(t require.TestingT, body []byte) uint64 {
	var h schema.KeysHash
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		h.AddString(tok.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return h.Sum()
}

// outputIsDelete is how the starrocks_txn output decides a delete from a
// body on its own.
func outputIsDelete(body []byte) bool { return starrocks.IsDeleteRow(body) }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func allMeta(msg *service.Message) map[string]string {
	out := map[string]string{}
	_ = msg.MetaWalkMut(func(k string, v any) error {
		if k != contract.KeyTyped {
			s, _ := msg.MetaGet(k)
			out[k] = fmt.Sprintf("%T:%s", v, s)
		}
		return nil
	})
	return out
}

// hasOpKey is bytes.Contains(b, opKey), on generated rows and on texts
// built around the key's pieces.
func TestHasOpKeyIsContains(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pieces := []string{`"`, `_`, `__`, `__op`, `op"`, `"__op"`, `"__o`, `p"`, `a`, `{`, `}`, `:1`, `\"`, `"x__op"`}
		var b []byte
		for i, n := 0, rapid.IntRange(0, 12).Draw(t, "n"); i < n; i++ {
			b = append(b, rapid.SampledFrom(pieces).Draw(t, "piece")...)
		}
		require.Equal(t, bytes.Contains(b, opKey), hasOpKey(b), "%q", b)
	})
}

// TestKeysHashOfRows: every row carries the hash of its keys as written in
// the body it is emitted with, on the fast paths and on encoding/json's,
// and both paths decide these rows (checkDecode compares the hash too).
func TestKeysHashOfRows(t *testing.T) {
	hash := func(names ...string) uint64 {
		var h schema.KeysHash
		for _, n := range names {
			h.AddString(n)
		}
		return h.Sum()
	}
	for format, bodies := range map[string][]string{formatEnvelope: keyedEnvelopes, formatMaxwell: keyedMaxwell} {
		for _, b := range bodies {
			assert.True(t, checkDecode(t, format, []byte(b)), "%s: the fast path declined %s", format, b)
		}
	}
	var d fastDecoder
	for body, want := range map[string]uint64{
		keyedEnvelopes[0]: hash("a", "b"),
		keyedEnvelopes[1]: hash("a", "a"),
		keyedEnvelopes[2]: hash("a"), // decoded again: one member a
		keyedEnvelopes[3]: hash("a"),
		keyedEnvelopes[4]: hash("a", "a"),
		keyedEnvelopes[5]: hash("a", "é"),
		keyedEnvelopes[6]: hash("a", "é"),
		keyedMaxwell[3]:   hash("a", "é"),
		keyedMaxwell[4]:   hash("a", "b"),
	} {
		var ev event
		var err error
		if strings.Contains(body, `"xid"`) || strings.Contains(body, "bootstrap") {
			ev, err = d.maxwell(service.NewMessage([]byte(body)))
		} else {
			ev, err = d.envelope(service.NewMessage([]byte(body)))
		}
		require.NoError(t, err, body)
		assert.Equal(t, want, ev.keys, body)
	}
}
