// This file hands partitions over when they are revoked or lost: the steps
// of internal/kafka/consumer's release that are this input's.

package debezium_txn

import (
	"context"
	"time"
)

// StopLocked begins the release of the assignment (ARCHITECTURE.md §13.9):
// nothing more is emitted and acknowledgements mark nothing; the partitions
// the input wrote — the connector's and every side partition — are fenced
// (the shell then fences them, commits the floors on a revoke, and calls
// DropLocked). Committed-through offsets published during the fence are
// still applied.
func (in *Input) StopLocked(_ map[string][]int32, lost bool) ([]string, time.Time) {
	if lost {
		// Out of the group: another member may own everything by now.
		in.owned = nil
	}
	if in.asm == nil {
		in.asm, in.partial, in.dataParts = nil, nil, nil
		in.gen++
		return nil, time.Time{}
	}
	in.revoking = true
	ids := []string{in.dbPartition()}
	for p := range in.sideEpochs {
		ids = append(ids, p.String())
	}
	return ids, in.lastEmit
}

// DropLocked ends the assignment after the fence: everything buffered is
// dropped, paused partitions resumed, and the batcher emptied once the lock
// is released (its messages were never delivered, nor numbered).
func (in *Input) DropLocked(ids []string, _ bool) func() {
	in.m.fences.Incr(int64(len(ids)))
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
	return func() {
		if in.batcher != nil {
			_, _ = in.batcher.Flush(context.Background())
		}
	}
}
