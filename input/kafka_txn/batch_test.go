package kafka_txn

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

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
// with nothing that tells the input where transactions end (no assembler,
// no check), a transaction spans batches, and with several batches of a
// partition in flight it completes.
func TestSourceTransactionSpanningBatchesCompletes(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "big-txn")
	produceTxn(t, p, 0, true, txnValues(1, 50)...)
	produceTxn(t, p, 0, true, txnValues(2, 7)...)

	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, "g-big", `checkpoint_limit: 60
batching:
  count: 8
  period: 50ms
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
		assert.LessOrEqual(t, len(rs), 8, "count caps a batch")
		rows += len(rs)
		for _, r := range rs {
			if strings.Contains(r.value, `"end":true`) {
				for _, a := range held {
					require.NoError(t, a(context.Background(), nil))
				}
				held = nil
				done++
			}
		}
	}
	assert.Equal(t, 57, rows)
	assert.GreaterOrEqual(t, maxHeld, 7, "the 50-row transaction was in flight as 7 batches at once")
}

// TestCheckDeliversWholeTransactions: with a check that marks transaction
// ends, a partition's part of a batch always ends at one: the records after
// the last end wait for it, so a transaction larger than count is
// delivered whole, and smaller ones share a batch up to count. No batch
// ever waits on a record that is not delivered.
func TestCheckDeliversWholeTransactions(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "whole-txns")
	produceTxn(t, p, 0, true, txnValues(1, 50)...)
	for i := 2; i <= 6; i++ {
		produceTxn(t, p, 0, true, txnValues(i, 3)...)
	}

	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, "g-whole", `checkpoint_limit: 60
batching:
  count: 8
  period: 50ms
  check: this.end == true
`))
	connect(t, in)
	var sizes []int
	for rows := 0; rows < 65; {
		b, ack := readBatch(t, in, 10*time.Second)
		rs := toRecs(t, b)
		require.Contains(t, rs[len(rs)-1].value, `"end":true`, "a batch ends at a transaction end: %v", values(rs))
		sizes = append(sizes, len(rs))
		rows += len(rs)
		// Acknowledged only after the next batch arrived: an output that
		// holds a batch until its transactions end needs nothing more.
		require.NoError(t, ack(context.Background(), nil))
	}
	assert.Equal(t, 50, sizes[0], "the 50-row transaction in one batch, though count is 8")
	for _, n := range sizes[1:] {
		assert.LessOrEqual(t, n, 9, "small transactions share batches up to count (and the transaction that passes it)")
	}
}

// A transaction that alone fills checkpoint_limit cannot wait for its end:
// it is delivered as it is, and the partition reports the stall as always.
func TestTransactionOverCheckpointLimitIsDeliveredAtTheLimit(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "huge-txn")
	produceTxn(t, p, 0, true, txnValues(1, 30)...)

	res, logs := newResources()
	in := newTestInput(t, res, testYAML(c, "g-huge", `checkpoint_limit: 20
batching:
  count: 8
  period: 50ms
  check: this.end == true
`))
	connect(t, in)
	b, _ := readBatch(t, in, 10*time.Second)
	assert.Len(t, b, 20, "the open transaction, up to checkpoint_limit")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "checkpoint_limit") }, 5*time.Second, 20*time.Millisecond,
		"the stall is reported")
}

// TestBatchesNeverMixPartitionsAndKeepOrder acknowledges batches out of
// order, from several goroutines, while records of four partitions arrive;
// with coalesce off a batch holds one partition, with it (the default) the
// parts of several, each in order and in one piece.
func TestBatchesNeverMixPartitionsAndKeepOrder(t *testing.T) {
	for _, coalesce := range []bool{false, true} {
		t.Run(fmt.Sprintf("coalesce %v", coalesce), func(t *testing.T) { testBatchOrder(t, coalesce) })
	}
}

func testBatchOrder(t *testing.T, coalesce bool) {
	const parts, total = 4, 400
	c := newCluster(t, parts)
	p := producer(t, c, "")
	group := fmt.Sprintf("g-order-%v", coalesce)

	res, _ := newResources()
	// Every record ends its transaction (the check): coalescing joins
	// only parts known to end at a transaction end.
	in := newTestInput(t, res, testYAML(c, group, fmt.Sprintf(`checkpoint_limit: 30
coalesce: %v
batching:
  count: 7
  period: 10ms
  check: "true"
