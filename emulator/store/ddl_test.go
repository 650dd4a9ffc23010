package store

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDDLOrdersStatementUnchanged(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecDDL("CREATE DATABASE IF NOT EXISTS `test`"))
	require.NoError(t, s.ExecDDL(ordersDDL))
	ts, err := s.Table("test", "orders")
	require.NoError(t, err)
	assert.Equal(t, PrimaryKey, ts.KeyType)
	assert.Equal(t, []string{"order_id"}, ts.Key)
	require.Len(t, ts.Columns, 4)
	assert.Equal(t, Column{Name: "order_id", Type: TypeBigInt}, stripInternal(ts.Columns[0]))
	amt := ts.Columns[2]
	assert.Equal(t, TypeDecimal, amt.Type)
	assert.Equal(t, 10, amt.Precision)
	assert.Equal(t, 2, amt.Scale)
	assert.True(t, amt.Nullable)
	require.NotNil(t, amt.Default)
	assert.Equal(t, "0", *amt.Default)
	st := ts.Columns[3]
	assert.Equal(t, TypeVarchar, st.Type)
	assert.Equal(t, 32, st.Length)
	require.NotNil(t, st.Default)
	assert.Equal(t, "", *st.Default)
	assert.Equal(t, "DECIMAL(10,2)", amt.SQLType())
}

func stripInternal(c Column) Column {
	c.defaultValue = nil
	c.uid = 0
	return c
}

func TestDDLSchemaFile(t *testing.T) {
	s := schemaStore(t)
	id, ok := s.DatabaseID("test")
	require.True(t, ok)
	assert.NotZero(t, id)

	cases := []struct {
		table string
		kind  KeyType
		key   []string
		cols  []string
	}{
		{"orders", PrimaryKey, []string{"order_id"}, []string{"order_id", "customer_id", "total_amount", "order_status", "updated_at"}},
		{"order_items", PrimaryKey, []string{"order_id", "item_id"}, []string{"order_id", "item_id", "product", "quantity", "price"}},
		{"order_events", DuplicateKey, []string{"event_id"}, []string{"event_id", "order_id", "kind", "created_at"}},
	}
	ids := map[int64]bool{}
	for _, c := range cases {
		t.Run(c.table, func(t *testing.T) {
			ts, err := s.Table("test", c.table)
			require.NoError(t, err)
			assert.Equal(t, c.kind, ts.KeyType)
			assert.Equal(t, c.key, ts.Key)
			var names []string
			for _, col := range ts.Columns {
				names = append(names, col.Name)
			}
			assert.Equal(t, c.cols, names)
			assert.Equal(t, "test", ts.DB)
			assert.False(t, ids[ts.ID], "table ids are unique")
			ids[ts.ID] = true
		})
	}
	q, err := s.Table("test", "order_items")
	require.NoError(t, err)
	assert.False(t, q.Columns[3].Nullable)
	assert.Equal(t, "1", *q.Columns[3].Default)

	// Running the script again is a no-op thanks to IF NOT EXISTS, and ids stay stable.
	require.NoError(t, s.ExecScript("CREATE DATABASE IF NOT EXISTS `test`; CREATE TABLE IF NOT EXISTS test.orders (a INT NOT NULL) PRIMARY KEY(a)"))
	id2, _ := s.DatabaseID("test")
	assert.Equal(t, id, id2)
	o, _ := s.Table("test", "orders")
	assert.Len(t, o.Columns, 5)
}

