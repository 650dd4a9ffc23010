package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

// MaxRevokeDrain bounds how long a revoke waits, after the last batch of a
// released partition was delivered, before it fences the partition (see
// Release).
const MaxRevokeDrain = 250 * time.Millisecond

// Release is the part of giving up partitions on a revoke or a loss that
// every consumer input shares, after the input stopped delivering them and
// before it drops their state.
//
// A batch delivered an instant before the revoke may still be on its way
// through the pipeline to the output. If it reached the output after the
// fence, the output would take the tail of a source transaction whose head
// the fence dropped. So Release first gives such a batch a moment to arrive
// (until lastDelivery + min(MaxRevokeDrain, revoke_timeout/4)) so that the
// fence drops it too; then it fences every id in the output at once, all
// bounded by revoke_timeout (a failed fence is logged); then, when commit
// is not nil (a revoke: on a loss another member may already own the
// partitions), it commits with the rest of rebalance_timeout and returns
// the commit's error.
func (g GroupConfig) Release(ctx context.Context, log *service.Logger, ids []string, lastDelivery time.Time, fence func(context.Context, string) error, commit func(context.Context) error) error {
	if wait := time.Until(lastDelivery.Add(min(MaxRevokeDrain, g.RevokeTimeout/4))); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	fctx, cancel := context.WithTimeout(ctx, g.RevokeTimeout)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			if err := fence(fctx, id); err != nil {
				log.Warnf("Fencing %s in the output: %v", id, err)
			}
		}(id)
	}
	wg.Wait()
	cancel()
	if commit == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, g.RebalanceTimeout-g.RevokeTimeout)
	defer cancel()
	return commit(cctx)
}

// Leave ends the membership when the input closes: within rebalance_timeout
// it commits what is committable (commit), leaves the group, which revokes
// every partition through the input's callbacks, and closes the client.
func (g GroupConfig) Leave(ctx context.Context, log *service.Logger, cl *kgo.Client, commit func(context.Context) error) {
	cctx, cancel := context.WithTimeout(ctx, g.RebalanceTimeout)
	defer cancel()
	if err := commit(cctx); err != nil {
		log.Warnf("Final offset commit: %v", err)
	}
	cl.AllowRebalance()
	if err := cl.LeaveGroupContext(cctx); err != nil {
		log.Warnf("Leaving consumer group %q: %v", g.ConsumerGroup, err)
	}
	cl.Close()
}
