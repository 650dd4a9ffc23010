package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJSONPathsAndRoot(t *testing.T) {
	s := convStore(t)
	body := `{"meta":1,"data":{"rows":[{"k":{"id":1},"r":[10,20]},{"k":{"id":2},"r":[30]}]}}`
	p := jsonParams(map[string]string{"json_root": "$.data.rows", "jsonpaths": `["$.k.id", "$.r[0]", "$.r[1]"]`, "columns": "id,req,opt"})
	res, err := s.Parse("db", "nn", []byte(body), p)
	require.NoError(t, err)
	require.Len(t, res.Rows, 2, res.Errors)
	assert.Equal(t, []any{int64(1), int32(10), int32(7), int32(20)}, res.Rows[0].Values[:4])
	assert.Equal(t, []any{int64(2), int32(30), int32(7), nil}, res.Rows[1].Values[:4])

	// json_root alone, and a root that does not exist
	p = jsonParams(map[string]string{"json_root": "$.data.rows"})
	res, err = s.Parse("db", "nn", []byte(`{"data":{"rows":[{"id":1,"req":2}]}}`), p)
	require.NoError(t, err)
	require.Len(t, res.Rows, 1)
	res, err = s.Parse("db", "nn", []byte(`{"other":1}`), p)
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.Filtered)
	assert.Contains(t, res.Errors[0], "JSON root $.data.rows not found")

	// jsonpaths without columns map to the table columns in order
	p = jsonParams(map[string]string{"jsonpaths": `["$.a", "$.b"]`})
	res, err = s.Parse("db", "nn", []byte(`[{"a":"3","b":4}]`), p)
	require.NoError(t, err)
	require.Len(t, res.Rows, 1)
	assert.Equal(t, []any{int64(3), int32(4)}, res.Rows[0].Values[:2])

	_, err = ParseLoadParams(map[string]string{"jsonpaths": `$.a`})
	require.ErrorContains(t, err, "Invalid jsonpaths")
	_, err = ParseLoadParams(map[string]string{"jsonpaths": `["a"]`})
	require.ErrorContains(t, err, "Invalid json path: a")
	_, err = s.Parse("db", "nn", []byte(`[]`), jsonParams(map[string]string{"jsonpaths": `["$.a"]`, "columns": "id,req"}))
	require.ErrorContains(t, err, "must match one to one")
}

func TestParseLoadParams(t *testing.T) {
	p, err := ParseLoadParams(map[string]string{
		"Format": "JSON", "STRIP_OUTER_ARRAY": "TRUE", "strict_mode": "True", "partial_update": "true",
		"columns": "a, `b`,c", "max_filter_ratio": "0.25", "Column_Separator": ",", "row_delimiter": "\\n", "unknown": "x",
		"json_root": "$.x", "timezone": "UTC",
	})
	require.NoError(t, err)
	assert.Equal(t, LoadParams{Format: "json", StripOuterArray: true, StrictMode: true, PartialUpdate: true,
		Columns: []string{"a", "b", "c"}, MaxFilterRatio: 0.25, ColumnSeparator: ",", RowDelimiter: "\n", JSONRoot: "$.x", Timezone: "UTC"}, p)

	p, err = ParseLoadParams(nil)
	require.NoError(t, err)
	assert.Equal(t, LoadParams{Format: "csv", ColumnSeparator: "\t", RowDelimiter: "\n"}, p)

	p, err = ParseLoadParams(map[string]string{"strip_outer_array": "yes", "partial_update": "TRUE"})
	require.NoError(t, err)
	assert.False(t, p.StripOuterArray, "only true (any case) enables strip_outer_array")
	assert.False(t, p.PartialUpdate, "only exactly \"true\" enables partial_update")

	p, err = ParseLoadParams(map[string]string{"format": "gzip"})
	require.NoError(t, err)
	assert.Equal(t, "csv", p.Format)
	assert.Equal(t, "gzip", p.CSVCompression)
	s := convStore(t)
	_, err = s.Parse("db", "nn", []byte("x"), p)
	require.ErrorContains(t, err, "decompressing the format=gzip body")

	errs := []struct {
		h    map[string]string
		want string
	}{
		{map[string]string{"format": "parquet"}, "unknown data format, format=parquet"},
		{map[string]string{"strict_mode": "yes"}, "Invalid strict mode format. Must be bool type"},
		{map[string]string{"max_filter_ratio": "abc"}, "Invalid max_filter_ratio: abc"},
		{map[string]string{"columns": "a, 'b"}, "unbalanced quotes"},
		{map[string]string{"partial_update_mode": "fast"}, "Invalid partial update mode"},
		{map[string]string{"skip_header": "-1"}, "Invalid skip_header"},
		{map[string]string{"enclose": "ab"}, "Invalid enclose"},
	}
	for _, e := range errs {
		_, err := ParseLoadParams(e.h)
		require.Error(t, err)
		assert.Contains(t, err.Error(), e.want)
	}
}

