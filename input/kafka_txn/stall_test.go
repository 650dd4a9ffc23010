package kafka_txn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

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

	// Another partition is not held back; its record, produced after the
	// paused partition's new ones, is fetched after them (one fetch asks
	// for every partition not paused, and is answered with all they hold):
	// once it arrived, the paused partition had its chance to fetch.
	produce(t, p, 1, "p1-a")
	got1 := readUntil(t, in, "p1-a")
	assert.Equal(t, []string{"p1-a"}, values(got1))
	paused, queued2 := in.partitionFetchState("cdc/0")
	assert.True(t, paused)
	assert.Equal(t, queued, queued2, "a paused partition fetched more records")

	// The stall is reported, naming checkpoint_limit.
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "has sat at checkpoint_limit (10 unacknowledged messages, offsets 0-9)")
	}, 5*time.Second, 20*time.Millisecond, logs.String())

	// Acknowledging releases the rest, in order.
	for _, a := range held {
		require.NoError(t, a(context.Background(), nil))
	}
	rest := readUntil(t, in, "p0-29")
	assert.Equal(t, seq("p0-", 30)[10:], values(rest))
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
