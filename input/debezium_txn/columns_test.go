package debezium_txn

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// A MySQL table's row and key schemas as Debezium's JsonConverter writes
// them (schemas.enable=true, decimal.handling.mode=precise).
const ordersValueSchema = `{"type":"struct","name":"dbserver1.inventory.orders.Value","optional":true,"fields":[
 {"type":"int32","optional":false,"field":"order_id"},
 {"type":"string","optional":true,"field":"status","default":"new"},
 {"type":"string","optional":true,"field":"code","parameters":{"__debezium.source.column.type":"VARCHAR","__debezium.source.column.length":"12"}},
 {"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"amount","default":"AMg="},
 {"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"3"},"field":"rate"},
 {"type":"int64","optional":true,"name":"io.debezium.time.Timestamp","field":"created_at"},
 {"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","field":"updated_at"},
 {"type":"int32","optional":true,"name":"io.debezium.time.Date","field":"ship_date","default":19000},
 {"type":"int64","optional":true,"name":"io.debezium.time.MicroTime","field":"ship_time"},
 {"type":"string","optional":true,"name":"io.debezium.data.Json","field":"doc"},
 {"type":"boolean","optional":true,"field":"paid","default":false},
 {"type":"int64","optional":true,"field":"qty","default":3,"doc":"items"},
 {"type":"double","optional":true,"field":"weight"},
 {"type":"array","optional":true,"items":{"type":"int32","optional":true},"field":"tags"},
 {"type":"bytes","optional":true,"field":"blob"}
]}`

const ordersKeySchema = `{"type":"struct","name":"dbserver1.inventory.orders.Key","optional":false,"fields":[{"type":"int32","optional":false,"field":"order_id"}]}`

func TestSourceTableOfADebeziumSchema(t *testing.T) {
	var row, key wireSchema
	require.NoError(t, json.Unmarshal([]byte(ordersValueSchema), &row))
	require.NoError(t, json.Unmarshal([]byte(ordersKeySchema), &key))
	tbl, err := sourceTable(&row, &key)
	require.NoError(t, err)
	assert.Equal(t, []string{"order_id"}, tbl.Key)
	want := map[string]string{
		"order_id": "INT", "status": "VARCHAR(65533)", "code": "VARCHAR(48)", "amount": "DECIMAL(10,2)",
		"rate": "DECIMAL(38,3)", "created_at": "DATETIME", "updated_at": "DATETIME", "ship_date": "DATE",
		"ship_time": "VARCHAR(32)", "doc": "JSON", "paid": "BOOLEAN", "qty": "BIGINT", "weight": "DOUBLE",
		"tags": "ARRAY<INT>", "blob": "VARCHAR(65533)",
	}
	require.Len(t, tbl.Columns, len(want))
	for _, c := range tbl.Columns {
		assert.Equal(t, want[c.Name], c.Type.String(), c.Name)
	}
	col := func(name string) schema.Column { c, _ := tbl.Column(name); return c }
	assert.False(t, col("order_id").Nullable, "a key column is NOT NULL")
	assert.True(t, col("status").Nullable)
	def := func(name string) string {
		if d := col(name).Default; d != nil {
			return *d
		}
		return "<none>"
	}
	assert.Equal(t, "new", def("status"))
	assert.Equal(t, "2.00", def("amount"), "a decimal default is decoded as its values are")
	assert.Equal(t, "2022-01-08", def("ship_date"), "days since the epoch, as the values")
	assert.Equal(t, "false", def("paid"))
	assert.Equal(t, "3", def("qty"))
	assert.Equal(t, "<none>", def("weight"))
	assert.Equal(t, "items", col("qty").Comment)

	sql, err := schema.CreateTableSQL("inventory", "orders", tbl, nil)
	require.NoError(t, err)
	assert.Contains(t, sql, "PRIMARY KEY(`order_id`)")

	noKey, err := sourceTable(&row, nil)
	require.NoError(t, err)
	assert.Empty(t, noKey.Key)
	_, err = schema.CreateTableSQL("inventory", "orders", noKey, nil)
	assert.ErrorContains(t, err, "no primary key")
}

// Every logical type whose values are converted names the column that
// takes them: the two cannot drift apart.
func TestEveryConversionHasItsColumn(t *testing.T) {
	for name, r := range logicalRules {
		f := wireSchema{Type: "int64", Name: name, Parameters: map[string]string{parameterDecimalScale: "2"}}
		ty, err := columnType(f, false)
		require.NoError(t, err, name)
		assert.NotEqual(t, schema.KindUnknown, ty.Kind, name)
		c, err := convFor(f)
		require.NoError(t, err, name)
		assert.Equal(t, r.conv, c.kind, name)
	}
	// A logical type the input does not know loads by its Connect type.
	ty, err := columnType(wireSchema{Type: "string", Name: "io.debezium.data.Enum"}, false)
	require.NoError(t, err)
	assert.Equal(t, "VARCHAR(65533)", ty.String())
	ty, err = columnType(wireSchema{Type: "string"}, true)
	require.NoError(t, err)
	assert.True(t, ty.Equal(schema.Text), "a text key's length is not known either: CreateTableSQL bounds it")
	_, err = columnType(wireSchema{Type: "int96"}, false)
	assert.ErrorContains(t, err, `"int96"`)
	ty, err = columnType(wireSchema{Type: "bytes", Name: logicalDecimal, Parameters: map[string]string{"scale": "2", paramPrecision: "60"}}, false)
	require.NoError(t, err)
	assert.Equal(t, "VARCHAR(62)", ty.String(), "wider than StarRocks's DECIMAL: the exact text")
}

