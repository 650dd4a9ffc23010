package kafka_txn

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
)

// captureMetrics is a metrics exporter that keeps the last value of every
// gauge and the sum of every counter, keyed by name and label values (Benthos
// prepends the label and path labels).
type captureMetrics struct {
	mu     sync.Mutex
	values map[string]int64
	// sets counts each gauge's Set calls.
	sets map[string]int
}

type captureCounter struct {
	c   *captureMetrics
	key string
}

func (c captureCounter) Incr(n int64) {
	c.c.mu.Lock()
	c.c.values[c.key] += n
	c.c.mu.Unlock()
}

type captureGauge struct {
	c   *captureMetrics
	key string
}

func (g captureGauge) Set(v int64) {
	g.c.mu.Lock()
	g.c.values[g.key] = v
	if g.c.sets == nil {
		g.c.sets = map[string]int{}
	}
	g.c.sets[g.key]++
	g.c.mu.Unlock()
}

// setCount is how many times the gauge key was set.
func (c *captureMetrics) setCount(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sets[key]
}

type captureTimer struct{}

func (captureTimer) Timing(int64) {}

func metricKey(name string, labels []string) string {
	if len(labels) == 0 {
		return name
	}
	return name + "{" + strings.Join(labels, ",") + "}"
}

func (c *captureMetrics) NewCounterCtor(name string, _ ...string) service.MetricsExporterCounterCtor {
	return func(labels ...string) service.MetricsExporterCounter {
		return captureCounter{c: c, key: metricKey(name, labels)}
	}
}

func (c *captureMetrics) NewTimerCtor(string, ...string) service.MetricsExporterTimerCtor {
	return func(...string) service.MetricsExporterTimer { return captureTimer{} }
}

func (c *captureMetrics) NewGaugeCtor(name string, _ ...string) service.MetricsExporterGaugeCtor {
	return func(labels ...string) service.MetricsExporterGauge {
		return captureGauge{c: c, key: metricKey(name, labels)}
	}
}

func (c *captureMetrics) Close(context.Context) error { return nil }

func (c *captureMetrics) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for k, v := range c.values {
		out[k] = v
	}
	return out
}

func (c *captureMetrics) get(key string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.values[key]
	return v, ok
}

// TestStreamEndToEnd runs the input in a Benthos stream built from YAML and
// checks delivery, offset commits and the metrics.
func TestStreamEndToEnd(t *testing.T) {
	c := newCluster(t, 2)
	p := producer(t, c, "stream")
	produceTxn(t, p, 0, true, seq("p0-", 10)...)
	produceTxn(t, p, 1, true, seq("p1-", 5)...)

	metrics := &captureMetrics{values: map[string]int64{}}
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterMetricsExporter("capture", service.NewConfigSpec(),
		func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) { return metrics, nil }))

	sb := env.NewStreamBuilder()
	require.NoError(t, sb.AddInputYAML("kafka_txn:\n"+indent(testYAML(c, "g-stream", "batching:\n  count: 4\n  period: 20ms\n"))))
	require.NoError(t, sb.SetMetricsYAML("capture: {}"))
	require.NoError(t, sb.SetLoggerYAML("level: none"))

	var mu sync.Mutex
	got := map[string][]string{}
	require.NoError(t, sb.AddBatchConsumerFunc(func(_ context.Context, b service.MessageBatch) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range b {
			part, _ := m.MetaGet(consumer.MetaPartition)
			v, _ := m.AsBytes()
			got[part] = append(got[part], string(v))
		}
		return nil
	}))
	stream, err := sb.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx) }()
	defer func() {
		cancel()
		_ = stream.StopWithin(10 * time.Second)
		<-done
	}()

	waitCommittedOffsets(t, c, "g-stream", map[int32]int64{0: 10, 1: 5})
	mu.Lock()
	assert.Equal(t, seq("p0-", 10), got["0"])
	assert.Equal(t, seq("p1-", 5), got["1"])
	mu.Unlock()

	require.Eventually(t, func() bool {
		v, _ := metrics.get("kafka_txn_committed_offset{,root.input,cdc,0}")
		return v == 10
	}, 5*time.Second, 20*time.Millisecond, "metrics: %v", metrics.snapshot())
	commits, _ := metrics.get("kafka_txn_commits{,root.input}")
	assert.Positive(t, commits)
	lag, ok := metrics.get("kafka_txn_lag{,root.input,cdc,0}")
	assert.True(t, ok)
	assert.Equal(t, int64(1), lag, "the high watermark is one past the last record: the commit marker")
	inFlight, ok := metrics.get("kafka_txn_in_flight{,root.input,cdc,1}")
	assert.True(t, ok)
	assert.Zero(t, inFlight)
	// Committed through offset 10, the high watermark is 11: the marker.
	assert.Eventually(t, func() bool {
		v, ok := metrics.get("kafka_txn_committed_lag{,root.input,cdc,0}")
		return ok && v == 1
	}, 5*time.Second, 20*time.Millisecond, "kafka_txn_committed_lag of partition 0 is 1")
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}
