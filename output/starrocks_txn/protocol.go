package starrocks_txn

import "context"

// The delivery protocol: how a cycle's rows reach StarRocks and become
// visible together (ARCHITECTURE.md §4.3). A database worker and its commit
// goroutine (worker.go: step; commit.go: deliver; isolate.go through
// deliver) drive a cycle through it and decide everything else themselves:
// when a cycle begins, is due, replays or is split, what a failure means
// (classifyLoad, starrocks.ClassOf), the tracker's rows, leases and fences.
//
// multiTable is the protocol of today and the only one: one StarRocks
// multi-table transaction per cycle, one label (cycle.label), loads per
// table under it, one commit. A per-table protocol (StarRocks 3.x: one
// classic transaction per table per cycle, begun with the table's header at
// its first load, PREPARE of each, a decision record, then COMMIT of each)
// goes beside it as a second implementation; its labels per table would live
// in the cycle next to label, and the tracker's rows (tracker.loadRows),
// which go under the one label today, in its decision record.
type protocol interface {
	// begin opens the cycle's StarRocks transaction, retrying until it
	// succeeds; false when ctx ended or StarRocks refused the begin for
	// the request itself and every transaction of the cycle was poisoned
	// for it.
	begin(ctx context.Context, w *dbWorker, c *cycle) bool
	// load sends, for every table, the rows of the cycle's transactions
	// StarRocks does not hold yet under the cycle's transaction; a failed
	// table is returned as a *loadError.
	load(ctx context.Context, w *dbWorker, c *cycle) error
	// commit makes what was loaded visible at once and decides the
	// outcome, by the transaction's state when the reply does not say
	// (commit.go: resolve). ok is false when ctx ended first: the outcome
	// stays unknown.
	commit(ctx context.Context, w *dbWorker, c *cycle) (committed, ok bool, err error)
	// rollback rolls back what the cycle began, best effort: rolled back
	// or not, it is never committed now. The cycle keeps its
	// transactions; c.reset forgets the label.
	rollback(w *dbWorker, c *cycle)
}

// multiTable is one multi-table transaction per cycle (ARCHITECTURE.md §1,
// §4.3).
type multiTable struct{}

func (multiTable) begin(ctx context.Context, w *dbWorker, c *cycle) bool { return w.begin(ctx, c) }

func (multiTable) load(ctx context.Context, w *dbWorker, c *cycle) error {
	return w.loadPending(ctx, c)
}

func (multiTable) commit(ctx context.Context, w *dbWorker, c *cycle) (bool, bool, error) {
	return w.commitLabel(ctx, c.label, carried{writerTop: c.rowTop, progress: c.progress, cycle: c})
}

func (multiTable) rollback(w *dbWorker, c *cycle) {
	if c.label != "" {
		w.rollback(c.label)
	}
}
