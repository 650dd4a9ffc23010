package prometheus_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/metrics/prometheus"
)

const dashboardPath = "../../config/grafana-dashboard.json"

type dashboard struct {
	SchemaVersion int `json:"schemaVersion"`
	UID           string
	Title         string
	Templating    struct {
		List []struct {
			Name       string
			Type       string
			Query      any
			Datasource any
		}
	}
	Panels []panel
}

type panel struct {
	ID         int
	Type       string
	Title      string
	Datasource any
	Targets    []struct {
		Expr       string
		RefID      string `json:"refId"`
		Datasource any
	}
	Panels []panel
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	return d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// exportedSeries is every sample name the real pipeline can expose, mapped to
// its family: each declared family's series plus whatever the scrape held
// (Benthos's own component metrics included).
func exportedSeries(run *pipelineRun) map[string]prometheus.Family {
	out := map[string]prometheus.Family{}
	for _, f := range withPending(run.declared) {
		for _, s := range f.Series() {
			out[s] = f
		}
	}
	for name, mf := range run.scraped {
		f := prometheus.Family{Name: name}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			f.Kind = prometheus.KindCounter
		case dto.MetricType_GAUGE:
			f.Kind = prometheus.KindGauge
		case dto.MetricType_HISTOGRAM:
			f.Kind = prometheus.KindHistogram
		case dto.MetricType_SUMMARY:
			f.Kind = prometheus.KindSummary
		}
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		f.Labels = keys(labels)
		for _, s := range f.Series() {
			if _, ok := out[s]; !ok {
				out[s] = f
			}
		}
	}
	return out
}

