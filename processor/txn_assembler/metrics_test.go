package txnassembler

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// captureMetrics is a metrics exporter that keeps counter totals by name and
// label values.
type captureMetrics struct {
	mu       sync.Mutex
	counters map[string]int64
}

type captureCounter struct {
	m   *captureMetrics
	key string
}

func (c captureCounter) Incr(n int64) {
	c.m.mu.Lock()
	c.m.counters[c.key] += n
	c.m.mu.Unlock()
}

type noopTimer struct{}

func (noopTimer) Timing(int64) {}

type noopGauge struct{}

func (noopGauge) Set(int64) {}

func (m *captureMetrics) NewCounterCtor(name string, _ ...string) service.MetricsExporterCounterCtor {
	return func(labelValues ...string) service.MetricsExporterCounter {
		// Benthos puts the component label and path first; keep the
		// plugin's own labels.
		if len(labelValues) >= 2 {
			labelValues = labelValues[2:]
		}
		return captureCounter{m: m, key: strings.Join(append([]string{name}, labelValues...), "|")}
	}
}

func (m *captureMetrics) NewTimerCtor(string, ...string) service.MetricsExporterTimerCtor {
	return func(...string) service.MetricsExporterTimer { return noopTimer{} }
}

func (m *captureMetrics) NewGaugeCtor(string, ...string) service.MetricsExporterGaugeCtor {
	return func(...string) service.MetricsExporterGauge { return noopGauge{} }
}

func (m *captureMetrics) Close(context.Context) error { return nil }

func (m *captureMetrics) get(key string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counters[key]
}

// captureStream runs a stream of one txn_assembler whose metrics go to the
// returned capture; produce returns once its batch is acknowledged.
func captureStream(t *testing.T) (context.Context, service.MessageBatchHandlerFunc, *captureMetrics) {
	t.Helper()
	return captureStreamWith(t, `txn_assembler: {}`)
}

// captureStreamWith is captureStream with the processor configured by
// processorYAML.
func captureStreamWith(t *testing.T, processorYAML string) (context.Context, service.MessageBatchHandlerFunc, *captureMetrics) {
	t.Helper()
	capture := &captureMetrics{counters: map[string]int64{}}
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterMetricsExporter("capture", service.NewConfigSpec(),
		func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) { return capture, nil }))
	b := env.NewStreamBuilder()
	require.NoError(t, b.SetMetricsYAML(`capture: {}`))
	require.NoError(t, b.SetLoggerYAML(`level: none`))
	b.SetThreads(1)
	require.NoError(t, b.AddProcessorYAML(processorYAML))
	produce, err := b.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, b.AddBatchConsumerFunc(func(context.Context, service.MessageBatch) error { return nil }))
	stream, err := b.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	go func() { _ = stream.Run(ctx) }()
	t.Cleanup(func() { _ = stream.StopWithin(5 * time.Second) })
	return ctx, produce, capture
}

func TestMetrics(t *testing.T) {
	ctx, produce, capture := captureStream(t)

	s := &src{topic: "t", part: 0}
	require.NoError(t, produce(ctx, service.MessageBatch{
		s.begin("a"), s.data("a", `{"id":1}`), s.begin("b"), s.data("b", `{"id":2}`), s.end("b"),
		s.end("nothing-open"), s.msg(`garbage`),
		s.data("c", `{"id":3}`), s.data("d", `{"id":4}`),
	}))

	assert.Equal(t, int64(1), capture.get("txn_assembler_transactions_ended"))
	assert.Equal(t, int64(1), capture.get("txn_assembler_transactions_aborted"))
	assert.Equal(t, int64(1), capture.get("txn_assembler_dropped|begin"), "the second BEGIN became an abort marker")
	assert.Equal(t, int64(1), capture.get("txn_assembler_dropped|end"))
	assert.Equal(t, int64(1), capture.get("txn_assembler_errors|bad_input"))
	assert.Equal(t, int64(1), capture.get("txn_assembler_errors|incomplete"), "c follows the unreadable message")
	assert.Equal(t, int64(1), capture.get("txn_assembler_errors|violation"))
	assert.Equal(t, int64(1), capture.get("txn_assembler_contract_violations"))
}

