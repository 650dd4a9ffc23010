package store

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const convDDL = `CREATE DATABASE db;
CREATE TABLE db.conv (id BIGINT NOT NULL, ti TINYINT, si SMALLINT, i INT, b BIGINT, l LARGEINT,
  d DECIMAL(5,2), f FLOAT, g DOUBLE, bo BOOLEAN, c CHAR(3), v VARCHAR(4), s STRING, dt DATE, ts DATETIME, j JSON)
  PRIMARY KEY(id) DISTRIBUTED BY HASH(id);
CREATE TABLE db.nn (id BIGINT NOT NULL, req INT NOT NULL, dflt INT NOT NULL DEFAULT "7", opt INT, st VARCHAR(8) DEFAULT 'x',
  made DATETIME DEFAULT CURRENT_TIMESTAMP) PRIMARY KEY(id);
CREATE TABLE db.dup (id BIGINT NOT NULL, v VARCHAR(10)) DUPLICATE KEY(id);
CREATE TABLE db.uniq (id BIGINT NOT NULL, v VARCHAR(10)) UNIQUE KEY(id);`

func convStore(t testing.TB) *Store {
	s := New()
	require.NoError(t, s.ExecScript(convDDL))
	return s
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func TestConversionRules(t *testing.T) {
	day := func(y, m, d int) time.Time { return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC) }
	cases := []struct {
		col    string
		json   string
		strict bool
		want   any
		filter bool
	}{
		{"b", `"12"`, false, int64(12), false},
		{"b", `12`, true, int64(12), false},
		{"b", `-9223372036854775808`, true, int64(-9223372036854775808), false},
		{"b", `"abc"`, false, nil, false},
		{"b", `"abc"`, true, nil, true},
		// A JSON number with a fraction is truncated, a string that is a number too
		// (StarRocks formats/json/numeric_column.cpp, checked_cast); a boolean is no number.
		{"b", `12.5`, false, int64(12), false},
		{"b", `-12.9`, true, int64(-12), false},
		{"b", `1e20`, false, nil, false},
		{"b", `1e20`, true, nil, true},
		{"i", `"1.5"`, true, int32(1), false},
		{"i", `1e3`, true, int32(1000), false},
		{"i", `""`, false, nil, false},
		{"i", `""`, true, nil, true},
		{"ti", `127.9`, true, int8(127), false},
		{"ti", `128.5`, true, nil, true},
		{"b", `9223372036854775808`, false, nil, false},
		{"b", `null`, true, nil, false},
		{"b", `true`, false, nil, false},
		{"b", `true`, true, nil, true},
		{"b", `[1]`, false, nil, false},
		{"ti", `127`, false, int8(127), false},
		{"ti", `128`, false, nil, false},
		{"ti", `128`, true, nil, true},
		{"si", `-32768`, true, int16(-32768), false},
		{"si", `"40000"`, true, nil, true},
		{"i", `"2147483647"`, true, int32(2147483647), false},
		{"i", `2147483648`, false, nil, false},
		{"l", `"170141183460469231731687303715884105727"`, true, dec("170141183460469231731687303715884105727"), false},
		{"l", `170141183460469231731687303715884105728`, false, nil, false},
		{"d", `"123.45"`, true, dec("123.45"), false},
		{"d", `-999.99`, true, dec("-999.99"), false},
		{"d", `1.5`, true, dec("1.50"), false},
		{"d", `"123.456"`, true, dec("123.46"), false}, // rounded to the scale like a StarRocks cast
		{"d", `"1234.5"`, false, nil, false},           // precision overflow
		{"d", `"1234.5"`, true, nil, true},
		{"d", `"999.999"`, true, nil, true}, // rounds to 1000.00: overflow
		{"d", `"1e2"`, true, dec("100"), false},
		{"d", `"x1"`, false, nil, false},
		{"f", `1.5`, true, float32(1.5), false},
		{"f", `"1e40"`, false, nil, false},
		{"g", `"2.25"`, true, 2.25, false},
		{"bo", `true`, true, true, false},
		{"bo", `false`, true, false, false},
		{"bo", `0`, true, false, false},
		{"bo", `"1"`, true, true, false},
		{"bo", `"TRUE"`, true, true, false},
		{"bo", `"yes"`, false, nil, false},
		{"bo", `2`, true, nil, true},
		{"c", `"abc"`, true, "abc", false},
		{"c", `"abcd"`, false, nil, false},
		{"v", `"abcd"`, true, "abcd", false},
		{"v", `"abcde"`, false, nil, false},
		{"v", `"abcde"`, true, nil, true},
		{"v", `"ééé"`, false, nil, false}, // 6 bytes: VARCHAR lengths are bytes
		{"v", `"éé"`, true, "éé", false},
		{"v", `12`, true, "12", false},
		{"v", `"a\"\u00e9"`, true, "a\"é", false},
		{"s", `{"a": 1}`, true, `{"a":1}`, false},
		{"dt", `"2024-01-02"`, true, day(2024, 1, 2), false},
		{"dt", `"2024-01-02 03:04:05"`, true, day(2024, 1, 2), false},
		{"dt", `"2024-02-30"`, false, nil, false},
		{"dt", `20240102`, false, nil, false},
		{"ts", `"2024-01-02 03:04:05"`, true, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), false},
		{"ts", `"2024-01-02 03:04:05.123456"`, true, time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC), false},
		{"ts", `"2024-01-02T03:04:05.5"`, true, time.Date(2024, 1, 2, 3, 4, 5, 500000000, time.UTC), false},
		{"ts", `"2024-01-02"`, true, day(2024, 1, 2), false},
		{"ts", `"2024-13-01 00:00:00"`, false, nil, false},
		{"ts", `"garbage"`, true, nil, true},
		{"ts", `"2024-01-02 25:00:00"`, true, nil, true},
		{"j", `{"a":[1,2]}`, true, `{"a":[1,2]}`, false},
		{"j", `{ "a" : 1 }`, true, `{"a":1}`, false},
		{"j", `"str"`, true, `"str"`, false},
		{"j", `5`, true, `5`, false},
		{"j", `null`, true, nil, false},
	}
	s := convStore(t)
	sc, err := s.Table("db", "conv")
	require.NoError(t, err)
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s=%s strict=%v", c.col, c.json, c.strict), func(t *testing.T) {
			p := jsonParams(map[string]string{"strict_mode": fmt.Sprint(c.strict)})
			res, err := s.Parse("db", "conv", []byte(`[{"id":1,"`+c.col+`":`+c.json+`}]`), p)
			require.NoError(t, err)
			if c.filter {
				assert.Equal(t, int64(1), res.Filtered)
				assert.Equal(t, int64(0), res.Loaded)
				assert.Empty(t, res.Rows)
				require.Len(t, res.Errors, 1)
				assert.Contains(t, res.Errors[0], "strict mode")
				return
			}
			require.Equal(t, int64(0), res.Filtered, res.Errors)
			require.Equal(t, int64(1), res.Loaded)
			got := res.Rows[0].Values[sc.ColumnIndex(c.col)]
			if d, ok := c.want.(decimal.Decimal); ok {
				require.IsType(t, decimal.Decimal{}, got)
				assert.True(t, d.Equal(got.(decimal.Decimal)), "got %v want %v", got, d)
				return
			}
			assert.Equal(t, c.want, got)
		})
	}
}

