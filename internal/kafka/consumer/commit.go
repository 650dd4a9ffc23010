package consumer

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// CommitPasses is how many commits ran to their end — a tick of the commit
// loop, a revoke's, the last one at Close — whether they committed
// offsets, found nothing to commit or failed. A pass that began after an
// event has seen it: a test that waits for the count to grow by two after
// an event knows that a whole pass followed it, and so what the input
// would have committed because of it.
func (c *Consumer) CommitPasses() uint64 { return c.passes.Load() }

// commit commits what the input finds committable (CommitLocked) for the
// given output partitions (nil: every one not being released).
func (c *Consumer) commit(ctx context.Context, cl *kgo.Client, ids []string) error {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	defer c.passes.Add(1)
	c.mu.Lock()
	// What the output committed until now, fences of a revoke included.
	unclaimed := c.pullLocked()
	offsets, done := c.in.CommitLocked(ids)
	c.mu.Unlock()
	c.report(unclaimed)
	return kafka.CommitOffsets(ctx, cl, c.conf.ConsumerGroup, offsets, c.conf.Commits, func(committed map[kafka.TopicPartition]int64) {
		if done == nil {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		done(committed)
	})
}

// commitLoop commits every commit_period; a failed commit is retried at the
// next period and logged rate-limited.
func (c *Consumer) commitLoop(ctx context.Context, cl *kgo.Client) {
	defer c.loops.Done()
	c.conf.CommitLoop(ctx, c.log, c.lim, func(ctx context.Context) error { return c.commit(ctx, cl, nil) }, nil)
}
