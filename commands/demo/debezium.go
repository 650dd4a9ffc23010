package demo

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
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
// assembler: the input assembles transactions across partitions). With
// schema changes the topics are a regular expression, so that the topic of
// a table created mid-run is read within metadata_max_age, and the output
// applies each change (schema_evolution's default, evolve) through the
// MySQL port (ARCHITECTURE.md §14).
const DebeziumPipeline = `
input:
  debezium_txn:
    seed_brokers: [ "${KAFKA_BROKERS:127.0.0.1:9092}" ]
    topics: [ '${DEBEZIUM_TOPICS:dbserver1.test.orders,dbserver1.test.order_items,dbserver1.test.order_events}' ]
    regexp_topics: ${DEBEZIUM_REGEXP_TOPICS:false}
    metadata_max_age: 1s
    transaction_topic: "${DEBEZIUM_TRANSACTION_TOPIC:dbserver1.transaction}"
    consumer_group: "${KAFKA_GROUP:starrocks-demo}"
    batching:
      count: 1000
      period: 50ms

output:
  starrocks_txn:
    load_urls: [ "${STARROCKS_LOAD_URL:http://127.0.0.1:8030}" ]
    mysql_address: "${STARROCKS_MYSQL_ADDRESS:127.0.0.1:9030}"
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

// schemaChangeRun is the run length the schema changes are spread over
// when the demo runs until Ctrl-C: the default 15 s.
const schemaChangeRun = 15 * time.Second

// schemaPlan spreads every schema change over the first half of the run:
// at a tenth, two, three and four tenths of the source transactions the
// rate and the duration make, so that a producer slower than the rate
// (a loaded machine) still makes them all, and the run goes on for a while
// after the last.
func schemaPlan(rate float64, d time.Duration) workload.SchemaPlan {
	if d <= 0 {
		d = schemaChangeRun
	}
	return workload.DefaultSchemaPlan(max(int(rate*d.Seconds()/2), 10))
}

// schemaLog records when the source made each schema change.
type schemaLog struct {
	mu   sync.Mutex
	made []string
}

func (l *schemaLog) record(t workload.DebeziumTxn) {
	if len(t.Txn.Schema) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range t.Txn.Schema {
		l.made = append(l.made, fmt.Sprintf("%s of %s (%s)", c.Kind, c.Table, c.SQL))
	}
}

func (l *schemaLog) changes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.made...)
}

// startDebezium creates the Debezium topics and the producer, and returns
// the pipeline's variables.
func (r *Running) startDebezium(ctx context.Context, brokers []string) (map[string]string, error) {
	var plan workload.SchemaPlan
	if r.opts.SchemaChanges {
		plan = schemaPlan(r.opts.Rate, r.opts.Duration)
		for _, st := range plan {
			r.planEnd = max(r.planEnd, st.At+1)
		}
	}
	src := workload.NewDebeziumSource(workload.DebeziumOptions{
		Partitions: r.opts.Partitions, Schemas: true, SnapshotOrders: debeziumSnapshotOrders,
		LargeEvery: 50, LargeSize: 20, ResendRatio: 0.01, Seed: r.opts.Seed, Schema: plan,
	})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := workload.CreateDebeziumTopics(cctx, brokers, src); err != nil {
		return nil, err
	}
	var err error
	r.schemas = &schemaLog{}
	if r.dbz, err = workload.NewDebeziumProducer(workload.DebeziumProducerOptions{Brokers: brokers, Rate: r.opts.Rate, OnWrite: r.schemas.record}, src, r.model); err != nil {
		return nil, err
	}
	vars := map[string]string{
		"DEBEZIUM_TOPICS":            strings.Join(src.DataTopics(), ","),
		"DEBEZIUM_TRANSACTION_TOPIC": src.TransactionTopic(),
	}
	if r.opts.SchemaChanges {
		// The shipments topic exists once the source creates the table.
		quoted := make([]string, 0, 4)
		for _, t := range src.DataTopics() {
			quoted = append(quoted, regexp.QuoteMeta(t))
		}
		vars["DEBEZIUM_TOPICS"] = "^(" + strings.Join(quoted, "|") + ")$"
		vars["DEBEZIUM_REGEXP_TOPICS"] = "true"
	}
	return vars, nil
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
		// What StarRocks committed, each snapshot row its own source
		// transaction: not what the input emitted, which counts again
		// what a rebalance (a new table's topic) fenced and re-read.
		TxnsLoaded:    r.metrics.Counter("starrocks_txn_source_txns_committed") - st.SnapshotRows.Load(),
		RowsLoaded:    r.metrics.Counter("starrocks_txn_rows_committed"),
		Commits:       r.metrics.Counter("starrocks_txn_commits"),
		Loads:         r.metrics.Counter("starrocks_txn_loads"),
		Checks:        r.checks.Load(),
		TornReads:     r.torn.Load(),
		Latencies:     r.metrics.Timings("starrocks_txn_visibility_latency_ns"),
		MySQLAddr:     r.em.MySQLAddr(),
		SnapshotRows:  st.SnapshotRows.Load(),
		LargestTxn:    st.Largest.Load(),
		SchemaChanges: r.schemas.changes(),
		PerTable:      r.heal != nil,
		Windows:       r.metrics.Timings("starrocks_txn_commit_window_ns"),
	}
}
