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