`, coalesce)))
	connect(t, in)
	mixed := 0

	rng := rand.New(rand.NewSource(1))
	// One record at a time, each waiting for the broker: they arrive while
	// the input reads.
	go func() {
		for j := 0; j < total; j++ {
			r := &kgo.Record{Partition: int32(rng.Intn(parts)), Value: []byte(fmt.Sprintf("v%d", j))}
			if err := p.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Errorf("producing: %v", err)
				return
			}
		}
	}()

	last := map[int32]int64{}
	var wg sync.WaitGroup
	ackRng := rand.New(rand.NewSource(2))
	// held are the acknowledgements not given yet: after each batch a
	// random part of them is given, in a random order, each from its own
	// goroutine. At most two batches stay held (14 messages, below
	// checkpoint_limit), so that holding never stops the reading.
	var held []service.AckFunc
	release := func(acks []service.AckFunc) {
		for _, ack := range acks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = ack(context.Background(), nil)
			}()
		}
	}
	for n := 0; n < total; {
		b, ack := readBatch(t, in, 10*time.Second)
		rs := toRecs(t, b)
		seen := map[int32]bool{}
		for i, r := range rs {
			if !coalesce {
				require.Equal(t, rs[0].partition, r.partition, "a batch mixed partitions")
			}
			if i > 0 && r.partition != rs[i-1].partition {
				require.False(t, seen[r.partition], "partition %d's part of a batch is not in one piece", r.partition)
				mixed++
			}
			seen[r.partition] = true
			if prev, ok := last[r.partition]; ok {
				require.Greater(t, r.offset, prev, "partition %d went backwards", r.partition)
			}
			last[r.partition] = r.offset
		}
		n += len(rs)
		held = append(held, ack)
		ackRng.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
		give := max(ackRng.Intn(len(held)+1), len(held)-2)
		release(held[:give])
		held = held[give:]
	}
	release(held)
	wg.Wait()
	if coalesce {
		assert.Greater(t, mixed, 0, "batches joined partitions")
	}
	want := map[int32]int64{}
	for part, off := range last {
		want[part] = off + 1
	}
	waitCommittedOffsets(t, c, group, want)
}

// The stream's assembler tells the input where transactions end (through
// the registry), in preference to a check: the input cuts at its ends.
func TestAssemblerEndsCutBatches(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "asm-ends")
	produceTxn(t, p, 0, true, txnValues(1, 12)...)
	produceTxn(t, p, 0, true, txnValues(2, 2)...)

	res, _ := newResources()
	var asked atomic.Int64
	registry.Get(res).SetTxnEnds(func(m *service.Message) bool {
		asked.Add(1)
		b, _ := m.AsBytes()
		return strings.Contains(string(b), `"end":true`)
	})
	in := newTestInput(t, res, testYAML(c, "g-asm-ends", `batching:
  count: 4
  period: 20ms
  check: 'false'
`))
	connect(t, in)
	b, ack := readBatch(t, in, 10*time.Second)
	rs := toRecs(t, b)
	require.Len(t, rs, 12, "the 12-row transaction whole, though count is 4: %v", values(rs))
	require.NoError(t, ack(context.Background(), nil))
	b, _ = readBatch(t, in, 10*time.Second)
	assert.Len(t, b, 2)
	assert.Less(t, asked.Load(), int64(14), "the input asks about the records after the last end, not every record")
}

// A transaction that alone fills checkpoint_limit goes out cut, and its
// partition waits for an end that cannot come in that batch: coalescing
// must never join another partition's records to such a part, or their
// acknowledgement would wait on it too and that partition would stall
// with it. Here partition 1's whole transaction is delivered in a batch of
// its own and its offset commits while partition 0's cut part is held.
func TestCutTransactionIsNeverCoalescedWithOtherPartitions(t *testing.T) {
	c := newCluster(t, 2)
	p := producer(t, c, "")
	const group = "g-cut-alone"
	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, group, `checkpoint_limit: 20
batching:
  count: 50
  period: 10ms
  check: content().string().has_prefix("END")
`))
	connect(t, in)
	open := make([]string, 30)
	for i := range open {
		open[i] = fmt.Sprintf("d0-%d", i)
	}
	produce(t, p, 0, open...)
	produce(t, p, 1, "d1-a", "END1-a")
	deadline := time.Now().Add(10 * time.Second)
	var p1Ack service.AckFunc
	var p1Last int64 = -1
	for time.Now().Before(deadline) && p1Last < 1 {
		b, ack := tryReadBatch(t, in, 500*time.Millisecond)
		if b == nil {
			continue
		}
		rs := toRecs(t, b)
		has := map[int32]bool{}
		for _, r := range rs {
			has[r.partition] = true
			if r.partition == 1 {
				p1Last = r.offset
			}
		}
		require.False(t, has[0] && has[1], "a batch joined partition 1's records to partition 0's cut transaction: %v", rs)
		if has[1] {
			p1Ack = ack
		}
	}
	require.NotNil(t, p1Ack, "partition 1's transaction was delivered")
	require.NoError(t, p1Ack(t.Context(), nil))
	waitCommittedOffsets(t, c, group, map[int32]int64{1: 2})
}