// Every metric and label the dashboard's queries use exists in what the real
// pipeline exports, counters are only rated and gauges never are, so a
// renamed metric or label fails here.
func TestDashboardMetricsExist(t *testing.T) {
	d := loadDashboard(t)
	run := realPipeline(t)
	series := exportedSeries(run)

	var used []string
	var exprs int
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			exprs++
			r := parsePromQL(tg.Expr)
			require.NoError(t, r.err, "panel %q query %s", p.Title, tg.RefID)
			if !strings.HasPrefix(strings.TrimSpace(tg.Expr), "vector(") {
				assert.NotEmpty(t, r.metrics, "panel %q query %s selects no metric", p.Title, tg.RefID)
			}
			allowed := map[string]bool{"job": true, "instance": true}
			for _, m := range r.metrics {
				f, ok := series[m]
				if !assert.True(t, ok, "panel %q uses %s, which the pipeline does not export", p.Title, m) {
					continue
				}
				used = append(used, f.Name)
				for _, l := range f.Labels {
					allowed[l] = true
				}
				switch {
				case f.Kind == prometheus.KindHistogram && m == f.Name+"_bucket":
					allowed["le"] = true
					assert.Contains(t, tg.Expr, "histogram_quantile", "panel %q: buckets are for histogram_quantile", p.Title)
					assert.Contains(t, r.ratedMetrics, m, "panel %q: rate the buckets of %s", p.Title, f.Name)
				case f.Kind == prometheus.KindCounter:
					assert.Contains(t, r.ratedMetrics, m, "panel %q: counter %s must be used through rate or increase", p.Title, m)
				case f.Kind == prometheus.KindGauge:
					assert.NotContains(t, r.ratedMetrics, m, "panel %q: gauge %s must not be rated", p.Title, m)
				}
			}
			for _, l := range r.labels {
				assert.True(t, allowed[l], "panel %q query %s uses label %q, which none of %v has", p.Title, tg.RefID, l, r.metrics)
			}
		}
	}
	assert.Greater(t, exprs, 20)

	// The template variables' label_values queries too.
	lv := regexp.MustCompile(`^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		m := lv.FindStringSubmatch(q)
		if !assert.NotNil(t, m, "variable %s: want label_values(<selector>, <label>), got %q", v.Name, q) {
			continue
		}
		r := parsePromQL(m[1])
		require.Len(t, r.metrics, 1, q)
		f, ok := series[r.metrics[0]]
		if assert.True(t, ok, "variable %s uses %s, which the pipeline does not export", v.Name, r.metrics[0]) {
			allowed := map[string]bool{"job": true, "instance": true}
			for _, l := range f.Labels {
				allowed[l] = true
			}
			for _, l := range append(r.labels, m[2]) {
				assert.True(t, allowed[l], "variable %s uses label %q, which %s has not", v.Name, l, f.Name)
			}
		}
	}

	// What an operator must see (the brief of the dashboard).
	for _, m := range []string{
		"starrocks_txn_visibility_latency_ns", "starrocks_txn_commits", "starrocks_txn_rollbacks",
		"starrocks_txn_cycle_retries", "starrocks_txn_loads", "starrocks_txn_load_bytes",
		"starrocks_txn_rows_committed", "starrocks_txn_source_txns_committed", "starrocks_txn_dead_lettered",
		"starrocks_txn_stalled_partition", "starrocks_txn_sequence_gaps", "starrocks_txn_buffered_bytes",
		"starrocks_txn_waiting_write_batches", "kafka_txn_lag", "kafka_txn_in_flight", "kafka_txn_commits",
		"kafka_txn_checkpoint_stalls", "txn_assembler_errors", "txn_assembler_contract_violations",
	} {
		assert.Contains(t, used, m, "the dashboard must show %s", m)
	}
	// Every metric of the plugins is on the dashboard, except the committed
	// offset (an absolute position, not something to graph).
	for _, f := range run.declared {
		if pluginMetric(f.Name) && f.Name != "kafka_txn_committed_offset" {
			assert.Contains(t, used, f.Name, "%s is exported but not on the dashboard", f.Name)
		}
	}
}

func pluginMetric(name string) bool {
	return strings.HasPrefix(name, "starrocks_txn_") || strings.HasPrefix(name, "kafka_txn_") || strings.HasPrefix(name, "txn_assembler_")
}

// The shape Grafana needs: a Prometheus datasource variable every query
// uses, job/instance selectors, unique panel ids.
func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	assert.GreaterOrEqual(t, d.SchemaVersion, 36)
	assert.NotEmpty(t, d.UID)
	assert.NotEmpty(t, d.Title)

	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Name == "datasource" {
			assert.Equal(t, "prometheus", v.Query)
		}
	}
	assert.Equal(t, "datasource", vars["datasource"])
	assert.Equal(t, "query", vars["job"])
	assert.Equal(t, "query", vars["instance"])

	ids := map[int]bool{}
	usesDS := func(ds any) bool {
		m, ok := ds.(map[string]any)
		return ok && m["uid"] == "${datasource}"
	}
	sel := regexp.MustCompile(`job=~"\$job", instance=~"\$instance"`)
	for _, p := range allPanels(d.Panels) {
		assert.False(t, ids[p.ID], "panel id %d repeats", p.ID)
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		assert.True(t, usesDS(p.Datasource), "panel %q must use ${datasource}", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			assert.True(t, usesDS(tg.Datasource), "panel %q query %s must use ${datasource}", p.Title, tg.RefID)
			r := parsePromQL(tg.Expr)
			if len(r.metrics) > 0 {
				assert.Regexp(t, sel, tg.Expr, "panel %q query %s must select $job and $instance", p.Title, tg.RefID)
			}
		}
	}
}

// The README's metric table lists exactly the plugins' metrics, with the
// types and labels they are exported with.
func TestReadmeListsEveryMetric(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `([a-z_:]+)` \\| (counter|gauge|histogram|summary) \\|([^|]*)\\|")
	listed := map[string][2]string{}
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		listed[m[1]] = [2]string{m[2], strings.TrimSpace(m[3])}
	}
	require.NotEmpty(t, listed)

	run := realPipeline(t)
	declared := map[string]bool{}
	for _, f := range run.declared {
		if !pluginMetric(f.Name) {
			continue
		}
		declared[f.Name] = true
		got, ok := listed[f.Name]
		if !assert.True(t, ok, "README.md does not list %s", f.Name) {
			continue
		}
		assert.Equal(t, string(f.Kind), got[0], "README type of %s", f.Name)
		var own []string
		for _, l := range f.Labels {
			if l != "label" && l != "path" { // Benthos's component labels
				own = append(own, l)
			}
		}
		assert.Equal(t, strings.Join(own, ", "), strings.ReplaceAll(got[1], "`", ""), "README labels of %s", f.Name)
	}
	for name := range listed {
		assert.True(t, declared[name], "README.md lists %s, which no plugin exports", name)
	}
	assert.Positive(t, run.committed)
	names := keys(declared)
	slices.Sort(names)
	t.Logf("%d plugin metrics: %v", len(names), names)
}

// The README's field table names every field of the spec.
func TestReadmeListsEveryField(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	view, ok := service.GlobalEnvironment().GetMetricsConfig("prometheus")
	require.True(t, ok)
	td, err := view.TemplateData()
	require.NoError(t, err)
	require.NotEmpty(t, td.Fields)
	for _, f := range td.Fields {
		top := strings.FieldsFunc(f.FullName, func(r rune) bool { return r == '.' || r == '[' })[0]
		assert.Contains(t, string(raw), "| `"+top, "README.md has no row for field %s", f.FullName)
	}
}
