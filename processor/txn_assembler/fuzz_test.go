package txnassembler

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// The fuzz targets feed arbitrary bodies to each format. Envelope and
// maxwell check the single-pass decoder against encoding/json (checkDecode)
// and a processor on the fast path against one on encoding/json only; all
// three check the invariants of what comes out (checkEmitted). go test runs
// their seeds and the committed corpora under testdata/fuzz/; explore with
// `go test -run '^$' -fuzz FuzzEnvelope ./processor/txn_assembler`.

// fuzzProc builds a processor outside a test (the fuzz targets share one
// per worker; offsets keep increasing across inputs).
func fuzzProc(tb testing.TB, yaml string) *Processor {
	conf, err := processorSpec().ParseYAML(yaml, nil)
	require.NoError(tb, err)
	p, err := newFromConfig(conf, service.MockResources())
	require.NoError(tb, err)
	return p
}

// fuzzRig runs each fuzzed body through a processor, in a small batch with
// a second copy of it and an END, and checks the outputs.
type fuzzRig struct {
	fast, fallback *Processor
	offset         int64
	seq            int64
	end            string
}

func newFuzzRig(tb testing.TB, yaml, end string, pair bool) *fuzzRig {
	r := &fuzzRig{fast: fuzzProc(tb, yaml), end: end}
	if pair {
		r.fallback = fuzzProc(tb, yaml)
		r.fallback.fast.off = true
		r.fallback.seqSource = r.fast.seqSource
	}
	return r
}

func (r *fuzzRig) run(t *testing.T, body []byte) {
	var batch service.MessageBatch
	for _, b := range [][]byte{body, body, []byte(r.end)} {
		batch = append(batch, inputMsg("cdc", int32(r.offset%2), r.offset, "k", b))
		r.offset++
	}
	// The processor stamps its input in place: each run gets its own
	// copies, and the checks compare with untouched ones.
	in := copyBatch(batch)
	got, err := r.fast.ProcessBatch(context.Background(), batch)
	require.NoError(t, err)
	require.LessOrEqual(t, len(got), 1, "one batch in, at most one out")
	if r.fallback != nil {
		want, err := r.fallback.ProcessBatch(context.Background(), copyBatch(in))
		require.NoError(t, err)
		require.Len(t, got, len(want))
		if len(want) == 1 {
			compareOutputs(t, want[0], got[0], "fuzz")
		}
	}
	if len(got) == 1 {
		r.seq = checkEmitted(t, r.fast, in, got[0], r.seq)
	}
}

// checkEmitted checks what the processor promises about every emitted
// message and returns the last seq: the contract is complete and
// readable, seqs are dense, a marker has no body, an unflagged row is a JSON
// object with __op 0 or 1, the typed contract's row facts are true, and a
// message whose body was not rebuilt keeps an input body.
func checkEmitted(t *testing.T, p *Processor, in, out service.MessageBatch, seq int64) int64 {
	require.NotEmpty(t, out, "an empty batch is never returned")
	for _, msg := range out {
		c := contract.Parse(msg)
		require.NoError(t, c.Err)
		require.True(t, c.Typed())
		require.True(t, c.HasSeq)
		seq++
		require.Equal(t, seq, c.Seq, "seqs are dense")
		require.Equal(t, p.SeqSource(), c.SeqSource)
		require.NotEmpty(t, c.Partition)
		require.NotEmpty(t, c.TxnID)
		require.True(t, c.HasOffset)
		body, err := msg.AsBytes()
		require.NoError(t, err)
		if c.Marker {
			require.Empty(t, body)
			continue
		}
		if c.SchemaChange {
			// A table definition the processor built, flagged or not.
			var def schema.Table
			require.NoError(t, json.Unmarshal(body, &def), "a schema change carries a table definition: %q", body)
			require.NoError(t, def.Validate())
			require.NotEmpty(t, def.Columns)
			require.NotEmpty(t, c.Table)
			_, isRow := c.Row(bytes.TrimSpace(body))
			require.False(t, isRow, "a table definition is no row")
			continue
		}
		facts, built := c.Row(bytes.TrimSpace(body))
		if built {
			checkRowFacts(t, body, facts, "fuzz")
		}
		if msg.GetError() == nil {
			require.True(t, built, "an unflagged row is built by the processor: %q", body)
			var row map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(body, &row))
			require.Contains(t, []string{"0", "1"}, string(row[contract.OpField]), "the row %q", body)
			continue
		}
		if !built {
			found := false
			for _, m := range in {
				b, _ := m.AsBytes()
				found = found || bytes.Equal(b, body)
			}
			require.True(t, found, "a flagged message keeps its source event: %q", body)
		}
	}
	return seq
}

