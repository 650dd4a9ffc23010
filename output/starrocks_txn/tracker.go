package starrocks_txn

// Home of G31 (ARCHITECTURE.md §11.1): exactly_once: progress rows commit with the data; what
// StarRocks holds is acknowledged, not loaded. Main test: TestProgressRowsCommitWithTheirRows.
//
// Home of G33 (ARCHITECTURE.md §11.1): exactly_once: a commit waits for its partitions' earlier
// poisoned transactions to reach dead_letter. Main test:
// TestExactlyOnceCommitWaitsForEarlierDeadLetter.
//
// Home of G40 (ARCHITECTURE.md §11.1): the progress and writers tables exist with their columns
// before a database's first commit. Main test: TestIntegrationProgressTableCreatedAndChecked.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// tracker is what the output keeps in StarRocks itself, inside its own
// transactions, so that a successor — after a crash, a kill or a
// rebalance — neither applies a source transaction twice nor lets a dead
// run's commit land over newer rows (ARCHITECTURE.md §7). The cycle reads
// straight through it (commit.go: load data, beforeCommit, loadRows, commit,
// committed), and admission asks it what a partition's first message must
// wait for (partition.go, progress.go). There are three:
//
//   - noTracking: at_least_once without pipeline_id or mysql_address.
//   - writerTracking: at_least_once with both: this writer's row in the
//     writers table under every commit (and anchors), and the take-over
//     check of other writers' transactions before a partition's messages
//     are applied.
//   - exactlyOnceTracking: semantic exactly_once: the writer rows, and the
//     progress row of every partition of a cycle under its label, read back
//     before a partition's first message so that replays are dropped.
type tracker interface {
	// learnsPartitions reports whether a partition's messages wait for learn
	// before they are applied.
	learnsPartitions() bool
	// learn returns what StarRocks holds of the partitions, read together,
	// by partition (one of which StarRocks holds nothing, or every one when
	// the tracker keeps no progress, is absent), once every transaction
	// other writers may still commit is final.
	learn(ctx context.Context, parts []string) (map[string]progressEntry, error)
	// loadRows loads, under c's label, the rows that become visible with
	// c's data.
	loadRows(ctx context.Context, w *dbWorker, c *cycle) error
	// beforeCommit holds c's commit until it may be sent.
	beforeCommit(ctx context.Context, w *dbWorker, c *cycle) error
	// committed records that c is committed.
	committed(w *dbWorker, c *cycle)
	// settle tells from the rows a label carried (its writer row, the
	// progress rows of its cycle) whether it committed, once StarRocks has
	// forgotten the label's state; known is false when the rows cannot
	// tell.
	settle(ctx context.Context, w *dbWorker, label string, rows carried) (committed, known bool, err error)
	// close runs on a clean close, after the workers stopped.
	close(ctx context.Context)
}

// newTracker returns the tracker of the output's configuration, keeping its
// rows in store. With exactly_once it also gives the partition registry the
// progress reader through which the kafka_txn input seeks a newly assigned
// partition after what StarRocks already holds (an optimisation: the output
// drops replays itself).
func newTracker(o *Output, store progressStore) tracker {
	wt := writerTracking{o: o, store: store, takeover: newTakeOver(o, store)}
	if !o.conf.exactlyOnce {
		o.log.Infof("At_least_once with pipeline_id %q and mysql_address: keeping writer rows in %s and checking other writers' transactions before applying a partition's messages", o.conf.pipelineID, writersTable(o.conf.progressTable))
		return &wt
	}
	o.reg.SetProgress(func(ctx context.Context, partition string) (int64, bool, error) {
		es, err := store.read(ctx, o.conf.pipelineID, []string{partition})
		if err != nil {
			return 0, false, err
		}
		e := es[partition]
		return e.through, e.hasThrough, nil
	})
	return &exactlyOnceTracking{writerTracking: wt}
}

// noTracking keeps nothing.
type noTracking struct{}

func (noTracking) learnsPartitions() bool { return false }

func (noTracking) learn(context.Context, []string) (map[string]progressEntry, error) {
	return nil, nil
}

func (noTracking) loadRows(context.Context, *dbWorker, *cycle) error { return nil }

func (noTracking) beforeCommit(context.Context, *dbWorker, *cycle) error { return nil }

