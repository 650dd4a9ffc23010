package store

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ownedDDL adds a table of complex types to convDDL's.
const ownedDDL = convDDL + `
CREATE TABLE db.cx (id BIGINT NOT NULL, a ARRAY<VARCHAR(8)>, m MAP<VARCHAR(8),INT>) PRIMARY KEY(id);`

// FuzzParseKeepsNothingOfTheBody: what Parse returns owns its memory — no
// value aliases the body — so the emulator may reuse a load body's buffer
// once the body is parsed (emulator/bodypool.go): writing over the body after
// the parse changes nothing of the result.
func FuzzParseKeepsNothingOfTheBody(f *testing.F) {
	for _, seed := range []string{
		`[{"id":1,"ti":"1","si":"2","i":"3","b":"4","l":"123456789012345678901234","d":"1.25","f":"1.5","g":"2.5","bo":"true","c":"abc","v":"abcd","s":"text","dt":"2026-11-29","ts":"2026-11-29 12:00:00","j":"{\"k\": [1, 2]}"}]`,
		`[{"id":2,"ti":1,"d":12.5,"j":{"k": "v"},"s":"a\"b","v":"x\\y"}]`,
		`[{"id":3,"a":["x","y"],"m":{"k":1}},{"id":4,"a":"[\"p\",\"q\"]","m":"{\"k\":2}"}]`,
		`[{"id":5,"req":1,"st":"short"},{"id":"bad","req":"nope"}]`,
		`{"id":6,"s":"not an array"}`,
	} {
		f.Add([]byte(seed), true)
	}
	f.Add([]byte(`{"id":7,"s":"x"} {"id":8,"s":"y"}`), false)
	f.Fuzz(func(t *testing.T, body []byte, strip bool) {
		s := New()
		require.NoError(t, s.ExecScript(ownedDDL))
		for _, table := range []string{"conv", "nn", "cx"} {
			p := jsonParams(map[string]string{"strip_outer_array": fmt.Sprint(strip), "max_filter_ratio": "1"})
			want, wantErr := s.Parse("db", table, bytes.Clone(body), p)
			buf := bytes.Clone(body)
			got, err := s.Parse("db", table, buf, p)
			for i := range buf {
				buf[i] = 'x'
			}
			if wantErr != nil {
				require.EqualError(t, err, wantErr.Error())
				continue
			}
			require.NoError(t, err)
			require.Equal(t, renderParsed(want), renderParsed(got), "%s: %q", table, body)
		}
	})
}

// renderParsed is res as text, each value with its type (decimals by value,
// not by pointer).
func renderParsed(res *Parsed) string {
	var b bytes.Buffer
	for _, r := range res.Rows {
		fmt.Fprintf(&b, "op %v set %v merge %v:", r.Op, r.Set, r.MergeCol)
		for _, v := range r.Values {
			fmt.Fprintf(&b, " %T(%v)", v, v)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "loaded %d filtered %d unselected %d errors %q", res.Loaded, res.Filtered, res.Unselected, res.Errors)
	return b.String()
}

// A big array whose first element is tiny reserves a bounded result, and
// the rows are the same as without the reservation.
func TestReserveRowsBounded(t *testing.T) {
	b := &rowBuilder{res: &Parsed{}}
	b.reserveRows(1<<30, 2)
	assert.LessOrEqual(t, cap(b.res.Rows), maxReservedRows)
	b = &rowBuilder{res: &Parsed{Rows: make([]Row, 1, 1)}}
	b.res.Rows[0].Op = OpDelete
	b.reserveRows(1000, 100)
	assert.GreaterOrEqual(t, cap(b.res.Rows), 10)
	assert.Equal(t, []Row{{Op: OpDelete}}, b.res.Rows, "what was parsed is kept")
}
