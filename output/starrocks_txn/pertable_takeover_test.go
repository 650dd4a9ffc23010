package starrocks_txn

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// The per-table take-over (ARCHITECTURE.md §15.2): a writer killed between
// its cycle's prepares and its commits leaves prepared transactions behind;
// the next output to apply a partition of the pipeline commits or rolls them
// back together, by the cycle's decision. The dead writer's state is built
// here with the client itself, request by request, as the per-table protocol
// leaves it at each moment a kill can hit.

// emulatorPTOutput builds an output as the plugin constructor does (the
// real client, the MySQL connection), in per-table mode.
func emulatorPTOutput(t *testing.T, e *emulator.Emulator, yaml string) (*Output, *service.Resources) {
	t.Helper()
	cl, err := starrocks.New(starrocks.Config{LoadURLs: []string{e.FEURL()}, Username: "root", RequestTimeout: 2 * time.Second})
	require.NoError(t, err)
	meta, err := starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	return testOutput(t, fmt.Sprintf("commit_interval: 100ms\ntransaction_mode: per_table\nmysql_address: %s\nlabel_state_wait: 300ms\nretry_backoff: { initial_interval: 20ms, max_interval: 200ms }\n%s", e.MySQLAddr(), yaml),
		srClient{cl}, nil, func(o *Output) {
			o.meta = meta
			o.enableProgress()
		})
}

// deadWriter is a writer that died in the middle of a per-table cycle.
type deadWriter struct {
	t        *testing.T
	e        *emulator.Emulator
	cl       *starrocks.Client
	writer   string
	n        int64
	decision string
}

const deadPipeline = "pt"

func newDeadWriter(t *testing.T, e *emulator.Emulator, n int64) *deadWriter {
	t.Helper()
	cl, err := starrocks.New(starrocks.Config{LoadURLs: []string{e.FEURL()}, Username: "root"})
	require.NoError(t, err)
	for _, ddl := range []string{starrocks.ProgressDDL("test", defaultProgressTable), starrocks.WritersDDL("test", writersTable(defaultProgressTable))} {
		require.NoError(t, e.Store().ExecDDL(ddl))
	}
	d := &deadWriter{t: t, e: e, cl: cl, writer: "deadbeef", n: n}
	d.decision = starrocks.CycleLabel(defaultLabelPrefix, "test", d.writer, n)
	return d
}

// row is the writer row the decision (or an anchor) numbered n carries.
func (d *deadWriter) row(n int64, label string) []byte {
	b, err := json.Marshal([]writerRecord{{Pipeline: deadPipeline, Writer: d.writer, Number: n, Label: label,
		Updated: time.Now().UTC().Format(starrocks.RowTimeLayout)}})
	require.NoError(d.t, err)
	return b
}

func (d *deadWriter) txn(label, table string) starrocks.Txn {
	return starrocks.Txn{DB: "test", Label: label, Table: table, Timeout: 30 * time.Second}
}

// load begins label on table and loads body.
func (d *deadWriter) load(label, table string, body []byte, headers map[string]string) {
	ctx := context.Background()
	_, err := d.cl.Begin(ctx, d.txn(label, table))
	require.NoError(d.t, err, label)
	_, err = d.cl.Load(ctx, starrocks.LoadRequest{Txn: d.txn(label, table), Headers: headers, Body: body})
	require.NoError(d.t, err, label)
}

// anchor commits the writer row numbered n alone, as an anchor does.
func (d *deadWriter) anchor(n int64) {
	label := starrocks.CycleLabel(defaultLabelPrefix, "test", d.writer, n)
	d.load(label, writersTable(defaultProgressTable), d.row(n, label), tableHeaders(starrocks.WritersNumberCol))
	_, err := d.cl.Commit(context.Background(), d.txn(label, ""))
	require.NoError(d.t, err)
}

// parts begins and loads the cycle's parts: order 4242 with its two items
// (the data parts) and, with progress, the progress part; prepared, each,
// when prepare is set.
func (d *deadWriter) parts(progress, prepare bool) []string {
	ctx := context.Background()
	hdr := map[string]string{"format": "json", "strip_outer_array": "true"}
	labels := []string{starrocks.PartLabel(d.decision, "1"), starrocks.PartLabel(d.decision, "2")}
	if progress {
		p := starrocks.PartLabel(d.decision, "p")
		body := []byte(`[{"pipeline_id":"pt","source_partition":"orders/0","committed_offset":9,"txn_end_offset":9,"source_txn_id":"t9","label":"` + d.decision + `","updated_at":"2026-01-01 00:00:00"}]`)
		d.load(p, defaultProgressTable, body, tableHeaders(starrocks.ProgressOffsetCol))
		if prepare {
			_, err := d.cl.Prepare(ctx, d.txn(p, defaultProgressTable))
			require.NoError(d.t, err)
		}
		labels = append(labels, p)
	}
	d.load(labels[0], "orders", []byte(`[{"order_id":4242,"customer_id":7,"total_amount":2,"order_status":"new"}]`), hdr)
	d.load(labels[1], "order_items", []byte(`[{"order_id":4242,"item_id":1,"product":"p","quantity":7,"price":1.5},{"order_id":4242,"item_id":2,"product":"p","quantity":7,"price":1.5}]`), hdr)
	if prepare {
		for _, l := range labels[:2] {
			_, err := d.cl.Prepare(ctx, d.txn(l, ""))
			require.NoError(d.t, err)
		}
	}
	return labels
}

