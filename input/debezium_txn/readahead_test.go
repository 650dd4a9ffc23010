package debezium_txn

import (
	"context"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// The read-ahead counts only what can go without reading anything more:
// complete transactions at the front of END order, the first held by
// nothing. Counting one that misses an event, or a head a gate holds,
// would stop the poll loop while the stream waits for a record only a poll
// brings: a stall.
func TestReadAheadWaitsOnlyForTransactionsReadyToGo(t *testing.T) {
	limit := readAheadLimit{events: 4, bytes: 1 << 30}
	complete := func(f *feeder, from, n int) {
		for i := from; i < from+n; i++ {
			id := "c" + itoa(int64(i))
			f.data(orders0, dbzEvent(opCreate, "orders", i, id, 1, 1))
			f.meta(dbzEnd(id, "test.orders", 1))
		}
	}

	t.Run("ready transactions reach the limit", func(t *testing.T) {
		f := newFeeder(t, testConfig(), orders0)
		complete(f, 0, 3)
		assert.False(t, f.a.readyAtLeast(limit), "3 events ready, the limit is 4")
		complete(f, 3, 1)
		assert.True(t, f.a.readyAtLeast(limit), "4 events ready")
		require.NotNil(t, f.a.next(1))
		assert.False(t, f.a.readyAtLeast(limit), "one emitted: 3 ready again")
	})

	t.Run("bytes reach the limit", func(t *testing.T) {
		f := newFeeder(t, testConfig(), orders0)
		complete(f, 0, 2)
		assert.False(t, f.a.readyAtLeast(readAheadLimit{events: 1 << 20, bytes: 1 << 30}))
		assert.True(t, f.a.readyAtLeast(readAheadLimit{events: 1 << 20, bytes: f.a.buffered / 2}), "the records of the ready transactions hold the byte limit")
	})

	t.Run("a head that misses an event is not ready, whatever follows", func(t *testing.T) {
		f := newFeeder(t, testConfig(), orders0)
		f.data(orders0, dbzEvent(opCreate, "orders", 100, "h", 1, 2))
		f.meta(dbzEnd("h", "test.orders", 2))
		complete(f, 0, 10)
		assert.False(t, f.a.readyAtLeast(limit), "the head waits for its second event")
	})

	t.Run("a head held by the start gate is not ready", func(t *testing.T) {
		f := newFeeder(t, testConfig(), orders0)
		f.a.assign(items0) // assigned, never read: it may hold snapshot rows
		complete(f, 0, 10)
		require.NotEmpty(t, f.a.holdReason(f.a.ends[0]))
		assert.False(t, f.a.readyAtLeast(limit))
		f.a.markEmpty(items0)
		assert.True(t, f.a.readyAtLeast(limit), "once the partition started, the same transactions are ready")
	})

	t.Run("a stopped stream is never ready", func(t *testing.T) {
		f := newFeeder(t, testConfig(), orders0)
		complete(f, 0, 10)
		f.a.stop(assert.AnError)
		assert.False(t, f.a.readyAtLeast(limit))
	})

	t.Run("a revoke, a stop or a partial read-back reads on", func(t *testing.T) {
		f := newFeeder(t, testConfig(), orders0)
		complete(f, 0, 10)
		in := boundHarness(t, f.a, orders0)
		in.readAhead = limit
		require.True(t, in.readAheadFull())
		in.revoking = true
		assert.False(t, in.readAheadFull())
		in.revoking, in.stopped = false, assert.AnError
		assert.False(t, in.readAheadFull())
		in.stopped, in.partial = nil, assert.AnError
		assert.False(t, in.readAheadFull())
		in.partial, in.asm = nil, nil
		assert.False(t, in.readAheadFull())
	})
}

// A backlog far larger than the read-ahead, its fetches small: left
// unread, the input holds the read-ahead and about a poll more, not the
// backlog (which max_buffered_bytes, 256 MiB, would have let it take
// whole); read, every transaction arrives once and in order as the poll
// loop reads on.
func TestPollLoopWaitsAtTheReadAheadAndReadsOnAsTransactionsGo(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2})
	const txns = 400
	w.produce(txns)

	conf, err := ConfigSpec().ParseYAML(w.yaml("g-readahead", "fetch_max_partition_bytes: 8KiB\n"), nil)
	require.NoError(t, err)
	in, err := New(conf, service.MockResources())
	require.NoError(t, err)
	in.readAhead = readAheadLimit{events: 30, bytes: 1 << 30}
	t.Cleanup(func() { _ = in.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, in.Connect(ctx))

	held := func() (waiting bool, buffered int) {
		in.mu.Lock()
		defer in.mu.Unlock()
		if in.asm != nil {
			buffered = len(in.asm.txns)
		}
		return in.pollWaiting, buffered
	}
	// Until what the input holds stops growing for ten rechecks of the
	// poll loop (each a fetch of at most 8 KiB per partition, when it
	// polls).
	last, still := -1, 0
	for deadline := time.Now().Add(30 * time.Second); still < 10; {
		require.True(t, time.Now().Before(deadline), "what the input holds never settled")
		time.Sleep(20 * time.Millisecond)
		_, buffered := held()
		if buffered == last && buffered > 0 {
			still++
		} else {
			last, still = buffered, 0
		}
	}
	waiting, buffered := held()
	assert.Less(t, buffered, txns/2, "the input took a read-ahead and a poll of a %d-transaction backlog, not the backlog", txns)
	assert.True(t, waiting, "the poll loop waits")

	s := newSink(t)
	readUntil(t, in, s, 60*time.Second, w.converged(s))
	for id, n := range s.txns {
		require.Equal(t, 1, n, "transaction %s emitted once", id)
	}
}
