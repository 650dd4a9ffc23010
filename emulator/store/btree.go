package store

import (
	"sort"
	"strings"
)

// A copy-on-write B+tree of rows keyed by an order-preserving byte string. A tree value is
// immutable once published: writers clone it (O(1)) and mutate the clone, copying only the
// nodes on the paths they touch; nodes created or copied by the clone's owner token are
// mutated in place, so a batch of inserts into one clone copies each node at most once.
// Readers holding an older root keep seeing exactly that version; unreachable nodes are
// garbage collected, which keeps memory bounded to the versions readers still hold.

// Leaves are small because a commit copies every leaf it touches (the clone's first write to
// it): a commit that updates rows at scattered keys copies about one leaf per row, so the copy
// costs the leaf's size per row (BenchmarkApplyScattered: 64-entry leaves allocated 9.9 MB per
// 6 000-row commit, 16-entry leaves 4.6 MB, at half the CPU). Inner nodes are touched once per
// path and stay wide, which keeps the tree shallow.
const (
	maxLeaf  = 16
	maxInner = 64
)

type cowToken struct{ _ byte }

type bnode struct {
	owner *cowToken
	keys  []string // leaf: item keys; inner: the minimum key of each child (keys[0] unused for routing)
	vals  [][]any  // leaf only
	kids  []*bnode // inner only
}

func (n *bnode) leaf() bool { return n.kids == nil }

type btree struct {
	root  *bnode
	owner *cowToken
	len   int
}

// clone returns a tree sharing every node with t; mutations of either copy nodes lazily.
func (t *btree) clone() *btree {
	return &btree{root: t.root, owner: &cowToken{}, len: t.len}
}

func newBtree() *btree {
	tok := &cowToken{}
	return &btree{root: &bnode{owner: tok}, owner: tok}
}

func (t *btree) mutable(n *bnode) *bnode {
	if n.owner == t.owner {
		return n
	}
	c := &bnode{owner: t.owner}
	c.keys = append(make([]string, 0, len(n.keys)+1), n.keys...)
	if n.leaf() {
		c.vals = append(make([][]any, 0, len(n.vals)+1), n.vals...)
	} else {
		c.kids = append(make([]*bnode, 0, len(n.kids)+1), n.kids...)
	}
	return c
}

// childIndex returns the child of inner node n whose range holds key.
func childIndex(n *bnode, key string) int {
	// largest i >= 1 with keys[i] <= key, else 0
	i := sort.Search(len(n.keys)-1, func(i int) bool { return n.keys[i+1] > key })
	return i
}

func leafIndex(n *bnode, key string) (int, bool) {
	i := sort.Search(len(n.keys), func(i int) bool { return n.keys[i] >= key })
	return i, i < len(n.keys) && n.keys[i] == key
}

// get returns the value stored under key.
func (t *btree) get(key string) ([]any, bool) {
	n := t.root
	for !n.leaf() {
		n = n.kids[childIndex(n, key)]
	}
	if i, ok := leafIndex(n, key); ok {
		return n.vals[i], true
	}
	return nil, false
}

// set stores val under key, reporting whether it replaced an existing value. The tree keeps
// key: its bytes must never change.
func (t *btree) set(key string, val []any) bool { return t.put(key, val, false) }

// setTransient is set for a key that is a view of a buffer the caller reuses: the tree stores
// a copy of it when it adds the key, and copies nothing when it replaces the value of a key it
// holds (most rows of an update-heavy commit).
func (t *btree) setTransient(key string, val []any) bool { return t.put(key, val, true) }

func (t *btree) put(key string, val []any, transient bool) bool {
	t.root = t.mutable(t.root)
	replaced, atEnd := t.insert(t.root, &key, val, transient)
	if !replaced {
		t.len++
	}
	if t.overfull(t.root) {
		left := t.root
		right := t.split(left, atEnd)
		t.root = &bnode{owner: t.owner, keys: []string{left.keys[0], right.keys[0]}, kids: []*bnode{left, right}}
	}
	return replaced
}

func (t *btree) overfull(n *bnode) bool {
	if n.leaf() {
		return len(n.keys) > maxLeaf
	}
	return len(n.kids) > maxInner
}