func TestNotNullDefaultsAndKeys(t *testing.T) {
	s := convStore(t)
	sc, _ := s.Table("db", "nn")
	cases := []struct {
		name   string
		row    string
		strict bool
		check  func(t *testing.T, v []any)
		errSub string
	}{
		{"defaults and NULL for missing nullable", `{"id":1,"req":2}`, false, func(t *testing.T, v []any) {
			assert.Equal(t, []any{int64(1), int32(2), int32(7), nil, "x"}, v[:5])
			assert.WithinDuration(t, time.Now().UTC(), time.Date(v[5].(time.Time).Year(), v[5].(time.Time).Month(), v[5].(time.Time).Day(),
				v[5].(time.Time).Hour(), v[5].(time.Time).Minute(), v[5].(time.Time).Second(), 0, time.Local).UTC(), 2*time.Second)
		}, ""},
		{"missing NOT NULL without default", `{"id":1}`, false, nil, "NULL value in non-nullable column 'req'"},
		{"explicit null in NOT NULL", `{"id":1,"req":null}`, false, nil, "NULL value in non-nullable column 'req'"},
		{"explicit null overrides a default", `{"id":1,"req":1,"dflt":null}`, false, nil, "NULL value in non-nullable column 'dflt'"},
		{"failed conversion into NOT NULL, non-strict", `{"id":1,"req":"abc"}`, false, nil, "fails to convert to INT and the column is NOT NULL"},
		{"failed conversion into nullable, non-strict", `{"id":1,"req":1,"opt":"abc"}`, false, func(t *testing.T, v []any) { assert.Nil(t, v[3]) }, ""},
		{"keys match case-insensitively", `{"ID":5,"Req":6}`, true, func(t *testing.T, v []any) { assert.Equal(t, []any{int64(5), int32(6)}, v[:2]) }, ""},
		{"duplicate keys: first wins", `{"id":1,"req":1,"req":2,"REQ":3}`, true, func(t *testing.T, v []any) { assert.Equal(t, int32(1), v[1]) }, ""},
		{"duplicate key after a failed first value keeps the failure", `{"id":1,"req":1,"opt":"x","opt":4}`, false, func(t *testing.T, v []any) { assert.Nil(t, v[3]) }, ""},
		{"unknown keys are ignored", `{"id":1,"req":1,"zzz":{"x":[1,{"y":"\"}"}]},"w\u00e9":true}`, true, func(t *testing.T, v []any) { assert.Equal(t, int32(1), v[1]) }, ""},
		{"escaped key names still match", `{"\u0069d":9,"req":1}`, true, func(t *testing.T, v []any) { assert.Equal(t, int64(9), v[0]) }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := s.Parse("db", "nn", []byte("["+c.row+"]"), jsonParams(map[string]string{"strict_mode": fmt.Sprint(c.strict)}))
			require.NoError(t, err)
			if c.errSub != "" {
				assert.Equal(t, int64(1), res.Filtered)
				assert.Equal(t, int64(0), res.Loaded)
				require.Len(t, res.Errors, 1)
				assert.Contains(t, res.Errors[0], c.errSub)
				assert.Contains(t, res.Errors[0], "Row: "+c.row)
				return
			}
			require.Equal(t, int64(0), res.Filtered, res.Errors)
			require.Len(t, res.Rows, 1)
			require.Len(t, res.Rows[0].Values, len(sc.Columns))
			c.check(t, res.Rows[0].Values)
		})
	}
}

