package integration

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	// The file output of dead_letter.
	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// The world of the schema-change tests (schema_evolution_test.go): a source
// whose tables change mid-stream (testkit/workload's SchemaPlan), shown as
// Debezium shows it (new Connect schemas, a new topic) or as Maxwell does
// (table-alter and table-create DDL events between transactions), loaded
// by the real pipeline with schema_evolution (ARCHITECTURE.md §14), and a
// reader that checks every order value it sees against what the source
// transaction that wrote it wrote: its new columns (none lost, their
// DEFAULT or NULL before them), its shipment (a shipment visible iff its
// order's update is), its items (ConsistencyQuery).

// schemaSource is a source of either format.
type schemaSource interface {
	// produce writes source transactions at about rate per second until
	// n were written or ctx ends.
	produce(ctx context.Context, n int, rate float64) (wait func() error)
	// yaml is the pipeline of the format with the output's settings.
	yaml(o schemaPipeOpts) string
	// written is when the first source transaction under a change was
	// written (zero: not yet).
	written(k workload.SchemaChangeKind) time.Time
	// txns are the written source transactions, in order.
	txns() []workload.Txn
	// produced is how many source transactions were written.
	produced() int64
}

// schemaPipeOpts shape the output of a schema-change pipeline.
type schemaPipeOpts struct {
	group string
	// evolution is schema_evolution: evolve, error or ignore ("": the
	// output's default).
	evolution   string
	exactlyOnce bool
	// deadLetter is the path of a file dead_letter ("" for none: a
	// poisoned source transaction stalls its partition).
	deadLetter   string
	commitPeriod time.Duration
	// processors are put before the probe (YAML list items indented for
	// input.processors).
	processors string
}

// outputYAML is the starrocks_txn section every schema pipeline shares.
func (o schemaPipeOpts) outputYAML(r *rig) string {
	mode := ""
	if o.evolution != "" {
		mode = "    schema_evolution: " + o.evolution + "\n    stall_retry_interval: 500ms\n"
	}
	eo := ""
	if o.exactlyOnce {
		eo = "    semantic: exactly_once\n    pipeline_id: integration-schema\n"
	}
	dl := ""
	if o.deadLetter != "" {
		dl = fmt.Sprintf(`    dead_letter:
      file: { path: %q, codec: lines }
      processors:
        - mapping: |
            root = {"reason": @starrocks_dead_letter_reason, "txn": @starrocks_txn_id, "table": @starrocks_table, "row": content().string()}
`, o.deadLetter)
	}
	return fmt.Sprintf(`output:
  starrocks_txn:
    load_urls: [ %q ]
    mysql_address: %s
%s    commit_interval: 200ms
    txn_timeout: 10s
    max_in_flight: 512
    request_timeout: 3s
    label_state_wait: 500ms
    sequence_gap_timeout: 2s
    retry_backoff: { initial_interval: 20ms, max_interval: 300ms }
%s%s
shutdown_timeout: 5s
`, r.em.FEURL(), r.em.MySQLAddr(), mode, eo, dl)
}

// changeLog records when each change's first transaction was written,
// and every transaction.
type changeLog struct {
	mu    sync.Mutex
	at    map[workload.SchemaChangeKind]time.Time
	all   []workload.Txn
	count atomic.Int64
}

func newChangeLog() *changeLog { return &changeLog{at: map[workload.SchemaChangeKind]time.Time{}} }

func (l *changeLog) record(t workload.Txn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range t.Schema {
		if _, ok := l.at[c.Kind]; !ok {
			l.at[c.Kind] = time.Now()
		}
	}
	l.all = append(l.all, t)
	l.count.Add(1)
}

func (l *changeLog) written(k workload.SchemaChangeKind) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at[k]
}

func (l *changeLog) txns() []workload.Txn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]workload.Txn(nil), l.all...)
}

func (l *changeLog) produced() int64 { return l.count.Load() }

// schemaDbz is Debezium traffic under a plan: per-table topics (the
// shipments topic created by its first transaction), uneven partition lags
// up to 300 ms, a snapshot, large transactions, re-sent copies; with the
// JsonConverter's schemas (typed rows: the output can create and alter
// tables from them) or without (untyped rows: their keys).
type schemaDbz struct {
	*dbzWorld
	*changeLog
}