// split moves the upper half of owned node n into a new node and returns it. A node that
// overflowed by an append at its right end (ascending keys, DUPLICATE KEY tables) keeps all
// but one entry, so append-only tables fill their nodes instead of leaving them half empty.
func (t *btree) split(n *bnode, atEnd bool) *bnode {
	at := len(n.keys) / 2
	if atEnd {
		at = len(n.keys) - 1
	}
	r := &bnode{owner: t.owner}
	r.keys = append(make([]string, 0, maxLeaf+1), n.keys[at:]...)
	clear(n.keys[at:])
	n.keys = n.keys[:at]
	if n.leaf() {
		r.vals = append(make([][]any, 0, maxLeaf+1), n.vals[at:]...)
		clear(n.vals[at:])
		n.vals = n.vals[:at]
	} else {
		r.kids = append(make([]*bnode, 0, maxInner+1), n.kids[at:]...)
		clear(n.kids[at:])
		n.kids = n.kids[:at]
	}
	return r
}

// insert puts *key into the subtree of owned node n; atEnd reports that it went to the
// subtree's right end. On return *key is the string the tree holds for the key (a copy of a
// transient key), which is what the inner nodes on the way up may store.
func (t *btree) insert(n *bnode, key *string, val []any, transient bool) (replaced, atEnd bool) {
	if n.leaf() {
		i, found := leafIndex(n, *key)
		if found {
			n.vals[i] = val
			*key = n.keys[i]
			return true, false
		}
		if transient {
			*key = strings.Clone(*key)
		}
		n.keys = append(n.keys, "")
		copy(n.keys[i+1:], n.keys[i:])
		n.keys[i] = *key
		n.vals = append(n.vals, nil)
		copy(n.vals[i+1:], n.vals[i:])
		n.vals[i] = val
		return false, i == len(n.keys)-1
	}
	i := childIndex(n, *key)
	c := t.mutable(n.kids[i])
	n.kids[i] = c
	replaced, atEnd = t.insert(c, key, val, transient)
	atEnd = atEnd && i == len(n.kids)-1
	if i == 0 && *key < n.keys[0] {
		n.keys[0] = *key
	}
	if t.overfull(c) {
		r := t.split(c, atEnd)
		n.keys = append(n.keys, "")
		copy(n.keys[i+2:], n.keys[i+1:])
		n.keys[i+1] = r.keys[0]
		n.kids = append(n.kids, nil)
		copy(n.kids[i+2:], n.kids[i+1:])
		n.kids[i+1] = r
	}
	return replaced, atEnd
}

// delete removes key, reporting whether it was present. Empty nodes are unlinked; nodes are
// otherwise not rebalanced (an under-full node costs space, never correctness).
func (t *btree) delete(key string) bool {
	if _, ok := t.get(key); !ok {
		return false
	}
	t.root = t.mutable(t.root)
	t.remove(t.root, key)
	t.len--
	for !t.root.leaf() && len(t.root.kids) == 1 {
		t.root = t.root.kids[0]
	}
	if !t.root.leaf() && len(t.root.kids) == 0 {
		t.root = &bnode{owner: t.owner}
	}
	return true
}

func (t *btree) remove(n *bnode, key string) {
	if n.leaf() {
		i, _ := leafIndex(n, key)
		copy(n.keys[i:], n.keys[i+1:])
		n.keys[len(n.keys)-1] = ""
		n.keys = n.keys[:len(n.keys)-1]
		copy(n.vals[i:], n.vals[i+1:])
		n.vals[len(n.vals)-1] = nil
		n.vals = n.vals[:len(n.vals)-1]
		return
	}
	i := childIndex(n, key)
	c := t.mutable(n.kids[i])
	n.kids[i] = c
	t.remove(c, key)
	if len(c.keys) == 0 {
		copy(n.keys[i:], n.keys[i+1:])
		n.keys = n.keys[:len(n.keys)-1]
		copy(n.kids[i:], n.kids[i+1:])
		n.kids[len(n.kids)-1] = nil
		n.kids = n.kids[:len(n.kids)-1]
	}
}

// ascend calls fn for every item in key order until fn returns false.
func (t *btree) ascend(fn func(key string, val []any) bool) {
	ascendNode(t.root, fn)
}

func ascendNode(n *bnode, fn func(string, []any) bool) bool {
	if n.leaf() {
		for i, k := range n.keys {
			if !fn(k, n.vals[i]) {
				return false
			}
		}
		return true
	}
	for _, c := range n.kids {
		if !ascendNode(c, fn) {
			return false
		}
	}
	return true
}
