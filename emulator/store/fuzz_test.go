package store

import (
	"bytes"
	"encoding/json"
	"errors"
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
