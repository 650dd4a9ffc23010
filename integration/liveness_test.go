package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// TestNoDeadlockAtAnyPartitionCount: many partitions with the default
// settings (max_in_flight 1024, no batching policy, coalesce on) and source
// transactions whose records arrive in several waves, so that a partition's
// first records are fetched long before its END. Before the input delivered
// whole source transactions, every wave became a WriteBatch call per
// partition that waited for the END, and once partitions × waves reached
// max_in_flight no call was left to deliver the ENDs: the pipeline stalled
// for good (256 partitions × 4 waves, 1024 partitions × 1 wave). Now every
// transaction commits, whole: the input delivers whole source transactions,
// which holds with coalesce off (one partition per batch, the most calls)
// as with it on (the default), and with a max_in_flight far below the
// partition count (8: liveness does not depend on it, only throughput).
func TestNoDeadlockAtAnyPartitionCount(t *testing.T) {
	for _, c := range []struct {
		partitions  int32
		waves       int
		coalesce    bool
		maxInFlight int // 0: the default
	}{{256, 4, true, 0}, {256, 4, false, 0}, {1024, 1, true, 0}, {1024, 1, false, 0}, {256, 4, true, 8}} {
		name := fmt.Sprintf("%d partitions, coalesce %v", c.partitions, c.coalesce)
		if c.maxInFlight > 0 {
			name += fmt.Sprintf(", max_in_flight %d", c.maxInFlight)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testNoDeadlock(t, c.partitions, c.waves, c.coalesce, c.maxInFlight)
		})
	}
}

func testNoDeadlock(t *testing.T, partitions int32, waves int, coalesce bool, maxInFlight int) {
	r := newRig(t, partitions)
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID(fmt.Sprintf("liveness-%d", partitions)))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// produce writes one record per partition in one Kafka transaction.
	produce := func(ev func(p int32) map[string]any) {
		t.Helper()
		require.NoError(t, cl.BeginTransaction())
		recs := make([]*kgo.Record, 0, partitions)
		for p := int32(0); p < partitions; p++ {
			b, err := json.Marshal(ev(p))
			require.NoError(t, err)
			recs = append(recs, &kgo.Record{Partition: p, Value: b})
		}
		require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
		require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
	}
	var want []string
	event := func(p int32, txn string, id int64) map[string]any {
		want = append(want, strconv.FormatInt(id, 10))
		return map[string]any{"partition": p, "txnId": txn, "type": "DATA", "database": workload.Database, "table": workload.TableEvents,
			"json": map[string]any{"event_id": id, "order_id": int64(p), "kind": "create", "created_at": "2026-11-29 12:00:00"}}
	}
	txn := func(p int32, n int) string { return fmt.Sprintf("p%d-t%d", p, n) }

	metrics, logs := startDefaultPipeline(t, r, ctx, coalesce, maxInFlight)

	// The first transaction of every partition, its rows in waves: each
	// wave is fetched (and, without whole transactions, delivered) before
	// the next is produced.
	produce(func(p int32) map[string]any {
		return map[string]any{"partition": p, "txnId": txn(p, 1), "type": "TXN_BEGIN"}
	})
	for w := 0; w < waves; w++ {
		produce(func(p int32) map[string]any { return event(p, txn(p, 1), int64(p)<<20|int64(w)) })
		fetches := r.kafka.Fetches()
		testkit.WaitFor(t, 30*time.Second, func() bool { return r.kafka.Fetches() >= fetches+2 }, "the pipeline fetches wave %d", w)
	}
	produce(func(p int32) map[string]any {
		return map[string]any{"partition": p, "txnId": txn(p, 1), "type": "TXN_END"}
	})
	// A second, plain transaction of every partition.
	produce(func(p int32) map[string]any {
		return map[string]any{"partition": p, "txnId": txn(p, 2), "type": "TXN_BEGIN"}
	})
	produce(func(p int32) map[string]any { return event(p, txn(p, 2), int64(p)<<20|1<<10) })
	produce(func(p int32) map[string]any {
		return map[string]any{"partition": p, "txnId": txn(p, 2), "type": "TXN_END"}
	})
	sort.Strings(want)

	wantTxns := int64(2 * partitions)
	if !testkit.Poll(60*time.Second, func() bool { return metrics.Counter("starrocks_txn_source_txns_committed") >= wantTxns }) {
		t.Fatalf("%d of %d source transactions committed after 60 s: the pipeline stalled; last log lines:\n%s",
			metrics.Counter("starrocks_txn_source_txns_committed"), wantTxns, logs.tail(10))
	}
	rows, err := r.db.QueryContext(ctx, "SELECT event_id FROM "+workload.Database+"."+workload.TableEvents)
	require.NoError(t, err)
	var got []string
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		got = append(got, strconv.FormatInt(id, 10))
	}
	require.NoError(t, rows.Err())
	rows.Close()
	sort.Strings(got)
	require.Equal(t, want, got, "every row once")
	require.Zero(t, metrics.Counter("starrocks_txn_max_in_flight_starved"), "no cycle found every max_in_flight slot on open transactions")
	require.NotContains(t, logs.tail(1000), "max_in_flight", "the output never reported its slots all waiting on open transactions")
}

// startDefaultPipeline runs kafka_txn → txn_assembler → starrocks_txn with
// the default settings of every field that bounds what is in flight
// (max_in_flight, checkpoint_limit, batching, buffer_size, commit_interval;
// coalesce and, when not 0, max_in_flight as given); only the fetch wait
// that makes a test slow is shortened.
func startDefaultPipeline(t *testing.T, r *rig, ctx context.Context, coalesce bool, maxInFlight int) (*metricscap.Capture, *syncBuffer) {
	t.Helper()
	env := service.GlobalEnvironment().Clone()
	metrics, err := metricscap.Register(env, "liveness_metrics")
	require.NoError(t, err)
	mif := ""
	if maxInFlight > 0 {
		mif = fmt.Sprintf("\n    max_in_flight: %d", maxInFlight)
	}
	b := env.NewStreamBuilder()
	require.NoError(t, b.SetYAML(fmt.Sprintf(`
input:
  kafka_txn:
    seed_brokers: [ %q ]
    topics: [ %s ]
    consumer_group: liveness
    fetch_max_wait: 50ms
    coalesce: %v
  processors:
    - txn_assembler: {}
output:
  starrocks_txn:
    schema_evolution: ignore
    load_urls: [ %q ]%s
shutdown_timeout: 5s
`, strings.Join(r.brokers, ","), topic, coalesce, r.em.FEURL(), mif)))
	require.NoError(t, b.SetMetricsYAML("liveness_metrics: {}"))
	logs := &syncBuffer{}
	b.SetLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	stream, err := b.Build()
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- stream.Run(runCtx) }()
	t.Cleanup(func() {
		_ = stream.StopWithin(5 * time.Second)
		stop()
		<-done
	})
	return metrics, logs
}
