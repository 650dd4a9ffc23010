package starrocks_txn

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"runtime"
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

// The fault matrix (ARCHITECTURE.md §12; the table in the README): every
// request the output makes × every outcome of a remote call, each cell a
// real Benthos stream with the real output and client against the real
// emulator, in both semantics where the request exists in both. Every cell
// asserts the output's promises: no row doubled (order_events is a
// DUPLICATE KEY table), no source transaction split or partly visible (a
// reader over the MySQL port for the whole cell), nothing acknowledged
// before it is visible, the tables equal to the model, and the stream done
// within the cell's deadline (no stall). A cell also asserts that its
// fault fired, so a request the output stops making fails the matrix.
//
// Cells run concurrently in a pool (STARROCKS_TXN_MATRIX_PARALLEL, default
// twice GOMAXPROCS, at most 4) rather than as parallel subtests; their
// results are reported as subtests. The pool is small on purpose: every
// cell runs an emulator, a stream and a reader, and a dozen at once on two
// cores made each call slower than the timeouts the cells model. Under the
// race detector every timeout and the deadline are scaled by
// matrixTimeScale, so a fault is still late or slow relative to its bound,
// and a cell still proves what it proves at full speed.

// matrixOutcome is one outcome of a remote call.
type matrixOutcome string

const (
	outcomeRefused   matrixOutcome = "refused"
	outcomeReset     matrixOutcome = "reset"
	outcomeReplyLost matrixOutcome = "reply_lost"
	outcomeReplyLate matrixOutcome = "reply_late"
	outcomeSlow      matrixOutcome = "slow"
)

var matrixOutcomes = []matrixOutcome{outcomeRefused, outcomeReset, outcomeReplyLost, outcomeReplyLate, outcomeSlow}

// outcomeCancelled is a schema change job that ends CANCELLED (a CANCEL
// ALTER, a failed job); outcomeSlow on a job makes it run longer than
// mysql_timeout.
const outcomeCancelled matrixOutcome = "cancelled"

// matrixTimeScale multiplies the matrix's timeouts and its deadline: 3
// under the race detector, which slows the output and the emulator alike.
var matrixTimeScale = map[bool]time.Duration{false: 1, true: 3}[raceEnabled]

// matrixRequestTimeout and matrixMySQLTimeout are the output's
// request_timeout and mysql_timeout in the matrix: a late reply comes after
// 3 of its request's timeout, a slow one after half of it. matrixDeadline is
// the no-stall bound of a cell: every batch acknowledged within it.
// matrixGapTimeout is the output's sequence_gap_timeout (the default, 10s),
// scaled like every other timeout: unscaled, a batch that Benthos held back
// while the first commit waited behind a slow CREATE TABLE was skipped as a
// gap under the race detector on a loaded machine.
var (
	matrixRequestTimeout = 800 * time.Millisecond * matrixTimeScale
	matrixMySQLTimeout   = 1500 * time.Millisecond * matrixTimeScale
	matrixGapTimeout     = 10 * time.Second * matrixTimeScale
	matrixDeadline       = 30 * time.Second * matrixTimeScale
)

// matrixRequest is one request the output makes, as the emulator's faults
// select it.
type matrixRequest struct {
	name      string
	op        emulator.Op
	table     string
	statement string
	// trigger is a fault that makes the request happen (a rollback follows
	// a failed load, a label-state query an ambiguous commit).
	trigger *emulator.Fault
	// atStart injects the fault before the stream starts: the request is
	// made once, early.
	atStart bool
	// exactlyOnceOnly: the request exists only with exactly_once.
	exactlyOnceOnly bool
	// label selects the requests by label (a regular expression): a
	// per-table cycle's decision from its parts.
	label string
	// perTable runs the cell against the emulator as StarRocks 3.3, in
	// transaction_mode per_table (ARCHITECTURE.md §15): a reader may then
	// see part of a source transaction while a cycle commits, which must
	// heal (testkit.Heal), and every cycle's labels must end together.
	perTable bool
	// schema runs the cell with orderWorkloadNotes: a partition's rows
	// need a new column mid-stream, which the output adds (ALTER TABLE …
	// ADD COLUMN, schema_evolution: evolve; ARCHITECTURE.md §14) before
	// they load. noFastSchemaEvolution creates order_events with
	// fast_schema_evolution false, so that the change runs as a job.
	schema, noFastSchemaEvolution bool
	// outcomes, when set, replaces matrixOutcomes for the request.
	outcomes []matrixOutcome
}

