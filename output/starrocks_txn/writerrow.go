package starrocks_txn

// Home of G38 (ARCHITECTURE.md §11.1): a clean close deletes the writer row; a commit in doubt
// keeps it. Main test: TestWriterRowForgottenOnCleanCloseKeptWhenInDoubt.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// This writer's rows in the writers table (takeover.go tells why they
// exist): the row loaded under every commit and under anchors, its format,
// and its deletion on a clean close.

// nextLabel returns the worker's next label and its number: in per-table
// mode a cycle label, which leaves room for its parts' suffixes.
func (w *dbWorker) nextLabel() (string, int64) {
	n := w.labels.next()
	if w.o.proto.classic() {
		return starrocks.CycleLabel(w.o.conf.labelPrefix, w.db, w.o.writer, n), n
	}
	return starrocks.SeqLabel(w.o.conf.labelPrefix, w.db, w.o.writer, n), n
}

// labelDone records that label is final or will never be committed.
func (w *dbWorker) labelDone(label string) {
	if _, n, ok := starrocks.SplitSeqLabel(label); ok {
		w.labels.done(n)
	}
}

// writerRecord is one row of the writers table as loaded.
type writerRecord struct {
	Pipeline string `json:"pipeline_id"`
	Writer   string `json:"writer"`
	Number   int64  `json:"label_number"`
	Open     string `json:"open_labels"`
	Label    string `json:"label"`
	Updated  string `json:"updated_at"`
}

// writerRow is the worker's row in the writers table, loaded under the
// label numbered n with the other open labels.
func (w *dbWorker) writerRow(label string, n int64, open []int64, at time.Time) writerRecord {
	return writerRecord{Pipeline: w.o.conf.pipelineID, Writer: w.o.writer, Number: n, Open: starrocks.FormatOpenLabels(open),
		Label: label, Updated: at.UTC().Format(starrocks.RowTimeLayout)}
}

// tableHeaders are the load headers of the progress and writers tables:
// JSON rows, nothing filtered, and, with mergeCol, a row never replaced by
// one with a lower mergeCol.
func tableHeaders(mergeCol string) map[string]string {
	h := map[string]string{"format": "json", "strip_outer_array": "true"}
	if mergeCol != "" {
		h["merge_condition"] = mergeCol
	}
	return h
}

// loadRows loads rows into table under label, a row never replacing one
// with a higher mergeCol (none when empty).
func (w *dbWorker) loadRows(ctx context.Context, label, table, mergeCol string, body []byte) error {
	req := starrocks.LoadRequest{
		Txn:     starrocks.Txn{DB: w.db, Label: label, Table: table, Multi: !w.o.proto.classic(), Timeout: w.o.conf.txnTimeout},
		Headers: tableHeaders(mergeCol),
		Body:    body,
	}
	return w.send(ctx, req)
}

// loadWriterRow loads the worker's writer row under label.
func (w *dbWorker) loadWriterRow(ctx context.Context, label string, r writerRecord) error {
	body, _ := json.Marshal([]writerRecord{r})
	table := writersTable(w.o.conf.progressTable)
	if err := w.loadRows(ctx, label, table, starrocks.WritersNumberCol, body); err != nil {
		return fmt.Errorf("loading the writer row into %s.%s: %w", w.db, table, err)
	}
	w.o.m.loads.Incr(1, w.metricDB(), table)
	w.o.m.loadBytes.Incr(int64(len(body)), w.metricDB(), table)
	return nil
}

