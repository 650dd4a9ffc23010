package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestReviewSharedTextsChangeNothing: a load shares the value of a short text it repeats
// (texts.go). Whatever the texts — empty, multi-byte, escaped, too long for one column and
// not for another, past the sharing bound — a load parsed whole (sharing across its rows)
// gives exactly the rows, counts and errors of its rows parsed one load each (nothing to
// share), in strict mode and not.
func TestReviewSharedTextsChangeNothing(t *testing.T) {
	pool := []string{``, `a`, `abc`, `abcd`, `abcde`, `é`, `éé`, `日本`, `x\ty`, `a\"b`, `\u00e9`,
		strings.Repeat("L", maxTextShared), strings.Repeat("L", maxTextShared+1)}
	cols := []string{"c", "v", "s"}
	rapid.Check(t, func(rt *rapid.T) {
		s := New()
		require.NoError(rt, s.ExecScript(convDDL))
		strict := rapid.Bool().Draw(rt, "strict")
		p := jsonParams(map[string]string{"max_filter_ratio": "1", "strict_mode": fmt.Sprint(strict)})
		n := rapid.IntRange(1, 60).Draw(rt, "rows")
		objs := make([]string, n)
		for i := range objs {
			var b strings.Builder
			fmt.Fprintf(&b, `{"id":%d`, i)
			for _, c := range cols {
				switch k := rapid.IntRange(0, len(pool)+1).Draw(rt, c); {
				case k == len(pool): // absent
				case k == len(pool)+1:
					fmt.Fprintf(&b, `,"%s":"u%d"`, c, rapid.IntRange(0, 2*maxTextsPerLoad).Draw(rt, c+"u"))
				default:
					fmt.Fprintf(&b, `,"%s":"%s"`, c, pool[k])
				}
			}
			b.WriteByte('}')
			objs[i] = b.String()
		}
		whole, err := s.Parse("db", "conv", []byte("["+strings.Join(objs, ",")+"]"), p)
		require.NoError(rt, err)
		var rows strings.Builder
		var loaded, filtered int64
		var errs []string
		for _, o := range objs {
			one, err := s.Parse("db", "conv", []byte("["+o+"]"), p)
			require.NoError(rt, err)
			for _, r := range one.Rows {
				fmt.Fprintf(&rows, "%v|", r.Values)
			}
			loaded, filtered = loaded+one.Loaded, filtered+one.Filtered
			errs = append(errs, one.Errors...)
		}
		var got strings.Builder
		for _, r := range whole.Rows {
			fmt.Fprintf(&got, "%v|", r.Values)
		}
		require.Equal(rt, rows.String(), got.String())
		require.Equal(rt, loaded, whole.Loaded)
		require.Equal(rt, filtered, whole.Filtered)
		require.Equal(rt, errs, whole.Errors)
	})
}
