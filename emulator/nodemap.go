package emulator

import "container/list"

// txnNodeMap is the 3.x FE's label → BE map (TransactionLoadAction.txnNodeMap,
// docs/notes/starrocks-protocol.md §12.1): a begin puts its label there before the 307,
// and a load, a prepare, and a commit or rollback of a transaction that is not yet
// PREPARED are sent to the BE the map names, or fail "Transaction with op[…] and label[…]
// has no node." It lives in the FE's memory only, so an FE restart empties it. It is an
// LRU (a LinkedHashMap in access order) bounded at 512 entries per backend and compute
// node: with the emulator's one BE, the 513th label begun evicts the one least recently
// used. Entries are never removed when a transaction ends. Guarded by Emulator.mu.
type txnNodeMap struct {
	max   int
	order *list.List // front: most recently used
	at    map[string]*list.Element
}

// txnNodeMapPerNode is the map's bound per backend (removeEldestEntry).
const txnNodeMapPerNode = 512

func newTxnNodeMap(nodes int) *txnNodeMap {
	return &txnNodeMap{max: nodes * txnNodeMapPerNode, order: list.New(), at: map[string]*list.Element{}}
}

// put records label (a begin), evicting the least recently used beyond the bound.
func (m *txnNodeMap) put(label string) {
	if el, ok := m.at[label]; ok {
		m.order.MoveToFront(el)
		return
	}
	m.at[label] = m.order.PushFront(label)
	for m.order.Len() > m.max {
		old := m.order.Back()
		m.order.Remove(old)
		delete(m.at, old.Value.(string))
	}
}

// get reports whether label has a node; a hit makes it the most recently used, as a
// LinkedHashMap in access order does on get.
func (m *txnNodeMap) get(label string) bool {
	el, ok := m.at[label]
	if ok {
		m.order.MoveToFront(el)
	}
	return ok
}

// has is containsKey: no change of order.
func (m *txnNodeMap) has(label string) bool {
	_, ok := m.at[label]
	return ok
}

// clear is an FE restart.
func (m *txnNodeMap) clear() {
	m.order.Init()
	m.at = map[string]*list.Element{}
}
