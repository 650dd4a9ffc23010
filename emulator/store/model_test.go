package store

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAggregateKey: rows with the same key merge by each value column's aggregation, within
// one load and across loads, as StarRocks's AGGREGATE KEY model does.
func TestAggregateKey(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript(`CREATE DATABASE db;
CREATE TABLE db.agg (k INT NOT NULL, s BIGINT SUM DEFAULT "0", d DECIMAL(10,2) SUM, mx INT MAX, mn INT MIN,
  r VARCHAR(8) REPLACE, rn VARCHAR(8) REPLACE_IF_NOT_NULL) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k);`))
	p := jsonParams(nil)
	load(t, s, "db", "agg", `[{"k":1,"s":1,"d":"1.10","mx":5,"mn":5,"r":"a","rn":"a"},
		{"k":1,"s":2,"d":"2.20","mx":3,"mn":3,"r":null,"rn":null},
		{"k":2,"s":7}]`, p)
	load(t, s, "db", "agg", `[{"k":1,"s":null,"mx":9,"mn":null,"r":"c","rn":"c"}]`, p)
	rows, err := s.Rows("db", "agg")
	require.NoError(t, err)
	require.Len(t, rows, 2)
	assert.Equal(t, map[string]any{"k": int32(1), "s": int64(3), "d": decimal.RequireFromString("3.30"), "mx": int32(9), "mn": int32(3), "r": "c", "rn": "c"}, rows[0])
	assert.Equal(t, map[string]any{"k": int32(2), "s": int64(7), "d": nil, "mx": nil, "mn": nil, "r": nil, "rn": nil}, rows[1])
	sc, err := s.Table("db", "agg")
	require.NoError(t, err)
	assert.Equal(t, "AGG_KEYS", tablesConfigRow(sc)[3])
	assert.Contains(t, sc.DDL(), "`s` bigint(20) SUM NULL DEFAULT \"0\"")
	assert.Contains(t, sc.DDL(), "AGGREGATE KEY(`k`)")
	_, err = s.Parse("db", "agg", []byte(`[{"k":1,"__op":1}]`), jsonParams(nil))
	require.NoError(t, err, "__op is an unknown key outside PRIMARY KEY tables")
}

// TestArrayAndMap: ARRAY and MAP columns load from JSON values and from their JSON text in
// CSV; elements convert to the element type; a bad element fails the value.
func TestArrayAndMap(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript(`CREATE DATABASE db;
CREATE TABLE db.c (id INT NOT NULL, a ARRAY<INT>, sa ARRAY<VARCHAR(8)>, m MAP<VARCHAR(8),INT>, n ARRAY<ARRAY<DECIMAL(5,2)>>,
  dm MAP<INT,DATE>) DUPLICATE KEY(id);`))
	res := load(t, s, "db", "c", `[{"id":1,"a":[1,"2",3],"sa":["x",null,"y"],"m":{"k":1,"j":"2"},"n":[[1,"2.5"],[]],"dm":{"1":"2024-01-02"}},
		{"id":2,"a":["x"]},
		{"id":3,"a":"[4,5]","m":null}]`, jsonParams(nil))
	assert.Zero(t, res.Filtered)
	rows, err := s.Rows("db", "c")
	require.NoError(t, err)
	require.Len(t, rows, 3)
	assert.Equal(t, "[1,2,3]", rows[0]["a"])
	assert.Equal(t, `["x",null,"y"]`, rows[0]["sa"])
	assert.Equal(t, `{"k":1,"j":2}`, rows[0]["m"])
	assert.Equal(t, `[[1.00,2.50],[]]`, rows[0]["n"])
	assert.Equal(t, `{1:"2024-01-02"}`, rows[0]["dm"], "StarRocks prints numeric map keys bare")
	assert.Nil(t, rows[1]["a"], "an element that does not convert: NULL outside strict mode")
	assert.Equal(t, "[4,5]", rows[2]["a"], "the JSON text of an array")

	res, err = s.Parse("db", "c", []byte(`[{"id":9,"a":["x"]}]`), jsonParams(map[string]string{"strict_mode": "true"}))
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.Filtered, "strict mode filters it")
	assert.Contains(t, res.Errors[0], "column 'a'")

	p, err := ParseLoadParams(map[string]string{"columns": "id,a,m", "column_separator": "|"})
	require.NoError(t, err)
	res = load(t, s, "db", "c", "4|[7,8]|{\"z\":9}\n", p)
	require.Len(t, res.Rows, 1)
	assert.Equal(t, "[7,8]", res.Rows[0].Values[1])
	assert.Equal(t, `{"z":9}`, res.Rows[0].Values[3])
	sc, err := s.Table("db", "c")
	require.NoError(t, err)
	assert.Contains(t, sc.DDL(), "`n` array<array<decimal(5, 2)>> NULL")
	assert.Contains(t, sc.DDL(), "`dm` map<int(11),date> NULL")
}

