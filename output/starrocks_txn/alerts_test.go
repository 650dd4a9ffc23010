package starrocks_txn

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// This file evaluates the alert rules of config/alerts.yaml over series
// scraped from a real pipeline's /metrics, the way Prometheus would: a scrape
// is a sample at its time, increase() needs two samples of a series inside
// its window (a series that springs into existence at 1 has no increase),
// `offset` looks back. The evaluator covers the PromQL the rules use
// (selectors, increase/rate/changes, sum/max by, comparisons, scalar
// arithmetic, and/or/unless); anything else fails the test.

type sample struct {
	labels map[string]string
	value  float64
}

type scrape struct {
	at     time.Duration
	series map[string][]sample // by metric name
}

// alertEval evaluates expressions over scrapes, at a time.
type alertEval struct {
	t       *testing.T
	history []scrape
}

const lookback = 5 * time.Minute

func labelKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q,", k, l[k])
	}
	return b.String()
}

// rangeOf is every sample of name matching filters with a time in (from, to].
func (ev *alertEval) rangeOf(me *metricsql.MetricExpr, from, to time.Duration) map[string][]sample {
	require.Len(ev.t, me.LabelFilterss, 1, "selector %s", me.AppendString(nil))
	fs := me.LabelFilterss[0]
	name := fs[0].Value
	out := map[string][]sample{}
	for _, sc := range ev.history {
		if sc.at <= from || sc.at > to {
			continue
		}
	next:
		for _, s := range sc.series[name] {
			for _, f := range fs[1:] {
				require.False(ev.t, f.IsRegexp || f.IsNegative, "only = label filters")
				if s.labels[f.Label] != f.Value {
					continue next
				}
			}
			k := labelKey(s.labels)
			out[k] = append(out[k], s)
		}
	}
	return out
}

// result is an instant vector, or a scalar when scalar is set.
type result struct {
	vec    []sample
	scalar *float64
}

func (ev *alertEval) eval(e metricsql.Expr, at time.Duration) result {
	switch e := e.(type) {
	case *metricsql.NumberExpr:
		v := e.N
		return result{scalar: &v}
	case *metricsql.MetricExpr:
		return ev.instant(e, at)
	case *metricsql.RollupExpr:
		require.Nil(ev.t, e.Window, "a range outside a function: %s", e.AppendString(nil))
		me, ok := e.Expr.(*metricsql.MetricExpr)
		require.True(ev.t, ok)
		return ev.instant(me, at-ev.offset(e))
	case *metricsql.FuncExpr:
		require.Len(ev.t, e.Args, 1, e.Name)
		re, ok := e.Args[0].(*metricsql.RollupExpr)
		require.True(ev.t, ok && re.Window != nil, "%s takes a range", e.Name)
		me, ok := re.Expr.(*metricsql.MetricExpr)
		require.True(ev.t, ok)
		window := time.Duration(re.Window.Duration(0)) * time.Millisecond
		end := at - ev.offset(re)
		var out []sample
		for _, ss := range ev.rangeOf(me, end-window, end) {
			l := withoutName(ss[0].labels)
			switch e.Name {
			case "increase", "rate":
				if len(ss) < 2 {
					continue // Prometheus: no increase from one sample
				}
				inc := 0.0
				for i := 1; i < len(ss); i++ {
					if d := ss[i].value - ss[i-1].value; d >= 0 {
						inc += d
					} else {
						inc += ss[i].value // a counter reset
					}
				}
				if e.Name == "rate" {
					inc /= window.Seconds()
				}
				out = append(out, sample{l, inc})
			case "changes":
				n := 0.0
				for i := 1; i < len(ss); i++ {
					if ss[i].value != ss[i-1].value {
						n++
					}
				}
				out = append(out, sample{l, n})
			default:
				ev.t.Fatalf("function %s is not evaluated here", e.Name)
			}
		}
		return result{vec: out}
	case *metricsql.AggrFuncExpr:
		require.Len(ev.t, e.Args, 1, e.Name)
		require.Equal(ev.t, "by", e.Modifier.Op, "%s by (...)", e.Name)
		in := ev.eval(e.Args[0], at)
		groups := map[string]*sample{}
		var order []string
		for _, s := range in.vec {
			l := map[string]string{}
			for _, k := range e.Modifier.Args {
				if v, ok := s.labels[k]; ok {
					l[k] = v
				}
			}
			k := labelKey(l)
			g := groups[k]
			if g == nil {
				groups[k] = &sample{l, s.value}
				order = append(order, k)
				continue
			}
			switch e.Name {
			case "sum":
				g.value += s.value
			case "max":
				g.value = max(g.value, s.value)
			default:
				ev.t.Fatalf("aggregation %s is not evaluated here", e.Name)
			}
		}
		var out []sample
		for _, k := range order {
			out = append(out, *groups[k])
		}
		return result{vec: out}
	case *metricsql.BinaryOpExpr:
		return ev.binary(e, ev.eval(e.Left, at), ev.eval(e.Right, at))
	}
	ev.t.Fatalf("expression %T is not evaluated here", e)
	return result{}
}

