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
		expired, until := w.expiredLease(c)
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

// expiredLease returns a partition of cycle c whose lease is over and
// when it ended, or "" when every live transaction's partition is leased.
func (w *dbWorker) expiredLease(c *cycle) (string, time.Time) {
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.expiredLeaseLocked(o.core.liveTxns(c.txns))
}

// expiredLeaseOfCommit is expiredLease for a cycle whose commit was sent
// (nil, a writer-row anchor, has no partitions: ""):
// every transaction of it counts (they are in the commit's state, not
// live), and a fenced one counts as expired whatever its lease says (the
// input drops a released partition's lease; what the fence waits for is
// the commit's outcome, which a rollback decides as well as a commit).
func (w *dbWorker) expiredLeaseOfCommit(c *cycle) string {
	if c == nil {
		return ""
	}
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range c.txns {
		if t.state == txnFenced {
			// A fence took it while the commit was in doubt: the input
			// gave the partition up (and may have dropped its lease, which
			// then reads as leased), so another member may own it.
			return t.p.key.partition
		}
	}
	part, _ := o.expiredLeaseLocked(c.txns)
	return part
}

func (o *Output) expiredLeaseLocked(txns []*srcTxn) (string, time.Time) {
	now := time.Now()
	for _, t := range txns {
		if ok, u := o.reg.Leased(t.p.key.partition, now); !ok {
			return t.p.key.partition, u
		}
	}
	return "", time.Time{}
}