func TestParseTableErrors(t *testing.T) {
	s := convStore(t)
	_, err := s.Parse("nodb", "t", nil, jsonParams(nil))
	require.ErrorIs(t, err, ErrUnknownDatabase)
	_, err = s.Parse("db", "nope", nil, jsonParams(nil))
	require.ErrorIs(t, err, ErrUnknownTable)
	_, err = s.Parse("db", "dup", []byte(`[]`), jsonParams(map[string]string{"partial_update": "true"}))
	require.EqualError(t, err, "Only primary key table support partial update")
	_, err = s.Parse("db", "nn", []byte(`[]`), jsonParams(map[string]string{"partial_update": "true", "columns": "req"}))
	require.ErrorContains(t, err, "must list every primary key column, id is missing")
}

func TestCurrentTimestampFollowsTimezoneHeader(t *testing.T) {
	s := convStore(t)
	sc, _ := s.Table("db", "nn")
	made := sc.ColumnIndex("made")
	for _, c := range []struct {
		tz     string
		offset time.Duration
	}{{"UTC", 0}, {"Etc/GMT-14", 14 * time.Hour}, {"Etc/GMT+5", -5 * time.Hour}} {
		res, err := s.Parse("db", "nn", []byte(`[{"id":1,"req":1}]`), jsonParams(map[string]string{"timezone": c.tz}))
		require.NoError(t, err)
		got := res.Rows[0].Values[made].(time.Time)
		assert.WithinDuration(t, time.Now().UTC().Add(c.offset), got, 3*time.Second, c.tz)
		assert.Equal(t, time.UTC, got.Location())
	}
}

func TestWhereHeader(t *testing.T) {
	s := convStore(t)
	body := `[{"id":1,"req":1,"st":"a"},{"id":2,"req":2,"st":"b","opt":5},{"id":3,"req":3,"st":"b"},{"id":4},{"id":5,"req":5,"made":"2024-01-01 00:00:00"}]`
	cases := []struct {
		where           string
		ids             []int64
		unsel, filtered int64
	}{
		{"req > 1 AND st = 'b'", []int64{2, 3}, 2, 1},
		{"opt IS NULL", []int64{1, 3, 5}, 1, 1},
		{"id IN (1, 5) OR opt = 5", []int64{1, 2, 5}, 1, 1},
		{"made < '2025-01-01'", []int64{5}, 3, 1},
		{"1 = 0", nil, 4, 1},
		{"1 = 1", []int64{1, 2, 3, 5}, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.where, func(t *testing.T) {
			res, err := s.Parse("db", "nn", []byte(body), jsonParams(map[string]string{"where": c.where}))
			require.NoError(t, err)
			var ids []int64
			for _, r := range res.Rows {
				ids = append(ids, r.Values[0].(int64))
			}
			assert.Equal(t, c.ids, ids)
			assert.Equal(t, c.unsel, res.Unselected)
			assert.Equal(t, c.filtered, res.Filtered, "row 4 misses NOT NULL req: filtered before where")
			assert.Equal(t, int64(len(ids)), res.Loaded)
		})
	}
	_, err := s.Parse("db", "nn", []byte(body), jsonParams(map[string]string{"where": "nope > 1"}))
	require.ErrorContains(t, err, "invalid where header")
}