var matrixRequests = []matrixRequest{
	{name: "begin", op: emulator.OpBegin},
	{name: "load", op: emulator.OpLoad, table: "order_events"},
	{name: "commit", op: emulator.OpCommit},
	{name: "rollback", op: emulator.OpRollback,
		trigger: &emulator.Fault{Op: emulator.OpLoad, Table: "order_items", Action: emulator.ActInternalError}},
	{name: "get_load_state", op: emulator.OpGetLoadState,
		trigger: &emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitReportFailure}},
	{name: "progress load", op: emulator.OpLoad, table: defaultProgressTable, exactlyOnceOnly: true},
	{name: "writer-row load", op: emulator.OpLoad, table: writersTable(defaultProgressTable)},
	{name: "table model", op: emulator.OpMySQL, statement: `information_schema\.tables_config`, atStart: true},
	{name: "ensure tables", op: emulator.OpMySQL, statement: `^\s*CREATE TABLE`, atStart: true},
	{name: "progress read", op: emulator.OpMySQL, statement: "FROM `test`\\.`" + defaultProgressTable + "` WHERE", atStart: true, exactlyOnceOnly: true},
	{name: "writer rows read", op: emulator.OpMySQL, statement: "FROM `test`\\.`" + writersTable(defaultProgressTable) + "` WHERE `pipeline_id` = '[^']*'\\s*$", atStart: true},

	// Schema changes (ARCHITECTURE.md §14): the ALTER TABLE … ADD COLUMN
	// the output sends for rows that need a new column, and the job
	// StarRocks runs for it on a table without fast schema evolution.
	{name: "alter table", op: emulator.OpMySQL, statement: `^\s*ALTER TABLE`, atStart: true, schema: true},
	{name: "alter job", op: emulator.OpAlterJob, table: "order_events", atStart: true, schema: true, noFastSchemaEvolution: true,
		outcomes: []matrixOutcome{outcomeCancelled, outcomeSlow}},

	// The per-table protocol's requests (StarRocks 3.3): a part's begin
	// (with its table), the decision's begin (on the writers table), a
	// part's load, the prepares, the decision's commit, the parts' commits,
	// the rollback a refused prepare brings, and the label-state query a
	// part's commit without a reply brings.
	{name: "pt begin", op: emulator.OpBegin, table: "order_events", perTable: true},
	{name: "pt decision begin", op: emulator.OpBegin, table: writersTable(defaultProgressTable), perTable: true},
	{name: "pt load", op: emulator.OpLoad, table: "order_events", perTable: true},
	{name: "pt prepare", op: emulator.OpPrepare, label: ptDataLabel, perTable: true},
	{name: "pt progress prepare", op: emulator.OpPrepare, label: ptProgressLabel, perTable: true, exactlyOnceOnly: true},
	{name: "pt decision commit", op: emulator.OpCommit, label: ptCycleLabel, perTable: true},
	{name: "pt data commit", op: emulator.OpCommit, label: ptDataLabel, perTable: true},
	{name: "pt progress commit", op: emulator.OpCommit, label: ptProgressLabel, perTable: true, exactlyOnceOnly: true},
	{name: "pt rollback", op: emulator.OpRollback, label: ptDataLabel, perTable: true,
		trigger: &emulator.Fault{Op: emulator.OpPrepare, Label: ptDataLabel, Action: emulator.ActInternalError}},
	{name: "pt get_load_state", op: emulator.OpGetLoadState, perTable: true,
		trigger: &emulator.Fault{Op: emulator.OpCommit, Label: ptDataLabel, Action: emulator.ActCommitReportFailure}},
}

