// This file holds the pools of the Kafka client's fetch buffers: the
// decompressed batches and the records decoded from them, reused from poll
// to poll instead of allocated per batch (they were most of the bytes the
// input allocated per row: the decompressed batch is as large as its
// records). A poll's records go back once the assembler copied what it
// keeps of them (Fetched): a decoded event holds no byte of its record.

package debezium_txn

import (
	"bytes"
	"math/bits"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Size classes of the pooled slices: record slices by powers of two
// (class c holds capacities in [2^c, 2^(c+1))), from 8 to 64 Ki records;
// decompressed batches, from 1 KiB to 64 MiB, by quarters of a power of
// two (byteClassAtLeast), since they are most of what the pools hold: a
// batch in a power-of-two buffer left up to half of it unused, and the
// buffers in flight at once are what the pools fill when an input starts.
// Others are allocated (a batch that large is rare).
const (
	minBytesClass = 10
	maxBytesClass = 26
	// byteSubBits splits each power of two of the byte classes into
	// 2^byteSubBits classes.
	byteSubBits  = 2
	minRecsClass = 3
	maxRecsClass = 16
	// decompressGuess is the decompressed size guessed per compressed
	// byte where the codec does not tell it (the client grows a short
	// buffer and gives back the grown one).
	decompressGuess = 4
)

// newFetchPools returns the pools an input's client takes its fetch
// buffers from (a variable: TestPooledFetchBuffersNotReadAfterRelease
// poisons what goes back).
var newFetchPools = func() kgo.Pool { return &fetchPools{} }

// fetchPools implements kgo.PoolDecompressBytes and kgo.PoolRecords.
type fetchPools struct {
	bytes [(maxBytesClass-minBytesClass)<<byteSubBits + 1]sync.Pool // of *[]byte
	recs  [maxRecsClass + 1]sync.Pool                               // of *[]kgo.Record
}

var (
	_ kgo.PoolDecompressBytes = (*fetchPools)(nil)
	_ kgo.PoolRecords         = (*fetchPools)(nil)
)

// classAtLeast is the class in [lo, hi] whose every slice holds n; -1
// when n is beyond hi.
func classAtLeast(n, lo, hi int) int {
	c := lo
	if n > 1<<lo {
		c = bits.Len(uint(n - 1))
	}
	if c > hi {
		return -1
	}
	return c
}

// classOf is the class in [lo, hi] a slice of capacity n goes back to; -1
// when it is not pooled.
func classOf(n, lo, hi int) int {
	c := bits.Len(uint(n)) - 1
	if c < lo || c > hi {
		return -1
	}
	return c
}

// byteClassBound is the capacity of the byte class i: the classes run
// from 2^minBytesClass up in steps of a quarter of the power of two below.
func byteClassBound(i int) int {
	c := minBytesClass + i>>byteSubBits
	s := i & (1<<byteSubBits - 1)
	return (1<<byteSubBits + s) << (c - byteSubBits)
}

// byteClassAtLeast is the byte class of the smallest capacity that holds
// n (at most a quarter more than n past the smallest class); -1 when n
// is beyond 2^maxBytesClass.
func byteClassAtLeast(n int) int {
	if n <= 1<<minBytesClass {
		return 0
	}
	if n > 1<<maxBytesClass {
		return -1
	}
	c := bits.Len(uint(n-1)) - 1 // 2^c < n <= 2^(c+1)
	step := 1 << (c - byteSubBits)
	s := (n - 1<<c + step - 1) / step // 1 .. 2^byteSubBits
	return (c-minBytesClass)<<byteSubBits + s
}

// byteClassOf is the byte class a slice of capacity n goes back to: the
// largest bound n holds; -1 when it is not pooled.
func byteClassOf(n int) int {
	if n < 1<<minBytesClass {
		return -1
	}
	c := bits.Len(uint(n)) - 1
	if c > maxBytesClass {
		return -1
	}
	if c == maxBytesClass {
		return (maxBytesClass - minBytesClass) << byteSubBits
	}
	s := (n - 1<<c) >> (c - byteSubBits)
	return (c-minBytesClass)<<byteSubBits + s
}

// xerialPrefix starts a snappy batch in the xerial framing (Java
// clients), whose size is not in one header.
var xerialPrefix = []byte{130, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompressedSize is the size a batch decompresses to: exact for a
// snappy block (its header says it), else guessed.
func decompressedSize(compressed []byte, codec kgo.CompressionCodecType) int {
	if codec == kgo.CodecSnappy && !bytes.HasPrefix(compressed, xerialPrefix) {
		if n, err := s2.DecodedLen(compressed); err == nil {
			return n
		}
	}
	return len(compressed) * decompressGuess
}

// GetDecompressBytes returns a buffer for the batch's decompressed bytes.
func (p *fetchPools) GetDecompressBytes(compressed []byte, codec kgo.CompressionCodecType) []byte {
	want := decompressedSize(compressed, codec)
	c := byteClassAtLeast(want)
	if c < 0 {
		return nil
	}
	if b, _ := p.bytes[c].Get().(*[]byte); b != nil {
		return (*b)[:0]
	}
	return make([]byte, 0, byteClassBound(c))
}

// PutDecompressBytes takes a buffer back (the client zeroed its bytes).
func (p *fetchPools) PutDecompressBytes(b []byte) {
	if c := byteClassOf(cap(b)); c >= 0 {
		b = b[:0]
		p.bytes[c].Put(&b)
	}
}

// GetRecords returns a slice for n records.
func (p *fetchPools) GetRecords(n int) []kgo.Record {
	c := classAtLeast(n, minRecsClass, maxRecsClass)
	if c < 0 {
		return nil
	}
	if r, _ := p.recs[c].Get().(*[]kgo.Record); r != nil {
		return (*r)[:0]
	}
	return make([]kgo.Record, 0, 1<<c)
}

// PutRecords takes a slice back; its records were recycled (zeroed).
func (p *fetchPools) PutRecords(r []kgo.Record) {
	if c := classOf(cap(r), minRecsClass, maxRecsClass); c >= 0 {
		r = r[:0]
		p.recs[c].Put(&r)
	}
}
