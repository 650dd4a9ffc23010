package txnassembler

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// maxwellCreate is a table-create as Maxwell writes it (docs/notes/
// kafka-cdc.md §6): def gives the MySQL type names only; the statement in
// sql gives lengths, precision and scale.
const maxwellCreate = `{"type":"table-create","database":"shop","table":"orders",` +
	`"def":{"database":"shop","charset":"utf8mb4","table":"orders","columns":[` +
	`{"type":"int","name":"id","signed":false},` +
	`{"type":"varchar","name":"status","charset":"utf8mb4"},` +
	`{"type":"decimal","name":"total"},` +
	`{"type":"enum","name":"kind","enum-values":["a","bb"]},` +
	`{"type":"datetime","name":"created","column-length":0},` +
	`{"type":"char","name":"cc","charset":"utf8mb4"},` +
	`{"type":"bigint","name":"big","signed":false},` +
	`{"type":"text","name":"note","charset":"utf8mb4"},` +
	`{"type":"float","name":"ratio"}],"primary-key":["id"]},` +
	`"ts":1477053308000,"sql":"CREATE TABLE ` + "`orders`" + ` (\n` +
	` ` + "`id`" + ` int(10) unsigned NOT NULL AUTO_INCREMENT,\n` +
	` status VARCHAR(32) NOT NULL DEFAULT 'new' COMMENT 'the status',\n` +
	` ` + "`total`" + ` decimal(12,2) DEFAULT '0.00',\n` +
	` kind enum('a','bb'), created datetime DEFAULT '0000-00-00 00:00:00', cc char, big bigint unsigned,\n` +
	` note text, ratio float(30),\n PRIMARY KEY (` + "`id`" + `), KEY idx_status (status)\n` +
	`) ENGINE=InnoDB /*!50100 DEFAULT CHARSET=utf8mb4 */","position":"master.000006:804398"}`

// definition reads a schema change's body.
func definition(t *testing.T, body string) schema.Table {
	t.Helper()
	var tbl schema.Table
	require.NoError(t, json.Unmarshal([]byte(body), &tbl), "the body %q is a table definition", body)
	require.NoError(t, tbl.Validate())
	return tbl
}

func column(name, typ string, nullable bool, def *string, comment string) schema.Column {
	return schema.Column{Name: name, Type: schema.MustType(typ), Nullable: nullable, Default: def, Comment: comment}
}

func TestMaxwellTableCreateIsASchemaChange(t *testing.T) {
	p, _ := newProc(t, `format: maxwell`)
	msg := kafkaMsg("mw", 0, 7, maxwellCreate)
	out := run(t, p, msg)
	require.Len(t, out, 1)
	got := read(t, out[0])
	require.NoError(t, got.Err)
	assert.True(t, got.SchemaChange)
	assert.True(t, got.TxnEnd, "a DDL is a source transaction of its own")
	assert.False(t, got.Marker)
	assert.Equal(t, "ddl@7", got.TxnID, "its id is derived from its source offset")
	assert.Equal(t, int64(7), got.SourceOffset)
	assert.Equal(t, "shop", got.Database)
	assert.Equal(t, "orders", got.Table)
	_, isRow := contract.Parse(out[0]).Row([]byte(got.Body))
	assert.False(t, isRow, "a table definition is never vouched for as a row")

	assert.Equal(t, schema.Table{Key: []string{"id"}, Columns: []schema.Column{
		column("id", "BIGINT", false, nil, ""), // INT UNSIGNED; a key column is NOT NULL
		column("status", "VARCHAR(128)", true, strp("new"), "the status"),
		column("total", "DECIMAL(12,2)", true, strp("0.00"), ""),
		column("kind", "VARCHAR(8)", true, nil, ""),
		column("created", "DATETIME", true, nil, ""), // MySQL's zero date is no default StarRocks takes
		column("cc", "VARCHAR(4)", true, nil, ""),    // CHAR is CHAR(1)
		column("big", "LARGEINT", true, nil, ""),
		column("note", "VARCHAR(65535)", true, nil, ""),
		column("ratio", "DOUBLE", true, nil, ""), // FLOAT(30) is a DOUBLE in MySQL
	}}, definition(t, got.Body))
}

