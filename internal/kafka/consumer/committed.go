package consumer

import (
	"context"

	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// claim is an output partition of the current assignments (ClaimLocked).
type claim struct {
	// committed is the last committed-through offset the input was told
	// (-1: none).
	committed int64
}

// watchLoop hands the input what the registry's watch collected: the
// output's committed-through offsets, pulled when the watch signals that
// one moved (the output only records them, under its own lock:
// ARCHITECTURE.md §4.6, §10.1), and the unclaimed partition keys.
func (c *Consumer) watchLoop(ctx context.Context) {
	defer c.loops.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.watch.C():
		}
		c.mu.Lock()
		unclaimed := c.pullLocked()
		c.mu.Unlock()
		c.report(unclaimed)
	}
}

// pullLocked tells the input the committed-through offset of every claimed
// partition that moved forward since it was last told, and returns the
// unclaimed keys the watch collected. Every commit pulls first, so that a
// commit sees what the output committed before it (a revoke's commit, what
// its fence published).
func (c *Consumer) pullLocked() []registry.Unclaimed {
	committed, unclaimed := c.watch.Take()
	for id, off := range committed {
		if cl := c.claims[id]; cl != nil && off > cl.committed {
			cl.committed = off
			c.in.CommittedLocked(id, off)
		}
	}
	return unclaimed
}

// report hands unclaimed keys to an input that reports them.
func (c *Consumer) report(unclaimed []registry.Unclaimed) {
	r, ok := c.in.(UnclaimedReporter)
	if !ok {
		return
	}
	for _, u := range unclaimed {
		r.Unclaimed(u.Key, u.Claimed)
	}
}
