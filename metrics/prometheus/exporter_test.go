package prometheus_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/metrics/prometheus"
)

// probe is a processor that reports one counter, one gauge and one timer per
// message, with labels, through the Benthos metrics API.
type probe struct {
	c *service.MetricCounter
	g *service.MetricGauge
	t *service.MetricTimer
}

func (p *probe) Process(_ context.Context, m *service.Message) (service.MessageBatch, error) {
	p.c.Incr(2, "a")
	p.g.Set(42)
	p.t.Timing(int64(1500*time.Millisecond), "db1")
	return service.MessageBatch{m}, nil
}

func (*probe) Close(context.Context) error { return nil }

func registerProbe(t *testing.T, env *service.Environment) {
	t.Helper()
	require.NoError(t, env.RegisterProcessor("metrics_probe", service.NewConfigSpec(),
		func(_ *service.ParsedConfig, mgr *service.Resources) (service.Processor, error) {
			m := mgr.Metrics()
			return &probe{
				c: m.NewCounter("probe_counter", "kind"),
				g: m.NewGauge("probe.gauge-x"),
				t: m.NewTimer("probe_latency_ns", "database"),
			}, nil
		}))
}

// A stream's own and built-in metrics reach /metrics on the Benthos HTTP
// server with their Prometheus types, labels and values.
func TestStreamMetricsOnBenthosHTTPServer(t *testing.T) {
	env := service.NewEnvironment()
	registerProbe(t, env)
	b := env.NewStreamBuilder()
	mux := http.NewServeMux()
	b.SetHTTPMux(mux)
	require.NoError(t, b.SetMetricsYAML(`prometheus:
  histogram_buckets: [1, 1.5, 2]
`))
	require.NoError(t, b.AddProcessorYAML(`label: probe
metrics_probe: {}`))
	produce, err := b.AddProducerFunc()
	require.NoError(t, err)
	var mu sync.Mutex
	var got int
	require.NoError(t, b.AddConsumerFunc(func(context.Context, *service.Message) error {
		mu.Lock()
		got++
		mu.Unlock()
		return nil
	}))
	strm, err := b.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- strm.Run(ctx) }()
	for i := range 3 {
		require.NoError(t, produce(ctx, service.NewMessage(fmt.Appendf(nil, "m%d", i))))
	}

	fams := parse(t, serveMux(t, mux))

	c := series(t, fams, "probe_counter", map[string]string{"kind": "a", "label": "probe"})
	assert.Equal(t, dto.MetricType_COUNTER, fams["probe_counter"].GetType())
	assert.InDelta(t, 6, c.GetCounter().GetValue(), 1e-9, "3 messages × Incr(2)")

	g := series(t, fams, "probe_gauge_x", map[string]string{"label": "probe"})
	assert.Equal(t, dto.MetricType_GAUGE, fams["probe_gauge_x"].GetType(), "the name is sanitised")
	assert.InDelta(t, 42, g.GetGauge().GetValue(), 1e-9)

	h := series(t, fams, "probe_latency_ns", map[string]string{"database": "db1", "label": "probe"})
	assert.Equal(t, dto.MetricType_HISTOGRAM, fams["probe_latency_ns"].GetType())
	assert.EqualValues(t, 3, h.GetHistogram().GetSampleCount())
	assert.InDelta(t, 4.5, h.GetHistogram().GetSampleSum(), 1e-9, "timers are observed in seconds")
	cum := map[float64]uint64{}
	for _, bk := range h.GetHistogram().GetBucket() {
		cum[bk.GetUpperBound()] = bk.GetCumulativeCount()
	}
	assert.Equal(t, map[float64]uint64{1: 0, 1.5: 3, 2: 3, math.Inf(1): 3}, cum, "1.5 s lands in the le=1.5 bucket")

	// Benthos's own component metrics come through too.
	in := series(t, fams, "processor_received", map[string]string{"label": "probe"})
	assert.Equal(t, dto.MetricType_COUNTER, fams["processor_received"].GetType())
	assert.InDelta(t, 3, in.GetCounter().GetValue(), 1e-9)

	// /stats is the same handler.
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stats", nil))
	assert.Contains(t, rec.Body.String(), "# TYPE probe_counter counter")

	require.NoError(t, strm.StopWithin(5*time.Second))
	mu.Lock()
	assert.Equal(t, 3, got)
	mu.Unlock()
}