// metricsTraffic is a partition's traffic that moves every counter of the
// envelope format: whole transactions, a BEGIN while one is open (an abort),
// ENDs that end nothing, unreadable messages, rows flagged incomplete or
// interleaved, and replays. It is built afresh per run, since the processor
// stamps its input in place.
func metricsTraffic() []*service.Message {
	s := &src{topic: "t", part: 0}
	var msgs []*service.Message
	for i := range 6 {
		a, b := "a"+strconv.Itoa(i), "b"+strconv.Itoa(i)
		msgs = append(msgs,
			s.begin(a), s.data(a, `{"id":1}`), s.data(a, `{"__op":1,"id":2}`), s.end(a),
			s.begin(b), s.data(b, `{"id":3}`), s.begin(a), s.data(a, `{"id":4}`), s.end(a),
			s.end("nothing-open"), s.msg(`garbage`), s.data(b, `{"id":5}`), s.data(a, `{"id":6}`), s.end(b),
		)
		replay := kafkaMsg("t", 0, s.next-3, envelope(0, a, "DATA", "test", "orders", `{"id":7}`))
		msgs = append(msgs, replay, kafkaMsg("t", 0, s.next-2, envelope(0, a, "TXN_BEGIN", "", "", "")))
	}
	return msgs
}

// metricSnapshots runs the traffic through a stream in batches of size and
// returns the processor's counters after each batch, keyed by the number of messages
// processed so far.
func metricSnapshots(t *testing.T, msgs []*service.Message, size int) map[int]map[string]int64 {
	t.Helper()
	ctx, produce, capture := captureStream(t)

	snaps := map[int]map[string]int64{}
	for i := 0; i < len(msgs); i += size {
		batch := msgs[i:min(i+size, len(msgs))]
		// The producer returns once the batch is acknowledged, after the
		// processor returned it.
		require.NoError(t, produce(ctx, service.MessageBatch(batch)))
		capture.mu.Lock()
		snap := maps.Clone(capture.counters)
		capture.mu.Unlock()
		// Benthos's own processor_ counters count batches.
		maps.DeleteFunc(snap, func(k string, _ int64) bool { return !strings.HasPrefix(k, "txn_assembler_") })
		snaps[i+len(batch)] = snap
	}
	return snaps
}

// TestMetricsCountedPerBatchEqualPerMessage proves that summing the
// increments over a call changes no counter: run one message per batch
// (every increment reported at once, as a direct Incr per event would) and
// in larger batches, the counters after each batch are the same, so every
// count is reported before its ProcessBatch call returns and none is lost
// or counted twice.
func TestMetricsCountedPerBatchEqualPerMessage(t *testing.T) {
	one := metricSnapshots(t, metricsTraffic(), 1)
	final := one[len(metricsTraffic())]
	for _, key := range []string{
		"txn_assembler_transactions_ended", "txn_assembler_transactions_aborted",
		"txn_assembler_dropped|begin", "txn_assembler_dropped|end", "txn_assembler_errors|bad_input",
		"txn_assembler_errors|incomplete", "txn_assembler_errors|violation", "txn_assembler_errors|replay",
		"txn_assembler_contract_violations",
	} {
		assert.Positive(t, final[key], "the traffic moves %s", key)
	}
	for _, size := range []int{7, 16, len(metricsTraffic())} {
		batched := metricSnapshots(t, metricsTraffic(), size)
		for n, got := range batched {
			assert.Equal(t, one[n], got, "batches of %d: the counters after %d messages", size, n)
		}
	}
}

// TestMetricSeriesExistFromTheStart: every series of the processor exists,
// at zero, once the first message went through, though nothing was flagged,
// aborted or dropped: a series that appears only when it first moves is
// missed by rate(), which needs two samples, so a dashboard would never see
// the first error.
func TestMetricSeriesExistFromTheStart(t *testing.T) {
	ctx, produce, capture := captureStream(t)
	s := &src{topic: "t", part: 0}
	require.NoError(t, produce(ctx, service.MessageBatch{s.data("a", `{"id":1}`), s.end("a")}))

	capture.mu.Lock()
	defer capture.mu.Unlock()
	want := map[string]int64{
		"txn_assembler_transactions_ended":   1,
		"txn_assembler_transactions_aborted": 0,
		"txn_assembler_contract_violations":  0,
	}
	for _, r := range errorReasons {
		want["txn_assembler_errors|"+r] = 0
	}
	for _, k := range dropKinds {
		want["txn_assembler_dropped|"+k] = 0
	}
	for key, n := range want {
		got, exists := capture.counters[key]
		if assert.True(t, exists, "the series %s exists", key) {
			assert.Equal(t, n, got, key)
		}
	}
	for _, key := range []string{"txn_assembler_errors|bad_input", "txn_assembler_errors|replay", "txn_assembler_dropped|skip", "txn_assembler_dropped|ddl"} {
		assert.Contains(t, capture.counters, key)
	}
}