// The labels of a per-table cycle (starrocks.CycleLabel, PartLabel): the
// decision (and anchors) end in 16 hex digits, a data part in -<k>, the
// progress part in -p.
const (
	ptCycleLabel    = `-[0-9a-f]{16}$`
	ptDataLabel     = `-[0-9a-f]{16}-[0-9]+$`
	ptProgressLabel = `-[0-9a-f]{16}-p$`
)

// fault is the request's fault for an outcome.
func (r matrixRequest) fault(out matrixOutcome) emulator.Fault {
	f := emulator.Fault{Op: r.op, Table: r.table, Statement: r.statement, Label: r.label, Count: 1}
	timeout := matrixRequestTimeout
	if r.op == emulator.OpMySQL || r.op == emulator.OpAlterJob {
		timeout = matrixMySQLTimeout
	}
	switch out {
	case outcomeRefused:
		f.Action = emulator.ActInternalError
		if r.op == emulator.OpMySQL {
			f.Action = emulator.ActSQLError
		}
	case outcomeReset:
		f.Action = emulator.ActReset
	case outcomeReplyLost:
		f.Action = emulator.ActReplyLost
	case outcomeReplyLate:
		f.Action, f.Delay = emulator.ActReplyLate, 3*timeout
	case outcomeSlow:
		f.Action, f.Delay, f.Count = emulator.ActDelay, timeout/2, 3
		if r.op == emulator.OpAlterJob {
			// A job runs past the statement's timeout: the output waits
			// for it by polling, never loading a row that needs it first.
			f.Delay, f.Count = 2*timeout, 1
		}
	case outcomeCancelled:
		f.Action = emulator.ActCancel
	}
	return f
}

// matrixCell is one cell: a request, an outcome, a semantic.
type matrixCell struct {
	req     matrixRequest
	outcome matrixOutcome
	exactly bool
}

func (c matrixCell) name() string {
	sem := "at_least_once"
	if c.exactly {
		sem = "exactly_once"
	}
	return fmt.Sprintf("%s/%s/%s", strings.ReplaceAll(c.req.name, " ", "_"), c.outcome, sem)
}

// seed is the cell's workload seed, from its name: a cell runs the same
// workload alone (STARROCKS_TXN_MATRIX_CELLS) as in the whole matrix. (It
// was the cell's index in the filtered list, so a cell that failed in the
// matrix passed when run alone.)
func (c matrixCell) seed() int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(c.name()))
	return int64(h.Sum64() >> 33)
}

// cellT collects a cell's failures; FailNow ends the cell's goroutine.
type cellT struct {
	mu   sync.Mutex
	errs []string
	logs []string
}

func (c *cellT) Errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

func (c *cellT) FailNow() { runtime.Goexit() }

func (c *cellT) Logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = append(c.logs, fmt.Sprintf(format, args...))
}

// cellResult is what a cell observed.
type cellResult struct {
	elapsed                           time.Duration
	begins, loads, commits, rollbacks int64
	labelStates, statements, fired    int64
	batches, txns, readerQueries      int
	// The output's own view: cycles replayed, rollbacks it sent, the most
	// commits in doubt at once.
	retries, outputRollbacks, inDoubtPeak int64
	errs, logs                            []string
}

