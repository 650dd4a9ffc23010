package kafka_txn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
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

// A source transaction longer than the read-ahead (in records, or in
// bytes) is delivered whole: its records leave the queue for the
// partition's pending records while the input waits for its end, so the
// read-ahead never holds up the fetch of the END. Counting the pending
// records against the read-ahead would deadlock here: the poll loop would
// wait for room that only the END can make.
func TestTransactionLongerThanReadAheadIsDeliveredWhole(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit readAheadLimit
	}{
		{"records", readAheadLimit{records: 5, bytes: 1 << 30}},
		{"bytes", readAheadLimit{records: 1 << 30, bytes: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 60
			c := newCluster(t, 1)
			p := producer(t, c, "")
			for i := 0; i < n; i += 3 {
				produce(t, p, 0, seq(fmt.Sprintf("d%02d-", i), 3)...)
			}
			produce(t, p, 0, "END")
			res, _ := newResources()
			in := newTestInput(t, res, testYAML(c, "g-readahead-long", `checkpoint_limit: 1000
coalesce: false
fetch_max_partition_bytes: 64B
batching:
  count: 10
  check: content().string().has_prefix("END")
`))
			in.readAhead = tc.limit
			connect(t, in)

			b, ack := readBatch(t, in, 20*time.Second)
			rs := toRecs(t, b)
			require.Len(t, rs, n+1, "the whole transaction in one batch")
			for i, r := range rs {
				require.Equal(t, int64(i), r.offset)
			}
			assert.Equal(t, "END", rs[n].value)
			require.NoError(t, ack(context.Background(), nil))
		})
	}
}

// A member whose poll loop waits for room (nothing is read) does not hold
// up a rebalance: a second member gets its share at once, both read their
// partitions to the end, and each record is read once (nothing was
// delivered, so nothing was committed before the hand-over).
func TestRebalanceWhileWaitingForReadAhead(t *testing.T) {
	const each = 50
	c := newCluster(t, 2)
	p := producer(t, c, "")
	for part := int32(0); part < 2; part++ {
		for i := 0; i < each; i += 10 {
			produce(t, p, part, seq(fmt.Sprintf("p%d-%03d-", part, i), 10)...)
		}
	}
	const group = "g-readahead-rebalance"
	conf := testYAML(c, group, fmt.Sprintf(readAheadYAML, 100000))
	resA, _ := newResources()
	a := newTestInput(t, resA, conf)
	a.readAhead = readAheadLimit{records: 5, bytes: 1 << 30}
	connect(t, a)
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.readAheadWaits > 0 && len(a.parts) == 2
	}, 10*time.Second, 10*time.Millisecond, "A holds both partitions and waits for room")

	resB, _ := newResources()
	b := newTestInput(t, resB, conf)
	connect(t, b)

	// B's first batch comes from the rebalance, well within
	// rebalance_timeout (10 s): A's waiting poll loop did not block it.
	start := time.Now()
	got := map[int32][]int64{}
	var first time.Duration
	readAll := func(in *Input, name string, want int) {
		deadline := time.Now().Add(20 * time.Second)
		for n := 0; n < want; {
			require.True(t, time.Now().Before(deadline), "member %s read %d of %d records", name, n, want)
			batch, ack := tryReadBatch(t, in, 200*time.Millisecond)
			if batch == nil {
				continue
			}
			if first == 0 {
				first = time.Since(start)
			}
			for _, r := range toRecs(t, batch) {
				got[r.partition] = append(got[r.partition], r.offset)
				n++
			}
			require.NoError(t, ack(context.Background(), nil))
		}
	}
	readAll(b, "B", each)
	assert.Less(t, first, 8*time.Second, "B's first batch came after the rebalance timeout: the rebalance waited for A's room")
	readAll(a, "A", each)
	for part := int32(0); part < 2; part++ {
		require.Len(t, got[part], each, "partition %d", part)
		for i, off := range got[part] {
			require.Equal(t, int64(i), off, "partition %d: every record once, in order", part)
		}
	}
}

// Close ends a poll loop that waits for room: it returns, rather than
// waiting for records nobody will read.
func TestCloseEndsAWaitForReadAhead(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "")
	for i := 0; i < 100; i += 10 {
		produce(t, p, 0, seq(fmt.Sprintf("v%03d-", i), 10)...)
	}
	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, "g-readahead-close", fmt.Sprintf(readAheadYAML, 100000)))
	in.readAhead = readAheadLimit{records: 5, bytes: 1 << 30}
	connect(t, in)
	require.Eventually(t, func() bool {
		in.mu.Lock()
		defer in.mu.Unlock()
		return in.readAheadWaits > 0
	}, 10*time.Second, 10*time.Millisecond, "the poll loop waits at the read-ahead")

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- in.Close(ctx)
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second): // real time: Close has no bound of its own on the loops
		t.Fatal("Close did not return while the poll loop waited for room")
	}
}

