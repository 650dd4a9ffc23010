package starrocks_txn

import (
	"context"
	"time"
)

// leasePoll is how often a commit held for an expired lease checks again.
const leasePoll = 10 * time.Millisecond

// awaitLeases holds the commit of cycle c while the input's group
// membership lease of one of its partitions is over (internal/registry
// Leased): the broker may have given the partition to another member, which
// reads the progress and loads the same source transactions; committing
// them here too would apply them twice. The wait ends when the lease is
// renewed (a heartbeat got through), when a fence took the partition's
// transactions out of the cycle (startCommit then replays without them), or
// when the output closes. It reports false only when ctx ended. Leases
// count in wall-clock time, as the input measures them.
func (w *dbWorker) awaitLeases(ctx context.Context, c *cycle) bool {
	o := w.o
	noted := false
	for {
		o.mu.Lock()
		var expired string
		var until time.Time
		now := time.Now()
		for _, t := range o.liveTxnsLocked(c.txns) {
			if ok, u := o.reg.Leased(t.p.key.partition, now); !ok {
				expired, until = t.p.key.partition, u
				break
			}
		}
		o.mu.Unlock()
		if expired == "" || o.closing() {
			return true
		}
		if !noted {
			noted = true
			o.m.leaseWaits.Incr(1, expired)
			w.log.Warnf("Holding the commit of label %s: the consumer group membership of partition %s was last confirmed for commits until %s (no heartbeat got through since); committing could race the partition's new owner. It goes on once a heartbeat gets through, or replays without the partition once the input reports it lost",
				c.label, expired, until.Format(time.RFC3339Nano))
		}
		if !sleepCtx(ctx, leasePoll) {
			return false
		}
	}
}
