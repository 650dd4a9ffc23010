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

// failingProgress fails the first reads of the progress, then reads.
type failingProgress struct {
	*fakeProgress
	fail int
}

func (fp *failingProgress) read(ctx context.Context, pipelineID string, partitions []string) (map[string]progressEntry, error) {
	fp.mu.Lock()
	failing := fp.fail > 0
	if failing {
		fp.fail--
		fp.reads++
		fp.readSizes = append(fp.readSizes, len(partitions))
	}
	fp.mu.Unlock()
	if failing {
		return nil, fmt.Errorf("reading the progress: connection reset by peer")
	}
	return fp.fakeProgress.read(ctx, pipelineID, partitions)
}

// A read of partitions together that fails is retried for all of them, and
// none of their messages is applied before: the replays StarRocks holds are
// dropped once it succeeds.
func TestExactlyOnceProgressReadTogetherIsRetriedWhole(t *testing.T) {
	const n = 50
	f := newFakeSR()
	s := newSrc("asm")
	var held []*service.Message
	for i := range n {
		held = append(held, txnMsgs(s, fmt.Sprintf("p%d", i), fmt.Sprintf("h%d", i), 1)...)
	}
	first, _, _ := eoOutput(t, f, nil, "")
	waitAll(t, []chan error{writeAsync(first, service.MessageBatch(held))}, 30*time.Second)
	require.NoError(t, first.Close(context.Background()))

	second, _, fp := eoOutput(t, f, nil, "")
	failing := &failingProgress{fakeProgress: fp, fail: 2}
	second.setProgressStore(failing)
	waitAll(t, []chan error{writeAsync(second, service.MessageBatch(replay(held, "asm-2")))}, 30*time.Second)
	fp.mu.Lock()
	assert.Equal(t, []int{n, n, n}, fp.readSizes, "two failed reads of all %d partitions, then one that succeeded", n)
	fp.mu.Unlock()
	for id, c := range countIDs(f.rows("a")) {
		require.Equal(t, 1, c, "%s applied once", id)
	}
	assert.Len(t, countIDs(f.rows("a")), n)
}

// A partition fenced while it is read together with others releases its
// messages and keeps nothing of the read; the others are applied from it.
func TestExactlyOnceFenceDuringAReadTogetherOutdatesOnlyItsPartition(t *testing.T) {
	f := newFakeSR()
	o, _, fp := eoOutput(t, f, nil, "")
	g := &gatedProgress{fakeProgress: fp, part: "p2", gate: make(chan struct{})}
	o.setProgressStore(g)
	s := newSrc("asm")
	var msgs []*service.Message
	for i := range 5 {
		msgs = append(msgs, txnMsgs(s, fmt.Sprintf("p%d", i), fmt.Sprintf("t%d", i), 1)...)
	}
	ch := writeAsync(o, service.MessageBatch(msgs))
	waitCore(t, o, "the five partitions are read together", func(k *core) bool { return len(k.progressClaimed) == 5 })
	fenced := make(chan error, 1)
	go func() { fenced <- o.fence(context.Background(), "p2") }()
	waitCore(t, o, "p2's messages are released", func(k *core) bool { return len(k.progressWait["p2"]) == 0 })
	close(g.gate)
	require.NoError(t, <-fenced)
	waitAll(t, []chan error{ch}, 10*time.Second)
	quiesce(t, o)
	assert.Equal(t, map[string]int{"t0": 1, "t1": 1, "t3": 1, "t4": 1}, countIDs(f.rows("a")), "p2's transaction released, never loaded")
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.Nil(t, o.core.progress["p2"], "nothing kept of the read the fence outdated")
	assert.NotNil(t, o.core.progress["p0"])
	assert.Empty(t, o.core.progressClaimed)
}
