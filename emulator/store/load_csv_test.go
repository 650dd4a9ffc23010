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
