package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// Source formats of the demo.
const (
	FormatEnvelope = "envelope"
	FormatDebezium = "debezium"
)

// DebeziumPipeline is the pipeline `demo --format debezium` runs: the
// topics of a Debezium MySQL connector → debezium_txn → starrocks_txn (no
// assembler: the input assembles transactions across partitions).
const DebeziumPipeline = `
input:
  debezium_txn:
    seed_brokers: [ "${KAFKA_BROKERS:127.0.0.1:9092}" ]
    topics: [ "${DEBEZIUM_TOPICS:dbserver1.test.orders,dbserver1.test.order_items,dbserver1.test.order_events}" ]
    transaction_topic: "${DEBEZIUM_TRANSACTION_TOPIC:dbserver1.transaction}"
    consumer_group: "${KAFKA_GROUP:starrocks-demo}"
    batching:
      count: 1000
      period: 50ms

output:
  starrocks_txn:
    load_urls: [ "${STARROCKS_LOAD_URL:http://127.0.0.1:8030}" ]
    username: "${STARROCKS_USER:root}"
    password: "${STARROCKS_PASSWORD:}"
    commit_interval: 1s
    max_in_flight: 1024

logger:
  level: warn

shutdown_timeout: 20s
`

// debeziumSnapshotOrders is the size of the demo's initial snapshot.
const debeziumSnapshotOrders = 200

// startDebezium creates the Debezium topics and the producer, and returns
// the pipeline's variables.
func (r *Running) startDebezium(ctx context.Context, brokers []string) (map[string]string, error) {
	src := workload.NewDebeziumSource(workload.DebeziumOptions{
		Partitions: r.opts.Partitions, Schemas: true, SnapshotOrders: debeziumSnapshotOrders,
		LargeEvery: 50, LargeSize: 20, ResendRatio: 0.01, Seed: r.opts.Seed,
	})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := workload.CreateDebeziumTopics(cctx, brokers, src); err != nil {
		return nil, err
	}
	var err error
	if r.dbz, err = workload.NewDebeziumProducer(workload.DebeziumProducerOptions{Brokers: brokers, Rate: r.opts.Rate}, src, r.model); err != nil {
		return nil, err
	}
	return map[string]string{
		"DEBEZIUM_TOPICS":            strings.Join(src.DataTopics(), ","),
		"DEBEZIUM_TRANSACTION_TOPIC": src.TransactionTopic(),
	}, nil
}

// debeziumSnapshot writes the initial snapshot and waits until it is loaded.
func (r *Running) debeziumSnapshot(ctx context.Context) error {
	if err := r.dbz.Snapshot(ctx); err != nil {
		return err
	}
	fmt.Fprintf(r.opts.Out, "demo: snapshot of %d rows written; loading it before streaming starts\n", r.dbz.Stats.SnapshotRows.Load())
	return r.drain(ctx)
}

func (r *Running) debeziumSummary() *Summary {
	st := &r.dbz.Stats
	return &Summary{
		Elapsed:         time.Since(r.start),
		SourceCommitted: st.Txns.Load(),
		Records:         st.Records.Load(),
		TxnsLoaded:      r.metrics.Counter("debezium_txn_transactions"),
		RowsLoaded:      r.metrics.Counter("starrocks_txn_rows_committed"),
		Commits:         r.metrics.Counter("starrocks_txn_commits"),
		Loads:           r.metrics.Counter("starrocks_txn_loads"),
		Checks:          r.checks.Load(),
		TornReads:       r.torn.Load(),
		Latencies:       r.metrics.Timings("starrocks_txn_visibility_latency_ns"),
		MySQLAddr:       r.em.MySQLAddr(),
		SnapshotRows:    st.SnapshotRows.Load(),
		LargestTxn:      st.Largest.Load(),
		PerTable:        r.heal != nil,
		Windows:         r.metrics.Timings("starrocks_txn_commit_window_ns"),
	}
}