// The example of docs/notes/kafka-cdc.md §6, verbatim.
const maxwellAlter = `{"type":"table-alter","database":"test","table":"e",` +
	`"old":{"database":"test","charset":"utf8mb4","table":"e","columns":[{"type":"int","name":"id","signed":true}],"primary-key":["id"]},` +
	`"def":{"database":"test","charset":"utf8mb4","table":"e","columns":[{"type":"int","name":"id","signed":true},` +
	`{"type":"bigint","name":"torvalds","signed":false}],"primary-key":["id"]},` +
	`"ts":1477053308000,"sql":"alter table test.e add column torvalds bigint unsigned after m","position":"master.000006:804398"}`

func TestMaxwellTableAlterIsASchemaChange(t *testing.T) {
	p, _ := newProc(t, `format: maxwell`)
	got := readAll(t, run(t, p, kafkaMsg("mw", 0, 3, maxwellAlter)))
	require.Len(t, got, 1)
	require.NoError(t, got[0].Err)
	assert.True(t, got[0].SchemaChange && got[0].TxnEnd)
	assert.Equal(t, "ddl@3", got[0].TxnID)
	assert.Equal(t, "test", got[0].Database)
	assert.Equal(t, "e", got[0].Table)
	assert.Equal(t, schema.Table{Key: []string{"id"}, Columns: []schema.Column{
		column("id", "INT", false, nil, ""),
		column("torvalds", "LARGEINT", true, nil, ""),
	}}, definition(t, got[0].Body))
}

// An ALTER types the columns it defines; a column it leaves as it was,
// whose StarRocks type depends on a length or precision only its CREATE
// TABLE gave, keeps the type StarRocks has (UNKNOWN, which the output's
// comparison takes as held), so that no guess widens it.
func TestMaxwellAlterTypesOnlyWhatItDefines(t *testing.T) {
	cols := `{"type":"int","name":"id","signed":true},{"type":"varchar","name":"status"},{"type":"decimal","name":"total"},{"type":"geometry","name":"spot"}`
	ev := `{"type":"table-alter","database":"shop","table":"orders",` +
		`"old":{"database":"shop","table":"orders","columns":[` + cols + `],"primary-key":["id"]},` +
		`"def":{"database":"shop","table":"orders","columns":[` + cols + `,{"type":"varchar","name":"coupon"},{"type":"decimal","name":"fee"},{"type":"tinyint","name":"flag","signed":true}],"primary-key":["id"]},` +
		`"sql":"ALTER TABLE orders ADD COLUMN coupon VARCHAR(20) NULL AFTER status, ADD fee decimal, ADD INDEX i (coupon), ADD flag bool DEFAULT true"}`
	p, _ := newProc(t, `format: maxwell`)
	got := readAll(t, run(t, p, kafkaMsg("mw", 0, 3, ev)))
	require.Len(t, got, 1)
	require.NoError(t, got[0].Err)
	assert.Equal(t, schema.Table{Key: []string{"id"}, Columns: []schema.Column{
		column("id", "INT", false, nil, ""),
		column("status", "UNKNOWN", true, nil, ""),
		column("total", "UNKNOWN", true, nil, ""),
		column("spot", "UNKNOWN", true, nil, ""), // no StarRocks type, but unchanged
		column("coupon", "VARCHAR(80)", true, nil, ""),
		column("fee", "DECIMAL(10,0)", true, nil, ""), // MySQL's DECIMAL is DECIMAL(10,0)
		column("flag", "TINYINT", true, strp("1"), ""),
	}}, definition(t, got[0].Body))
}

