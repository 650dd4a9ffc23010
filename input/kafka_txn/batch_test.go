package kafka_txn

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// txnValues returns the JSON rows of one source transaction of n rows; the
// last row carries "end": true.
func txnValues(txn, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"txn":%d,"i":%d,"end":%t}`, txn, i, i == n-1)
	}
	return out
}

// TestSourceTransactionSpanningBatchesCompletes models an output that holds
// every acknowledgement until it has seen the END of the source transaction:
// with several batches of a partition in flight the transaction completes.
func TestSourceTransactionSpanningBatchesCompletes(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "big-txn")
	produceTxn(t, p, 0, true, txnValues(1, 50)...)
	produceTxn(t, p, 0, true, txnValues(2, 7)...)

	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, "g-big", `checkpoint_limit: 60
batching:
  count: 8
  period: 1s
  check: this.end == true
`))
	connect(t, in)

	var held []service.AckFunc
	maxHeld, batches, rows := 0, 0, 0
	for done := 0; done < 2; {
		b, ack := readBatch(t, in, 10*time.Second)
		batches++
		held = append(held, ack)
		maxHeld = max(maxHeld, len(held))
		rs := toRecs(t, b)
		rows += len(rs)
		for i, r := range rs {
			if strings.Contains(r.value, `"end":true`) {
				assert.Equal(t, len(rs)-1, i, "the check ends the batch at the transaction end")
				for _, a := range held {
					require.NoError(t, a(context.Background(), nil))
				}
				held = nil
				done++
			}
		}
	}
	assert.Equal(t, 57, rows)
	assert.Equal(t, 7, maxHeld, "the 50-row transaction was in flight as 7 batches at once")
	assert.Equal(t, 8, batches)
}

func TestCheckpointLimitPausesAndReportsStall(t *testing.T) {
	c := newCluster(t, 2)
	p := producer(t, c, "")
	produce(t, p, 0, seq("p0-", 25)...)

	res, logs := newResources()
	// The period is long so that batch sizes do not depend on how the
	// records were split over fetches.
	in := newTestInput(t, res, testYAML(c, "g-limit", `checkpoint_limit: 10
batching:
  count: 4
  period: 1s
`))
	connect(t, in)

	// Without acknowledgements exactly checkpoint_limit messages go out.
	var held []service.AckFunc
	var got []rec
	var sizes []int
	for len(got) < 10 {
		b, ack := readBatch(t, in, 10*time.Second)
		held = append(held, ack)
		sizes = append(sizes, len(b))
		got = append(got, toRecs(t, b)...)
	}
	require.Len(t, got, 10)
	assert.Equal(t, []int{4, 4, 2}, sizes, "the batch at the limit is cut short")
	assert.Equal(t, seq("p0-", 10), values(got))
	b, _ := tryReadBatch(t, in, 500*time.Millisecond)
	require.Nil(t, b, "nothing past checkpoint_limit is delivered")

	// Fetching of the partition is paused: new records are not fetched.
	paused, queued := in.partitionFetchState("cdc/0")
	require.True(t, paused)
	produce(t, p, 0, seq("p0-", 30)[25:]...)
	time.Sleep(300 * time.Millisecond)
	paused, queued2 := in.partitionFetchState("cdc/0")
	assert.True(t, paused)
	assert.Equal(t, queued, queued2, "a paused partition fetched more records")

	// The stall is reported, naming checkpoint_limit.
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "has sat at checkpoint_limit (10 unacknowledged messages, offsets 0-9)")
	}, 5*time.Second, 20*time.Millisecond, logs.String())

	// Another partition is not held back.
	produce(t, p, 1, "p1-a")
	got1 := readUntil(t, in, "p1-a")
	assert.Equal(t, []string{"p1-a"}, values(got1))

	// Acknowledging releases the rest, in order.
	for _, a := range held {
		require.NoError(t, a(context.Background(), nil))
	}
	rest := readUntil(t, in, "p0-29")
	assert.Equal(t, seq("p0-", 30)[10:], values(rest))
}

// TestBatchesNeverMixPartitionsAndKeepOrder acknowledges batches out of
// order, from several goroutines, while records of four partitions arrive.
func TestBatchesNeverMixPartitionsAndKeepOrder(t *testing.T) {
	const parts, total = 4, 400
	c := newCluster(t, parts)
	p := producer(t, c, "")
	const group = "g-order"

	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, group, `checkpoint_limit: 30
batching:
  count: 7
  period: 10ms
`))
	connect(t, in)

	rng := rand.New(rand.NewSource(1))
	go func() {
		for i := 0; i < total; i += 20 {
			for j := i; j < i+20; j++ {
				r := &kgo.Record{Partition: int32(rng.Intn(parts)), Value: []byte(fmt.Sprintf("v%d", j))}
				if err := p.ProduceSync(context.Background(), r).FirstErr(); err != nil {
					t.Errorf("producing: %v", err)
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	last := map[int32]int64{}
	var wg sync.WaitGroup
	ackRng := rand.New(rand.NewSource(2))
	for n := 0; n < total; {
		b, ack := readBatch(t, in, 10*time.Second)
		rs := toRecs(t, b)
		for _, r := range rs {
			require.Equal(t, rs[0].partition, r.partition, "a batch mixed partitions")
			if prev, ok := last[r.partition]; ok {
				require.Greater(t, r.offset, prev, "partition %d went backwards", r.partition)
			}
			last[r.partition] = r.offset
		}
		n += len(rs)
		delay := time.Duration(ackRng.Intn(30)) * time.Millisecond
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(delay)
			_ = ack(context.Background(), nil)
		}()
	}
	wg.Wait()
	want := map[int32]int64{}
	for part, off := range last {
		want[part] = off + 1
	}
	waitCommittedOffsets(t, c, group, want)
}

func (in *Input) partitionFetchState(id string) (paused bool, queued int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	ps := in.parts[id]
	if ps == nil {
		return false, 0
	}
	return ps.paused, len(ps.queue)
}

func TestStallReportNamesOpenTransactionSpan(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "")
	produce(t, p, 0, seq("v", 8)...)
	res, logs := newResources()
	reg := registry.Get(res)
	reg.EnableTracking()
	in := newTestInput(t, res, testYAML(c, "g-stall-span", "checkpoint_limit: 5\n"))
	connect(t, in)
	var got []rec
	for len(got) < 5 {
		b, _ := readBatch(t, in, 10*time.Second)
		got = append(got, toRecs(t, b)...)
	}
	reg.PublishCommitted(contract.KafkaPartition(testTopic, 0), 1)
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "the output has committed through offset 1, so the open source transaction spans up to 3 offsets (2-4)")
	}, 5*time.Second, 20*time.Millisecond, logs.String())
	waitCommittedOffsets(t, c, "g-stall-span", map[int32]int64{0: 2})
}
