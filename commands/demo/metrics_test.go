package demo

import (
	"context"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `demo --config` with a metrics section of its own: the pipeline's exporter
// (here the prometheus one on a listener, with a mapping adding a label)
// serves the plugins' metrics while the demo still reads its figures.
func TestDemoKeepsThePipelinesMetrics(t *testing.T) {
	pipeline, err := os.ReadFile("../../examples/demo.yaml")
	require.NoError(t, err)
	schema, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	conf := string(pipeline) + `
metrics:
  mapping: 'meta run = "demo-test"'
  prometheus:
    listen_address: "` + addr + `"
`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Start(ctx, Options{Partitions: 2, Rate: 100, Duration: 3 * time.Second, Pipeline: conf, Schema: string(schema), Seed: 3})
	require.NoError(t, err)
	defer r.Close()

	s, err := r.Run(ctx)
	require.NoError(t, err)
	assert.True(t, s.TablesMatch, s.Mismatch)
	require.Positive(t, s.TxnsLoaded, "the demo's own figures still come in")

	// The exporter is still up until Close: its counter equals the demo's.
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	f, ok := fams["starrocks_txn_source_txns_committed"]
	require.True(t, ok, "the pipeline's exporter serves the plugins' metrics")
	var sum float64
	for _, m := range f.GetMetric() {
		sum += m.GetCounter().GetValue()
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		assert.Equal(t, "demo-test", labels["run"], "the section's mapping applies")
	}
	assert.Equal(t, float64(s.TxnsLoaded), sum)
	assert.Contains(t, fams, "kafka_txn_lag")
}

func TestMetricsSection(t *testing.T) {
	for conf, want := range map[string]string{
		"input: {stdin: {}}\n":                               "",
		"metrics: {none: {}}\n":                              "",
		"metrics:\n  prometheus: {}\n":                       "prometheus: {}\n",
		"metrics:\n  json_api: {}\n  mapping: root = this\n": "json_api: {}\nmapping: root = this\n",
	} {
		got, err := metricsSection(conf)
		require.NoError(t, err)
		assert.Equal(t, want, got, conf)
	}
}
