package prometheus

import (
	"github.com/redpanda-data/benthos/v4/public/service"
)

// Field names of the exporter's config.
const (
	fieldListenAddress    = "listen_address"
	fieldUseHistogram     = "use_histogram_timing"
	fieldBuckets          = "histogram_buckets"
	fieldObjectives       = "summary_quantiles_objectives"
	fieldObjQuantile      = "quantile"
	fieldObjError         = "error"
	fieldProcessMetrics   = "add_process_metrics"
	fieldGoMetrics        = "add_go_metrics"
	fieldPushURL          = "push_url"
	fieldPushInterval     = "push_interval"
	fieldPushJobName      = "push_job_name"
	fieldPushBasicAuth    = "push_basic_auth"
	fieldPushUsername     = "username"
	fieldPushPassword     = "password"
	fieldFileOutputPath   = "file_output_path"
	defaultPushJobName    = "benthos_push"
	defaultPushInterval   = "10s"
	defaultListenAddress  = ""
	defaultUseHistogram   = true
	defaultProcessMetrics = false
	defaultGoMetrics      = false
)

// DefaultBuckets are the histogram buckets (seconds) timers get unless
// histogram_buckets says otherwise: dense between 5 ms and 3 s, where the
// commit cycle and visibility latencies of this product live.
var DefaultBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30, 60}