func TestBodyShapes(t *testing.T) {
	s := convStore(t)
	cases := []struct {
		name             string
		body             string
		strip            bool
		loaded, filtered int64
		errSub           string // Parse error
		rowErr           string
	}{
		{"array with strip_outer_array", `[{"id":1,"req":1},{"id":2,"req":2}]`, true, 2, 0, "", ""},
		{"object without strip_outer_array", `{"id":1,"req":1}`, false, 1, 0, "", ""},
		{"several documents without strip_outer_array", "{\"id\":1,\"req\":1}\n{\"id\":2,\"req\":2}\n", false, 2, 0, "", ""},
		{"array without strip_outer_array is one bad row", `[{"id":1,"req":1},{"id":2,"req":2}]`, false, 0, 1, "", "JSON data is an array, strip_outer_array must be set true"},
		{"object with strip_outer_array is one bad row", `{"id":1,"req":1}`, true, 0, 1, "", "JSON data is an object, strip_outer_array must be set false"},
		{"non-object element", `[{"id":1,"req":1}, 5, "x"]`, true, 1, 2, "", "JSON row is a number, not an object"},
		{"empty body", ``, true, 0, 0, "", ""},
		{"empty array", ` [ ] `, true, 0, 0, "", ""},
		{"malformed: truncated", `[{"id":1,"req":1}`, true, 0, 0, "failed to parse JSON body", ""},
		{"malformed: bad token", `[{"id":1,"req":1},{"id":tru}]`, true, 0, 0, "failed to parse JSON body: invalid literal", ""},
		{"malformed: missing colon", `{"id" 1}`, false, 0, 0, "expected ':'", ""},
		{"malformed: trailing garbage", `[{"id":1,"req":1}] x`, true, 0, 0, "failed to parse JSON body", ""},
		{"malformed inside an ignored key", `[{"id":1,"req":1,"zz":[1,}]`, true, 0, 0, "failed to parse JSON body", ""},
		{"malformed: unescaped control char", "[{\"id\":1,\"req\":\"a\x01\"}]", true, 0, 0, "control character", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := s.Parse("db", "nn", []byte(c.body), jsonParams(map[string]string{"strip_outer_array": fmt.Sprint(c.strip)}))
			if c.errSub != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.errSub)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.loaded, res.Loaded)
			assert.Equal(t, c.filtered, res.Filtered)
			assert.Equal(t, int64(len(res.Rows)), res.Loaded)
			if c.rowErr != "" {
				require.NotEmpty(t, res.Errors)
				assert.Contains(t, res.Errors[0], c.rowErr)
			}
		})
	}
}

