// This file holds smallMap, the map of a transaction's few keys (its
// topics, its partitions, its events' data_collection_orders).

package debezium_txn

// smallMapLinear is how many entries a smallMap searches linearly before
// it indexes them in a Go map.
const smallMapLinear = 16

// smallMap maps the keys of one transaction: a transaction usually touches
// a few topics and partitions and has a few events, for which a slice
// searched linearly costs an allocation or two where Go maps (one per
// transaction and key kind) cost several; past smallMapLinear entries a
// Go map indexes the slice. Entries keep their insertion order. The zero
// value is empty.
type smallMap[K comparable, V any] struct {
	entries []smallEntry[K, V]
	index   map[K]int
}

type smallEntry[K comparable, V any] struct {
	key K
	val V
}

// get returns the value of k, nil when there is none. The pointer is good
// until the next put.
func (m *smallMap[K, V]) get(k K) *V {
	if m.index != nil {
		if i, ok := m.index[k]; ok {
			return &m.entries[i].val
		}
		return nil
	}
	for i := range m.entries {
		if m.entries[i].key == k {
			return &m.entries[i].val
		}
	}
	return nil
}

// put returns the value of k, added as the zero V when there was none
// (added reports that). The pointer is good until the next put.
func (m *smallMap[K, V]) put(k K) (v *V, added bool) {
	if v := m.get(k); v != nil {
		return v, false
	}
	m.entries = append(m.entries, smallEntry[K, V]{key: k})
	n := len(m.entries)
	switch {
	case m.index != nil:
		m.index[k] = n - 1
	case n > smallMapLinear:
		m.index = make(map[K]int, 2*n)
		for i := range m.entries {
			m.index[m.entries[i].key] = i
		}
	}
	return &m.entries[n-1].val, true
}

// reserve makes room for n entries in an empty map: one allocation where
// appending one by one makes several.
func (m *smallMap[K, V]) reserve(n int) {
	if cap(m.entries) == 0 {
		m.entries = make([]smallEntry[K, V], 0, n)
	}
}

// len is the number of entries.
func (m *smallMap[K, V]) len() int { return len(m.entries) }
