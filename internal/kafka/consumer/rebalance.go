package consumer

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// assigned is franz-go's OnPartitionsAssigned. franz-go hands the
// assignment over after its sync was answered without error: the sync's
// send time renews the lease, read before the input's own work (which may
// take a while: debezium_txn lists the cluster's topics), so that the
// output partitions the input claims meanwhile are leased from the sync.
func (c *Consumer) assigned(ctx context.Context, _ *kgo.Client, assigned map[string][]int32) {
	until := c.lease.Assigned()
	c.mu.Lock()
	c.assigning, c.assignUntil = true, until
	for topic, parts := range assigned {
		if c.held[topic] == nil {
			c.held[topic] = map[int32]bool{}
		}
		for _, p := range parts {
			c.held[topic][p] = true
		}
	}
	c.waitEndLocked()
	c.mu.Unlock()
	c.in.Assign(ctx, assigned)
	c.mu.Lock()
	c.assigning, c.assignUntil = false, time.Time{}
	c.mu.Unlock()
}

// ClaimLocked starts the assignment of an output partition id (the
// starrocks_partition the input will write) and returns its epoch
// (ARCHITECTURE.md §4.6): the output's committed-through offset of it is
// forgotten (the output publishes only for rows of this assignment), a new
// epoch is started, and the partition is leased — from the assignment's
// sync during franz-go's assignment callback, else to the lease's current
// end — and renewed with every group request the coordinator confirms until
// its release.
func (c *Consumer) ClaimLocked(id string) uint64 {
	c.reg.Forget(id)
	c.watch.Drop(id)
	epoch := c.reg.Assign(id)
	c.claims[id] = &claim{committed: -1}
	until := c.assignUntil
	if !c.assigning {
		until = c.lease.Until()
	}
	c.leaseLocked(id, until)
	return epoch
}

// revoked is franz-go's OnPartitionsRevoked: the released partitions are
// fenced, committed and dropped.
func (c *Consumer) revoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	c.release(ctx, cl, revoked, false)
}

// lost is franz-go's OnPartitionsLost: fenced and dropped, not committed,
// since another member may own the partitions already.
func (c *Consumer) lost(ctx context.Context, cl *kgo.Client, lost map[string][]int32) {
	c.release(ctx, cl, lost, true)
}

// release gives up partitions, one sequence for a revoke and a loss
// (ARCHITECTURE.md §6, §13.9):
//  1. the membership lease stops taking group requests as confirmations
//     until the next join (kafka.GroupLease.Halt): franz-go keeps
//     heartbeating while a revoke it began after a heartbeat error runs,
//     and those heartbeats are answered with errors;
//  2. the input stops delivering (StopLocked) and names the output
//     partitions to fence; their leases are no longer renewed;
//  3. a batch delivered a moment ago is given time to reach the output,
//     the output partitions are fenced, and on a revoke the offsets are
//     committed (kafka.GroupConfig.Release);
//  4. the input drops them (DropLocked); their leases are dropped.
func (c *Consumer) release(ctx context.Context, cl *kgo.Client, tps map[string][]int32, lost bool) {
	c.lease.Halt()
	c.mu.Lock()
	ids, lastDelivery := c.in.StopLocked(tps, lost)
	c.unleaseLocked(ids)
	c.mu.Unlock()
	if len(ids) > 0 {
		c.releaseIDs(ctx, cl, ids, lastDelivery, lost)
	}
	c.mu.Lock()
	for topic, parts := range tps {
		for _, p := range parts {
			delete(c.held[topic], p)
		}
		if len(c.held[topic]) == 0 {
			delete(c.held, topic)
		}
	}
	if len(c.held) == 0 {
		c.waitBeginLocked()
	}
	c.mu.Unlock()
}

// releaseIDs is steps 3 and 4 of release.
func (c *Consumer) releaseIDs(ctx context.Context, cl *kgo.Client, ids []string, lastDelivery time.Time, lost bool) {
	sort.Strings(ids)
	var commit func(context.Context) error
	if !lost {
		commit = func(ctx context.Context) error { return c.commit(ctx, cl, ids) }
	}
	if err := c.conf.Release(ctx, c.log, ids, lastDelivery, c.reg.Fence, commit); err != nil {
		c.log.Warnf("Committing the offsets of %v on their revoke: %v", ids, err)
	}
	c.mu.Lock()
	after := c.in.DropLocked(ids, lost)
	for _, id := range ids {
		delete(c.claims, id)
	}
	// A claim made while the release ran (none is today: franz-go runs the
	// callbacks one at a time) must not leave a lease renewed after Unlease.
	c.unleaseLocked(ids)
	// After the fence: the output holds nothing of them any more.
	c.reg.Unlease(ids)
	c.SignalLocked()
	c.mu.Unlock()
	if after != nil {
		after()
	}
	if lost {
		c.log.Warnf("Lost partitions %v (fenced, not committed)", ids)
	} else {
		c.log.Infof("Revoked partitions %v (fenced, committed, released)", ids)
	}
}