// decide begins the decision with its writer row and commits it when
// commit is set (else it stays open).
func (d *deadWriter) decide(commit bool) {
	d.load(d.decision, writersTable(defaultProgressTable), d.row(d.n, d.decision), tableHeaders(starrocks.WritersNumberCol))
	if commit {
		_, err := d.cl.Commit(context.Background(), d.txn(d.decision, ""))
		require.NoError(d.t, err)
	}
}

func (d *deadWriter) state(label string) starrocks.LabelState {
	s, err := d.cl.LoadState(context.Background(), "test", label)
	require.NoError(d.t, err)
	return s
}

// successor starts a per-table output of the pipeline and makes it apply a
// partition's first transaction, which waits for the take-over.
func (d *deadWriter) successor(semantic string) *Output {
	yaml := "pipeline_id: " + deadPipeline + "\n"
	if semantic == semanticExactlyOnce {
		yaml += "semantic: exactly_once\n"
	}
	o, _ := emulatorPTOutput(d.t, d.e, yaml)
	s := newSrc("succ")
	b := service.MessageBatch{
		s.row("orders/5", "s1", "orders", map[string]any{"order_id": 5005, "customer_id": 1, "total_amount": 1, "order_status": "new"}, false),
		s.row("orders/5", "s1", "order_items", map[string]any{"order_id": 5005, "item_id": 1, "product": "p", "quantity": 1, "price": 1.5}, true),
	}
	waitAll(d.t, []chan error{writeAsync(o, b)}, 30*time.Second)
	return o
}

func orderVisible(t *testing.T, e *emulator.Emulator, id int64) (order bool, items int) {
	t.Helper()
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	for _, r := range rows {
		if toInt(r["order_id"]) == id {
			order = true
		}
	}
	rows, err = e.Store().Rows("test", "order_items")
	require.NoError(t, err)
	for _, r := range rows {
		if toInt(r["order_id"]) == id {
			items++
		}
	}
	return order, items
}

func TestPerTableTakeOverSettlesADeadWritersCycleByItsDecision(t *testing.T) {
	for _, tc := range []struct {
		name     string
		semantic string
		// setup leaves the dead writer's cycle as a kill at one moment does.
		setup  func(d *deadWriter) []string
		commit bool
	}{
		{"killed between the prepares and the decision", semanticAtLeastOnce, func(d *deadWriter) []string {
			d.anchor(d.n - 1)
			labels := d.parts(false, true)
			d.decide(false)
			return labels
		}, false},
		{"killed while preparing", semanticExactlyOnce, func(d *deadWriter) []string {
			d.anchor(d.n - 1)
			labels := d.parts(true, false)
			// One part prepared, the other not yet.
			_, err := d.cl.Prepare(context.Background(), d.txn(labels[0], ""))
			require.NoError(d.t, err)
			return labels
		}, false},
		{"killed after the decision, before the commits", semanticExactlyOnce, func(d *deadWriter) []string {
			labels := d.parts(true, true)
			d.decide(true)
			return labels
		}, true},
		{"killed after the first commit", semanticAtLeastOnce, func(d *deadWriter) []string {
			labels := d.parts(false, true)
			d.decide(true)
			_, err := d.cl.Commit(context.Background(), d.txn(labels[0], ""))
			require.NoError(d.t, err)
			return labels
		}, true},
		{"decision committed and forgotten by the FE: the writer row names it", semanticExactlyOnce, func(d *deadWriter) []string {
			labels := d.parts(true, true)
			d.decide(true)
			require.Equal(d.t, 1, d.e.EvictLabels("test", d.decision))
			require.Equal(d.t, starrocks.StateUnknown, d.state(d.decision))
			return labels
		}, true},
		{"decision rolled back and forgotten: the writer row names an older one", semanticAtLeastOnce, func(d *deadWriter) []string {
			d.anchor(d.n - 1)
			labels := d.parts(false, true)
			d.decide(false)
			_, err := d.cl.Rollback(context.Background(), d.txn(d.decision, ""))
			require.NoError(d.t, err)
			require.Equal(d.t, 1, d.e.EvictLabels("test", d.decision))
			return labels
		}, false},
		{"decision committed, progress part expired: the cycle replays", semanticExactlyOnce, func(d *deadWriter) []string {
			labels := d.parts(true, true)
			d.decide(true)
			// Its prepared timeout passed (prepared first, it expires
			// first): StarRocks aborted it.
			_, err := d.cl.Rollback(context.Background(), d.txn(labels[2], ""))
			require.NoError(d.t, err)
			return labels[:2]
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ptEmulator(t)
			d := newDeadWriter(t, e, 7)
			labels := tc.setup(d)
			o := d.successor(tc.semantic)
			want := starrocks.StateAborted
			if tc.commit {
				want = starrocks.StateVisible
			}
			for _, l := range labels {
				assert.Equal(t, want, d.state(l), "part %s ends with its decision", l)
			}
			order, items := orderVisible(t, e, 4242)
			if tc.commit {
				assert.True(t, order && items == 2, "the dead writer's source transaction is visible whole")
			} else {
				assert.False(t, order || items > 0, "nothing of the dead writer's source transaction is visible")
			}
			order, items = orderVisible(t, e, 5005)
			assert.True(t, order && items == 1, "the successor's own transaction committed after the take-over")
			db, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/")
			require.NoError(t, err)
			defer db.Close()
			for l, st := range procLabels(t, db, "test", "running") {
				assert.NotEqual(t, string(starrocks.StatePrepared), st, "label %s left prepared", l)
			}
			_ = o
		})
	}
}

