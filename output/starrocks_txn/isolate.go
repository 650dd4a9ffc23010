package starrocks_txn

import (
	"context"
	"errors"
)

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
		c := &cycle{txns: g}
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
