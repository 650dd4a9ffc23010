package debezium_txn

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The pools hand out slices that hold what was asked for, empty, and take
// back only the sizes they pool.
func TestFetchPoolsClasses(t *testing.T) {
	p := &fetchPools{}
	for _, n := range []int{0, 1, 255, 256, 257, 4000, 1 << 20, 1 << 24} {
		b := p.GetDecompressBytes(make([]byte, n), kgo.CodecLz4)
		assert.Empty(t, b, "%d", n)
		assert.GreaterOrEqual(t, cap(b), n*decompressGuess, "%d compressed bytes", n)
		assert.GreaterOrEqual(t, cap(b), 1<<minBytesClass)
		p.PutDecompressBytes(b[:cap(b)])
	}
	// Beyond the largest class: nothing pooled, the client allocates.
	assert.Nil(t, p.GetDecompressBytes(make([]byte, (1<<maxBytesClass)/decompressGuess+1), kgo.CodecLz4))
	for _, n := range []int{0, 1, 8, 9, 35, 1000, 1 << 16} {
		r := p.GetRecords(n)
		assert.Empty(t, r, "%d", n)
		assert.GreaterOrEqual(t, cap(r), n, "%d records", n)
		assert.Less(t, cap(r), max(2*n, 1<<minRecsClass+1), "%d records: no more than twice", n)
		p.PutRecords(r)
	}
	assert.Nil(t, p.GetRecords(1<<maxRecsClass+1))

	// A snappy block says its size: the buffer holds it however well it
	// compressed (a guess from the compressed size falls short); a
	// xerial-framed batch is guessed.
	plain := bytes.Repeat([]byte(`{"schema":{"type":"struct"},"payload":{"id":1}}`), 4000)
	block := s2.EncodeSnappy(nil, plain)
	require.Less(t, len(block)*decompressGuess, len(plain))
	assert.GreaterOrEqual(t, cap(p.GetDecompressBytes(block, kgo.CodecSnappy)), len(plain))
	assert.Equal(t, len(plain), decompressedSize(block, kgo.CodecSnappy))
	framed := append(append([]byte{}, xerialPrefix...), block...)
	assert.Equal(t, len(framed)*decompressGuess, decompressedSize(framed, kgo.CodecSnappy))
	assert.Equal(t, len(block)*decompressGuess, decompressedSize(block, kgo.CodecLz4))

	// A buffer holds what was asked for and wastes at most a quarter of
	// it (past the smallest class); one goes back to the largest class it
	// holds, so whatever that class hands out is big enough.
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 1023, 1024, 1025, 1279, 1280, 1281, 2047, 2048, 2049, 3 << 20, 1<<26 - 1, 1 << 26}
	for range 20000 {
		sizes = append(sizes, 1+rng.IntN(1<<(1+rng.IntN(26))))
	}
	for _, n := range sizes {
		c := byteClassAtLeast(n)
		require.GreaterOrEqual(t, c, 0, "%d", n)
		b := byteClassBound(c)
		require.GreaterOrEqual(t, b, n, "class %d of %d", c, n)
		require.LessOrEqual(t, b, max(n+n/4, 1<<minBytesClass), "class %d of %d", c, n)
		if c > 0 {
			require.Less(t, byteClassBound(c-1), n, "class %d of %d is not the smallest", c, n)
		}
		if n < 1<<minBytesClass {
			require.Equal(t, -1, byteClassOf(n), "%d", n)
			continue
		}
		of := byteClassOf(n)
		require.GreaterOrEqual(t, of, 0, "%d", n)
		require.LessOrEqual(t, byteClassBound(of), n, "%d goes back to class %d", n, of)
		if of+1 < len(p.bytes) {
			require.Greater(t, byteClassBound(of+1), n, "%d goes back below its class %d", n, of)
		}
		require.Equal(t, of, byteClassOf(byteClassBound(of)), "class %d", of)
		require.Equal(t, of, byteClassAtLeast(byteClassBound(of)), "class %d", of)
	}
	assert.Equal(t, -1, byteClassAtLeast(1<<26+1))
	assert.Equal(t, -1, byteClassOf(1<<27))
	assert.Equal(t, len(p.bytes)-1, byteClassOf(1<<27-1))
	assert.Equal(t, 1<<maxBytesClass, byteClassBound(len(p.bytes)-1))

	// A slice comes back to the class every slice of which holds it.
	for _, c := range []struct{ n, lo, hi, at, of int }{
		{0, 3, 16, 3, -1}, {8, 3, 16, 3, 3}, {9, 3, 16, 4, 3}, {15, 3, 16, 4, 3}, {16, 3, 16, 4, 4},
		{1 << 16, 3, 16, 16, 16}, {1<<16 + 1, 3, 16, -1, 16}, {1 << 17, 3, 16, -1, -1},
	} {
		assert.Equal(t, c.at, classAtLeast(c.n, c.lo, c.hi), "classAtLeast(%d)", c.n)
		assert.Equal(t, c.of, classOf(c.n, c.lo, c.hi), "classOf(%d)", c.n)
	}
}