func TestFaultMatrix(t *testing.T) {
	// STARROCKS_TXN_MATRIX_CELLS, a regular expression, runs only the cells
	// whose names match (to look at one with STARROCKS_TXN_TEST_LOG=1).
	only := regexp.MustCompile(os.Getenv("STARROCKS_TXN_MATRIX_CELLS"))
	var cells []matrixCell
	for _, r := range matrixRequests {
		outcomes := matrixOutcomes
		if r.outcomes != nil {
			outcomes = r.outcomes
		}
		for _, out := range outcomes {
			for _, exactly := range []bool{false, true} {
				if r.exactlyOnceOnly && !exactly {
					continue
				}
				if c := (matrixCell{req: r, outcome: out, exactly: exactly}); only.MatchString(c.name()) {
					cells = append(cells, c)
				}
			}
		}
	}
	parallel := min(2*runtime.GOMAXPROCS(0), 4)
	if v, err := strconv.Atoi(os.Getenv("STARROCKS_TXN_MATRIX_PARALLEL")); err == nil && v > 0 {
		parallel = v
	}
	start := time.Now()
	results := make([]cellResult, len(cells))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range cells {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = runMatrixCell(cells[i], cells[i].seed())
		}(i)
	}
	wg.Wait()
	t.Logf("fault matrix: %d cells in %v (%d at a time)", len(cells), time.Since(start).Round(time.Millisecond), parallel)
	for i, c := range cells {
		r := results[i]
		t.Logf("cell %-45s %6v replays %d rollbacks %d in-doubt-peak %d | emulator begins %d loads %d commits %d rollbacks %d label-states %d faults %d",
			c.name(), r.elapsed.Round(10*time.Millisecond), r.retries, r.outputRollbacks, r.inDoubtPeak, r.begins, r.loads, r.commits, r.rollbacks, r.labelStates, r.fired)
	}
	for i, c := range cells {
		r := results[i]
		t.Run(c.name(), func(t *testing.T) {
			for _, l := range r.logs {
				t.Log(l)
			}
			t.Logf("seed %d", c.seed())
			t.Logf("%v: %d batches, %d source transactions; begins %d loads %d commits %d rollbacks %d label states %d statements %d; faults fired %d; reader queries %d",
				r.elapsed.Round(time.Millisecond), r.batches, r.txns, r.begins, r.loads, r.commits, r.rollbacks, r.labelStates, r.statements, r.fired, r.readerQueries)
			for _, e := range r.errs {
				t.Error(e)
			}
		})
	}
}

// runMatrixCell runs one cell and returns what it saw; its failures are in
// the result.
func runMatrixCell(c matrixCell, seed int64) (res cellResult) {
	ct := &cellT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		res = matrixCellBody(ct, c, seed)
	}()
	<-done
	ct.mu.Lock()
	defer ct.mu.Unlock()
	res.errs, res.logs = ct.errs, ct.logs
	return res
}