// envelopeWith wraps a row schema and a payload as the JsonConverter
// writes a change event with schemas.
func envelopeWith(rowSchema, payload string) []byte {
	return []byte(`{"schema":{"type":"struct","name":"dbserver1.inventory.orders.Envelope","fields":[` +
		strings.Replace(rowSchema, `"optional":true,"fields"`, `"field":"before","optional":true,"fields"`, 1) + `,` +
		strings.Replace(rowSchema, `"optional":true,"fields"`, `"field":"after","optional":true,"fields"`, 1) + `,` +
		`{"type":"string","field":"op"}]},"payload":` + payload + `}`)
}

// A row decoded with its record key carries its source table, the key's
// columns as primary key; every row of the same schemas shares one table
// (the identity the output checks once), and a new column makes another.
func TestDecodedRowsCarryTheirSourceTable(t *testing.T) {
	d := newDecoder(valueWriter{loc: time.UTC})
	key := []byte(`{"schema":` + ordersKeySchema + `,"payload":{"order_id":1}}`)
	payload := `{"before":null,"after":{"order_id":1,"status":"new","code":"c","amount":"AMg=","rate":null,"created_at":0,"updated_at":null,"ship_date":1,"ship_time":0,"doc":null,"paid":true,"qty":1,"weight":1.5,"tags":[1],"blob":null},"op":"c","source":{"db":"inventory","table":"orders"}}`
	e1, err := d.decodeKeyed(key, envelopeWith(ordersValueSchema, payload))
	require.NoError(t, err)
	require.NotNil(t, e1.source)
	assert.Equal(t, []string{"order_id"}, e1.source.Key)
	assert.Len(t, e1.source.Columns, 15)
	e2, err := d.decodeKeyed(key, envelopeWith(ordersValueSchema, payload))
	require.NoError(t, err)
	assert.Same(t, e1.source, e2.source, "one table per schema")

	del, err := d.decodeKeyed(key, envelopeWith(ordersValueSchema, `{"before":{"order_id":1},"after":null,"op":"d","source":{}}`))
	require.NoError(t, err)
	assert.Same(t, e1.source, del.source)

	wider := strings.Replace(ordersValueSchema, `{"type":"bytes","optional":true,"field":"blob"}`,
		`{"type":"bytes","optional":true,"field":"blob"},{"type":"string","optional":true,"field":"coupon"}`, 1)
	e3, err := d.decodeKeyed(key, envelopeWith(wider, payload))
	require.NoError(t, err)
	require.NotNil(t, e3.source)
	assert.NotSame(t, e1.source, e3.source)
	_, ok := e3.source.Column("coupon")
	assert.True(t, ok)

	// A key without schema: its members are the key; no key: no primary key.
	e4, err := d.decodeKeyed([]byte(`{"order_id":1}`), envelopeWith(ordersValueSchema, payload))
	require.NoError(t, err)
	assert.Equal(t, []string{"order_id"}, e4.source.Key)
	e5, err := d.decodeKeyed(nil, envelopeWith(ordersValueSchema, payload))
	require.NoError(t, err)
	assert.Empty(t, e5.source.Key)

	// Without schemas there is no source table.
	e6, err := d.decodeKeyed(key, []byte(mysqlCreate))
	require.NoError(t, err)
	assert.Nil(t, e6.source)
}

// The schema-change guide's type table names every logical type the
// input maps, and every Connect type, with the column the code creates.
func TestSchemaGuideListsEveryConnectType(t *testing.T) {
	guide, err := os.ReadFile("../../docs/schema-changes.md")
	require.NoError(t, err)
	doc := string(guide)
	for name := range logicalRules {
		short := name[strings.LastIndex(name, ".")+1:]
		assert.True(t, strings.Contains(doc, name) || strings.Contains(doc, "`"+short+"`") || strings.Contains(doc, ", "+short),
			"docs/schema-changes.md does not list %s", name)
	}
	for _, typ := range []string{"int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes", "array", "struct", "map"} {
		ty, err := columnType(wireSchema{Type: typ}, false)
		require.NoError(t, err)
		row := "| `" + typ + "` | `" + ty.String() + "`"
		if typ == "string" || typ == "array" || typ == "struct" || typ == "map" || typ == "bytes" {
			row = "`" + typ + "`"
		}
		assert.Contains(t, doc, row, "the guide's row for %s", typ)
	}
}
