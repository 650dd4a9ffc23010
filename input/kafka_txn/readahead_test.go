package kafka_txn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAheadYAML: every record ends its transaction, small batches, and
// fetches of about one producer batch, so that the read-ahead is passed by
// a poll of a few batches at most.
const readAheadYAML = `checkpoint_limit: %d
coalesce: false
fetch_max_partition_bytes: 256B
batching:
  count: 10
  check: "true"
`

// queued is what the input holds of fetched records not yet delivered.
func queued(in *Input) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for _, ps := range in.parts {
		n += len(ps.queue)
	}
	return n
}

// While nothing is read, the input stops taking fetches at its read-ahead:
// what it holds stays about the bound plus one poll, not the whole
// partition up to checkpoint_limit; and everything is delivered, in order,
// once read.
func TestReadAheadIsBounded(t *testing.T) {
	const total = 400
	c := newCluster(t, 1)
	p := producer(t, c, "")
	for i := 0; i < total; i += 10 {
		produce(t, p, 0, seq(fmt.Sprintf("v%03d-", i), 10)...)
	}
	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, "g-readahead", fmt.Sprintf(readAheadYAML, 100000)))
	in.readAhead = readAheadLimit{records: 20, bytes: 1 << 30}
	connect(t, in)

	require.Eventually(t, func() bool {
		in.mu.Lock()
		defer in.mu.Unlock()
		return in.readAheadWaits > 0
	}, 10*time.Second, 10*time.Millisecond, "the poll loop waits at the read-ahead")
	// Polls that found no room kept fetching from growing the queue.
	require.Eventually(t, func() bool {
		in.mu.Lock()
		defer in.mu.Unlock()
		return in.readAheadWaits > 20
	}, 10*time.Second, 10*time.Millisecond)
	assert.Less(t, queued(in), 100, "at most the read-ahead and a poll of a few batches are held, of %d records", total)

	var got []rec
	for len(got) < total {
		b, ack := readBatch(t, in, 10*time.Second)
		got = append(got, toRecs(t, b)...)
		require.NoError(t, ack(context.Background(), nil))
	}
	require.Len(t, got, total)
	for i, r := range got {
		require.Equal(t, int64(i), r.offset, "every record once, in order")
	}
}

// A partition that stops (here at checkpoint_limit, its batches never
// acknowledged) holds what it fetched past it, but that does not count
// against the read-ahead: the other partition is read to its end.
func TestReadAheadIsNotHeldByAStoppedPartition(t *testing.T) {
	const each = 100
	c := newCluster(t, 2)
	p := producer(t, c, "")
	// Partition 0 in one producer batch: its first fetch passes
	// checkpoint_limit, and what it cannot take stays queued.
	produce(t, p, 0, seq("a", each)...)
	for i := 0; i < each; i += 10 {
		produce(t, p, 1, seq(fmt.Sprintf("b%03d-", i), 10)...)
	}
	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, "g-readahead-stop", fmt.Sprintf(readAheadYAML, 25)))
	in.readAhead = readAheadLimit{records: 3, bytes: 1 << 30}
	connect(t, in)

	got := 0
	for got < each {
		b, ack := readBatch(t, in, 10*time.Second)
		rs := toRecs(t, b)
		if rs[0].partition == 0 {
			continue // never acknowledged: partition 0 stops at checkpoint_limit
		}
		got += len(rs)
		require.NoError(t, ack(context.Background(), nil))
	}
	assert.Equal(t, each, got, "partition 1 was read to its end")
	in.mu.Lock()
	defer in.mu.Unlock()
	ps := in.parts["cdc/0"]
	require.NotNil(t, ps)
	assert.True(t, ps.paused, "partition 0 stopped at checkpoint_limit")
	assert.GreaterOrEqual(t, len(ps.queue), in.readAhead.records, "with more queued than the read-ahead")
}