func newSchemaDbz(t *testing.T, r *rig, seed uint64, plan workload.SchemaPlan, schemas bool) *schemaDbz {
	t.Helper()
	src := workload.NewDebeziumSource(workload.DebeziumOptions{
		Partitions: 3, Schemas: schemas, SnapshotOrders: 20, LargeEvery: 25, LargeSize: 8,
		ResendRatio: 0.05, Seed: seed, Schema: plan,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, workload.CreateDebeziumTopics(ctx, r.brokers, src))
	model := workload.NewModel()
	model.KeepVersions()
	w := &schemaDbz{
		dbzWorld:  &dbzWorld{r: r, src: src, model: &source{model: model, abortedOrders: map[orderVersion]bool{}, abortedEvents: map[int64]bool{}}},
		changeLog: newChangeLog(),
	}
	rng := rand.New(rand.NewPCG(seed, 17))
	lags := map[string]time.Duration{}
	for topic := range src.AllTopics() {
		for p := int32(0); p < src.Partitions(); p++ {
			if topic != src.TransactionTopic() {
				lags[fmt.Sprintf("%s/%d", topic, p)] = time.Duration(rng.IntN(300)) * time.Millisecond
			}
		}
	}
	var err error
	w.prod, err = workload.NewDebeziumProducer(workload.DebeziumProducerOptions{
		Brokers: r.brokers,
		Lag:     func(topic string, p int32) time.Duration { return lags[fmt.Sprintf("%s/%d", topic, p)] },
		OnWrite: func(t workload.DebeziumTxn) { w.record(t.Txn) },
	}, src, model)
	require.NoError(t, err)
	t.Cleanup(w.prod.Close)
	return w
}

func (w *schemaDbz) produce(ctx context.Context, n int, rate float64) func() error {
	return w.dbzWorld.produce(ctx, n, rate)
}

// snapshot writes the initial snapshot and waits until it is loaded.
func (w *schemaDbz) snapshot(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, w.prod.Snapshot(ctx))
	waitSchemaConverged(t, w.r, w.model.model, 30*time.Second)
}

func (w *schemaDbz) yaml(o schemaPipeOpts) string {
	if o.commitPeriod == 0 {
		o.commitPeriod = 100 * time.Millisecond
	}
	// The shipments topic does not exist before its first transaction:
	// the topics are a regular expression, matched against the cluster's
	// topics again every metadata_max_age (a listed topic that does not
	// exist is refused at connect), and the END of the new table's first
	// transaction counts its events meanwhile (ARCHITECTURE.md §13.3).
	quoted := make([]string, 0, 4)
	for _, t := range w.src.DataTopics() {
		quoted = append(quoted, regexp.QuoteMeta(t))
	}
	return fmt.Sprintf(`
input:
  debezium_txn:
    seed_brokers: [ %q ]
    topics: [ '^(%s)$' ]
    regexp_topics: true
    transaction_topic: %s
    consumer_group: %s
    checkpoint_limit: 20000
    commit_period: %s
    revoke_timeout: 3s
    session_timeout: 1500ms
    rebalance_timeout: 8s
    heartbeat_interval: 300ms
    fetch_max_wait: 50ms
    metadata_max_age: 1s
    missing_events_timeout: 5s
    batching:
      count: 40
      period: 20ms
  processors:
%s    - integration_probe: {}
%s`, strings.Join(w.r.brokers, ","), strings.Join(quoted, "|"), w.src.TransactionTopic(), o.group, o.commitPeriod, o.processors, o.outputYAML(w.r))
}

// schemaMaxwell is Maxwell traffic under a plan: one partition (Maxwell
// partitions by database), each source transaction its rows with its xid
// and the DDL events of the changes before it, written by a producer that
// commits them in Kafka transactions of one source transaction each.
type schemaMaxwell struct {
	*changeLog
	r     *rig
	model *workload.Model
	prod  *workload.Producer
}

