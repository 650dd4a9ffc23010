package starrocks_txn

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

func exampleSchema(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)
	return string(b)
}

var emulatorStartMu sync.Mutex

func startEmulator(t testing.TB, mods ...func(*emulator.Config)) *emulator.Emulator {
	t.Helper()
	cfg := emulator.Config{
		HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: exampleSchema(t),
		ReaperInterval: 50 * time.Millisecond,
	}
	for _, m := range mods {
		m(&cfg)
	}
	// go-mysql-server's engine constructor writes process-global status
	// variables: emulators must not start concurrently.
	emulatorStartMu.Lock()
	e, err := emulator.Start(cfg)
	emulatorStartMu.Unlock()
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// orderWorkload is a CDC-like stream over orders, order_items and
// order_events: every source transaction upserts (or deletes) one order with
// all its items, whose quantity equals the order's version, and appends one
// event. Orders are owned by one partition, so per-key order is partition
// order.
type orderWorkload struct {
	batches    []service.MessageBatch
	orders     map[int64]int64    // order_id -> version (absent: deleted)
	items      map[[2]int64]int64 // (order_id, item_id) -> quantity
	events     int
	txnsOfPart map[string]int
	// notes are order_events' note values by event_id, with
	// orderWorkloadNotes: the column a schema change adds mid-stream.
	notes map[int64]string
}

// notedEvents is order_events as a source with types declares it once it
// has the column note (a Debezium connector after ALTER TABLE … ADD
// COLUMN): rows with it need the column added before they load.
var notedEvents = &schema.Table{Key: []string{"event_id"}, Columns: []schema.Column{
	{Name: "event_id", Type: schema.BigInt},
	{Name: "order_id", Type: schema.BigInt},
	{Name: "kind", Type: schema.Varchar(16)},
	{Name: "note", Type: schema.Varchar(32), Nullable: true},
}}

// orderWorkloadNotes is newOrderWorkload whose partition orders/0, from its
// third source transaction on, writes order_events rows typed as
// notedEvents with a note: a schema change in the middle of the stream,
// after rows of the old schema and before more of them on other partitions.
func orderWorkloadNotes(seed int64, partitions, txnsPerPartition int) *orderWorkload {
	return genOrderWorkload(seed, partitions, txnsPerPartition, func(p string, k int) bool { return p == "orders/0" && k >= 2 })
}

func newOrderWorkload(seed int64, partitions, txnsPerPartition int) *orderWorkload {
	return genOrderWorkload(seed, partitions, txnsPerPartition, nil)
}

func genOrderWorkload(seed int64, partitions, txnsPerPartition int, noted func(p string, k int) bool) *orderWorkload {
	rng := rand.New(rand.NewSource(seed))
	w := &orderWorkload{orders: map[int64]int64{}, items: map[[2]int64]int64{}, txnsOfPart: map[string]int{}, notes: map[int64]string{}}
	s := newSrc(fmt.Sprintf("asm-%d", seed))
	var msgs []*service.Message
	version := int64(0)
	eventID := int64(0)
	row := func(p, txn, table string, body map[string]any, end bool) *service.Message {
		b, _ := json.Marshal(body)
		m := service.NewMessage(b)
		s.stamp(m, p, txn, "test", table, end, false)
		return m
	}
	for k := 0; k < txnsPerPartition; k++ {
		for pi := 0; pi < partitions; pi++ {
			p := fmt.Sprintf("orders/%d", pi)
			txn := fmt.Sprintf("%s-%d", p, k)
			w.txnsOfPart[p]++
			id := int64(pi*1000 + rng.Intn(4))
			n := 1 + id%3
			version++
			eventID++
			var rows []*service.Message
			if _, exists := w.orders[id]; exists && rng.Intn(5) == 0 {
				rows = append(rows, row(p, txn, "orders", map[string]any{"order_id": id, "customer_id": 0, "__op": 1}, false))
				for j := int64(1); j <= n; j++ {
					rows = append(rows, row(p, txn, "order_items", map[string]any{"order_id": id, "item_id": j, "__op": 1}, false))
					delete(w.items, [2]int64{id, j})
				}
				delete(w.orders, id)
			} else {
				items := make([]*service.Message, 0, n)
				for j := int64(1); j <= n; j++ {
					items = append(items, row(p, txn, "order_items", map[string]any{"order_id": id, "item_id": j, "product": "p", "quantity": version, "price": 1.5}, false))
					w.items[[2]int64{id, j}] = version
				}
				order := row(p, txn, "orders", map[string]any{"order_id": id, "customer_id": version, "total_amount": n, "order_status": "new"}, false)
				// Vary which table comes first and which one carries END.
				if rng.Intn(2) == 0 {
					rows = append(append(rows, order), items...)
				} else {
					rows = append(append(rows, items...), order)
				}
				w.orders[id] = version
			}
			typed := noted != nil && noted(p, k)
			if typed {
				note := fmt.Sprintf("n%d", eventID)
				rows = append(rows, s.typedRow(p, txn, "order_events", notedEvents, map[string]any{"event_id": eventID, "order_id": id, "kind": "cdc", "note": note}, false))
				w.notes[eventID] = note
			} else {
				rows = append(rows, row(p, txn, "order_events", map[string]any{"event_id": eventID, "order_id": id, "kind": "cdc"}, false))
			}
			w.events++
			// END on the last row, or a body-less END marker (always
			// after a typed row: its facts are written with it).
			if typed || rng.Intn(3) == 0 {
				rows = append(rows, s.marker(p, txn, false))
			} else {
				last := rows[len(rows)-1]
				last.MetaSetMut(contract.KeyTxnEnd, "true")
			}
			msgs = append(msgs, rows...)
		}
	}
	for len(msgs) > 0 {
		n := 1 + rng.Intn(6)
		if n > len(msgs) {
			n = len(msgs)
		}
		w.batches = append(w.batches, msgs[:n])
		msgs = msgs[n:]
	}
	return w
}

// reader queries the emulator over the MySQL port while the stream runs and
// counts snapshots in which a source transaction is partly visible.
type reader struct {
	db         *sql.DB
	queries    atomic.Int64
	violations atomic.Int64
	lastErr    atomic.Value
	// versions seen per order: a source partition's updates must become
	// visible in source order, so they never go back.
	seen      map[int64]int64
	regressed atomic.Int64
}

var partialQueries = []string{
	// Items of another version than their order: half of an update.
	"SELECT COUNT(*) FROM order_items i JOIN orders o ON i.order_id = o.order_id WHERE i.quantity <> o.customer_id",
	// Items without their order: half of an insert or a delete.
	"SELECT COUNT(*) FROM order_items i LEFT JOIN orders o ON i.order_id = o.order_id WHERE o.order_id IS NULL",
	// An order without all of its items.
	"SELECT COUNT(*) FROM orders o WHERE (SELECT COUNT(*) FROM order_items i WHERE i.order_id = o.order_id) <> o.total_amount",
}

func (r *reader) run(ctx context.Context) { r.runPaced(ctx, 0) }

// runPaced runs the reader's queries with pause between rounds.
func (r *reader) runPaced(ctx context.Context, pause time.Duration) {
	r.seen = map[int64]int64{}
	for ctx.Err() == nil {
		if pause > 0 && !sleepCtx(ctx, pause) {
			return
		}
		if rows, err := r.db.QueryContext(ctx, "SELECT order_id, customer_id FROM orders"); err == nil {
			for rows.Next() {
				var id, v int64
				if rows.Scan(&id, &v) == nil {
					if v < r.seen[id] {
						r.regressed.Add(1)
					}
					r.seen[id] = v
				}
			}
			_ = rows.Close()
		}
		for _, q := range partialQueries {
			var n int
			if err := r.db.QueryRowContext(ctx, q).Scan(&n); err != nil {
				if ctx.Err() == nil {
					r.lastErr.Store(err.Error())
				}
				continue
			}
			r.queries.Add(1)
			if n != 0 {
				r.violations.Add(1)
			}
		}
	}
}

type faultStep struct {
	after  time.Duration
	fault  emulator.Fault
	action func(e *emulator.Emulator)
}

// runOrders drives the workload through a real Benthos stream into the
// emulator, injecting steps, and checks the result against the model.
func runOrders(t *testing.T, steps []faultStep, mods ...func(*emulator.Config)) emulator.Counters {
	return runOrdersSized(t, 4, 15, 1500*time.Millisecond, steps, mods...)
}

func runOrdersSized(t *testing.T, partitions, txns int, pace time.Duration, steps []faultStep, mods ...func(*emulator.Config)) emulator.Counters {
	return runOrdersWith(t, ordersRun{partitions: partitions, txns: txns, pace: pace, steps: steps, emu: mods})
}

// ordersRun configures runOrdersWith.
type ordersRun struct {
	partitions, txns int
	pace             time.Duration
	steps            []faultStep
	emu              []func(*emulator.Config)
	// output replaces the output's timing fields (commit_interval,
	// txn_timeout, max_in_flight, label_state_wait, request_timeout,
	// retry_backoff) when set; $MYSQL in it is the emulator's MySQL
	// address.
	output string
	// during runs while the stream does, until its context ends.
	during func(ctx context.Context, e *emulator.Emulator)
	// duplicateEvents accepts order_events rows loaded more than once (at
	// least once): every event must be there, some more than once.
	duplicateEvents bool
	// metrics, when set, receives the stream's metrics.
	metrics **metricscap.Capture
}

// defaultOrdersOutput are the output fields of runOrders.
const defaultOrdersOutput = `  commit_interval: 200ms
  txn_timeout: 5s
  max_in_flight: 64
  label_state_wait: 500ms
  request_timeout: 2s
  retry_backoff: { initial_interval: 20ms, max_interval: 300ms }
`

func runOrdersWith(t *testing.T, r ordersRun) emulator.Counters {
	partitions, txns, pace, steps := r.partitions, r.txns, r.pace, r.steps
	e := startEmulator(t, r.emu...)
	w := newOrderWorkload(time.Now().UnixNano()%1000, partitions, txns)
	outputYAML := r.output
	if outputYAML == "" {
		outputYAML = defaultOrdersOutput
	}
	outputYAML = strings.ReplaceAll(outputYAML, "$MYSQL", e.MySQLAddr())

	db, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/test")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	rd := &reader{db: db}
	rctx, rcancel := context.WithCancel(context.Background())
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() { defer rwg.Done(); rd.run(rctx) }()

	sb, metrics := metricStream(t)
	if r.metrics != nil {
		*r.metrics = metrics
	}
	require.NoError(t, sb.SetLoggerYAML(streamLogYAML()))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	if !strings.Contains(outputYAML, "mysql_address") && !strings.Contains(outputYAML, "schema_evolution") {
		// Without mysql_address schemas cannot be checked.
		outputYAML += "  schema_evolution: ignore\n"
	}
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  load_urls: [ %s ]
%s`, e.FEURL(), outputYAML)))
	stream, err := sb.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second+2*pace)
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- stream.Run(ctx) }()

	if r.during != nil {
		dctx, dcancel := context.WithCancel(ctx)
		defer dcancel()
		go r.during(dctx, e)
	}
	// The steps land mid-stream, on the wall clock the stream runs on.
	for _, st := range steps {
		timer := time.AfterFunc(st.after, func() {
			if st.action != nil {
				st.action(e)
				return
			}
			assert.NoError(t, e.Faults().Add(st.fault))
		})
		defer timer.Stop()
	}

	work := make(chan service.MessageBatch)
	var pwg sync.WaitGroup
	var ackedEarly atomic.Int64
	for i := 0; i < 32; i++ {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for b := range work {
				assert.NoError(t, produce(ctx, b))
				// Acknowledged means committed: the batch's events are
				// visible now.
				if !eventsVisible(t, e, b) {
					ackedEarly.Add(1)
				}
			}
		}()
	}
	// Paced over about 1.5 s, so that faults land mid-stream and several
	// commit cycles run.
	start := paced(len(w.batches), pace, func(i int) { work <- w.batches[i] })
	close(work)
	pwg.Wait()
	elapsed := time.Since(start)
	require.NoError(t, ctx.Err(), "every batch acknowledged before the deadline")
	require.NoError(t, stream.StopWithin(10*time.Second))
	rcancel()
	rwg.Wait()

	// Final tables equal the model.
	gotOrders := map[int64]int64{}
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	for _, r := range rows {
		gotOrders[toInt(r["order_id"])] = toInt(r["customer_id"])
	}
	assert.Equal(t, w.orders, gotOrders, "orders")
	gotItems := map[[2]int64]int64{}
	rows, err = e.Store().Rows("test", "order_items")
	require.NoError(t, err)
	for _, r := range rows {
		gotItems[[2]int64{toInt(r["order_id"]), toInt(r["item_id"])}] = toInt(r["quantity"])
	}
	assert.Equal(t, w.items, gotItems, "order_items")
	rows, err = e.Store().Rows("test", "order_events")
	require.NoError(t, err)
	if r.duplicateEvents {
		seen := map[int64]bool{}
		for _, row := range rows {
			seen[toInt(row["event_id"])] = true
		}
		assert.Len(t, seen, w.events, "every event at least once: nothing lost")
	} else {
		assert.Len(t, rows, w.events, "every event exactly once: nothing lost, nothing replayed twice")
	}

	assert.Zero(t, rd.violations.Load(), "a concurrent reader saw a partly visible source transaction")
	assert.Zero(t, rd.regressed.Load(), "a concurrent reader saw an order go back to an older version")
	assert.Zero(t, ackedEarly.Load(), "a batch was acknowledged before its rows were visible")
	assert.Positive(t, rd.queries.Load(), "the reader ran (last error: %v)", rd.lastErr.Load())
	c := e.Counters()
	t.Logf("%d batches in %v: begins %d loads %d commits %d rollbacks %d faults fired %d; reader queries %d",
		len(w.batches), elapsed, c.Begins, c.Loads, c.Commits, c.Rollbacks, c.FaultsFired, rd.queries.Load())
	if len(steps) > 0 && steps[0].action == nil {
		assert.Positive(t, c.FaultsFired, "the fault fired")
	}
	total := 0
	for _, n := range w.txnsOfPart {
		total += n
	}
	// One load per table per source transaction would be 3 × total.
	assert.Less(t, c.Loads, int64(3*total), "loads are batched across source transactions")
	return c
}

// eventsVisible reports whether every order_events row of b is committed.
func eventsVisible(t require.TestingT, e *emulator.Emulator, b service.MessageBatch) bool {
	var want []int64
	for _, m := range b {
		if tbl, _ := m.MetaGet(contract.KeyTable); tbl != "order_events" {
			continue
		}
		var row struct {
			EventID int64 `json:"event_id"`
		}
		raw, _ := m.AsBytes()
		if json.Unmarshal(raw, &row) == nil {
			want = append(want, row.EventID)
		}
	}
	if len(want) == 0 {
		return true
	}
	rows, err := e.Store().Rows("test", "order_events")
	require.NoError(t, err)
	have := map[int64]bool{}
	for _, r := range rows {
		have[toInt(r["event_id"])] = true
	}
	for _, id := range want {
		if !have[id] {
			return false
		}
	}
	return true
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint64:
		return int64(x)
	case float64:
		return int64(x)
	case string:
		var n int64
		_, _ = fmt.Sscan(x, &n)
		return n
	}
	var n int64
	_, _ = fmt.Sscan(fmt.Sprint(v), &n)
	return n
}

// streamLogYAML is the logger of the test streams: none, or debug lines on
// stderr with STARROCKS_TXN_TEST_LOG set.
func streamLogYAML() string {
	if os.Getenv("STARROCKS_TXN_TEST_LOG") != "" {
		return "level: debug\nformat: logfmt"
	}
	return "level: none"
}

// captures are the dead_letter outputs of the integration tests, by name.
var captures sync.Map

func init() {
	spec := service.NewConfigSpec().Field(service.NewStringField("name"))
	service.MustRegisterBatchOutput("starrocks_txn_test_capture", spec,
		func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			name, err := conf.FieldString("name")
			if err != nil {
				return nil, service.BatchPolicy{}, 0, err
			}
			d, _ := captures.LoadOrStore(name, &fakeDL{})
			return captureOut{d.(*fakeDL)}, service.BatchPolicy{}, 1, nil
		})
}

type captureOut struct{ *fakeDL }

func (captureOut) Connect(context.Context) error { return nil }

// poisonStream runs msgs (one batch each, concurrently) through a stream
// with a mapping that throws on rows marked "boom", into the emulator.
func poisonStream(t *testing.T, e *emulator.Emulator, dlName string, batches []service.MessageBatch, wait time.Duration, extraYAML ...string) ([]error, *metricscap.Capture) {
	t.Helper()
	sb, metrics := metricStream(t)
	require.NoError(t, sb.SetLoggerYAML("level: none"))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddProcessorYAML(`mapping: 'root = if this.boom == true { throw("boom") } else { this }'`))
	dl := strings.Join(extraYAML, "")
	if dlName != "" {
		// A fresh capture per run: -count=N runs the same names again.
		captures.Delete(dlName)
		t.Cleanup(func() { captures.Delete(dlName) })
		dl += fmt.Sprintf("  dead_letter:\n    starrocks_txn_test_capture: { name: %s }\n", dlName)
	}
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  schema_evolution: ignore
  load_urls: [ %s ]
  commit_interval: 200ms
  max_in_flight: 64
%s`, e.FEURL(), dl)))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()
	t.Cleanup(func() { _ = stream.StopWithin(time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Add(1)
		go func(i int, b service.MessageBatch) {
			defer wg.Done()
			errs[i] = produce(ctx, b)
		}(i, b)
	}
	wg.Wait()
	return errs, metrics
}

// metricStream returns a stream builder whose metrics go to the returned
// capture.
func metricStream(t testing.TB) (*service.StreamBuilder, *metricscap.Capture) {
	t.Helper()
	env := service.GlobalEnvironment().Clone()
	metrics, err := metricscap.Register(env, "starrocks_txn_test_metrics")
	require.NoError(t, err)
	sb := env.NewStreamBuilder()
	require.NoError(t, sb.SetMetricsYAML("starrocks_txn_test_metrics: {}"))
	return sb, metrics
}

// registries are the partition registries of the integration streams, by
// the name of the starrocks_txn_test_registry processor that captured them.
var registries sync.Map

func init() {
	spec := service.NewConfigSpec().Field(service.NewStringField("name"))
	service.MustRegisterBatchProcessor("starrocks_txn_test_registry", spec,
		func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchProcessor, error) {
			name, err := conf.FieldString("name")
			if err != nil {
				return nil, err
			}
			registries.Store(name, registry.Get(mgr))
			return passThrough{}, nil
		})
}

type passThrough struct{}

func (passThrough) ProcessBatch(_ context.Context, b service.MessageBatch) ([]service.MessageBatch, error) {
	return []service.MessageBatch{b}, nil
}

func (passThrough) Close(context.Context) error { return nil }
