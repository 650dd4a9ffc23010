package prometheus_test

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/starrocks-txn/benthos-starrocks/metrics/prometheus"
)

const alertsPath = "../../config/alerts.yaml"

// ruleFile is Prometheus's rule file format (rulefmt): unknown keys are
// refused by decoding strictly.
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Limit    int    `yaml:"limit"`
		Rules    []struct {
			Alert         string            `yaml:"alert"`
			Record        string            `yaml:"record"`
			Expr          string            `yaml:"expr"`
			For           string            `yaml:"for"`
			KeepFiringFor string            `yaml:"keep_firing_for"`
			Labels        map[string]string `yaml:"labels"`
			Annotations   map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// Prometheus's template functions, for parsing annotations the way the rule
// manager does (their bodies do not matter here).
var promTemplateFuncs = template.FuncMap{}

func init() {
	for _, f := range []string{"query", "first", "label", "value", "strvalue", "args", "reReplaceAll", "safeHtml",
		"match", "title", "toUpper", "toLower", "graphLink", "tableLink", "sortByLabel", "humanize", "humanize1024",
		"humanizeDuration", "humanizePercentage", "humanizeTimestamp", "toTime", "pathPrefix", "externalURL",
		"parseDuration", "stripPort", "stripDomain", "now", "toDuration"} {
		promTemplateFuncs[f] = func(...any) any { return nil }
	}
}

var templateLabel = regexp.MustCompile(`\$labels\.([A-Za-z_][A-Za-z0-9_]*)`)

// resultLabels are the labels an expression's result series carry, as far
// as they can be told statically: an aggregation's `by` list, or the labels
// of the selected families; nil when unknown.
func resultLabels(e metricsql.Expr, fams map[string]prometheus.Family) []string {
	switch e := e.(type) {
	case *metricsql.AggrFuncExpr:
		if e.Modifier.Op == "by" {
			return e.Modifier.Args
		}
		return nil
	case *metricsql.BinaryOpExpr:
		if _, isNum := e.Left.(*metricsql.NumberExpr); isNum {
			return resultLabels(e.Right, fams)
		}
		return resultLabels(e.Left, fams)
	case *metricsql.FuncExpr:
		for _, a := range e.Args {
			if l := resultLabels(a, fams); l != nil {
				return l
			}
		}
	case *metricsql.RollupExpr:
		return resultLabels(e.Expr, fams)
	case *metricsql.MetricExpr:
		if len(e.LabelFilterss) > 0 && len(e.LabelFilterss[0]) > 0 {
			if f, ok := fams[e.LabelFilterss[0][0].Value]; ok {
				return append([]string{"job", "instance"}, f.Labels...)
			}
		}
	}
	return nil
}

// The example alert rules are a valid Prometheus rule file, every expression
// is PromQL over metrics the plugins export (with the labels they have,
// counters only rated, gauges never), and the annotations use only labels
// the alert's series carry.
func TestAlertRules(t *testing.T) {
	raw, err := os.ReadFile(alertsPath)
	require.NoError(t, err)
	var rf ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&rf), "rule file format")
	require.NotEmpty(t, rf.Groups)

	run := realPipeline(t)
	series := exportedSeries(run)
	fams := map[string]prometheus.Family{}
	for _, f := range withPending(run.declared) {
		fams[f.Name] = f
	}

	groups := map[string]bool{}
	alerts := map[string]bool{}
	var used []string
	for _, g := range rf.Groups {
		require.NotEmpty(t, g.Name, "a group needs a name")
		assert.False(t, groups[g.Name], "group %s repeats", g.Name)
		groups[g.Name] = true
		if g.Interval != "" {
			_, err := model.ParseDuration(g.Interval)
			assert.NoError(t, err, "group %s interval", g.Name)
		}
		require.NotEmpty(t, g.Rules, "group %s has no rules", g.Name)
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "every rule here is an alert")
			assert.Empty(t, r.Record)
			assert.True(t, model.LabelName(r.Alert).IsValidLegacy(), "alert name %q", r.Alert)
			assert.False(t, alerts[r.Alert], "alert %s repeats", r.Alert)
			alerts[r.Alert] = true
			for _, d := range []string{r.For, r.KeepFiringFor} {
				if d != "" {
					_, err := model.ParseDuration(d)
					assert.NoError(t, err, "%s: duration %q", r.Alert, d)
				}
			}
			assert.Contains(t, []string{"critical", "warning"}, r.Labels["severity"], "%s severity", r.Alert)
			for k := range r.Labels {
				assert.True(t, model.LabelName(k).IsValidLegacy(), "%s: label %q", r.Alert, k)
			}
			assert.NotEmpty(t, r.Annotations["summary"], "%s summary", r.Alert)
			assert.NotEmpty(t, r.Annotations["description"], "%s description", r.Alert)

			refs := parsePromQL(r.Expr)
			require.NoError(t, refs.err, r.Alert)
			require.NotEmpty(t, refs.metrics, "%s selects no metric", r.Alert)
			allowed := map[string]bool{"job": true, "instance": true}
			for _, m := range refs.metrics {
				f, ok := series[m]
				if !assert.True(t, ok, "%s uses %s, which no plugin exports", r.Alert, m) {
					continue
				}
				used = append(used, f.Name)
				for _, l := range f.Labels {
					allowed[l] = true
				}
				switch f.Kind {
				case prometheus.KindCounter:
					assert.Contains(t, refs.ratedMetrics, m, "%s: counter %s must be used through rate or increase", r.Alert, m)
				case prometheus.KindGauge:
					assert.NotContains(t, refs.ratedMetrics, m, "%s: gauge %s must not be rated", r.Alert, m)
				}
			}
			for _, l := range refs.labels {
				assert.True(t, allowed[l], "%s uses label %q, which none of %v has", r.Alert, l, refs.metrics)
			}

			e, err := metricsql.Parse(r.Expr)
			require.NoError(t, err)
			keep := resultLabels(e, fams)
			require.NotNil(t, keep, "%s: the result labels of the expression cannot be told", r.Alert)
			for name, text := range r.Annotations {
				_, err := template.New(name).Funcs(promTemplateFuncs).Parse("{{$labels := .Labels}}{{$value := .Value}}" + text)
				assert.NoError(t, err, "%s annotation %s", r.Alert, name)
				for _, m := range templateLabel.FindAllStringSubmatch(text, -1) {
					assert.True(t, slices.Contains(keep, m[1]), "%s annotation %s uses $labels.%s, which the alert's series (%v) do not carry", r.Alert, name, m[1], keep)
				}
			}
		}
	}

	// What an operator must be woken for.
	for _, m := range []string{
		"starrocks_txn_stalled_partition", "kafka_txn_committed_lag", "starrocks_txn_cycle_retries",
		"starrocks_txn_commits", "starrocks_txn_rollbacks", "starrocks_txn_dead_lettered",
		"starrocks_txn_sequence_gaps", "starrocks_txn_max_in_flight_starved",
	} {
		assert.Contains(t, used, m, "an alert rule must watch %s", m)
	}
	t.Logf("%d alerts over %s", len(alerts), strings.Join(slices.Compact(slices.Sorted(slices.Values(used))), ", "))
}