func TestOpColumn(t *testing.T) {
	s := convStore(t)
	cases := []struct {
		table, row string
		op         Op
		filtered   bool
	}{
		{"nn", `{"id":1,"req":1,"__op":1}`, OpDelete, false},
		{"nn", `{"id":1,"req":1,"__op":"1"}`, OpDelete, false},
		{"nn", `{"id":1,"req":1,"__op":0}`, OpUpsert, false},
		{"nn", `{"id":1,"req":1,"__op":null}`, OpUpsert, false},
		{"nn", `{"id":1,"req":1,"__op":"0"}`, OpUpsert, false},
		{"nn", `{"id":1,"req":1,"__OP":1}`, OpDelete, false},
		{"nn", `{"id":1,"req":1,"__op":2}`, OpUpsert, true},
		{"nn", `{"id":1,"req":1,"__op":"delete"}`, OpUpsert, true},
		{"nn", `{"id":1,"__op":1}`, OpDelete, true}, // a delete row is validated like an upsert
		{"dup", `{"id":1,"__op":1}`, OpUpsert, false},
		{"uniq", `{"id":1,"__op":1}`, OpUpsert, false},
	}
	for _, c := range cases {
		t.Run(c.table+" "+c.row, func(t *testing.T) {
			res, err := s.Parse("db", c.table, []byte("["+c.row+"]"), jsonParams(nil))
			require.NoError(t, err)
			if c.filtered {
				assert.Equal(t, int64(1), res.Filtered)
				return
			}
			require.Len(t, res.Rows, 1, res.Errors)
			assert.Equal(t, c.op, res.Rows[0].Op)
			assert.Equal(t, int64(1), res.Loaded, "delete rows count as loaded")
		})
	}
}