func newSchemaMaxwell(t *testing.T, r *rig, seed uint64, plan workload.SchemaPlan) *schemaMaxwell {
	t.Helper()
	w := &schemaMaxwell{changeLog: newChangeLog(), r: r, model: workload.NewModel()}
	w.model.KeepVersions()
	gen := workload.NewGenerator(workload.Options{Partitions: r.partitions, Seed: seed, Events: true, UpdateRatio: 0.4, DeleteRatio: 0.1, Schema: plan})
	var err error
	w.prod, err = workload.NewProducer(workload.ProducerOptions{
		Brokers: r.brokers, Topic: topic, Format: workload.FormatMaxwell,
		TransactionalID: fmt.Sprintf("schema-maxwell-%d", seed), OnCommit: w.record,
	}, gen, w.model)
	require.NoError(t, err)
	t.Cleanup(w.prod.Close)
	return w
}

func (w *schemaMaxwell) produce(ctx context.Context, n int, rate float64) func() error {
	done := make(chan error, 1)
	go func() {
		interval := time.Duration(float64(time.Second) / rate)
		next := time.Now()
		for n <= 0 || w.produced() < int64(n) {
			next = next.Add(interval)
			select {
			case <-ctx.Done():
				done <- nil
				return
			case <-time.After(time.Until(next)):
			}
			if err := w.prod.Produce(context.WithoutCancel(ctx), int(w.prod.Stats.Committed.Load())+1); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return func() error { return <-done }
}

func (w *schemaMaxwell) yaml(o schemaPipeOpts) string {
	if o.commitPeriod == 0 {
		o.commitPeriod = 100 * time.Millisecond
	}
	return fmt.Sprintf(`
input:
  kafka_txn:
    seed_brokers: [ %q ]
    topics: [ %s ]
    consumer_group: %s
    isolation_level: read_committed
    checkpoint_limit: 10000
    commit_period: %s
    revoke_timeout: 3s
    session_timeout: 1500ms
    rebalance_timeout: 8s
    heartbeat_interval: 300ms
    fetch_max_wait: 50ms
    batching:
      check: this.commit == true
      count: 40
      period: 20ms
  processors:
    - txn_assembler: { format: maxwell }
%s    - integration_probe: {}
%s`, strings.Join(w.r.brokers, ","), topic, o.group, o.commitPeriod, o.processors, o.outputYAML(w.r))
}

// startSchemaPipeline launches a pipeline of the source.
func startSchemaPipeline(t *testing.T, src schemaSource, name string, o schemaPipeOpts) *pipeline {
	t.Helper()
	p, err := launch(name, src.yaml(o))
	require.NoError(t, err)
	p.cleanupOnEnd(t)
	return p
}

// readTargetFor reads the target as the model renders it.
func readTargetFor(ctx context.Context, r *rig, want workload.Snapshot) (workload.Snapshot, error) {
	return workload.ReadTargetFor(ctx, r.db, want, true)
}

// waitSchemaConverged waits until the target holds exactly what the model
// says (the changed columns and the new table included).
func waitSchemaConverged(t *testing.T, r *rig, model *workload.Model, within time.Duration) {
	t.Helper()
	want := model.Snapshot()
	var last string
	if !testkit.Poll(within, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got, err := readTargetFor(ctx, r, want)
		if err != nil {
			last = err.Error()
			return false
		}
		last = workload.Detail(workload.Compare(want, got))
		return last == ""
	}) {
		require.Failf(t, "the target never matched the committed source", "after %v (%d source transactions committed): %s", within, model.Txns(), last)
	}
}

// schemaReader queries the target over the MySQL port while the pipeline
// loads. Every round checks, each in one statement (one snapshot):
//   - ConsistencyQuery: every order's total equals its items (the widened
//     quantities included), no item without its order;
//   - ShipmentsConsistencyQuery: no shipment without its order's value;
//   - ShipmentsQuery (OrdersQuery while shipments does not exist): every
//     order value seen shows what its source transaction wrote in the
//     columns the plan added (a value visible without its column is a value
//     lost; a row written before a column reads its DEFAULT or NULL), its
//     shipment iff that transaction wrote one, with the same status, and
//     (checkOrder) no order goes back to an older value nor comes back
//     after its delete.
type schemaReader struct {
	db         *sql.DB
	model      *workload.Model
	checkOrder bool

	rounds atomic.Int64
	torn   atomic.Int64

	mu       sync.Mutex
	problems []string
	// kinds counts the problems by kind: items, shipment, column, order.
	kinds   map[string]int
	lastErr string
	// unknown are order values seen that no committed transaction had
	// written yet (the model records a transaction once Kafka committed
	// it: a race); each must be known at the end.
	unknown  map[orderVersion]bool
	versions map[int64]int64
	gone     map[int64]bool
	// first is when a reader first saw each thing ("shipment",
	// "coupon").
	first map[string]time.Time

	cancel context.CancelFunc
	done   chan struct{}
}

func startSchemaReader(db *sql.DB, model *workload.Model, checkOrder bool) *schemaReader {
	ctx, cancel := context.WithCancel(context.Background())
	rd := &schemaReader{db: db, model: model, checkOrder: checkOrder, unknown: map[orderVersion]bool{}, kinds: map[string]int{},
		versions: map[int64]int64{}, gone: map[int64]bool{}, first: map[string]time.Time{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rd.done)
		for ctx.Err() == nil {
			pause := 5 * time.Millisecond
			if err := rd.round(ctx); err != nil && ctx.Err() == nil {
				rd.mu.Lock()
				rd.lastErr = err.Error()
				rd.mu.Unlock()
				pause = 50 * time.Millisecond
			}
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}()
	return rd
}

// Kinds of problems.
const (
	problemItems    = "items"
	problemShipment = "shipment"
	problemColumn   = "column"
	problemOrder    = "order"
)

func (rd *schemaReader) problem(kind, format string, args ...any) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	rd.kinds[kind]++
	if len(rd.problems) < 20 {
		rd.problems = append(rd.problems, fmt.Sprintf(format, args...))
	}
}

func (rd *schemaReader) saw(what string) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if _, ok := rd.first[what]; !ok {
		rd.first[what] = time.Now()
	}
}