func TestMaxwellRenameIsASchemaChangeOfTheNewTable(t *testing.T) {
	p, _ := newProc(t, `
format: maxwell
table_mapping:
  shop.orders_v2: analytics.orders2
`)
	cols := `{"type":"int","name":"id","signed":true},{"type":"varchar","name":"status"}`
	ev := `{"type":"table-alter","database":"shop","table":"orders",` +
		`"old":{"database":"shop","table":"orders","columns":[` + cols + `],"primary-key":["id"]},` +
		`"def":{"database":"shop","table":"orders_v2","columns":[` + cols + `],"primary-key":["id"]},` +
		`"sql":"ALTER TABLE orders RENAME TO orders_v2"}`
	got := readAll(t, run(t, p, kafkaMsg("mw", 0, 9, ev)))
	require.Len(t, got, 1)
	require.NoError(t, got[0].Err)
	assert.True(t, got[0].SchemaChange)
	assert.Equal(t, "analytics", got[0].Database, "the new name, mapped as rows are")
	assert.Equal(t, "orders2", got[0].Table)
	assert.Equal(t, schema.Table{Key: []string{"id"}, Columns: []schema.Column{
		column("id", "INT", false, nil, ""),
		// The new table is not in StarRocks: nothing is kept, and a
		// length no statement gives stays unknown (created as the
		// widest, never widened to).
		column("status", "VARCHAR", true, nil, ""),
	}}, definition(t, got[0].Body))
}

// A column whose type no part of the event gives is never guessed: the
// event is flagged, naming the table, the column and what to do, and it
// is still a one-message transaction of its own that keeps its source
// body for the dead letter.
func TestMaxwellUnknowableTypeIsFlagged(t *testing.T) {
	for name, tc := range map[string]struct{ ev, want string }{
		"create like": {
			ev: `{"type":"table-create","database":"shop","table":"t2","def":{"database":"shop","table":"t2","columns":[` +
				`{"type":"int","name":"id","signed":true},{"type":"decimal","name":"total"}],"primary-key":["id"]},"sql":"CREATE TABLE t2 LIKE t1"}`,
			want: `maxwell table-create of shop.t2: column "total": MySQL DECIMAL without its precision`,
		},
		"alter adds a column the sql does not define": {
			ev: `{"type":"table-alter","database":"shop","table":"t","old":{"database":"shop","table":"t","columns":[{"type":"int","name":"id"}]},` +
				`"def":{"database":"shop","table":"t","columns":[{"type":"int","name":"id"},{"type":"decimal","name":"price"}]},"sql":"ALTER TABLE t ADD price decimal(10,2"}`,
			want: `column "price": MySQL DECIMAL without its precision: the source does not give it, and a guessed scale would round values (the event's sql does not define the column (its sql could not be read: unbalanced parentheses))`,
		},
		"a type StarRocks lacks": {
			ev: `{"type":"table-create","database":"shop","table":"places","def":{"database":"shop","table":"places","columns":[` +
				`{"type":"point","name":"p"}]},"sql":"CREATE TABLE places (p point)"}`,
			want: `column "p": MySQL type POINT has no StarRocks type the project creates (as the event's sql defines it)`,
		},
		"rename of a table with a decimal": {
			ev: `{"type":"table-alter","database":"shop","table":"a","old":{"database":"shop","table":"a","columns":[{"type":"decimal","name":"d"}]},` +
				`"def":{"database":"shop","table":"b","columns":[{"type":"decimal","name":"d"}]},"sql":"RENAME TABLE a TO b"}`,
			want: `maxwell table-alter of shop.b: column "d": MySQL DECIMAL without its precision: the source does not give it, and a guessed scale would round values (the event's sql is no CREATE TABLE or ALTER TABLE that defines it)`,
		},
	} {
		p, _ := newProc(t, `format: maxwell`)
		got := readAll(t, run(t, p, kafkaMsg("mw", 0, 5, tc.ev)))
		require.Len(t, got, 1, name)
		require.Error(t, got[0].Err, name)
		assert.Contains(t, got[0].Err.Error(), tc.want, name)
		assert.Contains(t, got[0].Err.Error(), "give the column its type in StarRocks yourself", name)
		assert.Contains(t, got[0].Err.Error(), `transaction "ddl@5"`, name)
		assert.Equal(t, "ddl@5", got[0].TxnID, name)
		assert.True(t, got[0].TxnEnd, name)
		assert.False(t, got[0].SchemaChange, "%s: the body is the source event, not a definition", name)
		assert.Equal(t, tc.ev, got[0].Body, name)
	}
}