func TestDDLAccepted(t *testing.T) {
	cases := []struct {
		name  string
		stmt  string
		check func(t *testing.T, ts *TableSchema)
	}{
		{"all types, comments and clauses", `
			-- a line comment
			/* a block
			   comment */
			CREATE TABLE IF NOT EXISTS db.all_types (
				k1 TINYINT NOT NULL COMMENT "key",
				k2 SMALLINT NOT NULL,
				i INT, i2 INTEGER, b BIGINT, l LARGEINT,
				d DECIMAL(27, 9), d3 DECIMALV3(9,3), d32 DECIMAL32(9,2), d64 DECIMAL64(18,4), d128 DECIMAL128(38,10),
				f FLOAT, g DOUBLE, bo BOOLEAN,
				c CHAR(10), v VARCHAR(100) NULL DEFAULT 'x', s STRING,
				dt DATE DEFAULT "2024-01-01", ts DATETIME DEFAULT CURRENT_TIMESTAMP, j JSON
			) ENGINE = olap
			DUPLICATE KEY(k1, k2)
			COMMENT "a table"
			PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ("2025-01-01"), PARTITION p2 VALUES LESS THAN (MAXVALUE))
			DISTRIBUTED BY HASH(k1) BUCKETS 8
			ORDER BY(k1, k2)
			PROPERTIES ("replication_num" = "1", "storage_medium" = "SSD")`,
			func(t *testing.T, ts *TableSchema) {
				assert.Equal(t, DuplicateKey, ts.KeyType)
				want := []ColumnType{TypeTinyInt, TypeSmallInt, TypeInt, TypeInt, TypeBigInt, TypeLargeInt, TypeDecimal, TypeDecimal, TypeDecimal, TypeDecimal, TypeDecimal,
					TypeFloat, TypeDouble, TypeBoolean, TypeChar, TypeVarchar, TypeString, TypeDate, TypeDatetime, TypeJSON}
				require.Len(t, ts.Columns, len(want))
				for i, w := range want {
					assert.Equal(t, w, ts.Columns[i].Type, ts.Columns[i].Name)
				}
				assert.Equal(t, "key", ts.Columns[0].Comment)
				assert.Equal(t, 38, ts.Columns[10].Precision)
				assert.Equal(t, 10, ts.Columns[10].Scale)
				assert.True(t, ts.Columns[18].DefaultCurrentTimestamp)
				assert.Equal(t, 10, ts.Columns[14].Length)
			}},
		{"unique key, random distribution, bare names", `create table db.u (id int not null, v varchar(10)) unique key(id) distributed by random`,
			func(t *testing.T, ts *TableSchema) {
				assert.Equal(t, UniqueKey, ts.KeyType)
				assert.Equal(t, []string{"id"}, ts.Key)
			}},
		{"no key clause defaults to duplicate on the first column", "CREATE TABLE db.nokey (a INT, b INT)",
			func(t *testing.T, ts *TableSchema) {
				assert.Equal(t, DuplicateKey, ts.KeyType)
				assert.Equal(t, []string{"a"}, ts.Key)
			}},
		{"expression partitioning", "CREATE TABLE db.p (id BIGINT NOT NULL, ts DATETIME) PRIMARY KEY(id) PARTITION BY date_trunc('day', ts) DISTRIBUTED BY HASH(id)",
			func(t *testing.T, ts *TableSchema) { assert.Equal(t, PrimaryKey, ts.KeyType) }},
		{"key names are matched case-insensitively and take the column spelling", "CREATE TABLE db.ci (`ID` BIGINT NOT NULL, v INT) PRIMARY KEY(id)",
			func(t *testing.T, ts *TableSchema) { assert.Equal(t, []string{"ID"}, ts.Key) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New()
			require.NoError(t, s.ExecDDL("CREATE DATABASE db"))
			require.NoError(t, s.ExecDDL(c.stmt))
			toks, err := lexScript(c.stmt)
			require.NoError(t, err)
			st, err := parseDDL(splitStatements(toks)[0])
			require.NoError(t, err)
			ts, err := s.Table("db", st.(createTableStmt).name)
			require.NoError(t, err)
			c.check(t, ts)
		})
	}
}