func (noTracking) committed(*dbWorker, *cycle) {}

func (noTracking) settle(context.Context, *dbWorker, string, carried) (bool, bool, error) {
	return false, false, nil
}

func (noTracking) close(context.Context) {}

// writerTracking keeps writer rows (writerrow.go, ledger.go) and runs the
// take-over check (takeover.go).
type writerTracking struct {
	o        *Output
	store    progressStore
	takeover *takeOver
}

func (t *writerTracking) learnsPartitions() bool { return true }

// learn makes every transaction another writer may still commit final,
// once for all the partitions.
func (t *writerTracking) learn(ctx context.Context, _ []string) (map[string]progressEntry, error) {
	return nil, t.takeover.run(ctx, t.takeover.ticket())
}

func (t *writerTracking) loadRows(ctx context.Context, w *dbWorker, c *cycle) error {
	if c.progressLoaded {
		return nil
	}
	if err := t.ensureTables(ctx, w); err != nil {
		return err
	}
	return t.loadWriterRow(ctx, w, c)
}

// beforeCommit makes sure the database's tables exist, then anchors the
// writer row when a successor would not find c's label from the row
// StarRocks holds.
func (t *writerTracking) beforeCommit(ctx context.Context, w *dbWorker, c *cycle) error {
	if err := t.ensureTables(ctx, w); err != nil {
		return err
	}
	return w.anchorIfNeeded(ctx, c)
}

// committed records the writer row c carried as the one StarRocks holds.
func (t *writerTracking) committed(w *dbWorker, c *cycle) {
	if c.progressLoaded {
		w.labels.durable(c.rowTop, c.open, c.rowAt)
	}
}

func (t *writerTracking) close(ctx context.Context) { t.o.forgetWriter(ctx) }

// settle reads this writer's row in the database. The row a label carried
// is numbered at least as high as every row the writer committed in the
// database before it (its own number, or the highest of those rows, an
// anchor committed for it included: loadWriterRow), and merge_condition
// keeps a row unless one with a higher number is held;
// while no later label of the writer committed there (one unresolved commit
// per database, ARCHITECTURE.md §10.2), the row names the label if and only
// if it committed, and one numbered no higher that names another label, or
// none, proves it did not.
func (t *writerTracking) settle(ctx context.Context, w *dbWorker, label string, rows carried) (bool, bool, error) {
	if rows.writerTop == 0 {
		return false, false, nil
	}
	r, found, err := t.store.writerRow(ctx, w.db, t.o.conf.pipelineID, t.o.writer)
	switch {
	case err != nil:
		return false, false, err
	case found && r.label == label:
		return true, true, nil
	case !found || r.top <= rows.writerTop:
		return false, true, nil
	}
	return false, false, nil
}

// ensureTables creates the database's tables before its first commit. The
// transaction was begun already; its loads wait for the table, not for the
// label.
func (t *writerTracking) ensureTables(ctx context.Context, w *dbWorker) error {
	if w.progressReady {
		return nil
	}
	if err := t.store.ensure(ctx, w.db); err != nil {
		return err
	}
	w.progressReady = true
	return nil
}

// loadWriterRow loads the writer row under c's label: the row lists the
// writer's other open labels.
func (t *writerTracking) loadWriterRow(ctx context.Context, w *dbWorker, c *cycle) error {
	c.open, c.rowAt, c.rowTop = w.labels.openExcept(c.n), t.o.now(), max(c.n, w.labels.top())
	// Under the cycle's label: in per-table mode its decision's
	// transaction, on the writers table (pertable.go).
	label, err := t.o.proto.labelFor(ctx, w, c, writersTable(t.o.conf.progressTable))
	if err == nil {
		err = w.loadWriterRow(ctx, label, w.writerRow(c.label, c.rowTop, c.open, c.rowAt))
	}
	if err != nil {
		if starrocks.IsTableWide(err) {
			// Dropped while running: create it again before the replay.
			w.progressReady = false
		}
		return err
	}
	c.progressLoaded = true
	c.loaded = true
	return nil
}

// exactlyOnceTracking adds the partitions' progress to writerTracking.
type exactlyOnceTracking struct {
	writerTracking
}

