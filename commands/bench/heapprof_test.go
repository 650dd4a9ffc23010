package bench

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --heapprofile: a base profile and one at the peak of records in flight,
// both readable, the peak's line giving the records it counted; a peak
// below minProfiledInFlight is not profiled.
func TestHeapAtPeakWritesTheBaseAndThePeak(t *testing.T) {
	dir := t.TempDir()
	assert.Nil(t, newHeapAtPeak("", "row"), "no prefix, no profiles")

	h := newHeapAtPeak(filepath.Join(dir, "heap"), "row")
	require.NoError(t, h.takeBase())
	h.offer(minProfiledInFlight-1, func() (int64, int64) { return minProfiledInFlight - 1, 0 })
	line, err := h.write()
	require.NoError(t, err)
	assert.Contains(t, line, "no peak of records in flight was profiled")

	held := make([][]byte, 4000)
	for i := range held {
		held[i] = make([]byte, 1024)
	}
	h.offer(4000, func() (int64, int64) { return 4000, 0 })
	runtime.KeepAlive(held)
	line, err = h.write()
	require.NoError(t, err)
	assert.Contains(t, line, "at 4000 records in flight")
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
