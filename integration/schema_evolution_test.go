package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// Schema changes in step with source transactions, end to end
// (ARCHITECTURE.md §14): Debezium and Maxwell traffic whose tables change
// mid-stream — orders gains coupon and points, shipments is created (its
// first transaction also updates the order it ships), order_items widens
// quantity to BIGINT (later quantities above 2^31) and product, orders
// drops updated_at — loaded with schema_evolution: evolve and exactly_once
// while the schema reader (schema_harness_test.go) watches every order value.

// schemaTxns is the traffic of one run and the plan over it.
const schemaTxns = 400

var schemaPlan = workload.DefaultSchemaPlan(schemaTxns)

// newTableLatency bounds how long after the END of the new table's first
// transaction (its write) the reader first sees a shipment: the input
// reads the new topic within metadata_max_age (1 s) and a rebalance, the
// output creates the table and commits within a commit cycle or two. A few
// seconds; the bound is for a loaded machine.
const newTableLatency = 15 * time.Second

// schemaFormat is a source the tests run, each on a fresh rig: it returns
// the rig, the source, its model and what loads its snapshot.
type schemaFormat struct {
	name string
	new  func(t *testing.T, seed uint64, plan workload.SchemaPlan) (*rig, schemaSource, *workload.Model, func(t *testing.T))
}

// debeziumFormat is Debezium with or without the JsonConverter's schemas.
func debeziumFormat(name string, schemas bool) schemaFormat {
	return schemaFormat{name, func(t *testing.T, seed uint64, plan workload.SchemaPlan) (*rig, schemaSource, *workload.Model, func(t *testing.T)) {
		r := newRig(t, 1)
		w := newSchemaDbz(t, r, seed, plan, schemas)
		return r, w, w.model.model, w.snapshot
	}}
}

var maxwellFormat = schemaFormat{"maxwell", func(t *testing.T, seed uint64, plan workload.SchemaPlan) (*rig, schemaSource, *workload.Model, func(t *testing.T)) {
	r := newRig(t, 1)
	w := newSchemaMaxwell(t, r, seed, plan)
	return r, w, w.model, func(*testing.T) {}
}}

// schemaFormats are the sources whose changes evolve applies: Debezium
// with schemas (typed rows) and Maxwell (explicit DDL events).
var schemaFormats = []schemaFormat{debeziumFormat("debezium", true), maxwellFormat}

// errorFormats are the sources of the error-mode test: Debezium without
// schemas — its rows name the new columns by their keys alone, so the test
// does not depend on how error mode judges a typed column the source
// declares wider than StarRocks has it (a Connect string against the
// example schema's VARCHAR(32)) — and Maxwell.
var errorFormats = []schemaFormat{debeziumFormat("debezium_schemaless", false), maxwellFormat}

// Every change mid-stream, evolve and exactly_once, nothing going wrong:
// the tables equal the source (every new column's values from its first
// row on, its DEFAULT or NULL before; the new table whole; the wide
// quantities and long names; NULL in updated_at after the drop), the
// reader never sees a source transaction split or partly visible across a
// change nor a value without its column, and the new table's first
// transaction is visible within a few seconds of its END.
func TestSchemaChangesMidStream(t *testing.T) {
	t.Parallel()
	for _, f := range schemaFormats {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			seed := testSeed(t)
			r, src, model, snapshot := f.new(t, seed, schemaPlan)
			p := startSchemaPipeline(t, src, "main", schemaPipeOpts{group: "g-schema", evolution: "evolve", exactlyOnce: true})
			snapshot(t)
			rd := startSchemaReader(r.db, model, true)
			defer rd.stop()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			started := time.Now()
			require.NoError(t, src.produce(ctx, schemaTxns, 100)())
			waitSchemaConverged(t, r, model, 45*time.Second)
			p.stop(t, 10*time.Second)
			rd.stop()
			rd.check(t)

			shipped := src.written(workload.ChangeNewTable)
			require.False(t, shipped.IsZero())
			seen := rd.firstSaw("shipment")
			require.False(t, seen.IsZero(), "the reader saw a shipment")
			latency := seen.Sub(shipped)
			assert.Less(t, latency, newTableLatency, "the new table's first transaction is visible within a few seconds of its END")
			for _, col := range []string{"coupon", "points"} {
				assert.False(t, rd.firstSaw(col).IsZero(), "the reader saw values of %s", col)
			}
			got, err := readTargetFor(context.Background(), r, model.Snapshot())
			require.NoError(t, err)
			bulk := 0
			for _, it := range got.Items {
				f := strings.Split(it, "|")
				if toInt(f[3]) >= 1<<31 {
					bulk++
				}
			}
			assert.Positive(t, bulk, "quantities above 2^31 were loaded after the widening")
			assert.Positive(t, p.metrics.Counter("starrocks_txn_source_txns_committed"))
			t.Logf("%s: %d source transactions in %v, changes at %v; new table visible %v after its first transaction was written; %d reader rounds",
				f.name, src.produced(), time.Since(started).Round(time.Millisecond), schemaPlan, latency.Round(time.Millisecond), rd.rounds.Load())
		})
	}
}

