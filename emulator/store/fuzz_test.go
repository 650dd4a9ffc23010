package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// validStream reports whether b is a sequence of valid JSON documents (encoding/json as the
// oracle).
func validStream(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// TestParseJSONAgainstEncodingJSON mutates valid bodies and checks that Parse rejects exactly
// the bodies encoding/json rejects, never panics, and keeps its counters consistent.
func TestParseJSONAgainstEncodingJSON(t *testing.T) {
	s := convStore(t)
	seeds := []string{
		`[{"id":1,"req":2,"opt":null,"st":"a\"b\\u00e9","zz":[1,2,{"x":true}]},{"id":2,"req":3}]`,
		`{"id":1,"req":-2.5e3,"st":"x","made":"2024-01-02 03:04:05"}`,
		`[{"id":1,"req":1,"__op":"1"}, 5, "s", [], {}]`,
	}
	alphabet := []byte(`{}[]:,"\ -.0123456789eEtrufalsn` + "\x01\n")
	rapid.Check(t, func(rt *rapid.T) {
		body := []byte(rapid.SampledFrom(seeds).Draw(rt, "seed"))
		for n := rapid.IntRange(0, 4).Draw(rt, "mutations"); n > 0; n-- {
			pos := rapid.IntRange(0, len(body)).Draw(rt, "pos")
			switch rapid.IntRange(0, 2).Draw(rt, "kind") {
			case 0:
				if pos < len(body) {
					body = append(body[:pos:pos], body[pos+1:]...)
				}
			case 1:
				c := rapid.SampledFrom(alphabet).Draw(rt, "char")
				body = append(body[:pos:pos], append([]byte{c}, body[pos:]...)...)
			default:
				body = body[:pos]
			}
		}
		for _, strip := range []bool{true, false} {
			p := jsonParams(map[string]string{"strip_outer_array": map[bool]string{true: "true", false: "false"}[strip]})
			res, err := s.Parse("db", "nn", body, p)
			if validStream(body) {
				require.NoError(rt, err, "%q", body)
				require.Equal(rt, int64(len(res.Rows)), res.Loaded)
				require.LessOrEqual(rt, len(res.Errors), int(res.Filtered))
			} else {
				require.Error(rt, err, "%q should be rejected", body)
			}
		}
	})
}

// TestParseCSVNeverPanics feeds arbitrary bytes to the CSV paths.
func TestParseCSVNeverPanics(t *testing.T) {
	s := convStore(t)
	rapid.Check(t, func(rt *rapid.T) {
		body := rapid.SliceOfN(rapid.SampledFrom([]byte("1,2\"\\\n\tNx ")), 0, 40).Draw(rt, "body")
		h := map[string]string{"column_separator": ",", "columns": "id,req,st"}
		if rapid.Bool().Draw(rt, "enclose") {
			h["enclose"] = `"`
			h["escape"] = `\`
		}
		p, err := ParseLoadParams(h)
		require.NoError(rt, err)
		res, err := s.Parse("db", "nn", body, p)
		if err == nil {
			require.Equal(rt, int64(len(res.Rows)), res.Loaded)
		}
	})
}

// Native fuzz targets. Their seed corpora live in testdata/fuzz/<target>/ and run as
// ordinary tests; `go test -fuzz=FuzzX -run=^$ ./emulator/store/` explores further (see
// emulator/README.md). Each checks the invariants the HTTP layer relies on, so a finding is
// a real defect: no panic, counters that add up, and rows that Parse accepted always apply.

// FuzzDDLScript runs arbitrary DDL scripts on a fresh store.
func FuzzDDLScript(f *testing.F) {
	f.Fuzz(func(t *testing.T, script string) {
		s := New()
		if err := s.ExecScript(script); err != nil {
			require.NotEmpty(t, err.Error())
			return
		}
		sn := s.snap()
		for _, d := range sn.dbs {
			for _, tb := range d.tables {
				checkSchema(t, tb.schema)
			}
		}
	})
}

// checkSchema holds a created table to the rules finishSchema promises.
func checkSchema(t *testing.T, sc *TableSchema) {
	t.Helper()
	require.NotEmpty(t, sc.Columns, "table %s has columns", sc.Name)
	require.LessOrEqual(t, len(sc.Key), len(sc.Columns))
	require.Len(t, sc.keyIdx, len(sc.Key))
	for i, k := range sc.Key {
		require.Equal(t, sc.Columns[i].Name, k, "key columns lead in key order")
		require.Equal(t, i, sc.keyIdx[i])
	}
	for i, c := range sc.Columns {
		require.Equal(t, i, sc.ColumnIndex(c.Name))
		if c.Default != nil && !c.DefaultCurrentTimestamp {
			_, err := normalizeValue(&sc.Columns[i], c.defaultValue)
			require.NoError(t, err, "the default of %s fits its type", c.Name)
		}
	}
	require.NotPanics(t, func() { tablesConfigRow(sc) })
	// SHOW CREATE TABLE's text creates the same table again.
	again := New()
	script := "CREATE DATABASE " + quoteIdent(sc.DB) + "; USE " + quoteIdent(sc.DB) + "; " + sc.DDL()
	require.NoError(t, again.ExecScript(script), script)
	sc2, err := again.Table(sc.DB, sc.Name)
	require.NoError(t, err)
	require.Equal(t, sc.DDL(), sc2.DDL())
}

// checkParsed holds a Parse result to its counters and applies its rows, which must fit.
func checkParsed(t *testing.T, s *Store, table string, res *Parsed) {
	t.Helper()
	require.Equal(t, int64(len(res.Rows)), res.Loaded)
	require.LessOrEqual(t, len(res.Errors), int(res.Filtered))
	require.GreaterOrEqual(t, res.Filtered, int64(0))
	require.NoError(t, s.Apply([]TableChange{{DB: "db", Table: table, Rows: res.Rows}}), "rows Parse accepted apply")
}

// FuzzParseJSON: Parse rejects exactly the bodies encoding/json rejects (as a document
// stream), and what it accepts applies.
func FuzzParseJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, strip bool, strict bool) {
		s := convStore(t)
		for _, table := range []string{"nn", "conv"} {
			p := jsonParams(map[string]string{
				"strip_outer_array": fmt.Sprint(strip), "strict_mode": fmt.Sprint(strict), "max_filter_ratio": "1",
			})
			res, err := s.Parse("db", table, body, p)
			if !validStream(body) {
				require.Error(t, err, "%q should be rejected", body)
				continue
			}
			require.NoError(t, err, "%q", body)
			checkParsed(t, s, table, res)
		}
	})
}

// FuzzParseCSV: any body with any separators, enclose and escape parses without panicking,
// and what it accepts applies.
func FuzzParseCSV(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, sep, delim string, enclose, trim bool, columns string) {
		s := convStore(t)
		h := map[string]string{"column_separator": sep, "row_delimiter": delim, "columns": columns, "max_filter_ratio": "1"}
		if enclose {
			h["enclose"], h["escape"] = `"`, `\`
		}
		if trim {
			h["trim_space"] = "true"
		}
		p, err := ParseLoadParams(h)
		if err != nil {
			return
		}
		for _, table := range []string{"nn", "conv", "dup"} {
			res, err := s.Parse("db", table, body, p)
			if err != nil {
				continue
			}
			checkParsed(t, s, table, res)
		}
	})
}