func TestMaxwellBadDDLIsFlagged(t *testing.T) {
	for ev, want := range map[string]string{
		`{"type":"table-create","database":"shop","table":"t"}`:                                                                                  `field "def" must be the table definition of a maxwell table-create event, got nothing`,
		`{"type":"table-create","database":"shop","table":"t","def":[1]}`:                                                                        `field "def" must be the table definition`,
		`{"type":"table-create","database":"shop","table":"t","def":{"columns":7}}`:                                                              `field "def" is not a maxwell table definition`,
		`{"type":"table-create","database":"shop","table":"t","def":{"columns":[]}}`:                                                             `def lists no columns`,
		`{"type":"table-create","database":"shop","table":"t","def":{"columns":[{"type":"int","name":"a"}],"primary-key":["b"]}}`:                `the primary key names "b", which is not a column`,
		`{"type":"table-create","database":"shop","table":"t","def":{"columns":[{"type":"int","name":"a"}]},"sql":7}`:                            `field "sql" must be a string`,
		`{"type":"table-alter","database":"shop","table":"t","old":"x","def":{"columns":[{"type":"int","name":"a"},{"type":"int","name":"a"}]}}`: `column "a" is listed twice`,
		`{"type":"table-create","database":"shop","def":{"columns":[{"type":"int","name":"a"}]}}`:                                                `field "table" is missing or empty: a schema change needs the table it defines`,
	} {
		p, _ := newProc(t, `format: maxwell`)
		got := readAll(t, run(t, p, kafkaMsg("mw", 0, 2, ev)))
		require.Len(t, got, 1, ev)
		require.Error(t, got[0].Err, ev)
		assert.Contains(t, got[0].Err.Error(), want, ev)
		assert.Equal(t, "ddl@2", got[0].TxnID, ev)
		assert.True(t, got[0].TxnEnd, ev)
		assert.Equal(t, ev, got[0].Body, ev)
	}
}

// Dropping is never automatic, and databases are created with their first
// table: the other DDL events are skipped, counted as dropped DDL.
func TestMaxwellOtherDDLIsSkipped(t *testing.T) {
	events := []string{
		`{"type":"database-create","database":"new_db","sql":"CREATE DATABASE new_db","ts":1}`,
		`{"type":"database-alter","database":"new_db","sql":"ALTER DATABASE new_db CHARACTER SET utf8mb4"}`,
		`{"type":"database-drop","database":"old_db","sql":"DROP DATABASE old_db"}`,
		`{"type":"table-drop","database":"shop","table":"orders","sql":"DROP TABLE orders"}`,
	}
	batch := func() service.MessageBatch {
		var b service.MessageBatch
		for i, ev := range events {
			b = append(b, kafkaMsg("mw", 0, int64(i), ev))
		}
		return append(b, kafkaMsg("mw", 0, int64(len(events)), maxwellRow2))
	}
	p, _ := newProc(t, `format: maxwell`)
	got := readAll(t, run(t, p, batch()...))
	require.Len(t, got, 1, "only the row comes out")
	assert.Equal(t, "order_items", got[0].Table)
	assert.Equal(t, int64(1), got[0].Seq, "skipped events take no seq")

	ctx, produce, capture := captureStreamWith(t, `txn_assembler: {format: maxwell}`)
	require.NoError(t, produce(ctx, batch()))
	assert.Equal(t, int64(len(events)), capture.get("txn_assembler_dropped|ddl"))
	assert.Zero(t, capture.get("txn_assembler_dropped|skip"))
}

