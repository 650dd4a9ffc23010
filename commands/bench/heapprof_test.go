package bench

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --heapprofile: a base profile and one at the peak of records in flight,
// both readable, the peak's line giving the records it counted; a peak
// below minProfiledInFlight is not profiled.
func TestHeapAtPeakWritesTheBaseAndThePeak(t *testing.T) {
	dir := t.TempDir()
	defer func(r int) { runtime.MemProfileRate = r }(runtime.MemProfileRate)
	runtime.MemProfileRate = heapProfileRate
	assert.Nil(t, newHeapAtPeak("", "row"), "no prefix, no profiles")

	h := newHeapAtPeak(filepath.Join(dir, "heap"), "row")
	require.NoError(t, h.takeBase())
	h.offer(minProfiledInFlight-1, func() (int64, int64) { return minProfiledInFlight - 1, 0 })
	line, err := h.write()
	require.NoError(t, err)
	assert.Contains(t, line, "no peak of records in flight was profiled")

	held := make([][]byte, 4000)
	msgs := make([]*service.Message, 4000)
	for i := range held {
		held[i] = make([]byte, 1024)
		msgs[i] = service.NewMessage(nil)
		msgs[i].MetaSetMut("k", i)
	}
	// The counts are read before and after the collection: what moved
	// while it ran is reported beside the records in flight.
	calls := 0
	h.offer(4000, func() (int64, int64) {
		calls++
		if calls == 1 {
			return 4000, 0
		}
		return 4700, 300
	})
	runtime.KeepAlive(held)
	runtime.KeepAlive(msgs)
	line, err = h.write()
	require.NoError(t, err)
	t.Log(line)
	assert.Contains(t, line, "at 4000 records in flight (during the collection 700 more read, 300 acknowledged)")
	// The slices were allocated here, in the bench's own code: its owner,
	// about 1 KiB per message; the messages are counted, and their
	// metadata maps are their owner's.
	assert.InEpsilon(t, 4000, h.bestMsgs, 0.25, line)
	assert.InEpsilon(t, 4000*1024, h.bestOwners[ownerBench].bytes, 0.25, line)
	assert.Greater(t, h.bestOwners[ownerMetadata].bytes, 4000*100.0, line)
	for _, name := range []string{"heap-row-start.pprof", "heap-row.pprof"} {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		// A pprof profile: a gzipped protocol buffer.
		z, err := gzip.NewReader(f)
		require.NoError(t, err, name)
		b, err := io.ReadAll(z)
		f.Close()
		require.NoError(t, err, name)
		assert.NotEmpty(t, b, name)
	}
}

// The profile kept is the one that holds the most records: by its Benthos
// messages, not by the records in flight counted before its collection (a
// commit may free them all while the collection waits); without messages,
// by the records in flight.
func TestHeapAtPeakKeepsTheProfileHoldingTheMostMessages(t *testing.T) {
	assert.True(t, better(0, 10, 0, 0, false), "the first candidate")
	assert.True(t, better(70000, 40000, 0, 44000, true), "messages beat none, at fewer records in flight")
	assert.False(t, better(0, 44000, 70000, 40000, true), "none never beats messages")
	assert.False(t, better(60000, 60000, 70000, 40000, true))
	assert.True(t, better(0, 5000, 0, 4000, true), "no messages at all: the records in flight")
	assert.False(t, better(0, 3000, 0, 4000, true))
}