func (ev *alertEval) offset(re *metricsql.RollupExpr) time.Duration {
	if re.Offset == nil {
		return 0
	}
	return time.Duration(re.Offset.Duration(0)) * time.Millisecond
}

// instant is the newest sample of each series within the lookback.
func (ev *alertEval) instant(me *metricsql.MetricExpr, at time.Duration) result {
	var out []sample
	for _, ss := range ev.rangeOf(me, at-lookback, at) {
		out = append(out, ss[len(ss)-1])
	}
	return result{vec: out}
}

func withoutName(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		if k != "__name__" {
			out[k] = v
		}
	}
	return out
}

func (ev *alertEval) binary(e *metricsql.BinaryOpExpr, l, r result) result {
	require.False(ev.t, e.Bool, "bool modifier")
	require.Empty(ev.t, e.JoinModifier.Op, "group_left/right")
	require.Empty(ev.t, e.GroupModifier.Op, "on/ignoring")
	op := func(a, b float64) (float64, bool) {
		switch e.Op {
		case "*":
			return a * b, true
		case "/":
			return a / b, true
		case "+":
			return a + b, true
		case "-":
			return a - b, true
		case ">":
			return a, a > b
		case "<":
			return a, a < b
		case ">=":
			return a, a >= b
		case "<=":
			return a, a <= b
		case "==":
			return a, a == b
		case "!=":
			return a, a != b
		}
		ev.t.Fatalf("operator %s is not evaluated here", e.Op)
		return 0, false
	}
	switch {
	case l.scalar != nil && r.scalar != nil:
		v, _ := op(*l.scalar, *r.scalar)
		return result{scalar: &v}
	case r.scalar != nil:
		var out []sample
		for _, s := range l.vec {
			if v, keep := op(s.value, *r.scalar); keep {
				out = append(out, sample{withoutName(s.labels), v})
			}
		}
		return result{vec: out}
	case l.scalar != nil:
		var out []sample
		for _, s := range r.vec {
			v, keep := op(*l.scalar, s.value)
			if keep {
				if strings.ContainsAny(e.Op, "<>=!") {
					v = s.value // a filter keeps the vector's value
				}
				out = append(out, sample{withoutName(s.labels), v})
			}
		}
		return result{vec: out}
	}
	right := map[string]sample{}
	for _, s := range r.vec {
		right[labelKey(withoutName(s.labels))] = s
	}
	var out []sample
	switch e.Op {
	case "and", "unless":
		for _, s := range l.vec {
			_, ok := right[labelKey(withoutName(s.labels))]
			if ok == (e.Op == "and") {
				out = append(out, s)
			}
		}
	case "or":
		seen := map[string]bool{}
		for _, s := range l.vec {
			seen[labelKey(withoutName(s.labels))] = true
			out = append(out, s)
		}
		for _, s := range r.vec {
			if !seen[labelKey(withoutName(s.labels))] {
				out = append(out, s)
			}
		}
	default:
		for _, s := range l.vec {
			o, ok := right[labelKey(withoutName(s.labels))]
			if !ok {
				continue
			}
			if v, keep := op(s.value, o.value); keep {
				out = append(out, sample{withoutName(s.labels), v})
			}
		}
	}
	return result{vec: out}
}

// scrapeAt reads /metrics of mux as the scrape at time at.
func scrapeAt(t *testing.T, mux http.Handler, at time.Duration) scrape {
	t.Helper()
	code, text := get(mux, "/metrics")
	require.Equal(t, http.StatusOK, code)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err)
	sc := scrape{at: at, series: map[string][]sample{}}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			l := map[string]string{"__name__": name, "job": "benthos", "instance": "loader-1"}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			var v float64
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			default:
				continue
			}
			sc.series[name] = append(sc.series[name], sample{l, v})
		}
	}
	return sc
}

// alertRules reads config/alerts.yaml: alert name → expression.
func alertRules(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../../config/alerts.yaml")
	require.NoError(t, err)
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &rf))
	out := map[string]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r.Expr
		}
	}
	return out
}