// firstSaw is when the reader first saw what (zero: never).
func (rd *schemaReader) firstSaw(what string) time.Time {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.first[what]
}

func (rd *schemaReader) round(ctx context.Context) error {
	torn, orphans, err := workload.CheckConsistency(ctx, rd.db)
	if err != nil {
		return err
	}
	n := rd.rounds.Add(1)
	if torn+orphans > 0 {
		rd.torn.Add(1)
		rd.problem(problemItems, "round %d: %d orders differ from their items, %d items without their order", n, torn, orphans)
	}
	hasShipments := true
	rows, err := rd.db.QueryContext(ctx, workload.ShipmentsQuery)
	if err != nil {
		exists, xerr := workload.TableExists(ctx, rd.db, workload.TableShipments)
		if xerr != nil || exists {
			return fmt.Errorf("reading orders with their shipments: %w", err)
		}
		hasShipments = false
		if rows, err = rd.db.QueryContext(ctx, workload.OrdersQuery); err != nil {
			return fmt.Errorf("reading orders: %w", err)
		}
	}
	seen, err := scanNamed(rows)
	if err != nil {
		return err
	}
	if hasShipments {
		var bad int64
		if err := rd.db.QueryRowContext(ctx, workload.ShipmentsConsistencyQuery).Scan(&bad); err != nil {
			return fmt.Errorf("checking shipments: %w", err)
		}
		if bad > 0 {
			rd.torn.Add(1)
			rd.problem(problemShipment, "round %d: %d shipments without their order's value", n, bad)
		}
	}
	present := map[int64]bool{}
	for _, row := range seen {
		id := toInt(row["order_id"].String)
		status := row["order_status"].String
		present[id] = true
		rd.checkVersion(n, id, status)
		ov, ok := rd.model.OrderVersion(id, status)
		if !ok {
			rd.mu.Lock()
			rd.unknown[orderVersion{id, status}] = true
			rd.mu.Unlock()
			continue
		}
		for col, want := range ov.Columns {
			got, has := row[col]
			switch {
			case !has && want.Written && want.Value != "NULL":
				rd.torn.Add(1)
				rd.problem(problemColumn, "round %d: order %d %q is visible without column %s: its value %s is lost", n, id, status, col, want.Value)
			case has && textOf(got) != want.Value:
				rd.torn.Add(1)
				rd.problem(problemColumn, "round %d: order %d %q has %s = %s, its source transaction makes it %s", n, id, status, col, textOf(got), want.Value)
			case has && textOf(got) != "NULL":
				rd.saw(col)
			}
		}
		ship, hasShip := row["shipment_status"]
		switch {
		case !hasShipments && ov.Shipped:
			// The table might have been created since the read: only a
			// table still missing proves the shipment was not visible.
			if exists, err := workload.TableExists(ctx, rd.db, workload.TableShipments); err == nil && !exists {
				rd.torn.Add(1)
				rd.problem(problemShipment, "round %d: order %d %q is visible, shipments (which its source transaction wrote) does not exist", n, id, status)
			}
		case hasShip && ov.Shipped != ship.Valid:
			rd.torn.Add(1)
			rd.problem(problemShipment, "round %d: order %d %q: its source transaction wrote a shipment: %v, a shipment is visible: %v", n, id, status, ov.Shipped, ship.Valid)
		case hasShip && ship.Valid && ship.String != status:
			rd.torn.Add(1)
			rd.problem(problemShipment, "round %d: order %d %q is visible with the shipment of %q", n, id, status, ship.String)
		case hasShip && ship.Valid:
			rd.saw("shipment")
		}
	}
	if rd.checkOrder {
		for id := range rd.versions {
			if !present[id] {
				rd.gone[id] = true
			}
		}
	}
	return nil
}