func TestColumnsMappingExpressions(t *testing.T) {
	s := convStore(t)
	load(t, s, "db", "nn", `[{"id":1,"req":1},{"id":2,"req":2},{"id":3,"req":3}]`, jsonParams(nil))

	// the documented delete load: only an __op expression, fields map to the table columns
	p, err := ParseLoadParams(map[string]string{"column_separator": ",", "columns": "__op='delete'"})
	require.NoError(t, err)
	res, err := s.Parse("db", "nn", []byte("1,1,7,\\N,x,\\N\n"), p)
	require.NoError(t, err)
	require.Len(t, res.Rows, 1, res.Errors)
	assert.Equal(t, OpDelete, res.Rows[0].Op)

	// JSON with a constant __op and a constant column
	res, err = s.Parse("db", "nn", []byte(`[{"id":2,"req":2}]`), jsonParams(map[string]string{"columns": "__op = 'delete'"}))
	require.NoError(t, err)
	require.Len(t, res.Rows, 1)
	assert.Equal(t, OpDelete, res.Rows[0].Op)
	res, err = s.Parse("db", "nn", []byte(`[{"id":2,"req":2,"st":"json"}]`), jsonParams(map[string]string{"columns": "st = 'const', opt = 9"}))
	require.NoError(t, err)
	require.Len(t, res.Rows, 1)
	assert.Equal(t, []any{int64(2), int32(2), int32(7), int32(9), "const"}, res.Rows[0].Values[:5])

	// CSV: a source field feeding two columns, a temporary field, NULL and numeric constants
	p, err = ParseLoadParams(map[string]string{"column_separator": ",", "columns": "id, tmp, req, opt = tmp, st = NULL, dflt = -3, __op = op_src, op_src"})
	require.NoError(t, err)
	res, err = s.Parse("db", "nn", []byte("5,42,6,0\n3,1,1,1\n"), p)
	require.NoError(t, err)
	require.Len(t, res.Rows, 2, res.Errors)
	assert.Equal(t, []any{int64(5), int32(6), int32(-3), int32(42), nil}, res.Rows[0].Values[:5])
	assert.Equal(t, OpUpsert, res.Rows[0].Op)
	assert.Equal(t, OpDelete, res.Rows[1].Op)

	// jsonpaths with a derived column reading a path
	res, err = s.Parse("db", "nn", []byte(`[{"a":7,"b":"8"}]`), jsonParams(map[string]string{"jsonpaths": `["$.a","$.b"]`, "columns": "id, x, req = x, opt = x"}))
	require.NoError(t, err)
	require.Len(t, res.Rows, 1, res.Errors)
	assert.Equal(t, []any{int64(7), int32(8), int32(7), int32(8)}, res.Rows[0].Values[:4])

	// expressions over source fields: arithmetic, functions and StarRocks casts
	p, err = ParseLoadParams(map[string]string{"column_separator": ",",
		"columns": "id, tmp, req = tmp * 2, st = upper(concat('a', tmp)), opt = cast(tmp as int), dflt = cast(tmp AS BIGINT) + id"})
	require.NoError(t, err)
	res, err = s.Parse("db", "nn", []byte("1,21\n2,\\N\n"), p)
	require.NoError(t, err)
	require.Len(t, res.Rows, 1, res.Errors)
	assert.Equal(t, []any{int64(1), int32(42), int32(22), int32(21), "A21"}, res.Rows[0].Values[:5])
	assert.Equal(t, int64(1), res.Filtered, "NULL * 2 is NULL in the NOT NULL req")
	// JSON: an expression over keys named in the header
	res, err = s.Parse("db", "nn", []byte(`[{"id":3,"req":4,"st":"x"}]`), jsonParams(map[string]string{"columns": "id, req, st, opt = req + id, dflt = length(st)"}))
	require.NoError(t, err)
	require.Len(t, res.Rows, 1, res.Errors)
	assert.Equal(t, []any{int64(3), int32(4), int32(1), int32(7), "x"}, res.Rows[0].Values[:5])

	for _, c := range []struct {
		h    map[string]string
		want string
	}{
		{map[string]string{"format": "csv", "columns": "id, opt = no_such_function(id)"}, "cannot be evaluated"},
		{map[string]string{"format": "csv", "columns": "id, nope = 1"}, "Unknown column 'nope' in 'nn'"},
		{map[string]string{"format": "csv", "columns": "id, __op = 'merge'"}, "use 'upsert', 'delete', 0 or 1"},
	} {
		p, err := ParseLoadParams(c.h)
		require.NoError(t, err)
		_, err = s.Parse("db", "nn", []byte(""), p)
		require.ErrorContains(t, err, c.want)
	}
}