// anchorIfNeeded commits the writer row on its own before the commit of c
// when a successor would not find c's label from the row StarRocks holds
// (the writer's first commit in the database, or labels burnt since).
func (w *dbWorker) anchorIfNeeded(ctx context.Context, c *cycle) error {
	o := w.o
	if w.labels.covered(c.n, o.now()) {
		return nil
	}
	if c.progressLoaded {
		// An anchor now would hide the cycle's own writer row
		// (tracker.settle): replay it instead.
		return fmt.Errorf("label %s needs an anchor after its writer row was loaded", c.label)
	}
	label, n := w.nextLabel()
	if err := o.client.Begin(ctx, w.txn(label)); err != nil {
		return fmt.Errorf("beginning the anchor transaction %s: %w", label, err)
	}
	w.labels.opened(n)
	open, at := w.labels.openExcept(n), o.now()
	if err := w.loadWriterRow(ctx, label, w.writerRow(label, n, open, at)); err != nil {
		w.rollback(label)
		return fmt.Errorf("anchor transaction %s: %w", label, err)
	}
	committed, ok, err := w.commitLabel(ctx, label, carried{writerTop: n})
	if !ok {
		return ctx.Err()
	}
	if !committed {
		w.rollback(label)
		return fmt.Errorf("committing the anchor transaction %s: %w", label, err)
	}
	w.labels.durable(n, open, at)
	o.m.commits.Incr(1, w.metricDB())
	// A successor that finds no row of this writer in the database checks
	// none of its labels there (takeoverlive.go): the row is visible before
	// a commit it covers is sent, not only committed. Per-table writers are
	// checked in passes (takeover.go:runPasses), which do not rely on it:
	// their anchor, like their cycles, counts once COMMITTED (a publish
	// that lags must not hold the database's cycles, ARCHITECTURE.md §15.1).
	if o.proto.classic() {
		return nil
	}
	return w.awaitPublished(ctx, label)
}

// awaitPublished waits until the committed label is VISIBLE: COMMITTED is
// asked again with backoff, and so is a failed query; UNKNOWN counts as
// visible (StarRocks forgets a label only once it finished). Used for
// anchors, and for a commit a fence gave up on (commit.go).
func (w *dbWorker) awaitPublished(ctx context.Context, label string) error {
	o := w.o
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	var lag publishLag
	for {
		state, err := o.client.WaitFinal(ctx, w.db, label, o.conf.labelStateWait)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil && (state == starrocks.StateVisible || state == starrocks.StateUnknown) {
			return nil
		}
		if d, report := lag.committed(o.conf.labelStateWait); report {
			w.log.Warnf("Label %s has been committed and not VISIBLE for %v (state %q, %v): StarRocks is not publishing in database %s; this database's next commit waits for it", label, d.Round(time.Millisecond), state, err, w.db)
		} else {
			w.log.Debugf("Label %s committed, not visible yet (state %q, %v)", label, state, err)
		}
		if !sleepCtx(ctx, b.next()) {
			return ctx.Err()
		}
	}
}

// forgetWriter deletes the writer's rows on a clean close: nothing it began
// can be committed any more, so no successor needs to probe its labels. A
// commit whose outcome is unknown keeps the row.
func (o *Output) forgetWriter(ctx context.Context) {
	ws := o.workerList()
	o.mu.Lock()
	for _, db := range sortedKeys(o.retired) {
		ws = append(ws, newDBWorker(o, &dbQueue{db: db}, o.retired[db]))
	}
	o.mu.Unlock()
	for _, w := range ws {
		if !w.labels.forgettable() {
			continue
		}
		if err := w.deleteWriterRow(ctx); err != nil {
			w.log.Debugf("Deleting the row of writer %s: %v (successors check its labels instead)", o.writer, err)
		}
	}
}

func (w *dbWorker) deleteWriterRow(ctx context.Context) error {
	o := w.o
	label, _ := w.nextLabel()
	if err := o.client.Begin(ctx, w.txn(label)); err != nil {
		return err
	}
	type delRow struct {
		writerRecord
		Op int `json:"__op"`
	}
	body, _ := json.Marshal([]delRow{{writerRecord: w.writerRow(label, 0, nil, o.now()), Op: 1}})
	// No merge_condition: it does not apply to deletes.
	if err := w.loadRows(ctx, label, writersTable(o.conf.progressTable), "", body); err != nil {
		w.rollback(label)
		return err
	}
	if err := o.client.Commit(ctx, w.txn(label)); err != nil {
		return errors.Join(err, o.client.Rollback(ctx, w.txn(label)))
	}
	return nil
}