// checkVersion checks per-key order: an order never goes back to an older
// value, nor comes back after its delete was visible.
func (rd *schemaReader) checkVersion(round, id int64, status string) {
	if !rd.checkOrder {
		return
	}
	v := versionOf(status)
	if prev, ok := rd.versions[id]; ok && v < prev {
		rd.problem(problemOrder, "round %d: order %d went back from version %d to %d", round, id, prev, v)
	}
	if rd.gone[id] {
		rd.problem(problemOrder, "round %d: order %d came back after its delete was visible", round, id)
	}
	rd.versions[id] = max(v, rd.versions[id])
}

// scanNamed reads every row as column name → value.
func scanNamed(rows *sql.Rows) ([]map[string]sql.NullString, error) {
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]sql.NullString, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []map[string]sql.NullString
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make(map[string]sql.NullString, len(names))
		for i, n := range names {
			row[strings.ToLower(n)] = vals[i]
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func textOf(v sql.NullString) string {
	if !v.Valid {
		return "NULL"
	}
	return v.String
}

func (rd *schemaReader) stop() {
	rd.cancel()
	<-rd.done
}

// check asserts what the reader saw: it ran, saw nothing torn or lost, and
// every order value it saw was written by a committed source transaction.
func (rd *schemaReader) check(t *testing.T) {
	t.Helper()
	rd.mu.Lock()
	defer rd.mu.Unlock()
	require.Greater(t, rd.rounds.Load(), int64(10), "the reader must run while loading (last error: %s)", rd.lastErr)
	require.Empty(t, rd.problems, "what the concurrent reader saw")
	var never []string
	for v := range rd.unknown {
		if _, ok := rd.model.OrderVersion(v.id, v.status); !ok {
			never = append(never, fmt.Sprintf("order %d %q", v.id, v.status))
		}
	}
	require.Empty(t, never, "order values no committed source transaction wrote were visible")
}

// deadLetter is one line of the file dead_letter.
type deadLetter struct {
	Reason string `json:"reason"`
	Txn    string `json:"txn"`
	Table  string `json:"table"`
	Row    string `json:"row"`
}

// readDeadLetters reads the file dead_letter (none while it does not
// exist).
func readDeadLetters(t *testing.T, path string) []deadLetter {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []deadLetter
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var d deadLetter
		require.NoError(t, json.Unmarshal(sc.Bytes(), &d), "a dead_letter line: %s", sc.Text())
		out = append(out, d)
	}
	require.NoError(t, sc.Err())
	return out
}

// deadLetterPath is a file dead_letter's path in the test's directory.
func deadLetterPath(t *testing.T) string { return filepath.Join(t.TempDir(), "dead_letter.jsonl") }

// saw counts the problems of a kind the reader saw.
func (rd *schemaReader) sawProblems(kind string) int {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.kinds[kind]
}