// The pipeline is killed around every change (the stream crashed hard
// without committing offsets or leaving the group, as a killed process
// is) and started again, exactly_once: nothing lost, nothing twice (the
// order_events rows exact), no order going back, never torn — whether the
// kill came before a change was applied, while StarRocks ran it, or after.
func TestSchemaChangesSurviveKills(t *testing.T) {
	t.Parallel()
	for _, f := range schemaFormats {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			seed := testSeed(t)
			r, src, model, snapshot := f.new(t, seed, schemaPlan)
			opts := schemaPipeOpts{group: "g-schema-kill", evolution: "evolve", exactlyOnce: true, commitPeriod: time.Second}
			p := startSchemaPipeline(t, src, "first", opts)
			snapshot(t)
			rd := startSchemaReader(r.db, model, true)
			defer rd.stop()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wait := src.produce(ctx, schemaTxns, 80)
			rng := rand.New(rand.NewPCG(seed, 23))
			kills := 0
			for _, step := range schemaPlan {
				testkit.WaitFor(t, 30*time.Second, func() bool { return !src.written(step.Kind).IsZero() }, "the source makes %s", step.Kind)
				// The kill comes at a random moment from just after the
				// change's first transaction was written to a second
				// later: before the output saw it, while StarRocks applies
				// it, or after (real time).
				randomMoment(rng, 0, time.Second)
				r.crash(p)
				kills++
				p = startSchemaPipeline(t, src, fmt.Sprintf("after-%s", step.Kind), opts)
			}
			require.NoError(t, wait())
			waitSchemaConverged(t, r, model, 60*time.Second)
			p.stop(t, 10*time.Second)
			rd.stop()
			rd.check(t)
			t.Logf("%s: %d kills around the changes %v; %d source transactions; %d reader rounds",
				f.name, kills, schemaPlan, src.produced(), rd.rounds.Load())
		})
	}
}

// schema_evolution: error. The first source transaction that carries the
// new orders columns is dead-lettered whole (every row of it, whatever its
// table) with a reason naming test.orders and the column; nothing of it is
// visible, and everything before it is loaded.
func TestSchemaEvolutionErrorDeadLettersTheFirstTransactionWithANewColumn(t *testing.T) {
	t.Parallel()
	const at, n = 40, 80
	plan := workload.SchemaPlan{{At: at, Kind: workload.ChangeAddColumns}}
	for _, f := range errorFormats {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			seed := testSeed(t)
			r, src, model, snapshot := f.new(t, seed, plan)
			dl := deadLetterPath(t)
			p := startSchemaPipeline(t, src, "main", schemaPipeOpts{group: "g-schema-error", evolution: "error", deadLetter: dl})
			snapshot(t)
			rd := startSchemaReader(r.db, model, true)
			defer rd.stop()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			require.NoError(t, src.produce(ctx, n, 100)())

			// What StarRocks must hold: the source up to the change (the
			// snapshot included), nothing of the transactions after it,
			// which all write orders rows with the new columns.
			expected, first := sourceBeforeChange(t, src.txns())
			var letters []deadLetter
			testkit.WaitFor(t, 30*time.Second, func() bool {
				letters = readDeadLetters(t, dl)
				return countTxn(letters, first.ID, src) >= len(first.Changes)
			}, "transaction %s reaches dead_letter", first.ID)
			mine := lettersOf(letters, first.ID, src)
			assert.Len(t, mine, len(first.Changes), "the whole transaction, every row")
			for _, d := range mine {
				assert.Contains(t, d.Reason, "test.orders", "the reason names the table")
				assert.Contains(t, d.Reason, "coupon", "the reason names the column")
			}
			p.stop(t, 10*time.Second)
			rd.stop()
			got, err := workload.ReadTarget(context.Background(), r.db, true)
			require.NoError(t, err)
			assert.Empty(t, workload.Detail(workload.Compare(expected, got)), "StarRocks holds the source up to the change, nothing after it")
			rd.mu.Lock()
			assert.Empty(t, rd.problems)
			rd.mu.Unlock()
		})
	}
}

// countTxn counts the dead letters of a source transaction.
func countTxn(letters []deadLetter, id string, src schemaSource) int {
	return len(lettersOf(letters, id, src))
}