// listen_address serves /metrics on a listener of the exporter's own, which
// Close stops.
func TestOwnListener(t *testing.T) {
	e := newExporter(t, `listen_address: 127.0.0.1:0`)
	require.NotEmpty(t, e.Addr())
	e.NewCounterCtor("hits", "path")("/x").Incr(5)
	e.NewGaugeCtor("depth")().Set(-3)

	fams := parse(t, scrape(t, "http://"+e.Addr()+"/metrics"))
	assert.InDelta(t, 5, series(t, fams, "hits", map[string]string{"path": "/x"}).GetCounter().GetValue(), 1e-9)
	assert.InDelta(t, -3, series(t, fams, "depth", nil).GetGauge().GetValue(), 1e-9)

	require.NoError(t, e.Close(context.Background()))
	_, err := http.Get("http://" + e.Addr() + "/metrics")
	require.Error(t, err, "the listener is closed")
	require.NoError(t, e.Close(context.Background()), "a second Close is harmless")
}

func TestListenAddressInUse(t *testing.T) {
	e := newExporter(t, `listen_address: 127.0.0.1:0`)
	conf, err := prometheus.Spec().ParseYAML("listen_address: "+e.Addr(), nil)
	require.NoError(t, err)
	_, err = prometheus.New(conf, service.MockResources().Logger())
	require.ErrorContains(t, err, "listen_address")
	require.ErrorContains(t, err, e.Addr())
}

func TestNoListenerByDefault(t *testing.T) {
	e := newExporter(t, `{}`)
	assert.Empty(t, e.Addr())
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"output_latency_ns": "output_latency_ns",
		"a.b-c d":           "a_b_c_d",
		"9lives":            "_9lives",
		"ns:sub_total":      "ns:sub_total",
		"héllo":             "h_llo",
		"":                  "_",
	} {
		assert.Equal(t, want, prometheus.SanitizeName(in), in)
	}
	for in, want := range map[string]string{
		"kafka_partition": "kafka_partition",
		"a:b":             "a_b",
		"__reserved":      "_reserved",
		"1st":             "_1st",
	} {
		assert.Equal(t, want, prometheus.SanitizeLabel(in), in)
	}

	e := newExporter(t, `{}`)
	e.NewCounterCtor("weird.name-1", "__kind", "a:b")("x", "y").Incr(1)
	text := serveMux(t, e.HandlerFunc())
	fams := parse(t, text)
	m := series(t, fams, "weird_name_1", map[string]string{"_kind": "x", "a_b": "y"})
	assert.InDelta(t, 1, m.GetCounter().GetValue(), 1e-9)
	assert.Equal(t, []prometheus.Family{{Name: "weird_name_1", Source: "weird.name-1", Kind: prometheus.KindCounter, Labels: []string{"_kind", "a_b"}}}, e.Families())
}

// Label values pass through unchanged, except invalid UTF-8.
func TestLabelValuesPassThrough(t *testing.T) {
	e := newExporter(t, `{}`)
	e.NewGaugeCtor("g", "partition", "txn_id")("cdc/7", "tx \"42\"\n").Set(1)
	e.NewGaugeCtor("g", "partition", "txn_id")("bad\xff", "x").Set(2)
	fams := parse(t, serveMux(t, e.HandlerFunc()))
	assert.InDelta(t, 1, series(t, fams, "g", map[string]string{"partition": "cdc/7", "txn_id": "tx \"42\"\n"}).GetGauge().GetValue(), 1e-9)
	assert.InDelta(t, 2, series(t, fams, "g", map[string]string{"partition": "bad\uFFFD"}).GetGauge().GetValue(), 1e-9)
}

// Two components declaring the same metric share it; a clash in type or
// labels drops the second without a panic.
func TestSameNameSharedAndConflictsDropped(t *testing.T) {
	e := newExporter(t, `{}`)
	e.NewCounterCtor("c", "k")("v").Incr(1)
	e.NewCounterCtor("c", "k")("v").Incr(2)
	assert.NotPanics(t, func() {
		e.NewGaugeCtor("c", "k")("v").Set(100)       // other type
		e.NewCounterCtor("c", "other")("v").Incr(50) // other labels
		e.NewCounterCtor("c", "k")("v", "extra").Incr(50)
		e.NewCounterCtor("c", "k")("v").Incr(-7) // counters never go down
		e.NewTimerCtor("c_x.y")().Timing(1)
		e.NewCounterCtor("c_x_y_count")().Incr(1) // clashes with the histogram's _count
	})
	fams := parse(t, serveMux(t, e.HandlerFunc()))
	assert.Equal(t, dto.MetricType_COUNTER, fams["c"].GetType())
	assert.InDelta(t, 3, series(t, fams, "c", map[string]string{"k": "v"}).GetCounter().GetValue(), 1e-9)
	assert.Len(t, fams["c"].GetMetric(), 1)
}

