package kafka_txn

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// runMetricsStream runs the input in a stream whose output is consume, and
// returns the stream's metrics; the stream stops at the end of the test.
func runMetricsStream(t *testing.T, c *kfake.Cluster, group, extra string, consume func(context.Context, service.MessageBatch) error) *captureMetrics {
	t.Helper()
	metrics := &captureMetrics{values: map[string]int64{}}
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterMetricsExporter("capture", service.NewConfigSpec(),
		func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) { return metrics, nil }))
	sb := env.NewStreamBuilder()
	require.NoError(t, sb.AddInputYAML("kafka_txn:\n"+indent(testYAML(c, group, extra))))
	require.NoError(t, sb.SetMetricsYAML("capture: {}"))
	require.NoError(t, sb.SetLoggerYAML("level: none"))
	require.NoError(t, sb.AddBatchConsumerFunc(consume))
	stream, err := sb.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		_ = stream.StopWithin(10 * time.Second)
		<-done
	})
	return metrics
}

func waitMetric(t *testing.T, m *captureMetrics, key string, want int64) {
	t.Helper()
	if !testkit.Poll(10*time.Second, func() bool {
		v, ok := m.get(key)
		return ok && v == want
	}) {
		t.Fatalf("%s never became %d; metrics: %v", key, want, m.snapshot())
	}
}

// TestCountersExistAtZero: every counter exists from the start — the
// unlabelled ones when the input is built, the per-partition ones when the
// partition is assigned — so dashboards and alerts see 0, not "no data".
func TestCountersExistAtZero(t *testing.T) {
	c := newCluster(t, 2)
	m := runMetricsStream(t, c, "g-zero", "", func(context.Context, service.MessageBatch) error { return nil })
	for _, key := range []string{
		"kafka_txn_commits{,root.input}",
		"kafka_txn_commit_errors{,root.input}",
		"kafka_txn_unmatched_partition_keys{,root.input}",
		"kafka_txn_checkpoint_stalls{,root.input,cdc,0}",
		"kafka_txn_nacks{,root.input,cdc,1}",
		"kafka_txn_fences{,root.input,cdc,0}",
		"kafka_txn_in_flight{,root.input,cdc,1}",
		"kafka_txn_paused{,root.input,cdc,0}",
	} {
		waitMetric(t, m, key, 0)
	}
}

// TestCommittedLagRisesWhileStalled holds a partition at checkpoint_limit
// (the output never acknowledges): fetching is paused, so no fetch reports
// the high watermark, yet kafka_txn_committed_lag keeps rising as records
// arrive; once acknowledgements flow and offsets are committed it falls.
func TestCommittedLagRisesWhileStalled(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "")
	produce(t, p, 0, seq("a", 10)...)

	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	m := runMetricsStream(t, c, "g-lag", "checkpoint_limit: 5\nbatching:\n  count: 5\n", func(ctx context.Context, _ service.MessageBatch) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	const lag = "kafka_txn_committed_lag{,root.input,cdc,0}"
	waitMetric(t, m, "kafka_txn_paused{,root.input,cdc,0}", 1)
	waitMetric(t, m, lag, 10)
	produce(t, p, 0, seq("b", 15)...)
	waitMetric(t, m, lag, 25)
	v, _ := m.get("kafka_txn_paused{,root.input,cdc,0}")
	assert.Equal(t, int64(1), v, "still stalled while the lag rose")

	once.Do(func() { close(release) })
	waitMetric(t, m, lag, 0)
	waitMetric(t, m, "kafka_txn_committed_offset{,root.input,cdc,0}", 25)
}

// A partition's lag is set when it changes, not at every poll: a fetch names
// every partition being fetched (hundreds of them, most with nothing new),
// and setting each one's gauges again made every poll cost the partitions'
// number. Partition 1 keeps receiving records after partition 0 is read to
// its end: the polls that bring them do not set partition 0's lag again.
func TestLagIsSetWhenItChanges(t *testing.T) {
	c := newCluster(t, 2)
	p := producer(t, c, "")
	produce(t, p, 0, seq("p0-", 3)...)
	var mu sync.Mutex
	got := map[int32]int{}
	m := runMetricsStream(t, c, "g-lag-sets", "", func(_ context.Context, b service.MessageBatch) error {
		mu.Lock()
		defer mu.Unlock()
		for _, msg := range b {
			got[int32(metaInt(t, msg, consumer.MetaPartition))]++
		}
		return nil
	})
	delivered := func(part int32, n int) {
		t.Helper()
		testkit.WaitFor(t, 10*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return got[part] >= n
		}, "the records of the partition")
	}
	const lag0, lag1 = "kafka_txn_lag{,root.input,cdc,0}", "kafka_txn_lag{,root.input,cdc,1}"
	delivered(0, 3)
	waitMetric(t, m, lag0, 0)
	before, before1 := m.setCount(lag0), m.setCount(lag1)
	for i := 0; i < 5; i++ {
		produce(t, p, 1, fmt.Sprintf("p1-%d", i))
		delivered(1, i+1)
	}
	waitMetric(t, m, lag1, 0)
	assert.Greater(t, m.setCount(lag1), before1, "partition 1's lag followed its records")
	v, _ := m.get(lag0)
	assert.Zero(t, v)
	assert.Equal(t, before, m.setCount(lag0), "partition 0's lag, unchanged, set again")
}
