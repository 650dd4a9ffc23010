package debezium_txn

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzSmallMapEqualsMap: a smallMap holds what a Go map holds after the
// same puts and increments — below and past smallMapLinear entries — and
// keeps its entries in insertion order.
func FuzzSmallMapEqualsMap(f *testing.F) {
	f.Add([]byte{1, 2, 3, 1, 2, 3})
	f.Add([]byte{0, 0, 0})
	seq := make([]byte, 0, 200)
	for i := 0; i < 200; i++ {
		seq = append(seq, byte(i*7%40))
	}
	f.Add(seq)
	// Lookups (an op of 128 or more) of present and absent keys, while
	// the entries are searched linearly and once they are indexed.
	look := make([]byte, 0, 120)
	for i := 0; i < 120; i++ {
		look = append(look, byte(i*5%50)|byte(i%2)<<7)
	}
	f.Add(look)
	f.Fuzz(func(t *testing.T, ops []byte) {
		var m smallMap[int, int]
		want := map[int]int{}
		var order []int
		for _, op := range ops {
			k := int(op % 64)
			v, added := m.put(k)
			_, had := want[k]
			require.Equal(t, !had, added, "key %d", k)
			if !had {
				order = append(order, k)
			}
			*v++
			want[k]++
			if op >= 128 {
				// A lookup of a key that may be absent.
				g := m.get(k ^ 1)
				w, ok := want[k^1]
				require.Equal(t, ok, g != nil, "key %d", k^1)
				if ok {
					require.Equal(t, w, *g)
				}
			}
		}
		require.Equal(t, len(want), m.len())
		for i, e := range m.entries {
			require.Equal(t, order[i], e.key, "insertion order")
			require.Equal(t, want[e.key], e.val)
			require.Equal(t, want[e.key], *m.get(e.key))
		}
		require.Equal(t, m.len() > smallMapLinear, m.index != nil, "indexed past the linear entries")
	})
}