// fetchBounds are the bounds of a fetch request: the response's and each
// named partition's.
type fetchBounds struct {
	maxBytes  int32
	partBytes []int32
}

// A fetch response is bounded by FetchMaxBytes, not franz-go's 50 MiB: with
// hundreds of partitions one response would otherwise bring far more records
// than the input reads ahead. A fetch_max_partition_bytes above it raises the
// response bound, so that the partition bound stays what was configured
// (franz-go lowers a partition bound above the response bound to it).
func TestFetchResponsesAreBoundedBelowTheReadAhead(t *testing.T) {
	for _, tc := range []struct {
		name, extra         string
		maxBytes, partBytes int32
	}{
		{"defaults", "", FetchMaxBytes, 1 << 20},
		{"partition bound above it", "fetch_max_partition_bytes: 16MiB\n", 16 << 20, 16 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 4)
			var mu sync.Mutex
			var seen []fetchBounds
			c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
				req := r.(*kmsg.FetchRequest)
				b := fetchBounds{maxBytes: req.MaxBytes}
				for _, rt := range req.Topics {
					for _, rp := range rt.Partitions {
						b.partBytes = append(b.partBytes, rp.PartitionMaxBytes)
					}
				}
				mu.Lock()
				seen = append(seen, b)
				mu.Unlock()
				// Left to the cluster, which keeps the function.
				return nil, nil, false
			})
			res, _ := newResources()
			in := newTestInput(t, res, testYAML(c, "fetch-bound", tc.extra))
			connect(t, in)
			testkit.WaitFor(t, 10*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				for _, b := range seen {
					if len(b.partBytes) > 0 {
						return true
					}
				}
				return false
			}, "a fetch of the assigned partitions")
			mu.Lock()
			defer mu.Unlock()
			for _, b := range seen {
				require.Equal(t, tc.maxBytes, b.maxBytes, "the response bound of a fetch")
				for _, p := range b.partBytes {
					assert.Equal(t, tc.partBytes, p, "the partition bound of a fetch")
				}
			}
		})
	}
}

// readAheadFullSummed is readAheadFull as the sum of the partitions being
// fetched, with no shortcut.
func readAheadFullSummed(in *Input) bool {
	recs, bytes := 0, 0
	for _, ps := range in.parts {
		if ps.paused || ps.failed != nil || ps.revoking {
			continue
		}
		recs += len(ps.queue)
		bytes += ps.queueBytes
	}
	return recs >= in.readAhead.records || bytes >= in.readAhead.bytes
}

// The input's sum of the queues never falls below what the partitions hold,
// whatever fetches, takes, pauses, failures and releases do, so that
// readAheadFull answers as summing the partitions being fetched does: a sum
// below it would let the poll loop fetch past the bound.
func TestReadAheadFullAnswersAsTheSumOfThePartitions(t *testing.T) {
	in := &Input{parts: map[string]*partState{}, readAhead: readAheadLimit{records: 12, bytes: 900}}
	rng := rand.New(rand.NewPCG(26, 3))
	nextPart := int32(0)
	pick := func() *partState {
		for _, ps := range in.parts {
			if rng.IntN(2) == 0 {
				return ps
			}
		}
		for _, ps := range in.parts {
			return ps
		}
		return nil
	}
	for step := 0; step < 20000; step++ {
		ps := pick()
		switch op := rng.IntN(8); {
		case ps == nil || op == 0 && len(in.parts) < 6:
			p := nextPart
			nextPart++
			id := fmt.Sprintf("%s/%d", testTopic, p)
			in.parts[id] = &partState{topic: testTopic, part: p, id: id, nextFetch: -1, firstOffset: -1, hwm: -1, queued: &in.queued}
		case op <= 2:
			var recs []*kgo.Record
			for i := 0; i < 1+rng.IntN(4); i++ {
				recs = append(recs, &kgo.Record{Offset: max(ps.nextFetch, 0) + int64(i), Value: make([]byte, rng.IntN(120))})
			}
			ps.addFetched(kgo.FetchTopicPartition{Topic: ps.topic, FetchPartition: kgo.FetchPartition{Partition: ps.part, HighWatermark: -1, Records: recs}})
		case op <= 4:
			if len(ps.queue) > 0 {
				ps.popQueue()
			}
		case op == 5:
			ps.paused = !ps.paused
		case op == 6:
			if ps.failed == nil {
				ps.failed = fmt.Errorf("nacked")
			} else {
				ps.failed = nil
			}
		default:
			// A release: StopLocked, then DropLocked.
			ps.revoking = true
			ps.dropPending()
			delete(in.parts, ps.id)
		}
		require.Equal(t, readAheadFullSummed(in), in.readAheadFull(), "step %d", step)
	}
}
