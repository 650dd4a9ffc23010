package starrocks_txn

import (
	"context"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// captured holds what the starrocks_txn_test_metrics exporter saw: counter
// sums, timer samples and gauge peaks, by metric name (labels summed).
var captured = &metricCapture{}

type metricCapture struct {
	mu       sync.Mutex
	counters map[string]int64
	timers   map[string][]time.Duration
	gauges   map[string]int64
	last     map[string]int64
}

func (c *metricCapture) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counters, c.timers, c.gauges, c.last = map[string]int64{}, map[string][]time.Duration{}, map[string]int64{}, map[string]int64{}
}

func (c *metricCapture) counter(name string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counters[name]
}

// gauge returns the peak a gauge reached.
func (c *metricCapture) gauge(name string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gauges[name]
}

func (c *metricCapture) timings(name string) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.timers[name]...)
}

func init() {
	captured.reset()
	service.MustRegisterMetricsExporter("starrocks_txn_test_metrics", service.NewConfigSpec(),
		func(conf *service.ParsedConfig, log *service.Logger) (service.MetricsExporter, error) {
			return captureExporter{}, nil
		})
}

type captureExporter struct{}

type captureMetric struct{ name string }

func (m captureMetric) Incr(n int64) {
	captured.mu.Lock()
	captured.counters[m.name] += n
	captured.mu.Unlock()
}

func (m captureMetric) Timing(d int64) {
	captured.mu.Lock()
	captured.timers[m.name] = append(captured.timers[m.name], time.Duration(d))
	captured.mu.Unlock()
}

func (m captureMetric) Set(v int64) {
	captured.mu.Lock()
	captured.gauges[m.name] = max(captured.gauges[m.name], v)
	captured.last[m.name] = v
	captured.mu.Unlock()
}

func (captureExporter) NewCounterCtor(name string, _ ...string) service.MetricsExporterCounterCtor {
	return func(...string) service.MetricsExporterCounter { return captureMetric{name} }
}

func (captureExporter) NewTimerCtor(name string, _ ...string) service.MetricsExporterTimerCtor {
	return func(...string) service.MetricsExporterTimer { return captureMetric{name} }
}

func (captureExporter) NewGaugeCtor(name string, _ ...string) service.MetricsExporterGaugeCtor {
	return func(...string) service.MetricsExporterGauge { return captureMetric{name} }
}

func (captureExporter) Close(context.Context) error { return nil }