// TestColumnsHeaderCasts: a CAST in a columns expression has StarRocks's semantics
// (be/src/exprs/cast_expr.cpp): a string that is not an integer of the type is NULL ('1.5',
// 'abc', ” and an overflow), a number cast to an integer is truncated, an invalid date is
// NULL. MySQL would give 1, 0, 0 and a clamped value.
func TestColumnsHeaderCasts(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript(`CREATE DATABASE db;
CREATE TABLE db.c (id INT NOT NULL, i INT, b BIGINT, d DATE, dc DECIMAL(5,2), bo BOOLEAN) DUPLICATE KEY(id);`))
	cases := []struct {
		expr, field string
		col         string
		want        any
	}{
		{"cast(src as int)", "42", "i", int32(42)},
		{"cast(src as int)", " 42 ", "i", int32(42)},
		{"cast(src as int)", "1.5", "i", nil},
		{"cast(src as int)", "abc", "i", nil},
		{"cast(src as int)", "", "i", nil},
		{"cast(src as tinyint)", "200", "i", nil},
		{"cast(src as bigint)", "99999999999999999999", "b", nil},
		{"cast(cast(src as double) as int)", "1.9", "i", int32(1)},
		{"cast(cast(src as double) as tinyint)", "300.5", "i", nil},
		{"cast(src as date)", "2024-01-31", "d", time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)},
		{"cast(src as date)", "2024-02-30", "d", nil},
		{"cast(src as decimal(5,2))", "9.5", "dc", dec("9.50")},
		{"cast(src as decimal(5,2))", "abc", "dc", nil},
		{"cast(src as boolean)", "2", "bo", true},
		{"cast(src as boolean)", "false", "bo", false},
		{"cast(src as int) * 10", "3", "b", int64(30)},
		{"CAST( src AS VARCHAR )", "x", "i", nil},
		{"concat(cast(src AS string), '0')", "4", "i", int32(40)},
	}
	sc, err := s.Table("db", "c")
	require.NoError(t, err)
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s of %q", c.expr, c.field), func(t *testing.T) {
			p, err := ParseLoadParams(map[string]string{"columns": "id, src, " + c.col + " = " + c.expr, "column_separator": "|"})
			require.NoError(t, err)
			res, err := s.Parse("db", "c", []byte("1|"+c.field+"\n"), p)
			require.NoError(t, err)
			require.Equal(t, int64(1), res.Loaded, res.Errors)
			got := res.Rows[0].Values[sc.ColumnIndex(c.col)]
			if d, ok := c.want.(decimal.Decimal); ok {
				require.IsType(t, decimal.Decimal{}, got)
				assert.True(t, d.Equal(got.(decimal.Decimal)), "got %v", got)
				return
			}
			assert.Equal(t, c.want, got)
		})
	}
	_, err = ParseLoadParams(map[string]string{"columns": "id, src, i = cast(src as signed)"})
	if err == nil {
		_, err = s.Parse("db", "c", []byte("1\t2\n"), mustParams(t, map[string]string{"columns": "id, src, i = cast(src as signed)"}))
	}
	require.ErrorContains(t, err, "CAST to signed", "a MySQL-only cast type is named")
}

func mustParams(t *testing.T, h map[string]string) LoadParams {
	t.Helper()
	p, err := ParseLoadParams(h)
	require.NoError(t, err)
	return p
}

// TestColumnsHeaderNamesTheJSONKeys: with plain names in the columns header, the source
// fields are those names as written, and a JSON key must spell one exactly; the name then
// maps to its column ignoring case (Load.initColumns's columnExprMap,
// docs/notes/starrocks-protocol.md §11.8).
func TestColumnsHeaderNamesTheJSONKeys(t *testing.T) {
	s := convStore(t)
	res, err := s.Parse("db", "nn", []byte(`[{"ID":1,"Req":2,"opt":3,"Opt":4}]`), jsonParams(map[string]string{"columns": "ID, Req, Opt"}))
	require.NoError(t, err)
	require.Len(t, res.Rows, 1, res.Errors)
	assert.Equal(t, []any{int64(1), int32(2), int32(7), int32(4)}, res.Rows[0].Values[:4], `"ID" and "Req" load into id and req; "opt" is no source field, "Opt" is`)

	res, err = s.Parse("db", "nn", []byte(`[{"id":1,"req":2}]`), jsonParams(map[string]string{"columns": "ID, Req"}))
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.Filtered, `the keys "id" and "req" match no source field: id is NULL`)
}