func TestSummaryTiming(t *testing.T) {
	e := newExporter(t, `
use_histogram_timing: false
summary_quantiles_objectives: [{quantile: 0.5, error: 0.01}]
`)
	tm := e.NewTimerCtor("lat_ns")
	for _, ms := range []int64{100, 200, 300} {
		tm().Timing(ms * int64(time.Millisecond))
	}
	fams := parse(t, serveMux(t, e.HandlerFunc()))
	require.Equal(t, dto.MetricType_SUMMARY, fams["lat_ns"].GetType())
	s := fams["lat_ns"].GetMetric()[0].GetSummary()
	assert.EqualValues(t, 3, s.GetSampleCount())
	assert.InDelta(t, 0.6, s.GetSampleSum(), 1e-9)
	require.Len(t, s.GetQuantile(), 1)
	assert.InDelta(t, 0.2, s.GetQuantile()[0].GetValue(), 1e-9)
	assert.Equal(t, []string{"lat_ns", "lat_ns_sum", "lat_ns_count"}, e.Families()[0].Series())
}

func TestRuntimeCollectors(t *testing.T) {
	e := newExporter(t, `{add_go_metrics: true, add_process_metrics: true}`)
	fams := parse(t, serveMux(t, e.HandlerFunc()))
	assert.Contains(t, fams, "go_goroutines")
	assert.Contains(t, fams, "process_start_time_seconds")
	assert.Contains(t, fams, "go_memstats_alloc_bytes_total")
	assert.Contains(t, fams, "go_memstats_mallocs_total")
	// The collector's share of the CPU is the ratio of these two.
	assert.Contains(t, fams, "go_cpu_classes_gc_total_cpu_seconds_total")
	assert.Contains(t, fams, "go_cpu_classes_total_cpu_seconds_total")

	e = newExporter(t, `{}`)
	fams = parse(t, serveMux(t, e.HandlerFunc()))
	assert.NotContains(t, fams, "go_goroutines")
}

func TestConfigErrors(t *testing.T) {
	env := service.NewEnvironment()
	lint := func(yaml string) error {
		b := env.NewStreamBuilder()
		return b.SetYAML("metrics:\n  prometheus:\n" + yaml + "\noutput:\n  drop: {}\n")
	}
	require.NoError(t, lint("    histogram_buckets: [0.1, 1, 10]"))
	assert.ErrorContains(t, lint("    histogram_buckets: [1, 0.1]"), "strictly increasing")
	assert.ErrorContains(t, lint("    histogram_buckets: [1, 1]"), "strictly increasing")
	assert.ErrorContains(t, lint("    push_basic_auth: {username: u, password: p}"), "push_url is empty")
	assert.ErrorContains(t, lint("    summary_quantiles_objectives: [{quantile: 1.5, error: 0.1}]"), "between 0 and 1")

	// The constructor checks what the linter checks, for configs built
	// without linting.
	for yaml, want := range map[string]string{
		`histogram_buckets: [2, 1]`:                                 "strictly increasing",
		`summary_quantiles_objectives: [{quantile: 0, error: 0.1}]`: "between 0 and 1",
		`{push_url: "http://127.0.0.1:1", push_interval: 0s}`:       "push_interval must be positive",
		`{push_url: "http://127.0.0.1:1", push_job_name: ""}`:       "push_job_name must not be empty",
		`{listen_address: "127.0.0.1:notaport"}`:                    "listen_address",
	} {
		conf, err := prometheus.Spec().ParseYAML(yaml, nil)
		require.NoError(t, err, yaml)
		_, err = prometheus.New(conf, service.MockResources().Logger())
		assert.ErrorContains(t, err, want, yaml)
	}
}

// Registering into an environment that already has a `prometheus` exporter
// (Redpanda Connect's) registers nothing, without a panic, and leaves the
// other one in place.
func TestDuplicateRegistration(t *testing.T) {
	env := service.NewEmptyEnvironment()
	ok, err := prometheus.Register(env, "prometheus")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = prometheus.Register(env, "prometheus")
	require.NoError(t, err)
	assert.False(t, ok)

	theirs := service.NewEnvironment() // has ours; theirs replaces it below
	var used bool
	require.NoError(t, theirs.RegisterMetricsExporter("prometheus", service.NewConfigSpec().Field(service.NewStringField("theirs")),
		func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) {
			used = true
			return prometheus.New(mustParse(t, `{}`), nil)
		}))
	assert.NotPanics(t, func() {
		ok, err = prometheus.Register(theirs, "prometheus")
	})
	require.NoError(t, err)
	assert.False(t, ok)
	// Their spec is still the one configs are checked against, and their
	// constructor the one a stream uses.
	b := theirs.NewStreamBuilder()
	assert.ErrorContains(t, b.SetMetricsYAML(`prometheus: {listen_address: ""}`), "listen_address")
	require.NoError(t, b.SetYAML("output:\n  drop: {}\n"))
	require.NoError(t, b.SetMetricsYAML(`prometheus: {theirs: x}`))
	_, err = b.Build()
	require.NoError(t, err)
	assert.True(t, used)

	// The package registered itself in the global environment.
	_, found := service.GlobalEnvironment().GetMetricsConfig("prometheus")
	assert.True(t, found)
}

