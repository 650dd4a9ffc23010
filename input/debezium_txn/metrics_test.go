package debezium_txn

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// nameCapture records every metric a stream creates and its last value.
type nameCapture struct {
	mu     sync.Mutex
	values map[string]int64
}

type capCounter struct {
	c   *nameCapture
	key string
}

func (c capCounter) Incr(n int64) { c.c.mu.Lock(); c.c.values[c.key] += n; c.c.mu.Unlock() }

type capGauge struct {
	c   *nameCapture
	key string
}

func (g capGauge) Set(v int64) { g.c.mu.Lock(); g.c.values[g.key] = v; g.c.mu.Unlock() }

type capTimer struct{}

func (capTimer) Timing(int64) {}

func (c *nameCapture) NewCounterCtor(name string, _ ...string) service.MetricsExporterCounterCtor {
	return func(...string) service.MetricsExporterCounter { return capCounter{c, name} }
}

func (c *nameCapture) NewTimerCtor(string, ...string) service.MetricsExporterTimerCtor {
	return func(...string) service.MetricsExporterTimer { return capTimer{} }
}

func (c *nameCapture) NewGaugeCtor(name string, _ ...string) service.MetricsExporterGaugeCtor {
	return func(...string) service.MetricsExporterGauge { return capGauge{c, name} }
}

func (*nameCapture) Close(context.Context) error { return nil }

func (c *nameCapture) get(name string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.values[name]
	return v, ok
}

// Every metric of the input exists, at 0, before the first event, and the
// counters move through the Benthos metrics API once traffic flows.
func TestMetricsExistFromTheStart(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, SnapshotOrders: 3, Seed: 2})
	capture := &nameCapture{values: map[string]int64{}}
	env := service.GlobalEnvironment().Clone()
	require.NoError(t, env.RegisterMetricsExporter("dbz_capture", service.NewConfigSpec(),
		func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) { return capture, nil }))
	b := env.NewStreamBuilder()
	indented := strings.ReplaceAll(strings.TrimPrefix(w.yaml("g-metrics", ""), "\n"), "\n", "\n    ")
	require.NoError(t, b.SetYAML("input:\n  debezium_txn:\n    "+indented+"\noutput:\n  drop: {}\n"))
	require.NoError(t, b.SetMetricsYAML("dbz_capture: {}"))
	stream, err := b.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx) }()
	defer func() { _ = stream.StopWithin(10 * time.Second); <-done }()

	names := []string{"debezium_txn_transactions", "debezium_txn_events", "debezium_txn_snapshot_rows", "debezium_txn_untransacted_rows",
		"debezium_txn_duplicates", "debezium_txn_resent_transactions", "debezium_txn_progress_skipped", "debezium_txn_empty_transactions",
		"debezium_txn_tombstones", "debezium_txn_truncates_skipped", "debezium_txn_incomplete_reports", "debezium_txn_commits",
		"debezium_txn_commit_errors", "debezium_txn_fences", "debezium_txn_read_ahead_waits", "debezium_txn_buffered_bytes", "debezium_txn_buffered_transactions",
		"debezium_txn_buffer_full", "debezium_txn_in_flight", "debezium_txn_stopped", "debezium_txn_standby"}
	// The input sets its metrics to 0 one after another at its start:
	// wait for the last of them, or a poll between two fails (it did once
	// under -race).
	require.Eventually(t, func() bool {
		for _, n := range names {
			if _, ok := capture.get(n); !ok {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "every metric exists soon after the start")
	for _, n := range names {
		v, ok := capture.get(n)
		assert.True(t, ok, "%s exists before any event", n)
		assert.Zero(t, v, "%s starts at 0", n)
	}
	w.produce(20)
	require.Eventually(t, func() bool { v, _ := capture.get("debezium_txn_transactions"); return v == 20 }, 20*time.Second, 20*time.Millisecond)
	v, _ := capture.get("debezium_txn_snapshot_rows")
	assert.Equal(t, w.prod.Stats.SnapshotRows.Load(), v)
	require.Eventually(t, func() bool { v, _ := capture.get("debezium_txn_commits"); return v > 0 }, 10*time.Second, 20*time.Millisecond)
}
