package prometheus_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/metrics/prometheus"
)

// parse reads a scrape in the Prometheus text format with the classic
// (legacy) name rules, so a name that is not valid there fails the parse.
func parse(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err, "scrape:\n%s", text)
	return fams
}

// scrape GETs url and returns the body, requiring a 200.
func scrape(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	return string(body)
}

// serveMux scrapes a mux's /metrics in-process.
func serveMux(t testing.TB, mux http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return rec.Body.String()
}

// newExporter builds an exporter directly from a YAML config of the spec.
func newExporter(t testing.TB, yaml string) *prometheus.Exporter {
	t.Helper()
	conf, err := prometheus.Spec().ParseYAML(yaml, nil)
	require.NoError(t, err)
	e, err := prometheus.New(conf, service.MockResources().Logger())
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// series finds the metric of a family whose labels include want.
func series(t testing.TB, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "family %s missing; have %v", name, keys(fams))
outer:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue outer
			}
		}
		return m
	}
	require.Failf(t, "series missing", "%s%v not among %v", name, want, f.GetMetric())
	return nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