// learn reads the partitions' durable progress together once other
// writers' transactions are final: what they land must be in what is read.
func (t *exactlyOnceTracking) learn(ctx context.Context, parts []string) (map[string]progressEntry, error) {
	if err := t.takeover.run(ctx, t.takeover.ticket()); err != nil {
		return nil, err
	}
	return t.store.read(ctx, t.o.conf.pipelineID, parts)
}

// loadRows loads the progress row of every partition of c, then the writer
// row.
func (t *exactlyOnceTracking) loadRows(ctx context.Context, w *dbWorker, c *cycle) error {
	if c.progressLoaded {
		return nil
	}
	if err := t.ensureTables(ctx, w); err != nil {
		return err
	}
	o := t.o
	o.mu.Lock()
	rows := o.core.progressRows(c, o.now())
	o.mu.Unlock()
	if len(rows) > 0 {
		c.progress = rows
		body, _ := json.Marshal(rows)
		label, err := o.proto.labelFor(ctx, w, c, o.conf.progressTable)
		if err == nil {
			err = w.loadRows(ctx, label, o.conf.progressTable, starrocks.ProgressOffsetCol, body)
		}
		if err != nil {
			if starrocks.IsTableWide(err) {
				w.progressReady = false
			}
			return fmt.Errorf("loading the progress table %s.%s: %w", w.db, o.conf.progressTable, err)
		}
		o.m.loads.Incr(1, w.metricDB(), o.conf.progressTable)
		o.m.loadBytes.Incr(int64(len(body)), w.metricDB(), o.conf.progressTable)
	}
	return t.loadWriterRow(ctx, w, c)
}

// settle asks the writer row first, then the progress rows of the cycle:
// each partition's row names the label if the label committed (its
// committed_offset is at least what the row held before, and no later
// commit of the database carried the partition), and a row with another
// label that is not ahead of the one the label carried, or none, proves it
// did not.
func (t *exactlyOnceTracking) settle(ctx context.Context, w *dbWorker, label string, rows carried) (bool, bool, error) {
	committed, known, err := t.writerTracking.settle(ctx, w, label, rows)
	if err != nil || known {
		return committed, known, err
	}
	if len(rows.progress) == 0 {
		return false, false, nil
	}
	notCommitted := false
	for _, want := range rows.progress {
		r, found, err := t.store.progressRow(ctx, w.db, t.o.conf.pipelineID, want.Partition)
		switch {
		case err != nil:
			return false, false, err
		case found && r.label == label:
			return true, true, nil
		case !found || r.through <= want.Through:
			notCommitted = true
		}
	}
	return false, notCommitted, nil
}

// beforeCommit waits for earlier poisoned transactions of c's partitions to
// reach dead_letter, then anchors when needed.
func (t *exactlyOnceTracking) beforeCommit(ctx context.Context, w *dbWorker, c *cycle) error {
	if err := t.awaitDeadLetters(ctx, w, c); err != nil {
		return err
	}
	return t.writerTracking.beforeCommit(ctx, w, c)
}

// awaitDeadLetters holds the commit of c while a poisoned transaction of one
// of its partitions is on its way to dead_letter. The progress rows of c
// claim, per database, the partition's last transaction in c; a restart
// skips every transaction of the partition at or below it into this
// database, so an earlier poisoned one must be in dead_letter before c can
// be visible, or a crash in between would lose its delivery.
func (t *exactlyOnceTracking) awaitDeadLetters(ctx context.Context, w *dbWorker, c *cycle) error {
	o := t.o
	if o.dl == nil {
		return nil
	}
	for noted := false; ; noted = true {
		o.mu.Lock()
		pending := o.core.deadLetterPending(c.txns)
		o.mu.Unlock()
		if !pending {
			return nil
		}
		if !noted {
			w.log.Debugf("Holding the commit of label %s until the earlier poisoned transactions of its partitions are in dead_letter", c.label)
		}
		if o.closing() {
			// The dead-letter loop has stopped.
			return errClosing
		}
		if !sleepCtx(ctx, 5*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// writerTrackingOf returns the writer tracking of tr (exactly_once
// included), nil when it keeps no writer rows.
func writerTrackingOf(tr tracker) *writerTracking {
	switch t := tr.(type) {
	case *writerTracking:
		return t
	case *exactlyOnceTracking:
		return &t.writerTracking
	}
	return nil
}
