package starrocks_txn

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/starrocks-txn/benthos-starrocks/metrics/prometheus"
)

// get serves one GET of path from mux.
func get(mux http.Handler, path string) (int, string) {
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// A freshly started output, before any message, exports through the
// prometheus exporter every counter and gauge without labels at 0 (the
// connected gauge at 1 once Connect succeeded), and the commit, rollback,
// load and row counters of every target its configuration names at 0.
func TestMetricsExistAtZeroFromTheStart(t *testing.T) {
	e := startEmulator(t)
	mux := http.NewServeMux()
	sb := service.NewStreamBuilder()
	sb.SetHTTPMux(mux)
	require.NoError(t, sb.SetLoggerYAML("level: none"))
	require.NoError(t, sb.SetMetricsYAML("prometheus: {}"))
	_, err := sb.AddBatchProducerFunc() // an input that sends nothing
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  schema_evolution: ignore
  load_urls: [ %q ]
  database: test
  table: orders
  table_properties:
    - { database: test, table: order_items, properties: { max_filter_ratio: "0" } }
`, e.FEURL())))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()
	t.Cleanup(func() { _ = stream.StopWithin(10 * time.Second) })
	require.Eventually(t, func() bool { code, _ := get(mux, "/ready"); return code == http.StatusOK },
		10*time.Second, 10*time.Millisecond, "the output connects")

	_, text := get(mux, "/metrics")
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err)
	value := func(name string, labels map[string]string) (float64, bool) {
		f, ok := fams[name]
		if !ok {
			return 0, false
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), true
			}
		}
		return 0, false
	}
	for _, name := range []string{
		"starrocks_txn_partition_stalls", "starrocks_txn_max_in_flight_starved", "starrocks_txn_lifecycle_errors",
		"starrocks_txn_sequence_gaps", "starrocks_txn_stalled_partitions", "starrocks_txn_buffered_bytes", "starrocks_txn_open_regions",
		"starrocks_txn_waiting_write_batches",
	} {
		v, ok := value(name, nil)
		assert.True(t, ok, "%s is exported from the start", name)
		assert.Zero(t, v, name)
	}
	v, ok := value("starrocks_txn_connected", nil)
	assert.True(t, ok)
	assert.Equal(t, 1.0, v, "connected once Connect succeeded")
	for _, name := range []string{"starrocks_txn_commits", "starrocks_txn_rollbacks", "starrocks_txn_source_txns_committed"} {
		v, ok := value(name, map[string]string{"database": "test"})
		assert.True(t, ok, "%s{database=test} is exported from the start", name)
		assert.Zero(t, v, name)
	}
	for _, table := range []string{"orders", "order_items"} {
		for _, name := range []string{"starrocks_txn_loads", "starrocks_txn_load_bytes", "starrocks_txn_rows_committed"} {
			v, ok := value(name, map[string]string{"database": "test", "table": table})
			assert.True(t, ok, "%s{database=test,table=%s} is exported from the start", name, table)
			assert.Zero(t, v, name)
		}
	}
}

// Sequence gaps are counted in one series, whatever assembler instance
// they come from: every restart of an assembler has a new random
// starrocks_seq_source, so a series per source would grow without bound
// (the Benthos metrics API cannot delete one). The error log names the
// instance.
func TestSequenceGapsAreOneSeriesAcrossAssemblerRestarts(t *testing.T) {
	e := startEmulator(t)
	mux := http.NewServeMux()
	sb := service.NewStreamBuilder()
	sb.SetHTTPMux(mux)
	require.NoError(t, sb.SetLoggerYAML("level: none"))
	require.NoError(t, sb.SetMetricsYAML("prometheus: {}"))
	send, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  schema_evolution: ignore
  load_urls: [ %q ]
  commit_interval: 50ms
  sequence_gap_timeout: 100ms
`, e.FEURL())))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()
	t.Cleanup(func() { _ = stream.StopWithin(10 * time.Second) })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 1; i <= 3; i++ {
		// One assembler instance (a restart each time), on its own
		// partition: seq 2 never arrives.
		s := newSrc(fmt.Sprintf("asm-%d", i))
		p := fmt.Sprintf("p%d", i)
		m1 := s.row(p, "t1", "orders", map[string]any{"order_id": 10*i + 1, "customer_id": 1}, true)
		_ = s.row(p, "lost", "orders", map[string]any{"order_id": 10*i + 2, "customer_id": 1}, true)
		m3 := s.row(p, "t3", "orders", map[string]any{"order_id": 10*i + 3, "customer_id": 1}, true)
		require.NoError(t, send(ctx, service.MessageBatch{m1}))
		require.NoError(t, send(ctx, service.MessageBatch{m3}))
	}
	_, text := get(mux, "/metrics")
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err)
	f, ok := fams["starrocks_txn_sequence_gaps"]
	require.True(t, ok, "the gaps were counted")
	require.Len(t, f.GetMetric(), 1, "one series for every assembler instance")
	m := f.GetMetric()[0]
	for _, l := range m.GetLabel() {
		assert.NotEqual(t, "seq_source", l.GetName(), "no per-instance label")
	}
	assert.Equal(t, 3.0, m.GetCounter().GetValue(), "one missing seq per instance")
}