// A DDL falls between transactions in its partition's stream (MySQL
// commits one implicitly): it is emitted there, with the next seq and its
// own offset, as a complete transaction of its own, so that the output
// applies it after the transaction before and before the one after.
func TestMaxwellDDLBetweenTwoTransactions(t *testing.T) {
	p, _ := newProc(t, `format: maxwell`)
	row := func(xid int, commit bool, data string) string {
		c := ""
		if commit {
			c = `,"commit":true`
		}
		return `{"database":"test","table":"e","type":"insert","xid":` + strconv.Itoa(xid) + c + `,"data":` + data + `}`
	}
	in := []*service.Message{
		kafkaMsg("mw", 2, 100, row(11, false, `{"id":1}`)),
		kafkaMsg("mw", 2, 101, row(11, true, `{"id":2}`)),
		kafkaMsg("mw", 2, 102, maxwellAlter),
		kafkaMsg("mw", 2, 103, row(12, false, `{"id":3,"torvalds":7}`)),
		kafkaMsg("mw", 2, 104, row(12, true, `{"id":4,"torvalds":8}`)),
	}
	out := run(t, p, in...)
	got := readAll(t, out)
	require.Len(t, got, 5)
	for i, g := range got {
		require.NoError(t, g.Err)
		assert.Equal(t, int64(i+1), g.Seq, "dense seqs in stream order")
		assert.Equal(t, int64(100+i), g.SourceOffset, "each message's own offset")
		assert.Equal(t, "mw/2", g.Partition)
	}
	assert.Equal(t, []string{"11", "11", "ddl@102", "12", "12"},
		[]string{got[0].TxnID, got[1].TxnID, got[2].TxnID, got[3].TxnID, got[4].TxnID})
	assert.Equal(t, []bool{false, true, true, false, true},
		[]bool{got[0].TxnEnd, got[1].TxnEnd, got[2].TxnEnd, got[3].TxnEnd, got[4].TxnEnd})
	assert.Equal(t, []bool{false, false, true, false, false},
		[]bool{got[0].SchemaChange, got[1].SchemaChange, got[2].SchemaChange, got[3].SchemaChange, got[4].SchemaChange})

	// As the output and a dead letter read them.
	c := contract.Parse(out[2])
	require.NoError(t, c.Err)
	assert.True(t, c.SchemaChange && c.Present.Has(contract.FieldSchemaChange))
	m := out[2].Copy()
	require.True(t, contract.Materialize(m))
	v, _ := m.MetaGet(contract.KeySchemaChange)
	assert.Equal(t, "true", v)

	// The input cuts batches after it: it ends its transaction.
	ends := &endDetector{decode: (&fastDecoder{}).maxwell}
	assert.True(t, ends.ends(kafkaMsg("mw", 2, 102, maxwellAlter)))
}

// A DDL while a transaction is open is no DDL MySQL wrote there: two
// writers interleave, and both are flagged, never merged.
func TestMaxwellDDLInsideATransactionIsAViolation(t *testing.T) {
	p, _ := newProc(t, `format: maxwell`)
	got := readAll(t, run(t, p,
		kafkaMsg("mw", 0, 1, maxwellRow1),
		kafkaMsg("mw", 0, 2, maxwellCreate),
		kafkaMsg("mw", 0, 3, maxwellRow2),
	))
	require.Len(t, got, 3)
	require.Error(t, got[1].Err)
	assert.Contains(t, got[1].Err.Error(), `schema change of transaction "ddl@2" arrived while transaction "23396" is open`)
	assert.Equal(t, "23396", got[1].TxnID, "flagged under the open transaction, which is dead-lettered whole")
	assert.Equal(t, "23396", got[2].TxnID)
}

// The fast path skips the DDL that changes no table as encoding/json's
// decoder does, and leaves table-create and table-alter to it.
func TestMaxwellDDLOnBothPaths(t *testing.T) {
	for _, b := range ddlMaxwell {
		checkDecode(t, formatMaxwell, []byte(b))
	}
	for _, b := range ddlMaxwell[:3] {
		assert.False(t, checkDecode(t, formatMaxwell, []byte(b)), "decoded by encoding/json: %s", b)
	}
	for _, b := range ddlMaxwell[3:] {
		assert.True(t, checkDecode(t, formatMaxwell, []byte(b)), "decided by the fast path: %s", b)
	}
	fast, fallback := newPair(t, "format: maxwell")
	var batch service.MessageBatch
	for i, b := range ddlMaxwell {
		batch = append(batch, inputMsg("mw", 0, int64(2*i), "k", []byte(b)), inputMsg("mw", 0, int64(2*i+1), "k", []byte(maxwellRow2)))
	}
	want, err := fallback.ProcessBatch(context.Background(), copyBatch(batch))
	require.NoError(t, err)
	got, err := fast.ProcessBatch(context.Background(), batch)
	require.NoError(t, err)
	require.Len(t, got, 1)
	compareOutputs(t, want[0], got[0], "ddl")
}
