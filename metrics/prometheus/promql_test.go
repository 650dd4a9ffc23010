package prometheus_test

import (
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/stretchr/testify/assert"
)

// promqlRefs is what a PromQL expression refers to.
type promqlRefs struct {
	// metrics are the metric (series) names selected.
	metrics []string
	// labels are the label names in matchers and in by/without/on/ignoring
	// and group_left/group_right clauses.
	labels []string
	// ratedMetrics are the metrics selected directly inside rate, irate or
	// increase.
	ratedMetrics []string
	// err is why the expression is not valid PromQL.
	err error
}

// grafanaVar is a dashboard template variable: $__rate_interval and its
// kind stand for a range, every other one for a number or a label value.
var (
	grafanaRange = regexp.MustCompile(`\$\{?__(rate_interval|interval|range)(_ms|_s)?\}?`)
	grafanaVar   = regexp.MustCompile(`\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
)

// promqlFuncs are the PromQL functions (not MetricsQL's extensions) the
// dashboard and the alert rules may use; rangeFuncs take a range vector.
var (
	rangeFuncs = map[string]bool{
		"rate": true, "irate": true, "increase": true, "delta": true, "idelta": true, "deriv": true,
		"changes": true, "resets": true, "avg_over_time": true, "min_over_time": true, "max_over_time": true,
		"sum_over_time": true, "count_over_time": true, "last_over_time": true, "quantile_over_time": true,
		"present_over_time": true, "absent_over_time": true,
	}
	promqlFuncs = map[string]bool{
		"histogram_quantile": true, "vector": true, "scalar": true, "clamp_min": true, "clamp_max": true,
		"abs": true, "absent": true, "time": true, "timestamp": true, "label_replace": true, "round": true,
		"sum": true, "min": true, "max": true, "avg": true, "count": true, "topk": true, "bottomk": true,
		"quantile": true, "stddev": true, "group": true,
	}
	ratingFuncs = map[string]bool{"rate": true, "irate": true, "increase": true}
)

// parsePromQL parses an expression written for Grafana or a rule file
// (template variables are allowed anywhere) and returns the metric and label
// names it uses.
func parsePromQL(expr string) promqlRefs {
	s := grafanaRange.ReplaceAllString(expr, "5m")
	s = grafanaVar.ReplaceAllString(s, "0")
	var r promqlRefs
	e, err := metricsql.Parse(s)
	if err != nil {
		r.err = fmt.Errorf("%s: %w", expr, err)
		return r
	}
	metricsql.VisitAll(e, func(n metricsql.Expr) {
		switch n := n.(type) {
		case *metricsql.MetricExpr:
			for _, lfs := range n.LabelFilterss {
				for _, lf := range lfs {
					if lf.Label == "__name__" {
						r.metrics = append(r.metrics, lf.Value)
					} else {
						r.labels = append(r.labels, lf.Label)
					}
				}
			}
		case *metricsql.AggrFuncExpr:
			if !promqlFuncs[n.Name] && r.err == nil {
				r.err = fmt.Errorf("%s: %s is not a PromQL aggregation", expr, n.Name)
			}
			r.labels = append(r.labels, n.Modifier.Args...)
		case *metricsql.BinaryOpExpr:
			r.labels = append(r.labels, n.GroupModifier.Args...)
			r.labels = append(r.labels, n.JoinModifier.Args...)
		case *metricsql.FuncExpr:
			if !promqlFuncs[n.Name] && !rangeFuncs[n.Name] && r.err == nil {
				r.err = fmt.Errorf("%s: %s is not a PromQL function", expr, n.Name)
			}
			if rangeFuncs[n.Name] {
				re, ok := n.Args[len(n.Args)-1].(*metricsql.RollupExpr)
				if (!ok || re.Window == nil) && r.err == nil {
					r.err = fmt.Errorf("%s: %s needs a range vector (PromQL has no implicit window)", expr, n.Name)
				}
				if ok && ratingFuncs[n.Name] {
					if me, ok := re.Expr.(*metricsql.MetricExpr); ok {
						for _, lfs := range me.LabelFilterss {
							if len(lfs) > 0 && lfs[0].Label == "__name__" {
								r.ratedMetrics = append(r.ratedMetrics, lfs[0].Value)
							}
						}
					}
				}
			}
		}
	})
	slices.Sort(r.metrics)
	r.metrics = slices.Compact(r.metrics)
	slices.Sort(r.labels)
	r.labels = slices.Compact(r.labels)
	return r
}

// The extractor the dashboard test relies on.
func TestParsePromQL(t *testing.T) {
	for _, tc := range []struct {
		expr           string
		metrics, label []string
		rated          []string
	}{
		{
			expr:    `histogram_quantile(0.99, sum by (le, database) (rate(starrocks_txn_visibility_latency_ns_bucket{job=~"$job", instance=~"$instance"}[$__rate_interval])))`,
			metrics: []string{"starrocks_txn_visibility_latency_ns_bucket"},
			label:   []string{"database", "instance", "job", "le"},
			rated:   []string{"starrocks_txn_visibility_latency_ns_bucket"},
		},
		{
			expr:    `max by (partition, txn_id) (starrocks_txn_stalled_partition{job=~"a|b"}) > 0`,
			metrics: []string{"starrocks_txn_stalled_partition"},
			label:   []string{"job", "partition", "txn_id"},
		},
		{
			expr:    `vector(2 * $buffer_size) or sum without (path) (kafka_txn_lag offset 5m) / on(instance) group_left(topic) up`,
			metrics: []string{"kafka_txn_lag", "up"},
			label:   []string{"instance", "path", "topic"},
		},
		{
			expr:    `sum(increase(x:y_total{a="}{by(b)"}[1h])) + 1e9 * 0x1F`,
			metrics: []string{"x:y_total"},
			label:   []string{"a"},
			rated:   []string{"x:y_total"},
		},
	} {
		r := parsePromQL(tc.expr)
		assert.NoError(t, r.err)
		assert.Equal(t, tc.metrics, r.metrics, tc.expr)
		assert.Equal(t, tc.label, r.labels, tc.expr)
		assert.Equal(t, tc.rated, r.ratedMetrics, tc.expr)
	}
	// Not PromQL: a syntax error, MetricsQL's implicit window and its
	// extensions.
	for _, bad := range []string{
		`sum(rate(x[5m])`, `rate(x)`, `sum(rate(x[5m])) by`, `range_median(x)`, `x{a="b"`,
	} {
		assert.Error(t, parsePromQL(bad).err, bad)
	}
}
