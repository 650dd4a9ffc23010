package starrocks_txn

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// The per-table protocol (ARCHITECTURE.md §15) against the emulator
// answering as StarRocks 3.3: whole streams of the order workload in every
// tracking mode, with a reader that lets a partial read pass only while it
// heals (testkit.Heal) and none once the stream is done, and checks that
// every cycle's labels ended together.

// ptVersion is the StarRocks release the per-table tests run against.
const ptVersion = "3.3"

// ptEmulator starts the emulator answering as StarRocks 3.x.
func ptEmulator(t testing.TB, mods ...func(*emulator.Config)) *emulator.Emulator {
	t.Helper()
	return startEmulator(t, append([]func(*emulator.Config){func(c *emulator.Config) { c.StarRocksVersion = ptVersion }}, mods...)...)
}

// partialOrdersQuery lists, in one statement (one snapshot), the orders of
// the order workload some of whose source transaction is not visible: items
// of another version than their order, items without their order, an order
// without all of its items (the three partialQueries, by key).
const partialOrdersQuery = `SELECT i.order_id FROM order_items i JOIN orders o ON i.order_id = o.order_id WHERE i.quantity <> o.customer_id
UNION SELECT i.order_id FROM order_items i LEFT JOIN orders o ON i.order_id = o.order_id WHERE o.order_id IS NULL
UNION SELECT o.order_id FROM orders o WHERE (SELECT COUNT(*) FROM order_items i WHERE i.order_id = o.order_id) <> o.total_amount`

// partialReader reads the partial orders in a loop and hands each round to
// heal.
type partialReader struct {
	db      *sql.DB
	heal    *testkit.Heal
	lastErr atomic.Value
}

func (r *partialReader) round(ctx context.Context) error {
	start := time.Now()
	rows, err := r.db.QueryContext(ctx, partialOrdersQuery)
	if err != nil {
		return err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	r.heal.Round(start, time.Now(), ids)
	return nil
}

func (r *partialReader) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := r.round(ctx); err != nil && ctx.Err() == nil {
			r.lastErr.Store(err.Error())
		}
		if !sleepCtx(ctx, 3*time.Millisecond) {
			return
		}
	}
}

// ptRun configures runPerTable.
type ptRun struct {
	// semantic is at_least_once (default) or exactly_once; writerRows sets
	// pipeline_id and mysql_address with at_least_once.
	semantic   string
	writerRows bool
	// mode is transaction_mode (default per_table).
	mode             string
	partitions, txns int
	pace             time.Duration
	steps            []faultStep
	// extra are more output fields.
	extra string
	// duplicateEvents accepts events loaded more than once (a replay of a
	// committed cycle at least once).
	duplicateEvents bool
	// healWithin bounds a partial read (default 10 s).
	healWithin time.Duration
}

// ptResult is what a per-table run saw.
type ptResult struct {
	e       *emulator.Emulator
	heal    *testkit.Heal
	metrics *metricscap.Capture
	logs    *syncLog
}