func matrixCellBody(t *cellT, c matrixCell, seed int64) (res cellResult) {
	version, mode := "", ""
	if c.req.perTable {
		version, mode = ptVersion, "  transaction_mode: per_table\n"
	}
	emulatorStartMu.Lock()
	ddl := matrixSchema()
	if c.req.noFastSchemaEvolution {
		ddl = strings.Replace(ddl, "DISTRIBUTED BY HASH(`event_id`) BUCKETS 4\nPROPERTIES(\"replication_num\" = \"1\")",
			"DISTRIBUTED BY HASH(`event_id`) BUCKETS 4\nPROPERTIES(\"replication_num\" = \"1\", \"fast_schema_evolution\" = \"false\")", 1)
		require.NotEqual(t, matrixSchema(), ddl, "order_events without fast schema evolution")
	}
	e, err := emulator.Start(emulator.Config{
		HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: ddl,
		ReaperInterval: 50 * time.Millisecond, StarRocksVersion: version,
	})
	emulatorStartMu.Unlock()
	require.NoError(t, err)
	defer func() { _ = e.Close() }()
	// The progress and writers tables exist already (as after an earlier
	// run), so that the output reads them at start.
	require.NoError(t, e.Store().ExecDDL(starrocks.ProgressDDL("test", defaultProgressTable)))
	require.NoError(t, e.Store().ExecDDL(starrocks.WritersDDL("test", writersTable(defaultProgressTable))))

	w := newOrderWorkload(seed*7919+13, 4, 6)
	if c.req.schema {
		w = orderWorkloadNotes(seed*7919+13, 4, 6)
	}
	res.batches = len(w.batches)
	for _, n := range w.txnsOfPart {
		res.txns += n
	}

	db, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/test")
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	rd := &reader{db: db}
	rctx, rcancel := context.WithCancel(context.Background())
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() { defer rwg.Done(); rd.runPaced(rctx, 5*time.Millisecond) }()
	defer func() { rcancel(); rwg.Wait() }()
	// Per-table: partial reads pass while they heal; the bound is the
	// cell's deadline, which a part left prepared for good would outlast.
	var prd *partialReader
	if c.req.perTable {
		prd = &partialReader{db: db, heal: testkit.NewHeal(matrixDeadline / 2)}
		rwg.Add(1)
		go func() { defer rwg.Done(); prd.run(rctx) }()
	}

	faults := []emulator.Fault{c.req.fault(c.outcome)}
	if c.req.trigger != nil {
		trig := *c.req.trigger
		trig.Count = 1
		faults = append(faults, trig)
	}
	inject := func() {
		for _, f := range faults {
			assert.NoError(t, e.Faults().Add(f))
		}
	}
	if c.req.atStart {
		inject()
	}

	semantic := "at_least_once"
	if c.exactly {
		semantic = "exactly_once"
	}
	env := service.GlobalEnvironment().Clone()
	metrics, err := metricscap.Register(env, "matrix_metrics")
	require.NoError(t, err)
	sb := env.NewStreamBuilder()
	require.NoError(t, sb.SetMetricsYAML("matrix_metrics: {}"))
	require.NoError(t, sb.SetLoggerYAML(streamLogYAML()))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  load_urls: [ %s ]
  mysql_address: %s
  semantic: %s
  pipeline_id: matrix
  commit_interval: 200ms
  txn_timeout: %s
  max_in_flight: 64
  label_state_wait: %s
  request_timeout: %s
  mysql_timeout: %s
  unknown_commit_timeout: %s
  sequence_gap_timeout: %s
  retry_backoff: { initial_interval: 20ms, max_interval: 200ms }
  stall_retry_interval: %s
%s`, e.FEURL(), e.MySQLAddr(), semantic, 10*time.Second*matrixTimeScale, time.Second*matrixTimeScale,
		matrixRequestTimeout, matrixMySQLTimeout, 2*time.Second*matrixTimeScale, matrixGapTimeout, time.Second*matrixTimeScale, mode)))
	stream, err := sb.Build()
	require.NoError(t, err)
	// The deadline is the no-stall bound: every batch acknowledged within
	// it.
	ctx, cancel := context.WithTimeout(context.Background(), matrixDeadline)
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- stream.Run(ctx) }()
	defer func() { _ = stream.StopWithin(5 * time.Second) }()
	if !c.req.atStart {
		// Mid-stream, on the wall clock the stream runs on.
		timer := time.AfterFunc(300*time.Millisecond, inject)
		defer timer.Stop()
	}

	work := make(chan service.MessageBatch)
	var pwg sync.WaitGroup
	var ackedEarly, failed atomic.Int64
	for i := 0; i < 16; i++ {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for b := range work {
				if err := produce(ctx, b); err != nil {
					failed.Add(1)
					continue
				}
				// Acknowledged means committed, and no cell delays a
				// publish (commit_late): committed is visible at once.
				if !eventsVisible(t, e, b) {
					ackedEarly.Add(1)
				}
			}
		}()
	}
	begin := paced(len(w.batches), 800*time.Millisecond, func(i int) { work <- w.batches[i] })
	close(work)
	pwg.Wait()
	res.elapsed = time.Since(begin)
	assert.Zero(t, failed.Load(), "every batch acknowledged within the deadline: no stall")
	assert.Zero(t, ackedEarly.Load(), "a batch was acknowledged before its rows were visible")
	rcancel()
	rwg.Wait()

	checkOrdersModel(t, e, w)
	if prd != nil {
		// One more round once every batch is acknowledged: nothing may be
		// partial any more.
		assert.NoError(t, prd.round(context.Background()))
		assert.NoError(t, prd.heal.Check(true), "partial reads: %s", prd.heal)
		t.Logf("%s; commit windows: %s", prd.heal, windowSummary(metrics))
		checkCyclesEndedTogether(t, e, "test")
	} else {
		assert.Zero(t, rd.violations.Load(), "a concurrent reader saw a partly visible source transaction")
	}
	assert.Zero(t, rd.regressed.Load(), "a concurrent reader saw an order go back to an older version")
	res.readerQueries = int(rd.queries.Load())
	assert.Positive(t, res.readerQueries, "the reader ran (last error: %v)", rd.lastErr.Load())

	res.retries = metrics.Counter("starrocks_txn_cycle_retries")
	res.outputRollbacks = metrics.Counter("starrocks_txn_rollbacks")
	res.inDoubtPeak = metrics.Peak("starrocks_txn_unresolved_commits")
	assert.Zero(t, metrics.Counter("starrocks_txn_unknown_commits"), "no commit taken as not committed: StarRocks kept every label")
	poisoned := metrics.Counter("starrocks_txn_dead_lettered") + metrics.Counter("starrocks_txn_partition_stalls")
	if c.req.schema && (c.outcome == outcomeRefused || c.outcome == outcomeCancelled) {
		// A change StarRocks refused (the table read again shows it not
		// applied) or whose job was cancelled poisons the transaction
		// that needs it with StarRocks's reason: without dead_letter its
		// partition stalls, and is tried again every
		// stall_retry_interval until the change goes through (the fault
		// fires once), without a restart (§14.3).
		assert.Equal(t, int64(1), poisoned, "the transaction that needs the refused change stalls once, then heals")
	} else {
		assert.Zero(t, poisoned, "no transaction poisoned by a fault")
	}
	if c.req.schema {
		checkNotes(t, e, w)
	}
	ctr := e.Counters()
	res.begins, res.loads, res.commits, res.rollbacks = ctr.Begins, ctr.Loads, ctr.Commits, ctr.Rollbacks
	res.labelStates, res.statements, res.fired = ctr.LabelStates, ctr.Statements, ctr.FaultsFired
	// Every fault of the cell fired at least once: the request was made.
	pending := e.Faults().Pending()
	for _, f := range faults {
		for _, p := range pending {
			if p.Op == f.Op && p.Action == f.Action && p.Table == f.Table && p.Statement == f.Statement && p.Label == f.Label && p.Count == f.Count {
				t.Errorf("the fault %s %s (table %q, statement %q) never fired: the output did not make the request", f.Op, f.Action, f.Table, f.Statement)
			}
		}
	}
	return res
}

// matrixSchema is the example schema, read once.
var matrixSchema = sync.OnceValue(func() string {
	b, err := os.ReadFile("../../examples/schema.sql")
	if err != nil {
		panic(err)
	}
	return string(b)
})

// checkOrdersModel compares the tables with the workload's model: every
// order and item as the last source transaction left it, every event
// exactly once.
func checkOrdersModel(t require.TestingT, e *emulator.Emulator, w *orderWorkload) {
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
	seen := map[int64]int{}
	for _, r := range rows {
		seen[toInt(r["event_id"])]++
	}
	var doubled []int64
	for id, n := range seen {
		if n > 1 {
			doubled = append(doubled, id)
		}
	}
	sort.Slice(doubled, func(i, j int) bool { return doubled[i] < doubled[j] })
	assert.Empty(t, doubled, "order_events (DUPLICATE KEY) rows loaded twice")
	assert.Len(t, seen, w.events, "every event loaded: nothing lost")
}

// checkNotes checks the column a schema change added mid-stream: every
// note a row carried is loaded (none lost to a load before the column was
// there), and rows written without it have none.
func checkNotes(t require.TestingT, e *emulator.Emulator, w *orderWorkload) {
	rows, err := e.Store().Rows("test", "order_events")
	require.NoError(t, err)
	got := map[int64]string{}
	for _, r := range rows {
		if v, ok := r["note"]; ok && v != nil {
			got[toInt(r["event_id"])] = fmt.Sprint(v)
		}
	}
	require.NotEmpty(t, w.notes, "the workload writes notes")
	assert.Equal(t, w.notes, got, "order_events.note: every value the source wrote, none before it had the column")
}
