package integration

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// The output's per-table mode (StarRocks 3.x, ARCHITECTURE.md §15) end to
// end: the pipeline against the emulator answering as StarRocks 3.3, crashed
// and restarted (here), killed with SIGKILL as a process (the kill loop:
// pertable_kill_test.go), and under chaos (TestChaosPerTable). A reader may
// see part of a source transaction only while a cycle commits: each partial
// read must heal (testkit.Heal), none may be left once the target converged,
// and the FE's own records must show every cycle's labels ended together.

// perTableVersion is the StarRocks release the per-table tests run against.
const perTableVersion = "3.3"

// partialOrdersSQL lists, in one statement (one snapshot), the orders whose
// source transaction is partly visible: workload.ConsistencyQuery's two
// counts, by key.
const partialOrdersSQL = `SELECT o.order_id FROM test.orders o LEFT JOIN
    (SELECT order_id, SUM(quantity * price) AS s FROM test.order_items GROUP BY order_id) i
    ON o.order_id = i.order_id
  WHERE i.s IS NULL OR i.s <> o.total_amount
UNION SELECT it.order_id FROM test.order_items it LEFT JOIN test.orders o2 ON it.order_id = o2.order_id
  WHERE o2.order_id IS NULL`

// healRound runs partialOrdersSQL once and hands the round to heal.
func healRound(ctx context.Context, db *sql.DB, heal *testkit.Heal) error {
	start := time.Now()
	rows, err := db.QueryContext(ctx, partialOrdersSQL)
	if err != nil {
		return fmt.Errorf("reading partial orders: %w", err)
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
	heal.Round(start, time.Now(), ids)
	return nil
}

// perTableHealBound bounds a partial read: a cycle's parts are committed
// within milliseconds, or — when its writer died after the decision — by the
// successor's take-over, which comes once the dead member's session expired
// and the successor started; a part left prepared for good never heals.
const perTableHealBound = 30 * time.Second

// startHealReader is startReader with partial reads passing while they heal.
func startHealReader(db *sql.DB, checkOrder bool) *reader {
	return startReaderWith(db, checkOrder, testkit.NewHeal(perTableHealBound))
}

// perTableCrashFaults are the faults a crash follows in per-table mode:
// the multi-table ones (whose commits here are a cycle's decision or its
// parts), and storms that hold a cycle between its prepares and its
// commits — its decision or its parts refused again and again — so that the
// crash leaves prepared parts for the successor to settle.
var perTableCrashFaults = []emulator.Fault{
	{Op: emulator.OpLoad, Action: emulator.ActInternalError},
	{Op: emulator.OpPrepare, Action: emulator.ActInternalError},
	{Op: emulator.OpPrepare, Action: emulator.ActReplyLost},
	{Op: emulator.OpCommit, Action: emulator.ActCommitReportFailure},
	{Op: emulator.OpCommit, Action: emulator.ActHTTPError, HTTPCode: 503},
	{Op: emulator.OpCommit, Action: emulator.ActReset, Label: perTableDataLabel, Count: 200},
	{Op: emulator.OpCommit, Action: emulator.ActReset, Label: perTableCycleLabel, Count: 200},
}

// The labels of a per-table cycle: its decision ends in 16 hex digits, a
// data part in -<k>.
const (
	perTableCycleLabel = `-[0-9a-f]{16}$`
	perTableDataLabel  = `-[0-9a-f]{16}-[0-9]+$`
)

// The per-table pipeline is crashed and restarted, several times, while
// traffic flows; every second crash comes while a fault holds the output —
// among them a cycle stuck between its prepares and its commits. Nothing is
// lost, nothing doubled with exactly_once, no partial read outlives its
// cycle (the successor settles a dead run's prepared parts), and every
// cycle's labels end together.
func TestPerTablePipelineSurvivesHardRestarts(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name        string
		exactlyOnce bool
	}{{"at_least_once", false}, {"exactly_once", true}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			seed := testSeed(t)
			r := newRigAs(t, 4, perTableVersion)
			src := newSource(t, r, seed, 0.2)
			rd := startHealReader(r.db, mode.exactlyOnce)
			defer rd.stop()
			opts := pipeOpts{group: "g-pt-restarts", batchCount: 3, exactlyOnce: mode.exactlyOnce, writerRows: !mode.exactlyOnce,
				commitPeriod: 3 * time.Second, transactionMode: "per_table"}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wait := src.background(ctx, 0, 150)
			rng := rand.New(rand.NewPCG(seed, 5))
			var committedByKilled int64
			restarts := scale(4, 15)
			for i := 0; i < restarts; i++ {
				p := r.startPipeline(t, fmt.Sprintf("run-%d", i), opts)
				require.Eventually(t, func() bool { return p.metrics.Counter("starrocks_txn_source_txns_committed") > 0 },
					30*time.Second, 10*time.Millisecond, "run %d committed", i)
				// The crash comes at a random moment (real time).
				randomMoment(rng, 200*time.Millisecond, 1800*time.Millisecond)
				if i%2 == 1 {
					f := perTableCrashFaults[rng.IntN(len(perTableCrashFaults))]
					require.NoError(t, r.em.Faults().Add(f))
					require.Eventually(t, func() bool {
						for _, p := range r.em.Faults().Pending() {
							if p.Count == f.Count {
								return false
							}
						}
						return true
					}, 15*time.Second, 2*time.Millisecond, "fault %s on %s fired", f.Action, f.Op)
				}
				r.crash(p)
				// A storm left over is for the dead run only.
				r.em.Faults().Clear()
				committedByKilled += p.metrics.Counter("starrocks_txn_source_txns_committed")
			}
			final := r.startPipeline(t, "final", opts)
			testkit.WaitFor(t, 30*time.Second, func() bool { return final.metrics.Counter("starrocks_txn_source_txns_committed") > 0 },
				"the final run commits")
			cancel()
			require.NoError(t, wait())

			dups := r.waitConverged(t, src, !mode.exactlyOnce, 60*time.Second)
			final.stop(t, 10*time.Second)
			rd.stop()

			checkReader(t, rd, src)
			checkNoAbortedEvents(t, r, src)
			checkPerTableCycles(t, r.db)
			if mode.exactlyOnce {
				assert.Zero(t, dups, "exactly-once: no event twice")
				assert.LessOrEqual(t, committedByKilled+final.metrics.Counter("starrocks_txn_source_txns_committed"), src.committed.Load(),
					"exactly-once: no source transaction committed twice")
			}
			assert.Positive(t, committedByKilled, "the killed pipelines committed work before they died")
			t.Logf("%d restarts; %d source txns committed, %d aborted; killed pipelines committed %d, the final one %d; %d duplicated events; %s",
				restarts, src.committed.Load(), src.aborted.Load(), committedByKilled,
				final.metrics.Counter("starrocks_txn_source_txns_committed"), dups, rd.heal)
		})
	}
}

