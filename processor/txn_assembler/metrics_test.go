package txnassembler

import (
	"context"
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

func TestMetrics(t *testing.T) {
	capture := &captureMetrics{counters: map[string]int64{}}
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterMetricsExporter("capture", service.NewConfigSpec(),
		func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) { return capture, nil }))
	b := env.NewStreamBuilder()
	require.NoError(t, b.SetMetricsYAML(`capture: {}`))
	require.NoError(t, b.SetLoggerYAML(`level: none`))
	b.SetThreads(1)
	require.NoError(t, b.AddProcessorYAML(`txn_assembler: {}`))
	produce, err := b.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, b.AddBatchConsumerFunc(func(context.Context, service.MessageBatch) error { return nil }))
	stream, err := b.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { _ = stream.Run(ctx) }()
	defer func() { _ = stream.StopWithin(5 * time.Second) }()

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
