package demo

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/redpanda-data/benthos/v4/public/service"
	"gopkg.in/yaml.v3"

	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
)

// The demo reads its status line and summary from an in-memory capture of
// the pipeline's metrics. A pipeline config with a metrics section of its
// own (`demo --config`, e.g. a prometheus exporter to scrape) keeps it: the
// stream reports to a tee that feeds the capture and the user's exporter,
// built from that section as a resource (its mapping applied), and serves
// the user's exporter's handler at /metrics when the config enables the
// HTTP server.

// metricsSection returns the pipeline's metrics section as YAML, or "" when
// it has none (or `none`).
func metricsSection(pipeline string) (string, error) {
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(pipeline), &doc); err != nil {
		return "", fmt.Errorf("reading the pipeline config: %w", err)
	}
	m, ok := doc["metrics"].(map[string]any)
	if !ok || len(m) == 0 {
		return "", nil
	}
	if _, none := m["none"]; none && len(m) == 1 {
		return "", nil
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("reading the pipeline's metrics section: %w", err)
	}
	return string(b), nil
}

// registerMetrics registers the exporter called name in env: the capture
// alone, or the capture teed with the user's metrics section. The returned
// function closes the user's exporter.
func registerMetrics(env *service.Environment, name, section string, vars map[string]string) (*metricscap.Capture, func(context.Context) error, error) {
	c := metricscap.New()
	noop := func(context.Context) error { return nil }
	var user *service.Metrics
	mux := &handlerMux{}
	closeUser := noop
	if section != "" {
		rb := service.NewResourceBuilder()
		rb.SetEnvVarLookupFunc(func(_ context.Context, k string) (string, bool) { v, ok := vars[k]; return v, ok })
		rb.SetHTTPMux(mux)
		if err := rb.SetMetricsYAML(section); err != nil {
			return nil, nil, fmt.Errorf("reading the pipeline's metrics section: %w", err)
		}
		res, closeFn, err := rb.Build()
		if err != nil {
			return nil, nil, fmt.Errorf("starting the pipeline's metrics exporter: %w", err)
		}
		user, closeUser = res.Metrics(), closeFn
	}
	err := env.RegisterMetricsExporter(name, service.NewConfigSpec().Summary("The demo's metrics: an in-memory capture, teed with the pipeline's own exporter."),
		func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) {
			if user == nil {
				return c.Exporter(), nil
			}
			return &tee{capture: c.Exporter(), user: user, mux: mux}, nil
		})
	if err != nil {
		_ = closeUser(context.Background())
		return nil, nil, err
	}
	return c, closeUser, nil
}

// handlerMux keeps the handlers the user's exporter registers (its
// /metrics), for the tee to serve.
type handlerMux struct {
	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
}

func (m *handlerMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.handlers == nil {
		m.handlers = map[string]http.HandlerFunc{}
	}
	m.handlers[pattern] = h
}

func (m *handlerMux) handler(pattern string) http.HandlerFunc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.handlers[pattern]
}

// tee reports every metric to the capture and to the user's metrics.
type tee struct {
	capture service.MetricsExporter
	user    *service.Metrics
	mux     *handlerMux
}

func (t *tee) NewCounterCtor(name string, keys ...string) service.MetricsExporterCounterCtor {
	a, b := t.capture.NewCounterCtor(name, keys...), t.user.NewCounter(name, keys...)
	return func(vals ...string) service.MetricsExporterCounter {
		return teeCounter{a(vals...), b, vals}
	}
}

func (t *tee) NewTimerCtor(name string, keys ...string) service.MetricsExporterTimerCtor {
	a, b := t.capture.NewTimerCtor(name, keys...), t.user.NewTimer(name, keys...)
	return func(vals ...string) service.MetricsExporterTimer {
		return teeTimer{a(vals...), b, vals}
	}
}

func (t *tee) NewGaugeCtor(name string, keys ...string) service.MetricsExporterGaugeCtor {
	a, b := t.capture.NewGaugeCtor(name, keys...), t.user.NewGauge(name, keys...)
	return func(vals ...string) service.MetricsExporterGauge {
		return teeGauge{a(vals...), b, vals}
	}
}

// HandlerFunc serves the user's exporter's /metrics on the stream's HTTP
// server; Benthos asks for it once, when the stream starts.
func (t *tee) HandlerFunc() http.HandlerFunc {
	if h := t.mux.handler("/metrics"); h != nil {
		return h
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "the pipeline's metrics exporter serves no /metrics", http.StatusNotFound)
	}
}

// Close closes the capture; the user's exporter is closed with the demo
// (Running.Close), after the stream.
func (t *tee) Close(ctx context.Context) error { return t.capture.Close(ctx) }

type teeCounter struct {
	a    service.MetricsExporterCounter
	b    *service.MetricCounter
	vals []string
}

func (c teeCounter) Incr(n int64) { c.a.Incr(n); c.b.Incr(n, c.vals...) }
func (c teeCounter) IncrFloat64(n float64) {
	if f, ok := c.a.(interface{ IncrFloat64(float64) }); ok {
		f.IncrFloat64(n)
	} else {
		c.a.Incr(int64(n))
	}
	c.b.IncrFloat64(n, c.vals...)
}

type teeTimer struct {
	a    service.MetricsExporterTimer
	b    *service.MetricTimer
	vals []string
}

func (t teeTimer) Timing(ns int64) { t.a.Timing(ns); t.b.Timing(ns, t.vals...) }

type teeGauge struct {
	a    service.MetricsExporterGauge
	b    *service.MetricGauge
	vals []string
}

func (g teeGauge) Set(v int64) { g.a.Set(v); g.b.Set(v, g.vals...) }
func (g teeGauge) SetFloat64(v float64) {
	if f, ok := g.a.(interface{ SetFloat64(float64) }); ok {
		f.SetFloat64(v)
	} else {
		g.a.Set(int64(v))
	}
	g.b.SetFloat64(v, g.vals...)
}