// TestAlterTable: on a fast schema evolution table (the default) ADD COLUMN gives existing
// rows the default (or NULL) at once and can place the column AFTER another; DROP COLUMN
// drops the values; key columns stay. The refusals carry StarRocks's texts.
func TestAlterTable(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript(`CREATE DATABASE db;
CREATE TABLE db.t (id BIGINT NOT NULL, v VARCHAR(8)) PRIMARY KEY(id) DISTRIBUTED BY HASH(id);`))
	load(t, s, "db", "t", `[{"id":1,"v":"a"}]`, jsonParams(nil))
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN n INT NOT NULL DEFAULT "7" AFTER id`))
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN (x DOUBLE, y DATETIME DEFAULT CURRENT_TIMESTAMP)`))
	sc, err := s.Table("db", "t")
	require.NoError(t, err)
	names := []string{}
	for _, c := range sc.Columns {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"id", "n", "v", "x", "y"}, names)
	rows, err := s.Rows("db", "t")
	require.NoError(t, err)
	assert.Equal(t, int32(7), rows[0]["n"])
	assert.Nil(t, rows[0]["x"])
	assert.NotNil(t, rows[0]["y"])
	load(t, s, "db", "t", `[{"id":2,"v":"b","x":1.5}]`, jsonParams(nil))

	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t DROP COLUMN v`))
	rows, err = s.Rows("db", "t")
	require.NoError(t, err)
	require.Len(t, rows, 2)
	assert.NotContains(t, rows[0], "v")
	assert.Equal(t, 1.5, rows[1]["x"])

	for stmt, want := range map[string]string{
		`ALTER TABLE db.t DROP COLUMN id`:                   "Can not drop key column in primary data model table",
		`ALTER TABLE db.t DROP COLUMN nope`:                 "Column does not exists: nope",
		`ALTER TABLE db.t ADD COLUMN n INT`:                 "Can not add column which already exists in column id: n, you can remove `n` int(11) NOT NULL DEFAULT \"7\" COMMENT \"\" and try again.",
		`ALTER TABLE db.t ADD COLUMN z INT NOT NULL`:        "Field 'z' is not null but doesn't have a default value",
		`ALTER TABLE db.t ADD COLUMN z INT FIRST`:           "Invalid column order. value should be after key. index[t]",
		`ALTER TABLE db.t ADD COLUMN z INT SUM DEFAULT "0"`: "Can not assign aggregation method on column in Primary data model table: z",
		`ALTER TABLE db.nope ADD COLUMN z INT`:              "Failed to find table nope in db db",
	} {
		assert.ErrorContains(t, s.ExecDDL(stmt), want, stmt)
	}
	t.Run("a load parsed before the change takes the new schema at apply", func(t *testing.T) {
		res, err := s.Parse("db", "t", []byte(`[{"id":3,"late":9}]`), jsonParams(nil))
		require.NoError(t, err)
		require.NoError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN late INT DEFAULT "4"`))
		require.NoError(t, s.Apply([]TableChange{{DB: "db", Table: "t", Rows: res.Rows}}))
		rows, err := s.Rows("db", "t")
		require.NoError(t, err)
		assert.Equal(t, int32(4), rows[2]["late"], "the key was read under the old schema: lost, the column takes its default")
	})
	require.NoError(t, s.ExecDDL(`TRUNCATE TABLE db.t`))
	rows, err = s.Rows("db", "t")
	require.NoError(t, err)
	assert.Empty(t, rows)
	require.NoError(t, s.ExecDDL(`DROP TABLE db.t`))
	_, err = s.Table("db", "t")
	assert.ErrorIs(t, err, ErrUnknownTable)
}