func TestCSV(t *testing.T) {
	s := convStore(t)
	cases := []struct {
		name     string
		headers  map[string]string
		body     string
		table    string
		rows     [][]any // first columns of each loaded row
		filtered int64
		errSub   string
	}{
		{"tab separated, default", nil, "1\t2\t3\t4\tab\t2024-01-02 00:00:00\n", "nn", [][]any{{int64(1), int32(2), int32(3), int32(4), "ab"}}, 0, ""},
		{"\\N is NULL", nil, "1\t2\t3\t\\N\tab\t\\N\n", "nn", [][]any{{int64(1), int32(2), int32(3), nil, "ab", nil}}, 0, ""},
		{"columns header reorders and defaults the rest", map[string]string{"columns": "req, `id`"}, "5\t1\n6\t2\n", "nn",
			[][]any{{int64(1), int32(5), int32(7), nil, "x"}, {int64(2), int32(6), int32(7), nil, "x"}}, 0, ""},
		{"columns header skips unknown names", map[string]string{"columns": "id,skipme,req", "column_separator": ","}, "1,zzz,2\n", "nn", [][]any{{int64(1), int32(2)}}, 0, ""},
		{"__op in columns", map[string]string{"columns": "id,req,__op", "column_separator": ","}, "1,2,1\n3,4,0\n", "nn", [][]any{{int64(1), int32(2)}, {int64(3), int32(4)}}, 0, ""},
		{"custom delimiters", map[string]string{"columns": "id,req", "column_separator": "\\x01", "row_delimiter": "||"}, "1\x012||3\x014||", "nn", [][]any{{int64(1), int32(2)}, {int64(3), int32(4)}}, 0, ""},
		{"wrong field count is filtered", map[string]string{"columns": "id,req"}, "1\t2\t3\n4\n5\t6\n", "nn", [][]any{{int64(5), int32(6)}}, 2, ""},
		{"conversion failure in strict mode", map[string]string{"columns": "id,req,opt", "strict_mode": "true"}, "1\t2\tx\n", "nn", nil, 1, ""},
		// StarRocks loads it: the end of the stream ends the last row (test_stream_load_basic_txn).
		{"no final row delimiter", map[string]string{"columns": "id,req"}, "1\t2\n3\t4", "nn", [][]any{{int64(1), int32(2)}, {int64(3), int32(4)}}, 0, ""},
		{"empty body", nil, "", "nn", nil, 0, ""},
		{"skip_header", map[string]string{"columns": "id,req", "column_separator": ",", "skip_header": "2"}, "id,req\nx,y\n1,2\n", "nn", [][]any{{int64(1), int32(2)}}, 0, ""},
		{"trim_space", map[string]string{"columns": "id,req,st", "column_separator": ",", "trim_space": "true"}, " 1 , 2 ,  a b \n", "nn", [][]any{{int64(1), int32(2), int32(7), nil, "a b"}}, 0, ""},
		{"enclose keeps separators, delimiters and spaces", map[string]string{"columns": "id,st,req", "column_separator": ",", "enclose": `"`, "trim_space": "true"},
			"1,\"a,\nb\",2\n3, \" x \" ,4\n5,\"q\"\"q\",6\n7,\"\\N\",8\n", "nn",
			[][]any{{int64(1), int32(2), int32(7), nil, "a,\nb"}, {int64(3), int32(4), int32(7), nil, " x "}, {int64(5), int32(6), int32(7), nil, `q"q`}, {int64(7), int32(8), int32(7), nil, `\N`}}, 0, ""},
		{"escape", map[string]string{"columns": "id,st,req", "column_separator": ",", "escape": `\`}, "1,a\\,b,2\n", "nn", [][]any{{int64(1), int32(2), int32(7), nil, "a,b"}}, 0, ""},
		{"unclosed enclose", map[string]string{"columns": "id,st,req", "column_separator": ",", "enclose": `"`}, "1,\"abc\n", "nn", nil, 0, "not closed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParseLoadParams(c.headers)
			require.NoError(t, err)
			res, err := s.Parse("db", c.table, []byte(c.body), p)
			if c.errSub != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.errSub)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.filtered, res.Filtered, res.Errors)
			require.Len(t, res.Rows, len(c.rows))
			for i, want := range c.rows {
				assert.Equal(t, want, res.Rows[i].Values[:len(want)])
			}
		})
	}
	res, err := s.Parse("db", "nn", []byte("1\t2\n"), LoadParams{Format: "csv", Columns: []string{"id", "req", "__op"}, ColumnSeparator: "\t", RowDelimiter: "\n"})
	require.NoError(t, err)
	assert.Contains(t, res.Errors[0], "Value count does not match column count. Expect 3, but got 2")
}

