package store

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

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
		{"keys match by exact name", `{"ID":5,"id":7,"Req":6,"req":8}`, true, func(t *testing.T, v []any) { assert.Equal(t, []any{int64(7), int32(8)}, v[:2]) }, ""},
		{"a key whose case differs is no column's", `{"ID":5,"req":6}`, false, nil, "NULL value in non-nullable column 'id'"},
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
		{"nn", `{"id":1,"req":1,"__OP":1}`, OpUpsert, false}, // the source field is "__op", spelled so
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

// TestParseSharesRepeatedTexts: a text value repeated within a load is one stored value
// (texts.go), and sharing changes nothing the rows hold: each column still checks its own
// length (the same text fits v VARCHAR(10) of db.uniq and not v VARCHAR(4) of db.conv), an
// escaped text is unescaped, and values past the per-load bound are stored as they come.
func TestParseSharesRepeatedTexts(t *testing.T) {
	s := convStore(t)
	var body []byte
	body = append(body, '[')
	n := maxTextsPerLoad + 50
	for i := 0; i < n; i++ {
		if i > 0 {
			body = append(body, ',')
		}
		// v repeats one of three values; every row past the first three adds a distinct
		// value, so the bound is crossed within the load.
		body = fmt.Appendf(body, `{"id":%d,"v":"%s"}`, i, []string{"abcdefgh", "x\\ty", "k"}[i%3])
	}
	body = append(body, ']')
	res, err := s.Parse("db", "uniq", body, jsonParams(nil))
	require.NoError(t, err)
	require.Len(t, res.Rows, n)
	want := []string{"abcdefgh", "x\ty", "k"}
	for i, r := range res.Rows {
		assert.Equal(t, want[i%3], r.Values[1], "row %d", i)
	}
	a, b := res.Rows[0].Values[1].(string), res.Rows[3].Values[1].(string)
	assert.Same(t, unsafe.StringData(a), unsafe.StringData(b), "a repeated text is one stored string")

	// The same text in a column too narrow for it: NULL there (not strict, nullable), after
	// a text that fitted and was shared, and after the same text stored in a wider column
	// of the same row (s STRING).
	res, err = s.Parse("db", "conv", []byte(`[{"id":1,"v":"abcd"},{"id":2,"v":"abcdefgh"},{"id":3,"v":"abcd"},{"id":4,"v":"abcdefgh"},{"id":5,"s":"abcdefgh","v":"abcdefgh"}]`),
		jsonParams(map[string]string{"max_filter_ratio": "1"}))
	require.NoError(t, err)
	require.Len(t, res.Rows, 5)
	assert.Equal(t, "abcdefgh", res.Rows[4].Values[12])
	for i, r := range res.Rows {
		if i == 0 || i == 2 {
			assert.Equal(t, "abcd", r.Values[11], "row %d", i)
		} else {
			assert.Nil(t, r.Values[11], "row %d", i)
		}
	}

	// Many distinct values: past the bound every value is still its own.
	body = body[:0]
	body = append(body, '[')
	for i := 0; i < 2*maxTextsPerLoad; i++ {
		if i > 0 {
			body = append(body, ',')
		}
		body = fmt.Appendf(body, `{"id":%d,"v":"v%d"}`, i, i%(maxTextsPerLoad+100))
	}
	body = append(body, ']')
	res, err = s.Parse("db", "uniq", body, jsonParams(nil))
	require.NoError(t, err)
	for i, r := range res.Rows {
		assert.Equal(t, fmt.Sprintf("v%d", i%(maxTextsPerLoad+100)), r.Values[1], "row %d", i)
	}
}
