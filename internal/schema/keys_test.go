package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func keysOf(names ...string) uint64 {
	var h KeysHash
	for _, n := range names {
		h.AddString(n)
	}
	return h.Sum()
}

func TestKeysHashIsASetHash(t *testing.T) {
	assert.Equal(t, keysOf("a", "b", "c"), keysOf("c", "a", "b"), "order does not matter")
	assert.Equal(t, keysOf("a", "b"), keysOf("a", "__op", "b"), "__op is not a column")
	assert.NotEqual(t, keysOf("a", "b"), keysOf("a", "b", "coupon"), "a new key changes it")
	assert.NotEqual(t, keysOf("ab"), keysOf("a", "b"))
	assert.NotZero(t, keysOf())
	var h KeysHash
	h.Add([]byte("x"))
	h.Add([]byte("y"))
	assert.Equal(t, keysOf("y", "x"), h.Sum(), "bytes and strings agree")
}