// checkPerTableCycles checks, from the FE's own records (SHOW PROC
// '/transactions/test/…'), that no transaction of the output is left
// running, and that every per-table cycle's labels ended the same way: all
// of its parts VISIBLE, and its decision with them, or none.
func checkPerTableCycles(t *testing.T, db *sql.DB) {
	t.Helper()
	var running map[string]string
	// What StarRocks aborts at its timeout (a part never prepared, whose
	// rollback a crash cut short) may still be running for a while; a
	// PREPARED one is never aborted within the test.
	if !testkit.Poll(40*time.Second, func() bool {
		running = procTxns(t, db, "running")
		return len(running) == 0
	}) {
		t.Errorf("transactions left open: %v", running)
	}
	cycles := map[string]map[string]string{}
	for label, st := range procTxns(t, db, "finished") {
		cyc, part, ok := starrocks.SplitPartLabel(label)
		if !ok {
			if _, _, seq := starrocks.SplitSeqLabel(label); !seq {
				continue
			}
			cyc, part = label, "decision"
		}
		if cycles[cyc] == nil {
			cycles[cyc] = map[string]string{}
		}
		cycles[cyc][part] = st
	}
	parted := 0
	for cyc, parts := range cycles {
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
		if want == "" {
			continue
		}
		parted++
		if d, ok := parts["decision"]; ok {
			assert.Equal(t, want == "VISIBLE", d == "VISIBLE", "cycle %s: its parts are visible if and only if its decision is (%v)", cyc, parts)
		}
	}
	assert.Positive(t, parted, "per-table cycles are in the FE's records")
}