// Spec is the config spec of the prometheus metrics exporter.
func Spec() *service.ConfigSpec {
	buckets := make([]any, len(DefaultBuckets))
	for i, b := range DefaultBuckets {
		buckets[i] = b
	}
	return service.NewConfigSpec().
		Beta().
		Version("0.1.0").
		Summary("Exposes metrics in the Prometheus text format for scraping, and optionally pushes them to a Pushgateway.").
		Description(`
Counters become Prometheus counters, gauges become gauges and timers become histograms whose observations are in
**seconds** (Benthos timers measure nanoseconds; the value is divided by 10^9, the metric name is kept as it is, so
`+"`starrocks_txn_visibility_latency_ns`"+` is scraped as `+"`starrocks_txn_visibility_latency_ns_bucket`"+`,
`+"`_sum`"+` and `+"`_count`"+` in seconds — the same convention as Redpanda Connect's `+"`prometheus`"+` exporter, so
its dashboards keep working). Counters keep their names (no `+"`_total`"+` suffix is added).

Metric names are sanitised to Prometheus rules: every character outside `+"`[a-zA-Z0-9_:]`"+` becomes `+"`_`"+`, and a
leading digit gets a `+"`_`"+` in front. Label keys are sanitised the same way (without `+"`:`"+`); label values pass through
unchanged (invalid UTF-8 is replaced). Two metrics that end up with the same name but a different type or label set
are a conflict: the first wins, the second is dropped with a warning in the log.

### Where the metrics are served

The exporter's handler is mounted on the Benthos HTTP server (the `+"`http`"+` section, default `+"`0.0.0.0:4195`"+`) at
`+"`/metrics`"+` and `+"`/stats`"+`, exactly where Redpanda Connect serves them. When `+"`listen_address`"+` is set the exporter also
listens on an HTTP server of its own and serves `+"`/metrics`"+` there: use it when the Benthos HTTP server is disabled
(`+"`http.enabled: false`"+`) or must not be reachable by the scraper. The listener is opened when the exporter is
created (a busy address fails the start with an error naming it) and closed when the stream stops.

### Pushing

With `+"`push_url`"+` set, the whole registry is pushed (HTTP PUT, replacing the job's previous push) to a Prometheus
Pushgateway every `+"`push_interval`"+` under the job name `+"`push_job_name`"+`, and one last time when the stream stops.
`).
		Fields(
			service.NewStringField(fieldListenAddress).
				Description("An address (`host:port`) on which the exporter serves `/metrics` on an HTTP server of its own, in addition to the Benthos HTTP server's `/metrics`. Empty: no listener of its own. Use `127.0.0.1:0` in tests for a free port.").
				Example("0.0.0.0:9464").
				Example("127.0.0.1:9464").
				Default(defaultListenAddress),
			service.NewBoolField(fieldUseHistogram).
				Description("Export timers as histograms (`_bucket`, `_sum`, `_count`, in seconds). When false, timers are summaries with the quantiles of `summary_quantiles_objectives` (summaries cannot be aggregated across instances; the bundled Grafana dashboard needs histograms).").
				Example(false).
				Default(defaultUseHistogram),
			service.NewFloatListField(fieldBuckets).
				Description("Upper bounds of the histogram buckets, in seconds, strictly increasing. Used when `use_histogram_timing` is true.").
				Example([]any{0.01, 0.1, 0.5, 1, 2, 5}).
				Default(buckets).
				Advanced(),
			service.NewObjectListField(fieldObjectives,
				service.NewFloatField(fieldObjQuantile).Description("The quantile, between 0 and 1.").Example(0.999),
				service.NewFloatField(fieldObjError).Description("The allowed absolute error of the quantile.").Example(0.0001),
			).
				Description("The quantiles (with their allowed error) a summary reports. Used when `use_histogram_timing` is false.").
				Example([]any{map[string]any{fieldObjQuantile: 0.5, fieldObjError: 0.05}, map[string]any{fieldObjQuantile: 0.999, fieldObjError: 0.0001}}).
				Default([]any{
					map[string]any{fieldObjQuantile: 0.5, fieldObjError: 0.05},
					map[string]any{fieldObjQuantile: 0.9, fieldObjError: 0.01},
					map[string]any{fieldObjQuantile: 0.99, fieldObjError: 0.001},
				}).
				Advanced(),
			service.NewBoolField(fieldProcessMetrics).
				Description("Also export the process metrics (`process_cpu_seconds_total`, `process_resident_memory_bytes`, open file descriptors, …).").
				Example(true).
				Default(defaultProcessMetrics),
			service.NewBoolField(fieldGoMetrics).
				Description("Also export the Go runtime metrics (`go_goroutines`, `go_memstats_*`, GC pauses, …) and the CPU time the garbage collector took (`go_cpu_classes_gc_total_cpu_seconds_total`, beside the runtime's total `go_cpu_classes_total_cpu_seconds_total`: their ratio is the collector's share, what GOGC and GOMEMLIMIT trade against memory).").
				Example(true).
				Default(defaultGoMetrics),
			service.NewStringField(fieldPushURL).
				Description("The URL of a Prometheus Pushgateway to push the metrics to. Empty: no pushing.").
				Example("http://pushgateway:9091").
				Default("").
				Advanced(),
			service.NewDurationField(fieldPushInterval).
				Description("How often the metrics are pushed when `push_url` is set. A last push is always made when the stream stops.").
				Example("1m").
				Default(defaultPushInterval).
				Advanced(),
			service.NewStringField(fieldPushJobName).
				Description("The job name the metrics are pushed under.").
				Example("starrocks_loader").
				Default(defaultPushJobName).
				Advanced(),
			service.NewObjectField(fieldPushBasicAuth,
				service.NewStringField(fieldPushUsername).Description("The username for the Pushgateway's basic authentication.").Example("loader").Default(""),
				service.NewStringField(fieldPushPassword).Description("The password for the Pushgateway's basic authentication.").Example("${PUSHGATEWAY_PASSWORD}").Default("").Secret(),
			).
				Description("HTTP basic authentication for the Pushgateway. Used when `username` is not empty.").
				Example(map[string]any{fieldPushUsername: "loader", fieldPushPassword: "${PUSHGATEWAY_PASSWORD}"}).
				Advanced(),
			service.NewStringField(fieldFileOutputPath).
				Description("A file the final metrics are written to, in the Prometheus text format, when the stream stops. Empty: none.").
				Example("/var/lib/benthos/metrics.prom").
				Default("").
				Advanced(),
		).
		LintRule(`
let buckets = this.histogram_buckets.or([])
let auth_user = this.push_basic_auth.or({}).username.or("")
root = [
  if $auth_user != "" && this.push_url.or("") == "" {
    "push_basic_auth is set but push_url is empty: set push_url to the Pushgateway's URL, or remove push_basic_auth"
  } else { null },
  if $buckets.length() > 0 && ($buckets.sort() != $buckets || $buckets.unique().length() != $buckets.length()) {
    "histogram_buckets must be strictly increasing, e.g. [0.01, 0.1, 1]"
  } else { null },
  if this.summary_quantiles_objectives.or([]).any(o -> o.quantile.or(0.5) <= 0 || o.quantile.or(0.5) >= 1) {
    "every quantile in summary_quantiles_objectives must be between 0 and 1 (exclusive)"
  } else { null },
].filter(e -> e != null)
`).
		Example("Scraped on the Benthos HTTP server", "Prometheus scrapes `http://<host>:4195/metrics`.", `
http:
  address: 0.0.0.0:4195
metrics:
  prometheus: {}
`).
		Example("A listener of its own", "The Benthos HTTP server stays off; Prometheus scrapes `http://<host>:9464/metrics`.", `
http:
  enabled: false
metrics:
  prometheus:
    listen_address: 0.0.0.0:9464
    add_process_metrics: true
    add_go_metrics: true
`).
		Example("Pushing to a Pushgateway", "For short-lived runs a scraper would miss.", `
metrics:
  prometheus:
    push_url: http://pushgateway:9091
    push_interval: 15s
    push_job_name: starrocks_loader
    push_basic_auth:
      username: loader
      password: ${PUSHGATEWAY_PASSWORD}
`)
}
