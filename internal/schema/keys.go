package schema

import "hash/maphash"

// KeysHash identifies the set of top-level keys of a row that carries no
// schema (ARCHITECTURE.md §14.1): the output checks each new set against the
// table's columns once, and a row whose set it has checked costs one
// compare. The hash does not depend on the keys' order, ignores the row's
// "__op", and is never 0 (0 means "not computed"). Add each key's unquoted
// name as a writer scans the row.
type KeysHash uint64

// opKey is the operation field, which is not a column.
const opKey = "__op"

// Add adds one key to the set.
func (h *KeysHash) Add(name []byte) {
	if string(name) == opKey {
		return
	}
	*h += KeysHash(mix(keyHashBytes(name)))
}

// AddString is Add for a string.
func (h *KeysHash) AddString(name string) {
	if name == opKey {
		return
	}
	*h += KeysHash(mix(keyHashString(name)))
}

// Sum returns the hash of the keys added, never 0.
func (h KeysHash) Sum() uint64 {
	if h == 0 {
		return 1
	}
	return uint64(h)
}

// seed is the process's seed of the key hashes: a hash never leaves the
// process that made it (the writers and the output share it).
var seed = maphash.MakeSeed()

func keyHashBytes(b []byte) uint64 { return maphash.Bytes(seed, b) }

func keyHashString(s string) uint64 { return maphash.String(seed, s) }

// mix is the splitmix64 finaliser: summed, mixed per-key hashes make an
// order-independent set hash in which two keys rarely cancel.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