// lettersOf are the dead letters of a source transaction: Debezium's by its
// id, Maxwell's by its xid (the producer numbers them from 1 in order).
func lettersOf(letters []deadLetter, id string, src schemaSource) []deadLetter {
	want := id
	if _, ok := src.(*schemaMaxwell); ok {
		for i, tx := range src.txns() {
			if tx.ID == id {
				want = fmt.Sprint(i + 1)
			}
		}
	}
	var out []deadLetter
	for _, d := range letters {
		if d.Txn == want {
			out = append(out, d)
		}
	}
	return out
}

// A source transaction stalled on a table that does not exist
// (schema_evolution: error, no dead_letter): Debezium's first shipments
// transaction holds the connector; once the test creates the table over
// MySQL, it commits — without a restart — and the rest follows. Never torn
// meanwhile. The rows are untyped (no schemas), as in the error-mode test.
func TestStalledMissingTableHealsWhenCreated(t *testing.T) {
	t.Parallel()
	plan := workload.SchemaPlan{{At: 30, Kind: workload.ChangeNewTable}}
	const n = 60
	seed := testSeed(t)
	r := newRig(t, 1)
	src := newSchemaDbz(t, r, seed, plan, false)
	p := startSchemaPipeline(t, src, "main", schemaPipeOpts{group: "g-schema-heal", evolution: "error", exactlyOnce: true})
	src.snapshot(t)
	model := src.model.model
	rd := startSchemaReader(r.db, model, true)
	defer rd.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, src.produce(ctx, n, 100)())

	// Stalled: the transactions before it are loaded, it is not, and
	// nothing after it is (the connector's commit order is global).
	expected, first := sourceBeforeChange(t, src.txns())
	shipped := orderOfFirstShipment(t, first)
	var last string
	if !testkit.Poll(30*time.Second, func() bool {
		got, err := workload.ReadTarget(context.Background(), r.db, true)
		if err != nil {
			last = err.Error()
			return false
		}
		last = workload.Detail(workload.Compare(expected, got))
		return last == ""
	}) {
		require.Failf(t, "the pipeline never loaded the source up to the new table", "%s", last)
	}
	// The stall holds: the stalled transaction is tried again every
	// stall_retry_interval (500 ms) and stalls again while the table is
	// missing; after two such retries, nothing of it or after it is loaded.
	stalls := p.metrics.Counter("starrocks_txn_partition_stalls")
	testkit.WaitFor(t, 30*time.Second, func() bool { return p.metrics.Counter("starrocks_txn_partition_stalls") >= stalls+2 },
		"the stalled transaction tried again twice (starrocks_txn_partition_stalls from %d)", stalls)
	got, err := workload.ReadTarget(context.Background(), r.db, true)
	require.NoError(t, err)
	require.Empty(t, workload.Detail(workload.Compare(expected, got)), "nothing from the stalled transaction on is loaded")
	var status string
	require.NoError(t, r.db.QueryRowContext(context.Background(), "SELECT order_status FROM test.orders WHERE order_id = ?", shipped.id).Scan(&status))
	assert.NotEqual(t, shipped.status, status, "the stalled transaction's order update is not visible")
	assert.Contains(t, p.logs.String(), "test.shipments", "the log names the table the transaction waits for")
	committed := p.metrics.Counter("starrocks_txn_source_txns_committed")

	healed := time.Now()
	createShipments(t, r)
	waitSchemaConverged(t, r, model, 30*time.Second)
	t.Logf("stalled after %d source transactions committed (the snapshot's rows included), %d written; converged %v after CREATE TABLE",
		committed, n, time.Since(healed).Round(time.Millisecond))
	p.stop(t, 10*time.Second)
	rd.stop()
	rd.check(t)
}

// sourceBeforeChange renders what the source committed before its first
// transaction under a schema change (that one on the snapshot's rows
// included), and returns that transaction.
func sourceBeforeChange(t *testing.T, txns []workload.Txn) (workload.Snapshot, workload.Txn) {
	t.Helper()
	m := workload.NewModel()
	for _, tx := range txns {
		if len(tx.Schema) > 0 {
			return m.Snapshot(), tx
		}
		m.Apply(tx)
	}
	require.Fail(t, "no source transaction under the change")
	return workload.Snapshot{}, workload.Txn{}
}

// orderOfFirstShipment is the order value the first shipments transaction
// writes.
func orderOfFirstShipment(t *testing.T, tx workload.Txn) orderVersion {
	t.Helper()
	for _, c := range tx.Changes {
		if c.Table == workload.TableShipments && !c.Delete {
			return orderVersion{toInt(c.Row["order_id"]), fmt.Sprint(c.Row["order_status"])}
		}
	}
	require.Fail(t, "transaction %s writes no shipment", tx.ID)
	return orderVersion{}
}