// TestDDLRoundTrip: what SHOW CREATE TABLE prints creates the same table again.
func TestDDLRoundTrip(t *testing.T) {
	s := schemaStore(t)
	require.NoError(t, s.ExecScript(`CREATE TABLE test.x (k1 INT NOT NULL, k2 VARCHAR(8) NOT NULL, s BIGINT SUM DEFAULT "0",
  a ARRAY<MAP<STRING,JSON>> REPLACE, ts DATETIME REPLACE DEFAULT CURRENT_TIMESTAMP COMMENT 'when "x"')
  AGGREGATE KEY(k1, k2) COMMENT "t" DISTRIBUTED BY RANDOM BUCKETS 3 ORDER BY (k2) PROPERTIES ("replication_num" = "3");`))
	for _, name := range s.Tables("test") {
		sc, err := s.Table("test", name)
		require.NoError(t, err)
		again := New()
		require.NoError(t, again.ExecScript("CREATE DATABASE test; USE test; "+sc.DDL()), sc.DDL())
		sc2, err := again.Table("test", name)
		require.NoError(t, err)
		assert.Equal(t, sc.DDL(), sc2.DDL())
	}
}

// TestMapKeysPrintedAsStarRocks: a MAP with numeric (or boolean) keys is printed with the keys
// bare, as StarRocks prints it over MySQL ({1:"a"}); string, date and datetime keys stay
// quoted. The printed text is read back (a CSV field, an INSERT … SELECT, a restart) to the
// same value.
func TestMapKeysPrintedAsStarRocks(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript(`CREATE DATABASE db;
CREATE TABLE db.m (id INT NOT NULL, im MAP<INT,VARCHAR(8)>, dm MAP<DECIMAL(4,1),INT>, sm MAP<VARCHAR(8),MAP<BIGINT,INT>>,
  am ARRAY<MAP<INT,INT>>, tm MAP<DATE,INT>) DUPLICATE KEY(id);`))
	load(t, s, "db", "m", `[{"id":1,"im":{"1":"a","-2":"b"},"dm":{"1.5":1},"sm":{"k":{"7":1}},"am":[{"3":4}],"tm":{"2024-01-02":1}}]`, jsonParams(nil))
	rows, err := s.Rows("db", "m")
	require.NoError(t, err)
	require.Len(t, rows, 1)
	want := map[string]string{
		"im": `{1:"a",-2:"b"}`, "dm": `{1.5:1}`, "sm": `{"k":{7:1}}`, "am": `[{3:4}]`, "tm": `{"2024-01-02":1}`,
	}
	sc, err := s.Table("db", "m")
	require.NoError(t, err)
	for col, text := range want {
		assert.Equal(t, text, rows[0][col], col)
		i := sc.ColumnIndex(col)
		require.GreaterOrEqual(t, i, 0, col)
		back, err := convertText(&sc.Columns[i], text)
		require.NoError(t, err, "the printed %s reads back", col)
		assert.Equal(t, text, back, col)
	}
	p, err := ParseLoadParams(map[string]string{"columns": "id,im", "column_separator": "|"})
	require.NoError(t, err)
	res := load(t, s, "db", "m", "2|{1:\"x\", 2 : \"y,z\"}\n", p)
	require.Len(t, res.Rows, 1)
	assert.Equal(t, `{1:"x",2:"y,z"}`, res.Rows[0].Values[1], "a CSV field in the printed form")
}

func TestQuoteBareKeys(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1}`:                `{"a":1}`,
		`{1:"a", 2:"b"}`:         `{"1":"a", "2":"b"}`,
		`[{1:[2,3]},{}]`:         `[{"1":[2,3]},{}]`,
		`{"x:1":{ -3 :"}"}}`:     `{"x:1":{ "-3":"}"}}`,
		`[1,"a\\",{2.5:"\\"q"}]`: `[1,"a\\",{"2.5":"\\"q"}]`,
		`{oops}`:                 `{oops}`,
	} {
		assert.Equal(t, want, string(quoteBareKeys([]byte(in))), in)
	}
}
