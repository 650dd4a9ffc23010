package txnassembler

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// ordersDef is a table definition as a producer writes it.
const ordersDef = `{"columns":[{"name":"id","type":"bigint","nullable":false},` +
	`{"name":"status","type":"varchar(32)","nullable":true,"default":"new","comment":"the status"},` +
	`{"name":"coupon","type":"VARCHAR(20)","nullable":true}],"primary_key":["id"]}`

// ordersTable is ordersDef as the output reads it.
var ordersTable = schema.Table{Key: []string{"id"}, Columns: []schema.Column{
	column("id", "BIGINT", false, nil, ""),
	column("status", "VARCHAR(32)", true, strp("new"), "the status"),
	column("coupon", "VARCHAR(20)", true, nil, ""),
}}

// A SCHEMA event is part of its transaction like a DATA row, so a producer
// puts BEGIN, SCHEMA, DATA…, END and the output applies the change before
// the rows of that transaction.
func TestEnvelopeSchemaEventInsideATransaction(t *testing.T) {
	p, _ := newProc(t, `
table_mapping:
  shop.orders: analytics.orders
`)
	s := &src{topic: "cdc", part: 1}
	out := run(t, p,
		s.begin("t1"),
		s.msg(`{"txnId":"t1","type":"SCHEMA","database":"shop","table":"orders","json":`+ordersDef+`}`),
		s.msg(envelope(1, "t1", "DATA", "shop", "orders", `{"id":1,"status":"paid","coupon":"X"}`)),
		s.end("t1"),
		// Without a BEGIN, a SCHEMA opens its transaction as a row does;
		// its definition may be a JSON string.
		s.msg(envelope(1, "t2", "SCHEMA", "shop", "orders", ordersDef)),
		s.end("t2"),
	)
	got := readAll(t, out)
	require.Len(t, got, 5)
	for i, g := range got {
		require.NoError(t, g.Err)
		assert.Equal(t, int64(i+1), g.Seq)
	}
	sc := got[0]
	assert.True(t, sc.SchemaChange)
	assert.False(t, sc.TxnEnd, "part of its transaction")
	assert.Equal(t, "t1", sc.TxnID)
	assert.Equal(t, int64(1), sc.SourceOffset)
	assert.Equal(t, "analytics", sc.Database, "table_mapping applies as to rows")
	assert.Equal(t, "orders", sc.Table)
	assert.Equal(t, ordersTable, definition(t, sc.Body))
	_, isRow := contract.Parse(out[0]).Row([]byte(sc.Body))
	assert.False(t, isRow)

	assert.Equal(t, "t1", got[1].TxnID)
	assert.False(t, got[1].SchemaChange)
	assert.True(t, got[2].TxnEnd && got[2].Marker)

	assert.Equal(t, "t2", got[3].TxnID)
	assert.True(t, got[3].SchemaChange)
	assert.Equal(t, ordersTable, definition(t, got[3].Body))
	assert.True(t, got[4].TxnEnd)
}

// A definition the output could not apply as meant is flagged, naming the
// field and what is wrong; the message stays in its transaction (which
// the output then dead-letters whole) and keeps its source body.
func TestEnvelopeSchemaBadDefinitionIsFlagged(t *testing.T) {
	for js, want := range map[string]string{
		`{"columns":[{"name":"id","type":"INT"}],"primarykey":["id"]}`: `field "json" is not a table definition {"columns":[{"name","type","nullable","default","comment"}],"primary_key":[…]}: json: unknown field "primarykey"`,
		`{"columns":[]}`: `field "json" lists no columns`,
		`{"columns":[{"name":"id","type":"VARCHAR(x)"}]}`:                   `parsing the column type "VARCHAR(x)"`,
		`{"columns":[{"name":"g","type":"GEOMETRY"}]}`:                      `column "g" has the type "GEOMETRY", which is no StarRocks type the project knows`,
		`{"columns":[{"name":"a","type":"INT"},{"name":"A","type":"INT"}]}`: `field "json" is not a valid table definition: column "A" is listed twice`,
		`{"columns":[{"name":"a","type":"INT"}],"primary_key":["b"]}`:       `the primary key names "b", which is not a column`,
		`{"columns":[{"name":"a` + "`" + `","type":"INT"}]}`:                `has a backquote`,
		`"{\"columns\":[{\"name\":\"a\",\"type\":\"INT\"}]} {}"`:            `field "json" has trailing data`,
		`[1]`:  `field "json" must be a table definition`,
		`7`:    `field "json" must be a table definition {"columns":[{"name","type","nullable","default","comment"}],"primary_key":[…]} (an object, or a JSON string of one), got a number`,
		`null`: `field "json" is missing: a schema change needs its table definition`,
		`{"columns":[{"name":"a","type":"INT","nullable":"yes"}]}`: `cannot unmarshal string`,
	} {
		p, _ := newProc(t, `{}`)
		body := `{"txnId":"t","type":"SCHEMA","database":"d","table":"t","json":` + js + `}`
		got := readAll(t, run(t, p,
			kafkaMsg("cdc", 0, 1, envelope(0, "t", "TXN_BEGIN", "", "", "")),
			kafkaMsg("cdc", 0, 2, body),
		))
		require.Len(t, got, 1, js)
		require.Error(t, got[0].Err, js)
		assert.Contains(t, got[0].Err.Error(), want, js)
		assert.Equal(t, "t", got[0].TxnID, js)
		assert.False(t, got[0].SchemaChange, "%s: the body is the source event", js)
		assert.Equal(t, body, got[0].Body, js)
	}
	p, _ := newProc(t, `{}`)
	got := readAll(t, run(t, p, kafkaMsg("cdc", 0, 1, `{"txnId":"t","type":"SCHEMA","database":"d","json":`+ordersDef+`}`)))
	require.Len(t, got, 1)
	assert.ErrorContains(t, got[0].Err, `field "table" is missing or empty: a schema change needs the table it defines`)
}

