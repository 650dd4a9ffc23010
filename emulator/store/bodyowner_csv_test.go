package store

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzStreamKeepsNothingOfTheBody is FuzzParseKeepsNothingOfTheBody for the
// CSV load stream the emulator's transaction loads go through (ParseStream
// with the table's Stream): the body is cut in two loads, each written over
// once parsed, as the emulator reuses a load's buffer for the next one; the
// rows, errors and the record left open across the cut stay the same.
func FuzzStreamKeepsNothingOfTheBody(f *testing.F) {
	for _, seed := range []string{
		"1\t1\t2\t3\t4\t5\t1.25\t1.5\t2.5\ttrue\tabc\tabcd\ttext\t2026-11-29\t2026-11-29 12:00:00\t{\"k\":1}\n2\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\tsplit across\t\\N\t\\N\t\\N\n",
		"3,\"a,b\",x\n4,\"q\"\"r\",y\n",
		"5\t1\n6\tbad\n",
	} {
		f.Add([]byte(seed), uint8(len(seed)/2), false)
		f.Add([]byte(seed), uint8(len(seed)/3), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, cut uint8, quoted bool) {
		s := New()
		require.NoError(t, s.ExecScript(ownedDDL))
		h := map[string]string{"format": "csv", "max_filter_ratio": "1"}
		if quoted {
			h["column_separator"], h["enclose"] = ",", `"`
		}
		p, err := ParseLoadParams(h)
		require.NoError(t, err)
		at := min(int(cut), len(body))
		for _, table := range []string{"conv", "nn", "cx"} {
			run := func(overwrite bool) string {
				var st Stream
				var out bytes.Buffer
				for _, part := range [][]byte{body[:at], body[at:]} {
					buf := bytes.Clone(part)
					res, err := s.ParseStream("db", table, buf, p, &st)
					if overwrite {
						for i := range buf {
							buf[i] = 'x'
						}
					}
					if err != nil {
						out.WriteString("error: " + err.Error() + "\n")
						continue
					}
					out.WriteString(renderParsed(res) + "\n")
				}
				res, err := s.EndStream("db", table, p, &st)
				if err != nil {
					out.WriteString("error: " + err.Error())
				} else {
					out.WriteString(renderParsed(res))
				}
				return out.String()
			}
			want := run(false)
			require.Equal(t, want, run(true), "%s: %q cut at %d", table, body, at)
		}
	})
}