// procTxns are the labels and states of SHOW PROC
// '/transactions/test/<which>'.
func procTxns(t *testing.T, db *sql.DB, which string) map[string]string {
	t.Helper()
	rows, err := db.Query("SHOW PROC '/transactions/test/" + which + "'")
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

// perTableChaos is the chaos catalogue for a per-table world: every entry
// (a commit is then a cycle's decision or one of its parts), but a true
// abort of a commit only on decisions — StarRocks never aborts a PREPARED
// transaction when its commit fails, and a decided cycle a part of which
// was aborted is a broken cycle, replayed whole: its DUPLICATE KEY rows
// would double — and the prepares' outcomes with their own rollbacks.
func perTableChaos(cat []chaosFault) []chaosFault {
	var out []chaosFault
	for _, f := range cat {
		abort := false
		for _, x := range f.faults {
			if x.Op == emulator.OpCommit && x.Action == emulator.ActCommitAbort {
				abort = true
			}
		}
		if abort {
			f.faults = []emulator.Fault{{Op: emulator.OpCommit, Action: emulator.ActCommitAbort, Label: perTableCycleLabel}}
			f.kind = "commit commit_abort (decision)"
		}
		out = append(out, f)
	}
	add := func(class string, f emulator.Fault) {
		kind := string(f.Op) + " " + string(f.Action)
		if f.Action == emulator.ActReplyLate && f.Delay > chaosRequestTimeout {
			kind += " past request_timeout"
		}
		out = append(out, chaosFault{kind: kind, class: class, faults: []emulator.Fault{f}})
	}
	add("refused", emulator.Fault{Op: emulator.OpPrepare, Action: emulator.ActInternalError})
	add("refused", emulator.Fault{Op: emulator.OpPrepare, Action: emulator.ActTxnInProcessing, Count: 2})
	add("reset", emulator.Fault{Op: emulator.OpPrepare, Action: emulator.ActReset})
	add("reply_lost", emulator.Fault{Op: emulator.OpPrepare, Action: emulator.ActReplyLost})
	add("reply_late", emulator.Fault{Op: emulator.OpPrepare, Action: emulator.ActReplyLate, Delay: chaosRequestTimeout + time.Second})
	add("no_answer", emulator.Fault{Op: emulator.OpPrepare, Action: emulator.ActNoAnswer})
	add("slow", emulator.Fault{Op: emulator.OpPrepare, Action: emulator.ActDelay, Delay: 1500 * time.Millisecond})
	// A storm that holds a decided cycle's parts for a while: the window
	// stays open (a reader sees part of it) until they commit.
	add("refused", emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActInternalError, Label: perTableDataLabel, Count: 5})
	return out
}

// TestChaosPerTable is TestChaos for the per-table mode (ARCHITECTURE.md
// §15): the envelope pipeline, at_least_once with writer rows and
// exactly_once, against the emulator as StarRocks 3.3, with the catalogue's
// faults (the prepares' among them), FE restarts, label evictions, crashes,
// kills and rebalances. A partial read passes only while it heals; after
// the faults stop the tables equal the model (events exactly once with
// exactly_once), none is partial, and the FE's records show every cycle's
// labels ended together.
func TestChaosPerTable(t *testing.T) {
	plan := chaosPlanOf(t)
	totals := newChaosTotals()
	t.Run("runs", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, c := range []chaosCase{
			{name: "per_table/at_least_once", perTable: true},
			{name: "per_table/exactly_once", exactlyOnce: true, perTable: true},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.Run(c.name, func(t *testing.T) {
					runChaos(t, plan, c, totals)
				})
			}()
		}
		wg.Wait()
	})
	t.Logf("chaos totals (per-table, %s form, %v of chaos per run):\n%s", plan.form, plan.duration, totals.summary())
}