// TestCSVStream: the bodies of one load stream form one CSV stream, as the BE's pipe does: a
// body without the final delimiter leaves its record open for the next body, skip_header
// skips the stream's first lines once, an enclosed field and an escape may span bodies, and
// EndStream ends the open record.
func TestCSVStream(t *testing.T) {
	s := convStore(t)
	cases := []struct {
		name    string
		headers map[string]string
		bodies  []string
		rows    [][]any
		errSub  string
	}{
		{"a record continued by the next body", map[string]string{"columns": "id,st,req", "column_separator": ","},
			[]string{"1,al", "ice,2\n3,b", "ob,4"}, [][]any{{int64(1), int32(2), int32(7), nil, "alice"}, {int64(3), int32(4), int32(7), nil, "bob"}}, ""},
		{"bodies without delimiters join into one record", map[string]string{"columns": "id,req", "column_separator": ","},
			[]string{"1,2", "3,4"}, nil, ""},
		{"skip_header once per stream", map[string]string{"columns": "id,req", "column_separator": ",", "skip_header": "1"},
			[]string{"id,req\n1,2\n", "3,4\n"}, [][]any{{int64(1), int32(2)}, {int64(3), int32(4)}}, ""},
		{"enclosed field across bodies", map[string]string{"columns": "id,st,req", "column_separator": ",", "enclose": `"`},
			[]string{"1,\"a,", "\nb\",2\n"}, [][]any{{int64(1), int32(2), int32(7), nil, "a,\nb"}}, ""},
		{"escape at the end of a body", map[string]string{"columns": "id,st,req", "column_separator": ",", "escape": `\`},
			[]string{"1,a\\", ",b,2"}, [][]any{{int64(1), int32(2), int32(7), nil, "a,b"}}, ""},
		{"unclosed at the end of the stream", map[string]string{"columns": "id,st,req", "column_separator": ",", "enclose": `"`},
			[]string{"1,\"abc\n"}, nil, "not closed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParseLoadParams(c.headers)
			require.NoError(t, err)
			var st Stream
			all := &Parsed{}
			for _, b := range c.bodies {
				res, err := s.ParseStream("db", "nn", []byte(b), p, &st)
				require.NoError(t, err)
				all.merge(res)
			}
			end, err := s.EndStream("db", "nn", p, &st)
			if c.errSub != "" {
				require.ErrorContains(t, err, c.errSub)
				return
			}
			require.NoError(t, err)
			all.merge(end)
			assert.False(t, st.Pending())
			require.Len(t, all.Rows, len(c.rows), all.Errors)
			for i, want := range c.rows {
				assert.Equal(t, want, all.Rows[i].Values[:len(want)])
			}
		})
	}
	t.Run("the joined record is filtered like any wrong record", func(t *testing.T) {
		p, err := ParseLoadParams(map[string]string{"columns": "id,req", "column_separator": ","})
		require.NoError(t, err)
		var st Stream
		res, err := s.ParseStream("db", "nn", []byte("1,2"), p, &st)
		require.NoError(t, err)
		assert.Zero(t, res.Loaded+res.Filtered, "the open record waits")
		_, err = s.ParseStream("db", "nn", []byte("3,4"), p, &st)
		require.NoError(t, err)
		end, err := s.EndStream("db", "nn", p, &st)
		require.NoError(t, err)
		assert.Equal(t, int64(1), end.Filtered)
		assert.Contains(t, end.Errors[0], "Row: 1,23,4")
	})
}

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

