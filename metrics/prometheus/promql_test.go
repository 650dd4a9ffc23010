package prometheus_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

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
	// stripped is the expression without strings, matchers and ranges.
	stripped string
}

var (
	grafanaVar = regexp.MustCompile(`\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
	strLit     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'` + "|`[^`]*`")
	matchers   = regexp.MustCompile(`\{([^}]*)\}`)
	matcherKey = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)`)
	rangeSel   = regexp.MustCompile(`\[[^\]]*\]`)
	grouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	rated      = regexp.MustCompile(`\b(?:rate|irate|increase)\s*\(\s*([A-Za-z_:][A-Za-z0-9_:]*)`)
)

var promqlKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
	"atan2": true,
}

// parsePromQL extracts the metric and label names of an expression written
// for Grafana (template variables are allowed anywhere).
func parsePromQL(expr string) promqlRefs {
	var r promqlRefs
	s := grafanaVar.ReplaceAllString(expr, "0")
	s = strLit.ReplaceAllString(s, `""`)
	for _, m := range matchers.FindAllStringSubmatch(s, -1) {
		for _, k := range matcherKey.FindAllStringSubmatch(m[1], -1) {
			r.labels = append(r.labels, k[1])
		}
	}
	s = matchers.ReplaceAllString(s, "")
	s = rangeSel.ReplaceAllString(s, "")
	for _, g := range grouping.FindAllStringSubmatch(s, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				r.labels = append(r.labels, l)
			}
		}
	}
	s = grouping.ReplaceAllString(s, " ")
	r.stripped = s
	for _, m := range rated.FindAllStringSubmatch(s, -1) {
		r.ratedMetrics = append(r.ratedMetrics, m[1])
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= '0' && c <= '9' || c == '.':
			// A number or a duration: 2, 0.99, 1e9, 0x1f, 5m.
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			word := s[i:j]
			k := j
			for k < len(s) && s[k] == ' ' {
				k++
			}
			if (k >= len(s) || s[k] != '(') && !promqlKeywords[strings.ToLower(word)] {
				r.metrics = append(r.metrics, word)
			}
			i = j
		default:
			i++
		}
	}
	slices.Sort(r.metrics)
	r.metrics = slices.Compact(r.metrics)
	slices.Sort(r.labels)
	r.labels = slices.Compact(r.labels)
	return r
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdent(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

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
		assert.Equal(t, tc.metrics, r.metrics, tc.expr)
		assert.Equal(t, tc.label, r.labels, tc.expr)
		assert.Equal(t, tc.rated, r.ratedMetrics, tc.expr)
	}
}
