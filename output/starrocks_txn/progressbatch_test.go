package starrocks_txn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The partitions assigned together are read together: a restarted output
// handed 300 partitions at once reads their progress in at most
// ceil(300/ProgressReadChunk) reads (each one statement per database), not
// one per partition, and still drops every replay StarRocks holds and
// applies what it does not (ARCHITECTURE.md §7, G32).
func TestExactlyOnceProgressOfPartitionsAssignedTogetherIsReadTogether(t *testing.T) {
	const n = 300
	f := newFakeSR()
	s := newSrc("asm")
	var held, fresh []*service.Message
	// Numbered in the order they are written (the seqs of one source).
	for i := range n {
		p := fmt.Sprintf("p%d", i)
		held = append(held, txnMsgs(s, p, "h"+p, 1)...)
	}
	for i := range n {
		p := fmt.Sprintf("p%d", i)
		fresh = append(fresh, txnMsgs(s, p, "f"+p, 2)...)
	}
	first, _, fp := eoOutput(t, f, nil, "")
	waitAll(t, []chan error{writeAsync(first, service.MessageBatch(held))}, 60*time.Second)
	require.NoError(t, first.Close(context.Background()))
	maxReads := (n + starrocks.ProgressReadChunk - 1) / starrocks.ProgressReadChunk
	fp.mu.Lock()
	assert.LessOrEqual(t, fp.reads, maxReads, "the first run's partitions, assigned together, read together (sizes %v)", fp.readSizes)
	fp.mu.Unlock()

	// A successor gets every partition back: the held transactions again
	// (replays), then a new one each.
	second, _, fp2 := eoOutput(t, f, nil, "")
	waitAll(t, []chan error{writeAsync(second, service.MessageBatch(replay(append(held, fresh...), "asm-2")))}, 60*time.Second)
	fp2.mu.Lock()
	reads, sizes := fp2.reads, append([]int(nil), fp2.readSizes...)
	fp2.mu.Unlock()
	assert.LessOrEqual(t, reads, maxReads, "read in at most ceil(%d/%d) reads, not one per partition (sizes %v)", n, starrocks.ProgressReadChunk, sizes)
	total := 0
	for _, k := range sizes {
		total += k
	}
	assert.Equal(t, n, total, "every partition read once")
	got := countIDs(f.rows("a"))
	require.Len(t, got, 2*n)
	for id, c := range got {
		require.Equal(t, 1, c, "%s applied once: a replay is dropped by its partition's progress", id)
	}
	second.mu.Lock()
	defer second.mu.Unlock()
	assert.Empty(t, second.core.progressClaimed, "no read holds a partition any more")
	assert.Empty(t, second.core.progressLoading)
}
