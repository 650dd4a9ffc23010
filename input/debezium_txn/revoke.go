// This file hands partitions over when they are revoked or lost: fencing,
// a last commit of the floors and dropping what was buffered.

package debezium_txn

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
)

func (in *Input) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	in.release(ctx, cl, true)
}

func (in *Input) onLost(ctx context.Context, cl *kgo.Client, lost map[string][]int32) {
	in.mu.Lock()
	// Out of the group: another member may own everything by now.
	in.owned = nil
	in.mu.Unlock()
	in.release(ctx, cl, false)
}

// release ends the assignment (ARCHITECTURE.md §13.9): nothing more is
// emitted, a batch emitted a moment ago may still reach the output, every
// partition the input wrote is fenced, the floors are committed (on a
// revoke, not on a loss) and everything buffered is dropped.
func (in *Input) release(ctx context.Context, cl *kgo.Client, commit bool) {
	in.mu.Lock()
	if in.asm == nil {
		in.asm, in.partial, in.dataParts = nil, nil, nil
		in.gen++
		in.mu.Unlock()
		return
	}
	in.revoking = true
	ids := []string{in.dbPartition()}
	for p := range in.sideEpochs {
		ids = append(ids, p.String())
	}
	lastEmit := in.lastEmit
	in.mu.Unlock()
	sort.Strings(ids)

	// Committed-through offsets published during the fence are still
	// applied (revoking stops emission and acknowledgements only).
	var commitFn func(context.Context) error
	if commit {
		commitFn = func(ctx context.Context) error { return in.commit(ctx, cl) }
	}
	err := in.conf.Release(ctx, in.log, ids, lastEmit, in.reg.Fence, commitFn)
	in.m.fences.Incr(int64(len(ids)))
	if err != nil {
		in.log.Warnf("Committing the floors on revoke: %v", err)
	}
	in.mu.Lock()
	if len(in.paused) > 0 {
		resume := map[string][]int32{}
		for p := range in.paused {
			resume[p.topic] = append(resume[p.topic], p.part)
		}
		in.cl.ResumeFetchPartitions(resume)
	}
	in.asm, in.partial, in.paused, in.dataParts, in.batchEms = nil, nil, map[tp]bool{}, nil, nil
	in.unacked, in.revoking = 0, false
	in.gen++
	in.m.bufferedBytes.Set(0)
	in.m.bufferedTxns.Set(0)
	in.m.inFlight.Set(0)
	in.signalLocked()
	in.mu.Unlock()
	// After the fence: the output holds nothing of them any more.
	in.reg.Unlease(ids)
	if in.batcher != nil {
		// Messages in the batcher were never delivered (nor numbered).
		_, _ = in.batcher.Flush(context.Background())
	}
	if commit {
		in.log.Infof("Revoked the assignment: fenced %v, committed the floors, dropped what was buffered", ids)
	} else {
		in.log.Warnf("Lost the assignment: fenced %v, not committed, dropped what was buffered", ids)
	}
}
