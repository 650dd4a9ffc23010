// Package metricscap is an in-memory Benthos metrics exporter. The demo prints
// its live status line and latency histogram from it, and the end-to-end tests
// and benchmarks read the plugins' own metrics through it rather than
// re-measuring.
package metricscap

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Capture holds every metric a stream reported. Counters and gauges are summed
// over their label values; a gauge also keeps the highest sum it reached;
// timers keep their samples.
type Capture struct {
	mu       sync.Mutex
	counters map[string]*atomic.Int64
	gauges   map[string]*gaugeSum
	timers   map[string]*samples
	// series holds, per metric, the label values of every series reported.
	series map[string]map[string]bool
}

// gaugeSum is one gauge: its value per label values, their sum, and the
// highest sum seen.
type gaugeSum struct {
	mu       sync.Mutex
	values   map[string]int64
	sum, top int64
}

func (g *gaugeSum) set(key string, v int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sum += v - g.values[key]
	g.values[key] = v
	g.top = max(g.top, g.sum)
}

type samples struct {
	mu sync.Mutex
	ns []int64
}

// New returns an empty capture.
func New() *Capture {
	return &Capture{
		counters: map[string]*atomic.Int64{},
		gauges:   map[string]*gaugeSum{},
		timers:   map[string]*samples{},
		series:   map[string]map[string]bool{},
	}
}

// Register adds a metrics exporter called name to env whose every instance
// reports into the returned Capture. Use it with
// StreamBuilder.SetMetricsYAML(name + ": {}").
func Register(env *service.Environment, name string) (*Capture, error) {
	c := New()
	err := env.RegisterMetricsExporter(name, service.NewConfigSpec().Summary("In-memory metrics for tests and the demo."),
		func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) {
			return exporter{c}, nil
		})
	return c, err
}

// Counter returns the sum of a counter over all its label values.
func (c *Capture) Counter(name string) int64 {
	c.mu.Lock()
	v := c.counters[name]
	c.mu.Unlock()
	if v == nil {
		return 0
	}
	return v.Load()
}

// Gauge returns the sum of a gauge's current values over its label values.
func (c *Capture) Gauge(name string) int64 {
	g := c.gaugeOf(name)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sum
}

// Peak returns the highest value Gauge(name) has had (0 for a gauge never
// set): what a test asks of a gauge that goes up and comes back down.
func (c *Capture) Peak(name string) int64 {
	g := c.gaugeOf(name)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.top
}

// Timings returns a copy of a timer's samples.
func (c *Capture) Timings(name string) []time.Duration {
	c.mu.Lock()
	s := c.timers[name]
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]time.Duration, len(s.ns))
	for i, v := range s.ns {
		out[i] = time.Duration(v)
	}
	return out
}

// Series returns the label values of every series of a metric that was
// reported, each joined by commas, sorted: what a test asks to check that a
// metric's series stay bounded.
func (c *Capture) Series(name string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.series[name]))
	for k := range c.series[name] {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (c *Capture) noteSeries(name string, labels []string) {
	key := strings.Join(labels, ",")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.series[name] == nil {
		c.series[name] = map[string]bool{}
	}
	c.series[name][key] = true
}

// Quantile returns the q-quantile (0..1) of a timer's samples (0 without any).
func (c *Capture) Quantile(name string, q float64) time.Duration {
	return Quantile(c.Timings(name), q)
}

// Quantile returns the q-quantile of durations, nearest-rank.
func Quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}

func (c *Capture) counter(name string) *atomic.Int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.counters[name]
	if v == nil {
		v = new(atomic.Int64)
		c.counters[name] = v
	}
	return v
}

func (c *Capture) gaugeOf(name string) *gaugeSum {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.gauges[name]
	if g == nil {
		g = &gaugeSum{values: map[string]int64{}}
		c.gauges[name] = g
	}
	return g
}

func (c *Capture) timer(name string) *samples {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.timers[name]
	if s == nil {
		s = new(samples)
		c.timers[name] = s
	}
	return s
}

type exporter struct{ c *Capture }

func (e exporter) NewCounterCtor(name string, _ ...string) service.MetricsExporterCounterCtor {
	v := e.c.counter(name)
	return func(labels ...string) service.MetricsExporterCounter {
		e.c.noteSeries(name, labels)
		return counter{v}
	}
}

func (e exporter) NewTimerCtor(name string, _ ...string) service.MetricsExporterTimerCtor {
	s := e.c.timer(name)
	return func(labels ...string) service.MetricsExporterTimer {
		e.c.noteSeries(name, labels)
		return timer{s}
	}
}

func (e exporter) NewGaugeCtor(name string, _ ...string) service.MetricsExporterGaugeCtor {
	g := e.c.gaugeOf(name)
	return func(labels ...string) service.MetricsExporterGauge {
		e.c.noteSeries(name, labels)
		key := ""
		for _, l := range labels {
			key += l + "\x00"
		}
		return gauge{g: g, key: key}
	}
}

func (exporter) Close(context.Context) error { return nil }

type counter struct{ v *atomic.Int64 }

func (c counter) Incr(n int64)          { c.v.Add(n) }
func (c counter) IncrFloat64(n float64) { c.v.Add(int64(n)) }

type timer struct{ s *samples }

func (t timer) Timing(ns int64) {
	t.s.mu.Lock()
	t.s.ns = append(t.s.ns, ns)
	t.s.mu.Unlock()
}

type gauge struct {
	g   *gaugeSum
	key string
}

func (g gauge) Set(v int64)          { g.g.set(g.key, v) }
func (g gauge) SetFloat64(v float64) { g.g.set(g.key, int64(v)) }

// Exporter returns an exporter that reports into c, for combining the
// capture with another exporter.
func (c *Capture) Exporter() service.MetricsExporter { return exporter{c} }
