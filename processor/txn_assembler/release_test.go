package txnassembler

import (
	"testing"
	"unsafe"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// franz-go's records point into the decompressed fetch they came with. Once
// a batch is processed no message, emitted or dropped (the input keeps
// those until the batch is acknowledged), points into it any more: rows
// are rebuilt, an END becomes a body-less marker, and a dropped BEGIN gets
// a copy of its body — so the fetch is garbage while the messages wait for
// their commit. The dropped BEGIN still reads as itself: a replayed batch
// is recognised again.
func TestProcessedMessagesDoNotPointIntoTheFetch(t *testing.T) {
	p, _ := newProc(t, `{}`)
	bodies := []string{
		envelope(0, "A", "TXN_BEGIN", "", "", ""),
		envelope(0, "A", "DATA", "shop", "orders", `{"id":1}`),
		envelope(0, "A", "DATA", "shop", "orders", `{"id":2}`),
		envelope(0, "A", "TXN_END", "", "", ""),
	}
	// One buffer, every record's value a part of it, as in a fetch.
	var fetch []byte
	for _, b := range bodies {
		fetch = append(fetch, b...)
	}
	var batch service.MessageBatch
	off := 0
	for i, b := range bodies {
		batch = append(batch, kafkaMsg("t", 0, int64(i), "").Copy())
		batch[i].SetBytes(fetch[off : off+len(b) : off+len(b)])
		off += len(b)
	}
	out := run(t, p, batch...)
	require.Len(t, out, 3, "the BEGIN is dropped")

	inFetch := func(b []byte) bool {
		if len(b) == 0 {
			return false
		}
		start := uintptr(unsafe.Pointer(unsafe.SliceData(fetch)))
		at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return at >= start && at < start+uintptr(len(fetch))
	}
	for i, m := range batch {
		b, err := m.AsBytes()
		require.NoError(t, err)
		assert.False(t, inFetch(b), "message %d no longer points into the fetch", i)
	}
	begin, err := batch[0].AsBytes()
	require.NoError(t, err)
	assert.Equal(t, bodies[0], string(begin), "the dropped BEGIN keeps its body")
}
