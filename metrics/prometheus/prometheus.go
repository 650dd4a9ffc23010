// Package prometheus is a Benthos metrics exporter called `prometheus`, built
// on the Prometheus Go client: counters, gauges and timers (as histograms in
// seconds) served in the Prometheus text format at /metrics on the Benthos
// HTTP server and, optionally, on a listener of its own, and optionally pushed
// to a Pushgateway.
//
// Importing the package registers the exporter in the global environment,
// unless a metrics exporter called `prometheus` is already registered there
// (a binary that also imports Redpanda Connect): then it registers nothing.
package prometheus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/redact"
)

// gcCPURule adds, to the Go collector's defaults, the garbage collector's
// CPU time and the runtime's total, whose ratio is the collector's share.
var gcCPURule = collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/(gc/total|total):cpu-seconds$`)}

// Name is the name the exporter is registered under.
const Name = "prometheus"

func init() {
	if _, err := Register(service.GlobalEnvironment(), Name); err != nil {
		panic(err) // only an invalid name gets here
	}
}

// Register adds the exporter to env under name unless env already has a
// metrics exporter of that name, and reports whether it did.
func Register(env *service.Environment, name string) (bool, error) {
	if hasMetricsExporter(env, name) {
		return false, nil
	}
	err := env.RegisterMetricsExporter(name, Spec(), func(conf *service.ParsedConfig, log *service.Logger) (service.MetricsExporter, error) {
		return New(conf, log)
	})
	if err != nil {
		return false, fmt.Errorf("registering the %s metrics exporter: %w", name, err)
	}
	return true, nil
}

// hasMetricsExporter reports whether env has a metrics exporter called name.
// Environment.GetMetricsConfig cannot tell: in Benthos v4.60.0 it consults
// the global set of exporters whatever the environment. Linting a config of
// that exporter in env can: only an unknown name fails to infer the type.
func hasMetricsExporter(env *service.Environment, name string) bool {
	err := env.NewStreamBuilder().SetMetricsYAML(name + ": {}")
	return err == nil || !strings.Contains(err.Error(), "unable to infer component type")
}

// Kind is the Prometheus type a Benthos metric is exported as.
type Kind string

// The kinds of exported metrics.
const (
	KindCounter   Kind = "counter"
	KindGauge     Kind = "gauge"
	KindHistogram Kind = "histogram"
	KindSummary   Kind = "summary"
)

// Family describes one metric a component declared to the exporter.
type Family struct {
	// Name is the Prometheus metric name (sanitised).
	Name string
	// Source is the name the component gave Benthos.
	Source string
	Kind   Kind
	// Labels are the (sanitised) label keys, Benthos's own ("label", "path")
	// included.
	Labels []string
}

// Series are the sample names the family appears under in a scrape: the name
// itself for counters and gauges, <name>_bucket/_sum/_count for histograms
// and <name>/_sum/_count for summaries.
func (f Family) Series() []string {
	switch f.Kind {
	case KindHistogram:
		return []string{f.Name + "_bucket", f.Name + "_sum", f.Name + "_count"}
	case KindSummary:
		return []string{f.Name, f.Name + "_sum", f.Name + "_count"}
	default:
		return []string{f.Name}
	}
}

// Exporter is the prometheus metrics exporter. It implements
// service.MetricsExporter and, through HandlerFunc, gives the Benthos HTTP
// server its /metrics endpoint.
type Exporter struct {
	log          *service.Logger
	reg          *prom.Registry
	handler      http.Handler
	useHistogram bool
	buckets      []float64
	objectives   map[float64]float64

	mu       sync.Mutex
	families map[string]*family
	warned   map[string]bool

	srv       *http.Server
	addr      string
	serveDone chan struct{}

	pusher   *push.Pusher
	stopPush chan struct{}
	pushDone chan struct{}

	filePath  string
	closeOnce sync.Once
	closeErr  error
}

type family struct {
	Family
	counter  *prom.CounterVec
	gauge    *prom.GaugeVec
	observer prom.ObserverVec
}

// New builds an exporter from a parsed config of Spec. It opens the listener
// of listen_address (if any) and starts pushing (if push_url is set) at once.
func New(conf *service.ParsedConfig, log *service.Logger) (*Exporter, error) {
	e := &Exporter{
		log:      log,
		reg:      prom.NewRegistry(),
		families: map[string]*family{},
		warned:   map[string]bool{},
	}
	var err error
	if e.useHistogram, err = conf.FieldBool(fieldUseHistogram); err != nil {
		return nil, err
	}
	if e.buckets, err = conf.FieldFloatList(fieldBuckets); err != nil {
		return nil, err
	}
	if len(e.buckets) == 0 {
		e.buckets = slices.Clone(DefaultBuckets)
	}
	for i := 1; i < len(e.buckets); i++ {
		if e.buckets[i] <= e.buckets[i-1] {
			return nil, fmt.Errorf("histogram_buckets must be strictly increasing, but %v follows %v: sort them and remove duplicates", e.buckets[i], e.buckets[i-1])
		}
	}
	if e.objectives, err = objectives(conf); err != nil {
		return nil, err
	}
	e.handler = promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})

	if on, err := conf.FieldBool(fieldProcessMetrics); err != nil {
		return nil, err
	} else if on {
		if err := e.reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, fmt.Errorf("adding the process metrics: %w", err)
		}
	}
	if on, err := conf.FieldBool(fieldGoMetrics); err != nil {
		return nil, err
	} else if on {
		if err := e.reg.Register(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(gcCPURule))); err != nil {
			return nil, fmt.Errorf("adding the Go runtime metrics: %w", err)
		}
	}
	if e.filePath, err = conf.FieldString(fieldFileOutputPath); err != nil {
		return nil, err
	}

	if err := e.startPush(conf); err != nil {
		return nil, err
	}
	addr, err := conf.FieldString(fieldListenAddress)
	if err != nil {
		return nil, err
	}
	if addr != "" {
		if err := e.listen(addr); err != nil {
			e.stopPushing()
			return nil, err
		}
	}
	return e, nil
}

func objectives(conf *service.ParsedConfig) (map[float64]float64, error) {
	objs, err := conf.FieldObjectList(fieldObjectives)
	if err != nil {
		return nil, err
	}
	out := make(map[float64]float64, len(objs))
	for _, o := range objs {
		q, err := o.FieldFloat(fieldObjQuantile)
		if err != nil {
			return nil, err
		}
		e, err := o.FieldFloat(fieldObjError)
		if err != nil {
			return nil, err
		}
		if q <= 0 || q >= 1 {
			return nil, fmt.Errorf("summary_quantiles_objectives: quantile %v is not between 0 and 1", q)
		}
		out[q] = e
	}
	return out, nil
}

func (e *Exporter) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for Prometheus scrapes on listen_address %q: %w; choose a free address, or set listen_address to \"\" and scrape the Benthos HTTP server's /metrics", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.handler)
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	e.addr = ln.Addr().String()
	e.serveDone = make(chan struct{})
	go func() {
		defer close(e.serveDone)
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Errorf("Serving Prometheus metrics on %s stopped: %v", e.addr, err)
		}
	}()
	e.log.Infof("Serving Prometheus metrics at http://%s/metrics", e.addr)
	return nil
}

func (e *Exporter) startPush(conf *service.ParsedConfig) error {
	url, err := conf.FieldString(fieldPushURL)
	if err != nil || url == "" {
		return err
	}
	job, err := conf.FieldString(fieldPushJobName)
	if err != nil {
		return err
	}
	if job == "" {
		return errors.New("push_job_name must not be empty when push_url is set")
	}
	interval, err := conf.FieldDuration(fieldPushInterval)
	if err != nil {
		return err
	}
	if interval <= 0 {
		return fmt.Errorf("push_interval must be positive, got %v", interval)
	}
	e.pusher = push.New(url, job).Gatherer(e.reg).Client(&http.Client{Timeout: 10 * time.Second})
	auth := conf.Namespace(fieldPushBasicAuth)
	user, err := auth.FieldString(fieldPushUsername)
	if err != nil {
		return err
	}
	if user != "" {
		pass, err := auth.FieldString(fieldPushPassword)
		if err != nil {
			return err
		}
		e.pusher = e.pusher.BasicAuth(user, pass)
	}
	e.stopPush = make(chan struct{})
	e.pushDone = make(chan struct{})
	// push_url may carry credentials (http://user:secret@host); the push
	// client quotes the URL in its errors, so both are redacted.
	go e.pushLoop(redact.URL(url), interval)
	return nil
}

func (e *Exporter) pushLoop(url string, interval time.Duration) {
	defer close(e.pushDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-e.stopPush:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), interval+10*time.Second)
		err := redact.Error(e.pusher.PushContext(ctx))
		cancel()
		switch {
		case err != nil && !failing:
			e.log.Warnf("Pushing metrics to %s failed (retrying every %v): %v", url, interval, err)
		case err == nil && failing:
			e.log.Infof("Pushing metrics to %s works again", url)
		}
		failing = err != nil
	}
}

func (e *Exporter) stopPushing() {
	if e.stopPush != nil {
		close(e.stopPush)
		<-e.pushDone
	}
}

// Addr is the address the listener of listen_address is bound to ("" when
// there is none); with port 0 it tells the port chosen.
func (e *Exporter) Addr() string { return e.addr }

// Gatherer is the registry every metric is exported from.
func (e *Exporter) Gatherer() prom.Gatherer { return e.reg }

// HandlerFunc serves the metrics in the Prometheus text format. Benthos
// mounts it on its HTTP server at /metrics and /stats.
func (e *Exporter) HandlerFunc() http.HandlerFunc { return e.handler.ServeHTTP }

// Families lists every metric components declared so far, sorted by name.
func (e *Exporter) Families() []Family {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Family, 0, len(e.families))
	for _, f := range e.families {
		out = append(out, Family{Name: f.Name, Source: f.Source, Kind: f.Kind, Labels: slices.Clone(f.Labels)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// declare returns the family of a metric, creating and registering it on
// first use; nil when it conflicts with an existing one (logged once).
func (e *Exporter) declare(source string, kind Kind, labelKeys []string) *family {
	name := SanitizeName(source)
	labels := make([]string, len(labelKeys))
	for i, k := range labelKeys {
		labels[i] = SanitizeLabel(k)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if f, ok := e.families[name]; ok {
		if f.Kind == kind && slices.Equal(f.Labels, labels) {
			return f
		}
		e.warnLocked(name, "Metric %q (%s, labels %v) is dropped: %q is already exported as a %s with labels %v", source, kind, labels, name, f.Kind, f.Labels)
		return nil
	}
	f := &family{Family: Family{Name: name, Source: source, Kind: kind, Labels: labels}}
	help := fmt.Sprintf("Benthos %s %s.", kind, source)
	var c prom.Collector
	switch kind {
	case KindCounter:
		f.counter = prom.NewCounterVec(prom.CounterOpts{Name: name, Help: help}, labels)
		c = f.counter
	case KindGauge:
		f.gauge = prom.NewGaugeVec(prom.GaugeOpts{Name: name, Help: help}, labels)
		c = f.gauge
	case KindHistogram:
		v := prom.NewHistogramVec(prom.HistogramOpts{Name: name, Help: "Benthos timer " + source + ", in seconds.", Buckets: e.buckets}, labels)
		f.observer, c = v, v
	case KindSummary:
		v := prom.NewSummaryVec(prom.SummaryOpts{Name: name, Help: "Benthos timer " + source + ", in seconds.", Objectives: e.objectives}, labels)
		f.observer, c = v, v
	}
	if err := e.reg.Register(c); err != nil {
		e.warnLocked(name, "Metric %q (%s, labels %v) cannot be exported: %v", source, kind, labels, err)
		return nil
	}
	e.families[name] = f
	return f
}

func (e *Exporter) warn(key, format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.warnLocked(key, format, args...)
}

func (e *Exporter) warnLocked(key, format string, args ...any) {
	if e.warned[key] {
		return
	}
	e.warned[key] = true
	e.log.Warnf(format, args...)
}

func cleanValues(values []string) []string {
	for i, v := range values {
		if !utf8.ValidString(v) {
			values = slices.Clone(values)
			values[i] = strings.ToValidUTF8(v, "\uFFFD")
		}
	}
	return values
}

// NewCounterCtor implements service.MetricsExporter.
func (e *Exporter) NewCounterCtor(name string, labelKeys ...string) service.MetricsExporterCounterCtor {
	f := e.declare(name, KindCounter, labelKeys)
	return func(labelValues ...string) service.MetricsExporterCounter {
		if f == nil {
			return noop{}
		}
		c, err := f.counter.GetMetricWithLabelValues(cleanValues(labelValues)...)
		if err != nil {
			e.warn(f.Name+"\x00values", "Metric %q: label values %q dropped: %v", f.Source, labelValues, err)
			return noop{}
		}
		return counter{c}
	}
}

// NewGaugeCtor implements service.MetricsExporter.
func (e *Exporter) NewGaugeCtor(name string, labelKeys ...string) service.MetricsExporterGaugeCtor {
	f := e.declare(name, KindGauge, labelKeys)
	return func(labelValues ...string) service.MetricsExporterGauge {
		if f == nil {
			return noop{}
		}
		g, err := f.gauge.GetMetricWithLabelValues(cleanValues(labelValues)...)
		if err != nil {
			e.warn(f.Name+"\x00values", "Metric %q: label values %q dropped: %v", f.Source, labelValues, err)
			return noop{}
		}
		return gauge{g}
	}
}

// NewTimerCtor implements service.MetricsExporter.
func (e *Exporter) NewTimerCtor(name string, labelKeys ...string) service.MetricsExporterTimerCtor {
	kind := KindSummary
	if e.useHistogram {
		kind = KindHistogram
	}
	f := e.declare(name, kind, labelKeys)
	return func(labelValues ...string) service.MetricsExporterTimer {
		if f == nil {
			return noop{}
		}
		o, err := f.observer.GetMetricWithLabelValues(cleanValues(labelValues)...)
		if err != nil {
			e.warn(f.Name+"\x00values", "Metric %q: label values %q dropped: %v", f.Source, labelValues, err)
			return noop{}
		}
		return timer{o}
	}
}

// Close stops the listener and the pushing, pushes a last time and writes
// file_output_path. Calls after the first return the first's result.
func (e *Exporter) Close(ctx context.Context) error {
	e.closeOnce.Do(func() {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
		}
		var errs []error
		if e.srv != nil {
			if err := e.srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("stopping the metrics listener on %s: %w", e.addr, err))
			}
			<-e.serveDone
		}
		if e.pusher != nil {
			e.stopPushing()
			if err := e.pusher.PushContext(ctx); err != nil {
				errs = append(errs, fmt.Errorf("pushing the final metrics: %w", redact.Error(err)))
			}
		}
		if e.filePath != "" {
			if err := prom.WriteToTextfile(e.filePath, e.reg); err != nil {
				errs = append(errs, fmt.Errorf("writing the metrics to file_output_path: %w", err))
			}
		}
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}

type counter struct{ c prom.Counter }

func (c counter) Incr(n int64) {
	if n > 0 {
		c.c.Add(float64(n))
	}
}

func (c counter) IncrFloat64(n float64) {
	if n > 0 {
		c.c.Add(n)
	}
}

type gauge struct{ g prom.Gauge }

func (g gauge) Set(v int64)          { g.g.Set(float64(v)) }
func (g gauge) SetFloat64(v float64) { g.g.Set(v) }

type timer struct{ o prom.Observer }

func (t timer) Timing(ns int64) { t.o.Observe(float64(ns) / 1e9) }

type noop struct{}

func (noop) Incr(int64)          {}
func (noop) IncrFloat64(float64) {}
func (noop) Set(int64)           {}
func (noop) SetFloat64(float64)  {}
func (noop) Timing(int64)        {}