// The schema checks can fail: a processor that drops the new coupon from
// every row (a value lost, as a load planned before the ADD COLUMN would
// lose it) is caught by the reader and by the final comparison, which
// names the column; a mapping that makes every row its own transaction,
// each shipment row held back half a second, is caught showing an order's
// update without its shipment (or the other way). The
// new columns and the shipments table exist beforehand (an operator's), so
// neither depends on what the output does with schema changes.
func TestSchemaReaderCatchesLostValuesAndSplitTransactions(t *testing.T) {
	t.Parallel()
	t.Run("lost_values", func(t *testing.T) {
		t.Parallel()
		seed := testSeed(t)
		r := newRig(t, 1)
		src := newSchemaDbz(t, r, seed, workload.SchemaPlan{{At: 20, Kind: workload.ChangeAddColumns}}, true)
		// The columns exist: the lost values are the processor's doing,
		// whatever the output does with a row that names a new column.
		_, err := r.db.ExecContext(context.Background(), "ALTER TABLE test.orders ADD COLUMN (coupon VARCHAR(64) NULL, points INT NULL DEFAULT \"0\")")
		require.NoError(t, err)
		p := startSchemaPipeline(t, src, "lossy", schemaPipeOpts{group: "g-schema-lossy", processors: `    - mapping: root = this.without("coupon")
`})
		src.snapshot(t)
		model := src.model.model
		rd := startSchemaReader(r.db, model, true)
		defer rd.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		require.NoError(t, src.produce(ctx, 80, 100)())
		testkit.WaitFor(t, 45*time.Second, func() bool { return rd.sawProblems(problemColumn) > 0 }, "the reader sees the lost coupons")
		assert.Contains(t, fmt.Sprint(rd.problems), "has coupon = NULL")
		// Once every transaction is loaded, the comparison names coupon
		// alone: its values are missing, nothing else differs.
		want := model.Snapshot()
		var diffs []workload.TableDiff
		testkit.Poll(30*time.Second, func() bool {
			got, err := readTargetFor(context.Background(), r, want)
			require.NoError(t, err)
			diffs = workload.Compare(want, got)
			return len(diffs) == 1 && len(diffs[0].Columns) == 1 && diffs[0].Stale == diffs[0].Columns[0].Missing+diffs[0].Columns[0].Wrong
		})
		require.Len(t, diffs, 1, workload.Detail(diffs))
		require.Len(t, diffs[0].Columns, 1, workload.Detail(diffs))
		assert.Equal(t, "coupon", diffs[0].Columns[0].Column, workload.Detail(diffs))
		assert.Positive(t, diffs[0].Columns[0].Missing)
		assert.Zero(t, diffs[0].Columns[0].Wrong, "model NULL is target NULL")
		p.stop(t, 10*time.Second)
	})
	t.Run("split_transactions", func(t *testing.T) {
		t.Parallel()
		seed := testSeed(t)
		r := newRig(t, 1)
		plan := workload.SchemaPlan{{At: 5, Kind: workload.ChangeNewTable}}
		src := newSchemaDbz(t, r, seed, plan, true)
		createShipments(t, r)
		p := startSchemaPipeline(t, src, "split", schemaPipeOpts{group: "g-schema-split", processors: `    - mapping: |
        meta starrocks_txn_id = @starrocks_source_offset
        meta starrocks_txn_end = "true"
        root = this
    - split: { size: 1 }
    - sleep: { duration: '${! if @starrocks_table == "shipments" { "500ms" } else { "0s" } }' }
`})
		src.snapshot(t)
		rd := startSchemaReader(r.db, src.model.model, false)
		defer rd.stop()
		ctx, cancel := context.WithCancel(context.Background())
		wait := src.produce(ctx, 0, 100)
		// Every row is its own transaction, and a shipment reaches the
		// output half a second after the rows before it: its order's new
		// value commits first, in a 200 ms cycle, and is visible without
		// it. The deadline is for a loaded machine.
		testkit.Poll(45*time.Second, func() bool { return rd.sawProblems(problemShipment) > 0 })
		cancel()
		require.NoError(t, wait())
		p.stop(t, 10*time.Second)
		rd.stop()
		assert.Positive(t, rd.sawProblems(problemShipment), "the reader saw a shipment without its order's update, or the other way; it saw %v (last error %s) in %d rounds",
			rd.problems, rd.lastErr, rd.rounds.Load())
	})
}

// createShipments creates the shipments table as the source defines it,
// over MySQL.
func createShipments(t *testing.T, r *rig) {
	t.Helper()
	g := workload.NewGenerator(workload.Options{Partitions: 1, Schema: workload.SchemaPlan{{At: 1, Kind: workload.ChangeNewTable}}})
	tx := g.Next(0)
	require.Len(t, tx.Schema, 1)
	ddl, err := schema.CreateTableSQL(workload.Database, workload.TableShipments, tx.Schema[0].New.StarRocks(), map[string]string{"replication_num": "1"})
	require.NoError(t, err)
	_, err = r.db.ExecContext(context.Background(), ddl)
	require.NoError(t, err)
}