func TestDDLRejected(t *testing.T) {
	cases := []struct {
		name, stmt, want string
	}{
		{"nullable primary key", "CREATE TABLE db.t (id BIGINT NULL, v INT) PRIMARY KEY(id)", "primary key column[id] cannot be nullable"},
		{"primary key not leading", "CREATE TABLE db.t (v INT, id BIGINT NOT NULL) PRIMARY KEY(id)", "Key columns should be a ordered prefix of the schema"},
		{"unknown key column", "CREATE TABLE db.t (id BIGINT NOT NULL) PRIMARY KEY(nope)", "Key column 'nope' doesn't exist"},
		{"unsupported type", "CREATE TABLE db.t (id BIGINT NOT NULL, a BITMAP) PRIMARY KEY(id)", "type BITMAP is not supported by the emulator"},
		{"unknown type", "CREATE TABLE db.t (id BIGINT NOT NULL, a WHATEVER) PRIMARY KEY(id)", "unsupported type WHATEVER"},
		{"aggregate value without aggregation", "CREATE TABLE db.t (id BIGINT NOT NULL, v BIGINT) AGGREGATE KEY(id)", "needs an aggregation type"},
		{"aggregation outside an aggregate table", "CREATE TABLE db.t (id BIGINT NOT NULL, v BIGINT SUM) PRIMARY KEY(id)", "only valid in an AGGREGATE KEY table"},
		{"SUM of a string", "CREATE TABLE db.t (id BIGINT NOT NULL, v VARCHAR(3) SUM) AGGREGATE KEY(id)", "SUM is not valid for type VARCHAR(3)"},
		{"unsupported aggregation", "CREATE TABLE db.t (id BIGINT NOT NULL, v BIGINT HLL_UNION) AGGREGATE KEY(id)", "aggregation HLL_UNION is not supported"},
		{"array key", "CREATE TABLE db.t (a ARRAY<INT> NOT NULL, v INT) DUPLICATE KEY(a)", "Invalid data type of key column 'a'"},
		{"auto increment", "CREATE TABLE db.t (id BIGINT NOT NULL AUTO_INCREMENT) PRIMARY KEY(id)", "AUTO_INCREMENT is not supported"},
		{"generated column", "CREATE TABLE db.t (id BIGINT NOT NULL, v BIGINT AS id + 1) PRIMARY KEY(id)", "generated columns"},
		{"create like", "CREATE TABLE db.t LIKE db.other", "LIKE is not supported"},
		{"create as select", "CREATE TABLE db.t AS SELECT 1", "AS SELECT is not supported"},
		{"alter other", "ALTER TABLE db.t RENAME t2", "RENAME is not supported by the emulator"},
		{"alter view", "ALTER VIEW v AS SELECT 1", "ALTER VIEW is not supported"},
		{"engine", "CREATE TABLE db.t (id INT) ENGINE=mysql", "only ENGINE=OLAP"},
		{"decimal precision", "CREATE TABLE db.t (id INT, d DECIMAL32(10,2))", "DECIMAL32 precision 10 out of range [1, 9]"},
		{"bad default", "CREATE TABLE db.t (id INT, n INT DEFAULT 'abc')", "Invalid default value for 'n': abc"},
		{"duplicate column", "CREATE TABLE db.t (id INT, ID INT)", "Duplicate column name 'ID'"},
		{"unknown database", "CREATE TABLE nodb.t (id INT)", "Database[nodb] does not exist"},
		{"no database selected", "CREATE TABLE t (id INT)", "No database selected"},
		{"missing paren", "CREATE TABLE db.t (id INT", "unexpected end of statement"},
		{"garbage clause", "CREATE TABLE db.t (id INT) WITH (x)", `unexpected token "WITH" at line 1 col 28, expected ENGINE`},
		{"insert is not DDL", "INSERT INTO db.t VALUES (1)", `unexpected token "INSERT"`},
		{"float key", "CREATE TABLE db.t (f DOUBLE NOT NULL) PRIMARY KEY(f)", "Invalid data type of key column 'f'"},
		{"table exists", "CREATE TABLE db.exists (id INT)", "Table 'exists' already exists"},
		{"database exists", "CREATE DATABASE db", "Can't create database 'db'; database exists"},
		{"drop unknown table", "DROP TABLE db.nope", "Unknown table 'nope'"},
		{"drop unknown database", "DROP DATABASE nope", "Can't drop database 'nope'"},
		{"use unknown database", "USE nope", "Database[nope] does not exist"},
		{"unterminated string", "CREATE TABLE db.t (id INT COMMENT 'x)", "unterminated ' quote"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New()
			require.NoError(t, s.ExecScript("CREATE DATABASE db; CREATE TABLE db.exists (id INT)"))
			err := s.ExecDDL(c.stmt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestDDLScriptErrorNamesStatement(t *testing.T) {
	s := New()
	err := s.ExecScript("CREATE DATABASE a;\n\nCREATE TABLE a.t (id INT) FOO;")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `statement 2 (line 3, "CREATE TABLE a.t (id INT) FOO")`)
	assert.Contains(t, err.Error(), `unexpected token "FOO" at line 3 col 27`)
	// statements before the failing one stay applied
	_, ok := s.DatabaseID("a")
	assert.True(t, ok)
}

func TestDDLUseDropAndLookupErrors(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript("CREATE DATABASE d1; USE d1; CREATE TABLE t (id INT NOT NULL) PRIMARY KEY(id); CREATE DATABASE d2"))
	_, err := s.Table("d1", "t")
	require.NoError(t, err)

	_, err = s.Table("nope", "t")
	require.ErrorIs(t, err, ErrUnknownDatabase)
	assert.EqualError(t, err, "Database[nope] does not exist")
	_, err = s.Table("d1", "nope")
	require.ErrorIs(t, err, ErrUnknownTable)
	assert.EqualError(t, err, "Failed to find table nope in db d1")
	assert.False(t, errors.Is(err, ErrUnknownDatabase))

	id1, _ := s.DatabaseID("d1")
	id2, _ := s.DatabaseID("d2")
	assert.NotEqual(t, id1, id2)

	require.NoError(t, s.Apply([]TableChange{{DB: "d1", Table: "t", Rows: []Row{{Values: []any{int32(1)}}}}}))
	require.NoError(t, s.ExecDDL("TRUNCATE TABLE d1.t"))
	rows, err := s.Rows("d1", "t")
	require.NoError(t, err)
	assert.Empty(t, rows)
	require.ErrorIs(t, s.ExecDDL("TRUNCATE TABLE d1.nope"), ErrUnknownTable)

	require.NoError(t, s.ExecDDL("DROP TABLE t")) // USE d1 persists across calls
	_, err = s.Table("d1", "t")
	require.ErrorIs(t, err, ErrUnknownTable)
	require.NoError(t, s.ExecDDL("DROP TABLE IF EXISTS d1.t"))
	require.NoError(t, s.ExecDDL("DROP DATABASE d1 FORCE"))
	_, ok := s.DatabaseID("d1")
	assert.False(t, ok)
	require.NoError(t, s.ExecDDL("DROP DATABASE IF EXISTS d1"))

	require.Error(t, s.ExecDDL("CREATE DATABASE x; CREATE DATABASE y"), "ExecDDL takes one statement")
}