func FuzzEnvelope(f *testing.F) {
	for _, h := range append(append(hostileEnvelopes, keyedEnvelopes...), schemaEnvelopes...) {
		f.Add([]byte(h))
	}
	r := newFuzzRig(f, "format: envelope", `{"partition":3,"txnId":"t-17","type":"TXN_END"}`, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecode(t, formatEnvelope, body)
		r.run(t, body)
	})
}

func FuzzMaxwell(f *testing.F) {
	for _, h := range append(append(hostileMaxwell, keyedMaxwell...), ddlMaxwell...) {
		f.Add([]byte(h))
	}
	r := newFuzzRig(f, "format: maxwell", maxwellRow2, true)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecode(t, formatMaxwell, body)
		r.run(t, body)
	})
}

// fuzzCustomConf is custom_test.go's mapping with the Kafka defaults for
// partition and offset.
const fuzzCustomConf = `
format: custom
database: shop
custom:
  kind: |
    root = match this.op {
      "BEGIN" => "begin"
      "COMMIT" => "end"
      "ROLLBACK" => "abort"
      ["INSERT", "UPDATE", "DELETE"].contains(this) => "data"
      "LAST" => "data_end"
      "SCHEMA" => "schema"
      "DDL" => "schema_end"
      _ => "skip"
    }
  txn_id: 'root = this.tx'
  database: 'root = this.db'
  table: 'root = this.tbl'
  row: 'root = this.row'
  delete: 'root = this.op == "DELETE"'
  schema: 'root = this.def'
`

func FuzzCustom(f *testing.F) {
	for _, s := range []string{
		`{"tx":42,"op":"BEGIN"}`, `{"tx":42,"op":"INSERT","tbl":"orders","row":{"id":1}}`,
		`{"tx":42,"op":"DELETE","tbl":"orders","row":"{\"id\":2}"}`, `{"tx":42,"op":"LAST","tbl":"o","row":{"id":4,"__op":1}}`,
		`{"tx":42,"op":"COMMIT"}`, `{"tx":43,"op":"ROLLBACK"}`, `{"tx":"x","op":"INSERT","tbl":"t","row":[1]}`,
		`{"tx":null,"op":"INSERT","tbl":"t","row":{}}`, `{"tx":1.5,"op":"UPDATE","tbl":"t","db":"d","row":"{\"a\":\"<&>\"}"}`,
		`{"tx":1,"op":"INSERT","tbl":7,"row":{"a":1}}`, `{"op":"INSERT"}`, `not json`, `{"tx":1,"op":"HEARTBEAT"}`,
		`{"tx":1,"op":"INSERT","tbl":"t","row":"{\"a\":1"}`, `[]`, ``,
		`{"tx":5,"op":"SCHEMA","tbl":"t","def":{"columns":[{"name":"a","type":"INT"}]}}`,
		`{"tx":5,"op":"DDL","tbl":"t","def":"{\"columns\":[{\"name\":\"a\",\"type\":\"DECIMAL(9,2)\"}]}"}`,
		`{"tx":5,"op":"DDL","tbl":"t","def":{"columns":[]}}`, `{"tx":5,"op":"SCHEMA","tbl":"t"}`,
	} {
		f.Add([]byte(s))
	}
	r := newFuzzRig(f, fuzzCustomConf, `{"tx":42,"op":"COMMIT"}`, false)
	f.Fuzz(func(t *testing.T, body []byte) {
		r.run(t, body)
	})
}
