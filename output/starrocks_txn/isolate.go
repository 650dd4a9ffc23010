package starrocks_txn

// Home of G17 (ARCHITECTURE.md §11.1): a per-transaction failure isolates its offender; the rest
// commit in order. Main test: TestRowSpecificLoadFailureIsIsolated.

import (
	"context"
	"errors"
)

// failedForData logs that StarRocks refused the load or commit (what) of
// cycle c for some of its data. Not at error: the search ends at each
// offending source transaction with one error line (deadletter.go, or the
// stall in partition.go) that names it and what StarRocks refused, so one
// bad value is one error line however many steps the search takes. The
// cycle that fails first is a warning; the steps of the search are debug.
func (w *dbWorker) failedForData(c *cycle, what string, err error) {
	if c.isolating {
		w.log.Debugf("%s of label %s (%d source transactions, a step of isolating the offending ones) failed for its data: %v", what, c.label, len(c.txns), err)
		return
	}
	w.log.Warnf("%s of label %s failed for its data: %v; isolating the offending source transactions", what, c.label, err)
}

// Isolating the source transactions a commit failed for (ARCHITECTURE.md
// §4.4): a cycle that StarRocks refused for some of its data is committed
// again in smaller groups until each failing transaction stands alone and is
// poisoned, and the others commit.

// isolate commits txns in groups: one group per partition, a failing group
// split into a prefix and the rest, a failing single transaction poisoned.
func (w *dbWorker) isolate(ctx context.Context, txns []*srcTxn) {
	var groups [][]*srcTxn
	idx := map[*partition]int{}
	for _, t := range txns {
		i, ok := idx[t.p]
		if !ok {
			i = len(groups)
			idx[t.p] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], t)
	}
	for len(groups) > 0 && ctx.Err() == nil {
		g := w.live(groups[0])
		groups = groups[1:]
		if len(g) == 0 {
			continue
		}
		c := &cycle{txns: g, isolating: true}
		err := w.deliver(ctx, c)
		if errors.Is(err, errClosing) {
			return
		}
		if err == nil || ctx.Err() != nil {
			continue
		}
		if len(c.txns) == 1 {
			w.o.poisonFromCycle(c.txns[0], w.rejection(ctx, c.txns[0], err))
			continue
		}
		half := len(c.txns) / 2
		groups = append([][]*srcTxn{c.txns[:half], c.txns[half:]}, groups...)
	}
}