// firing evaluates every rule at time at: alert → the label sets it fires
// for (by the label named by, e.g. partition).
func (ev *alertEval) firing(rules map[string]string, at time.Duration, by string) map[string][]string {
	out := map[string][]string{}
	for name, expr := range rules {
		e, err := metricsql.Parse(expr)
		require.NoError(ev.t, err, name)
		for _, s := range ev.eval(e, at).vec {
			out[name] = append(out[name], s.labels[by])
		}
		sort.Strings(out[name])
	}
	return out
}

// The first dead letter on a partition fires StarRocksTxnDeadLettered at the
// next scrape, whether the partition was seen in an earlier scrape (its
// counter exists at 0 since, so increase() sees the step) or first appears
// with the dead letter (its series springs up at 1 within one scrape
// interval, which increase() alone cannot see). A committed source
// transaction fires no alert. The per-partition, per-seq-source and
// per-database series exist at 0 from their first sight.
func TestAlertsFireOnTheFirstDeadLetter(t *testing.T) {
	e := startEmulator(t)
	mux := http.NewServeMux()
	sb := service.NewStreamBuilder()
	sb.SetHTTPMux(mux)
	require.NoError(t, sb.SetLoggerYAML("level: none"))
	require.NoError(t, sb.SetMetricsYAML("prometheus: {}"))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddProcessorYAML(`mapping: 'root = if this.boom == true { throw("boom") } else { this }'`))
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  schema_evolution: ignore
  load_urls: [ %q ]
  commit_interval: 100ms
  dead_letter:
    drop: {}
`, e.FEURL())))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()
	t.Cleanup(func() { _ = stream.StopWithin(10 * time.Second) })
	require.Eventually(t, func() bool { code, _ := get(mux, "/ready"); return code == http.StatusOK },
		10*time.Second, 10*time.Millisecond, "the output connects")

	s := newSrc("asm-1")
	order := func(p, txn string, id int, boom bool) service.MessageBatch {
		m := s.row(p, txn, "orders", map[string]any{"order_id": id, "customer_id": 1, "boom": boom}, true)
		return service.MessageBatch{m}
	}
	send := func(b service.MessageBatch) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, produce(ctx, b))
	}
	ev := &alertEval{t: t}
	rules := alertRules(t)
	const interval = 15 * time.Second
	ev.history = append(ev.history, scrapeAt(t, mux, 0))

	// Partition p-old commits a source transaction.
	send(order("p-old", "t1", 1, false))
	ev.history = append(ev.history, scrapeAt(t, mux, interval))
	last := ev.history[len(ev.history)-1]
	zero := func(name string, labels map[string]string) {
		t.Helper()
		for _, smp := range last.series[name] {
			match := true
			for k, v := range labels {
				match = match && smp.labels[k] == v
			}
			if match {
				assert.Zero(t, smp.value, "%s%v", name, labels)
				return
			}
		}
		t.Errorf("%s%v is not exported after its first sight", name, labels)
	}
	zero("starrocks_txn_dead_lettered", map[string]string{"partition": "p-old"})
	zero("starrocks_txn_sequence_gaps", map[string]string{})
	zero("starrocks_txn_rollbacks", map[string]string{"database": "test"})
	zero("starrocks_txn_unknown_commits", map[string]string{"database": "test"})
	for _, r := range retryReasons {
		zero("starrocks_txn_cycle_retries", map[string]string{"database": "test", "reason": r})
		zero("starrocks_txn_cycle_retries", map[string]string{"database": notBegunDB, "reason": r})
	}
	assert.Empty(t, ev.firing(rules, interval, "partition")["StarRocksTxnDeadLettered"], "nothing dead-lettered yet")

	// p-old's first dead letter, then one on a partition never seen before,
	// both between two scrapes.
	send(order("p-old", "t2", 2, true))
	send(order("p-new", "t3", 3, true))
	ev.history = append(ev.history, scrapeAt(t, mux, 2*interval))
	fired := ev.firing(rules, 2*interval, "partition")
	assert.Equal(t, []string{"p-new", "p-old"}, fired["StarRocksTxnDeadLettered"])
	for _, quiet := range []string{"StarRocksTxnPartitionStalled", "StarRocksTxnUnreachable", "StarRocksTxnCommitsFailing", "StarRocksTxnSequenceGaps"} {
		assert.Empty(t, fired[quiet], "%s must not fire", quiet)
	}

	// Eleven minutes later, with no new dead letter, the alert has resolved.
	for at := 3 * interval; at <= 2*interval+11*time.Minute; at += interval {
		ev.history = append(ev.history, scrapeAt(t, mux, at))
	}
	assert.Empty(t, ev.firing(rules, 2*interval+11*time.Minute, "partition")["StarRocksTxnDeadLettered"], "resolved once out of the window")
}
