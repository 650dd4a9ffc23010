package starrocks_txn

import (
	"context"
	"errors"
)

// The delivery protocol: how a cycle's rows reach StarRocks and become
// visible together (ARCHITECTURE.md §4.3). A database worker and its commit
// goroutine (worker.go: step; commit.go: deliver; isolate.go through
// deliver) drive a cycle through it and decide everything else themselves:
// when a cycle begins, is due, replays or is split, what a failure means
// (classifyLoad, starrocks.ClassOf), the tracker's rows, leases and fences.
//
// There are two, chosen by transaction_mode (mode.go, ARCHITECTURE.md §15):
// multiTable, one StarRocks multi-table transaction per cycle, one label
// (cycle.label), loads per table under it, one commit; and perTable
// (pertable.go), StarRocks 3.x: one classic transaction per table of a
// cycle, begun with the table's header at its first load, each PREPARED,
// then a decision record committed, then each COMMITTED. The tracker's rows
// (tracker.loadRows) go under labelFor of their tables: the cycle's label
// in multi-table mode, the progress part and the decision in per-table
// mode. autoProtocol (mode.go) is one of them once decided.
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
	// classic reports whether the protocol's transactions are classic
	// (single-table) ones: a table on every begin, no transaction_type.
	classic() bool
	// labelFor returns the label the cycle's rows of table go under,
	// beginning its transaction when the protocol begins one per table.
	labelFor(ctx context.Context, w *dbWorker, c *cycle, table string) (string, error)
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

func (multiTable) classic() bool { return false }

func (multiTable) labelFor(_ context.Context, _ *dbWorker, c *cycle, _ string) (string, error) {
	if c.label == "" {
		return "", errors.New("no shared transaction")
	}
	return c.label, nil
}