// A cycle whose prepares are half the prepared timeout old is rolled back
// and replayed rather than decided (pertable.go: tooOld): with the output's
// prepared timeout made tiny, every cycle is prepared and rolled back,
// nothing becomes visible and nothing is acknowledged; with it restored the
// same source transaction commits, once.
func TestPerTableCycleTooOldToDecideIsRolledBack(t *testing.T) {
	e := ptEmulator(t)
	o, _ := emulatorPTOutput(t, e, "semantic: exactly_once\npipeline_id: "+deadPipeline+"\n")
	p := perTableOf(o.proto)
	require.NotNil(t, p)
	limit := p.limit.Load()
	p.limit.Store(int64(time.Nanosecond))
	s := newSrc("old")
	ch := writeAsync(o, service.MessageBatch{
		s.row("orders/1", "o1", "orders", map[string]any{"order_id": 7001, "customer_id": 1, "total_amount": 1, "order_status": "new"}, false),
		s.row("orders/1", "o1", "order_items", map[string]any{"order_id": 7001, "item_id": 1, "product": "p", "quantity": 1, "price": 1.5}, true),
	})
	db, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/")
	require.NoError(t, err)
	defer db.Close()
	// Cycles prepared and rolled back: their parts and decisions ABORTED.
	require.Eventually(t, func() bool {
		aborted := 0
		for l, st := range procLabels(t, db, "test", "finished") {
			if _, part, ok := starrocks.SplitPartLabel(l); ok && part != "p" && st == string(starrocks.StateAborted) {
				aborted++
			}
		}
		return aborted >= 4
	}, 20*time.Second, 20*time.Millisecond, "cycles are prepared and rolled back")
	select {
	case err := <-ch:
		t.Fatalf("acknowledged (%v) while no cycle may be decided", err)
	default:
	}
	order, items := orderVisible(t, e, 7001)
	assert.False(t, order || items > 0, "nothing of an undecided cycle is visible")

	p.limit.Store(limit)
	waitAll(t, []chan error{ch}, 20*time.Second)
	order, items = orderVisible(t, e, 7001)
	assert.True(t, order && items == 1, "committed once decided in time")
	// Closed: its eager next cycle is rolled back.
	require.NoError(t, o.Close(context.Background()))
	checkCyclesEndedTogether(t, e, "test")
}

// The torn-read check of the per-table tests fails a partial read that
// does not heal: a dead writer's decided cycle with its first part
// committed is partial for good until someone settles it — the reader
// reports it once it outlived the bound — and a successor heals it.
func TestHealCatchesAPartialThatStays(t *testing.T) {
	e := ptEmulator(t)
	d := newDeadWriter(t, e, 7)
	labels := d.parts(false, true)
	d.decide(true)
	_, err := d.cl.Commit(context.Background(), d.txn(labels[0], ""))
	require.NoError(t, err)

	db, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/test")
	require.NoError(t, err)
	defer db.Close()
	rd := &partialReader{db: db, heal: testkit.NewHeal(300 * time.Millisecond)}
	// Reader rounds until the partial read has outlived the bound: the
	// check reports it then, before the run's end.
	testkit.WaitFor(t, 30*time.Second, func() bool {
		require.NoError(t, rd.round(context.Background()))
		return rd.heal.Check(false) != nil
	}, "the reader reports the partial read that outlived the bound")
	err = rd.heal.Check(true)
	require.Error(t, err, "a partial read that stays fails the check")
	assert.Contains(t, err.Error(), "4242")

	d.successor(semanticAtLeastOnce)
	healed := &partialReader{db: db, heal: testkit.NewHeal(300 * time.Millisecond)}
	require.NoError(t, healed.round(context.Background()))
	assert.NoError(t, healed.heal.Check(true), "the successor committed the rest of the cycle")
}