func mustParse(t *testing.T, yaml string) *service.ParsedConfig {
	conf, err := prometheus.Spec().ParseYAML(yaml, nil)
	require.NoError(t, err)
	return conf
}

// pushgateway records what an httptest Pushgateway receives.
type pushgateway struct {
	mu     sync.Mutex
	pushes []push
	got    chan struct{}
}

type push struct {
	method, path, auth, body string
}

func newPushgateway(t *testing.T) (*pushgateway, *httptest.Server) {
	pg := &pushgateway{got: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		pg.mu.Lock()
		pg.pushes = append(pg.pushes, push{r.Method, r.URL.Path, r.Header.Get("Authorization"), string(body)})
		pg.mu.Unlock()
		pg.got <- struct{}{}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return pg, srv
}

func (pg *pushgateway) snapshot() []push {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return append([]push(nil), pg.pushes...)
}

// Push mode PUTs the registry every push_interval with basic auth, and once
// more on Close with the final values.
func TestPush(t *testing.T) {
	pg, srv := newPushgateway(t)
	conf := mustParse(t, fmt.Sprintf(`
push_url: %s
push_interval: 50ms
push_job_name: loader
push_basic_auth: {username: u, password: s3cret}
`, srv.URL))
	e, err := prometheus.New(conf, service.MockResources().Logger())
	require.NoError(t, err)
	c := e.NewCounterCtor("pushed_total", "db")
	c("d1").Incr(1)

	select {
	case <-pg.got:
	case <-time.After(5 * time.Second):
		t.Fatal("no periodic push")
	}
	c("d1").Incr(41)
	require.NoError(t, e.Close(context.Background()))

	pushes := pg.snapshot()
	require.GreaterOrEqual(t, len(pushes), 2)
	first, last := pushes[0], pushes[len(pushes)-1]
	assert.Equal(t, http.MethodPut, first.method)
	assert.Equal(t, "/metrics/job/loader", first.path)
	assert.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte("u:s3cret")), first.auth)
	assert.Equal(t, http.MethodPut, last.method)
	// The final push carries the final value.
	dec := expfmt.NewDecoder(strings.NewReader(last.body), expfmt.NewFormat(expfmt.TypeProtoDelim))
	pushed := map[string]*dto.MetricFamily{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		pushed[mf.GetName()] = &mf
	}
	assert.InDelta(t, 42, series(t, pushed, "pushed_total", map[string]string{"db": "d1"}).GetCounter().GetValue(), 1e-9)
	// No pushes after Close: it returned once the periodic pushing had
	// ended, and every push made before was answered, so recorded.
	assert.True(t, prometheus.PushLoopEnded(e), "Close ended the periodic pushing")
}

// A failing Pushgateway makes the final push's error Close's error.
func TestPushFailureOnClose(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusInternalServerError)
	}))
	defer srv.Close()
	e, err := prometheus.New(mustParse(t, fmt.Sprintf(`{push_url: %q, push_interval: 1h}`, srv.URL)), service.MockResources().Logger())
	require.NoError(t, err)
	err = e.Close(context.Background())
	require.ErrorContains(t, err, "pushing the final metrics")
}

func TestFileOutputOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.prom")
	e, err := prometheus.New(mustParse(t, fmt.Sprintf(`{file_output_path: %q}`, path)), service.MockResources().Logger())
	require.NoError(t, err)
	e.NewGaugeCtor("final_gauge")().Set(9)
	require.NoError(t, e.Close(context.Background()))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	fams := parse(t, string(b))
	assert.InDelta(t, 9, series(t, fams, "final_gauge", nil).GetGauge().GetValue(), 1e-9)
}

// The password is a secret field, and only the username is used unless set.
func TestPasswordIsSecret(t *testing.T) {
	view, ok := service.GlobalEnvironment().GetMetricsConfig("prometheus")
	require.True(t, ok)
	data, err := view.TemplateData()
	require.NoError(t, err)
	secrets := map[string]bool{}
	for _, f := range data.Fields {
		secrets[f.FullName] = f.IsSecret
	}
	require.Contains(t, secrets, "push_basic_auth.password")
	assert.True(t, secrets["push_basic_auth.password"])
	assert.False(t, secrets["push_basic_auth.username"])
}