// syncLog is a goroutine-safe log sink for a stream.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runPerTable runs the order workload through a real Benthos stream in
// per-table mode into the emulator in 3.3 mode and checks: the tables equal
// the model, nothing acknowledged before it was visible, every partial read
// healed within the bound and none left at the end, every cycle's labels
// ended together, and no transaction of the output left open.
func runPerTable(t *testing.T, e *emulator.Emulator, r ptRun) ptResult {
	t.Helper()
	if r.partitions == 0 {
		r.partitions, r.txns, r.pace = 4, 15, 1500*time.Millisecond
	}
	if r.mode == "" {
		r.mode = modePerTable
	}
	if r.healWithin == 0 {
		r.healWithin = 10 * time.Second
	}
	w := newOrderWorkload(time.Now().UnixNano()%1000, r.partitions, r.txns)
	db, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/test")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	rd := &partialReader{db: db, heal: testkit.NewHeal(r.healWithin)}
	rctx, rcancel := context.WithCancel(context.Background())
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() { defer rwg.Done(); rd.run(rctx) }()

	sb, metrics := metricStream(t)
	logs := &syncLog{}
	sb.SetLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	tracking := ""
	switch {
	case r.semantic == semanticExactlyOnce:
		tracking = fmt.Sprintf("  semantic: exactly_once\n  pipeline_id: pt\n  mysql_address: %s\n", e.MySQLAddr())
	case r.writerRows:
		tracking = fmt.Sprintf("  pipeline_id: pt\n  mysql_address: %s\n", e.MySQLAddr())
	default:
		// No MySQL port at all (per_table without writer rows): nothing
		// reads the tables' columns either.
		tracking = "  schema_evolution: ignore\n"
	}
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  load_urls: [ %s ]
  transaction_mode: %s
  commit_interval: 200ms
  txn_timeout: 5s
  max_in_flight: 64
  label_state_wait: 500ms
  request_timeout: 2s
  retry_backoff: { initial_interval: 20ms, max_interval: 300ms }
%s%s`, e.FEURL(), r.mode, tracking, r.extra)))
	stream, err := sb.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second+2*r.pace)
	defer cancel()
	go func() { _ = stream.Run(ctx) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stream log:\n%s", tail(logs.String(), 60))
		}
	})
	for _, st := range r.steps {
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
				// Acknowledged means every part of its cycle committed;
				// no step here delays a publish (commit_late), so
				// committed is visible at once
				// (TestPerTableLateCommitNeverUndoesALaterCycle has one).
				if !eventsVisible(t, e, b) {
					ackedEarly.Add(1)
				}
			}
		}()
	}
	paced(len(w.batches), r.pace, func(i int) { work <- w.batches[i] })
	close(work)
	pwg.Wait()
	require.NoError(t, ctx.Err(), "every batch acknowledged before the deadline")
	require.NoError(t, stream.StopWithin(10*time.Second))
	// The run is done: one more round sees everything whole.
	require.NoError(t, rd.round(context.Background()))
	rcancel()
	rwg.Wait()

	checkPTModel(t, e, w, r.duplicateEvents)
	assert.Zero(t, ackedEarly.Load(), "a batch was acknowledged before its rows were visible")
	assert.NoError(t, rd.heal.Check(true), "partial reads: %s", rd.heal)
	assert.Positive(t, rd.heal.Rounds, "the reader ran (last error: %v)", rd.lastErr.Load())
	checkCyclesEndedTogether(t, e, "test")
	t.Logf("%s; commit windows: %s", rd.heal, windowSummary(metrics))
	return ptResult{e: e, heal: rd.heal, metrics: metrics, logs: logs}
}

// checkPTModel compares the tables with the workload's model: orders and
// items exactly, every event exactly once, or with atLeastOnce at least
// once.
func checkPTModel(t *testing.T, e *emulator.Emulator, w *orderWorkload, atLeastOnce bool) {
	t.Helper()
	if !atLeastOnce {
		checkOrdersModel(t, e, w)
		return
	}
	got := map[int64]int64{}
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	for _, r := range rows {
		got[toInt(r["order_id"])] = toInt(r["customer_id"])
	}
	assert.Equal(t, w.orders, got, "orders")
	items := map[[2]int64]int64{}
	rows, err = e.Store().Rows("test", "order_items")
	require.NoError(t, err)
	for _, r := range rows {
		items[[2]int64{toInt(r["order_id"]), toInt(r["item_id"])}] = toInt(r["quantity"])
	}
	assert.Equal(t, w.items, items, "order_items")
	rows, err = e.Store().Rows("test", "order_events")
	require.NoError(t, err)
	seen := map[int64]bool{}
	for _, r := range rows {
		seen[toInt(r["event_id"])] = true
	}
	assert.Len(t, seen, w.events, "every event at least once: nothing lost")
}

// windowSummary is the commit window's p50, p99 and max.
func windowSummary(m *metricscap.Capture) string {
	s := m.Timings("starrocks_txn_commit_window_ns")
	if len(s) == 0 {
		return "none measured"
	}
	return fmt.Sprintf("%d cycles, p50 %v, p99 %v, max %v", len(s), pct(s, 50), pct(s, 99), pct(s, 100))
}

func pct(s []time.Duration, p int) time.Duration {
	c := append([]time.Duration(nil), s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	i := (len(c)*p + 99) / 100
	return c[max(0, min(len(c)-1, i-1))].Round(10 * time.Microsecond)
}

// checkCyclesEndedTogether checks, from the FE's own records (SHOW PROC),
// that the labels of every per-table cycle ended the same way — every part
// VISIBLE with its decision, or none — and that no label of the output is
// left running once StarRocks aborted what timed out.
func checkCyclesEndedTogether(t require.TestingT, e *emulator.Emulator, db string) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	sqlDB, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/")
	require.NoError(t, err)
	defer sqlDB.Close()
	// Labels left running (a part whose rollback failed, never prepared)
	// are aborted by StarRocks at their timeout; a PREPARED one never is
	// within the test: none may be left.
	var running map[string]string
	if !testkit.Poll(40*time.Second, func() bool {
		running = procLabels(t, sqlDB, db, "running")
		return len(running) == 0
	}) {
		t.Errorf("transactions of the output left open: %v", running)
	}
	finished := procLabels(t, sqlDB, db, "finished")
	cycles := map[string]map[string]string{}
	for label, st := range finished {
		cyc, part, ok := starrocks.SplitPartLabel(label)
		if !ok {
			if _, _, seq := starrocks.SplitSeqLabel(label); seq {
				cyc, part = label, "decision"
			} else {
				continue
			}
		}
		if cycles[cyc] == nil {
			cycles[cyc] = map[string]string{}
		}
		cycles[cyc][part] = st
	}
	parted := 0
	for cyc, parts := range cycles {
		if len(parts) == 1 && parts["decision"] != "" {
			continue // an anchor, or a cycle that began and loaded nothing
		}
		parted++
		want := ""
		for part, st := range parts {
			if part == "decision" {
				continue
			}
			if want == "" {
				want = st
			}
			assert.Equal(t, want, st, "cycle %s: every part ends as its others did (%v)", cyc, parts)
		}
		if d := parts["decision"]; d != "" && want != "" {
			assert.Equal(t, want == string(starrocks.StateVisible), d == string(starrocks.StateVisible), "cycle %s: its parts are visible if and only if its decision is (%v)", cyc, parts)
		}
	}
	assert.Positive(t, parted, "the per-table cycles are in the FE's records")
}

// procLabels are the labels of SHOW PROC '/transactions/<db>/<which>' and
// their states.
func procLabels(t require.TestingT, db *sql.DB, name, which string) map[string]string {
	rows, err := db.Query(fmt.Sprintf("SHOW PROC '/transactions/%s/%s'", name, which))
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	out := map[string]string{}
	for rows.Next() {
		require.NoError(t, rows.Scan(ptrs...))
		var label, st string
		for i, c := range cols {
			switch c {
			case "Label":
				label = vals[i].String
			case "TransactionStatus":
				st = vals[i].String
			}
		}
		out[label] = st
	}
	require.NoError(t, rows.Err())
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