func TestCompressedCSVFormats(t *testing.T) {
	s := convStore(t)
	plain := []byte("1\t2\n3\t4\n")
	enc := map[string]func([]byte) []byte{
		"gzip": func(b []byte) []byte {
			var buf bytes.Buffer
			w := gzip.NewWriter(&buf)
			_, _ = w.Write(b)
			_ = w.Close()
			return buf.Bytes()
		},
		"deflate": func(b []byte) []byte {
			var buf bytes.Buffer
			w := zlib.NewWriter(&buf)
			_, _ = w.Write(b)
			_ = w.Close()
			return buf.Bytes()
		},
		"lz4": func(b []byte) []byte {
			var buf bytes.Buffer
			w := lz4.NewWriter(&buf)
			_, _ = w.Write(b)
			_ = w.Close()
			return buf.Bytes()
		},
		"zstd": func(b []byte) []byte {
			w, _ := zstd.NewWriter(nil)
			defer w.Close()
			return w.EncodeAll(b, nil)
		},
	}
	for format, f := range enc {
		t.Run(format, func(t *testing.T) {
			p, err := ParseLoadParams(map[string]string{"format": format, "columns": "id,req"})
			require.NoError(t, err)
			res, err := s.Parse("db", "nn", f(plain), p)
			require.NoError(t, err)
			require.Len(t, res.Rows, 2)
			assert.Equal(t, []any{int64(3), int32(4)}, res.Rows[1].Values[:2])
			_, err = s.Parse("db", "nn", plain, p)
			require.ErrorContains(t, err, "decompressing the format="+format)
		})
	}
	// bzip2 has no encoder in the standard library: a fixed stream of "1\t2\n"
	p, err := ParseLoadParams(map[string]string{"format": "bzip2", "columns": "id,req"})
	require.NoError(t, err)
	bz := []byte{0x42, 0x5a, 0x68, 0x39, 0x31, 0x41, 0x59, 0x26, 0x53, 0x59, 0x49, 0xfc, 0xfe, 0x32, 0x00, 0x00, 0x01, 0x48, 0x00, 0x00,
		0x30, 0x30, 0x00, 0x20, 0x00, 0x21, 0x9a, 0x68, 0x33, 0x4d, 0x32, 0xbc, 0x5d, 0xc9, 0x14, 0xe1, 0x42, 0x41, 0x27, 0xf3, 0xf8, 0xc8}
	res, err := s.Parse("db", "nn", bz, p)
	require.NoError(t, err)
	require.Len(t, res.Rows, 1)
	assert.Equal(t, []any{int64(1), int32(2)}, res.Rows[0].Values[:2])
	_, err = s.Parse("db", "nn", bz[:20], p)
	require.ErrorContains(t, err, "decompressing the format=bzip2 body")
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

// TestCSVIntegerRules: a CSV field into an integer column is read as StarRocks's CSV reader
// does (formats/csv/numeric_converter.cpp): a number with a fraction is truncated, an
// integer that overflows, a non-number and an empty field fail (NULL, or filtered in strict
// mode), an invalid date fails.
func TestCSVIntegerRules(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript(`CREATE DATABASE db;
CREATE TABLE db.n (id INT NOT NULL, ti TINYINT, i INT, b BIGINT, l LARGEINT, d DATE) DUPLICATE KEY(id);`))
	cases := []struct {
		col, field string
		want       any // nil: does not convert
	}{
		{"i", "1.5", int32(1)}, {"i", "-2.9", int32(-2)}, {"i", "1e3", int32(1000)}, {"i", " 7 ", int32(7)},
		{"i", "abc", nil}, {"i", "", nil}, {"i", "2147483648", nil}, {"i", "2147483647.5", int32(2147483647)},
		{"ti", "127.9", int8(127)}, {"ti", "128", nil}, {"ti", "-128.9", int8(-128)}, {"ti", "200.1", nil},
		{"b", "12.5", int64(12)}, {"b", "1e3", nil}, {"b", "9223372036854775808", nil}, {"b", "x", nil},
		{"l", "1.5", dec("1")}, {"l", "-170141183460469231731687303715884105728", dec("-170141183460469231731687303715884105728")},
		{"d", "2024-02-29", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)}, {"d", "2023-02-29", nil}, {"d", "2024-13-01", nil}, {"d", "", nil},
	}
	sc, err := s.Table("db", "n")
	require.NoError(t, err)
	for _, c := range cases {
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s=%q strict=%v", c.col, c.field, strict), func(t *testing.T) {
				p, err := ParseLoadParams(map[string]string{"columns": "id," + c.col, "column_separator": "|", "strict_mode": fmt.Sprint(strict)})
				require.NoError(t, err)
				res, err := s.Parse("db", "n", []byte("1|"+c.field+"\n"), p)
				require.NoError(t, err)
				if c.want == nil && strict {
					require.Equal(t, int64(1), res.Filtered, "strict mode filters the row")
					assert.Contains(t, res.Errors[0], "'"+c.col+"'")
					return
				}
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