// The envelope's fast path leaves SCHEMA events to encoding/json's
// decoder; both processors emit the same.
func TestEnvelopeSchemaOnBothPaths(t *testing.T) {
	for _, b := range schemaEnvelopes {
		assert.False(t, checkDecode(t, formatEnvelope, []byte(b)), b)
	}
	fast, fallback := newPair(t, "format: envelope")
	var batch service.MessageBatch
	for i, b := range schemaEnvelopes {
		batch = append(batch, inputMsg("cdc", 0, int64(2*i), "k", []byte(b)),
			inputMsg("cdc", 0, int64(2*i+1), "k", []byte(`{"txnId":"t","type":"TXN_END"}`)))
	}
	want, err := fallback.ProcessBatch(context.Background(), copyBatch(batch))
	require.NoError(t, err)
	got, err := fast.ProcessBatch(context.Background(), batch)
	require.NoError(t, err)
	require.Len(t, got, 1)
	compareOutputs(t, want[0], got[0], "schema")
}

// customSchemaConf maps a source whose DDL events are transactions of
// their own, and whose transactions may open with a schema change.
const customSchemaConf = `
format: custom
partition: p
custom:
  kind: |
    root = match this.op {
      "BEGIN" => "begin"
      "COMMIT" => "end"
      "DDL" => "schema_end"
      "SCHEMA" => "schema"
      _ => "data"
    }
  txn_id: 'root = this.tx'
  database: 'root = this.db'
  table: 'root = this.tbl'
  row: 'root = this.row'
  schema: 'root = this.def'
`

func TestCustomSchemaKinds(t *testing.T) {
	p, _ := newProc(t, customSchemaConf)
	got := readAll(t, run(t, p,
		service.NewMessage([]byte(`{"tx":"d1","op":"DDL","db":"shop","tbl":"orders","def":`+ordersDef+`}`)),
		service.NewMessage([]byte(`{"tx":"t2","op":"BEGIN"}`)),
		service.NewMessage([]byte(`{"tx":"t2","op":"SCHEMA","db":"shop","tbl":"orders","def":"`+escapeJSON(ordersDef)+`"}`)),
		service.NewMessage([]byte(`{"tx":"t2","op":"INSERT","db":"shop","tbl":"orders","row":{"id":1,"coupon":"X"}}`)),
		service.NewMessage([]byte(`{"tx":"t2","op":"COMMIT"}`)),
	))
	require.Len(t, got, 4)
	for _, g := range got {
		require.NoError(t, g.Err)
	}
	assert.True(t, got[0].SchemaChange && got[0].TxnEnd, "schema_end: a schema change that is its own transaction")
	assert.Equal(t, "d1", got[0].TxnID)
	assert.Equal(t, "shop", got[0].Database)
	assert.Equal(t, ordersTable, definition(t, got[0].Body))
	assert.True(t, got[1].SchemaChange)
	assert.False(t, got[1].TxnEnd, "schema: part of its transaction")
	assert.Equal(t, ordersTable, definition(t, got[1].Body))
	assert.False(t, got[2].SchemaChange)
	assert.True(t, got[3].TxnEnd && got[3].Marker)

	// A DDL ends its transaction for the input's batching too.
	ends := &endDetector{decode: p.decode}
	assert.True(t, ends.ends(service.NewMessage([]byte(`{"tx":"d1","op":"DDL","db":"shop","tbl":"orders","def":`+ordersDef+`}`))))
	assert.False(t, ends.ends(service.NewMessage([]byte(`{"tx":"t","op":"SCHEMA","db":"shop","tbl":"orders","def":`+ordersDef+`}`))))
}

func TestCustomSchemaBadDefinitionIsFlagged(t *testing.T) {
	for body, want := range map[string]string{
		`{"tx":"d","op":"DDL","db":"s","tbl":"t"}`:                                      `field "custom.schema" gave nothing: a schema change needs its table definition`,
		`{"tx":"d","op":"DDL","db":"s","tbl":"t","def":[1]}`:                            `field "custom.schema" must give a table definition`,
		`{"tx":"d","op":"DDL","db":"s","tbl":"t","def":{"columns":[{"name":"a"}]}}`:     `field "custom.schema" column "a" has the type "UNKNOWN"`,
		`{"tx":"d","op":"DDL","db":"s","tbl":"t","def":"{\"columns\":[]}"}`:             `field "custom.schema" lists no columns`,
		`{"tx":"d","op":"DDL","db":"s","def":{"columns":[{"name":"a","type":"INT"}]}}`:  `field "table" is missing or empty: a schema change needs the table it defines`,
		`{"op":"DDL","db":"s","tbl":"t","def":{"columns":[{"name":"a","type":"INT"}]}}`: `field "custom.txn_id" gave no transaction id for a schema_end event`,
	} {
		p, _ := newProc(t, customSchemaConf)
		got := readAll(t, run(t, p, service.NewMessage([]byte(body))))
		require.Len(t, got, 1, body)
		require.Error(t, got[0].Err, body)
		assert.Contains(t, got[0].Err.Error(), want, body)
		assert.False(t, got[0].SchemaChange, body)
		assert.Equal(t, body, got[0].Body, body)
	}
}

// escapeJSON is s as the content of a JSON string.
func escapeJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
