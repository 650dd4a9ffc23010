package kafka_txn

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// fakeFencer records the partitions an input fences.
type fakeFencer struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeFencer) fence(_ context.Context, partition string) error {
	f.mu.Lock()
	f.calls = append(f.calls, partition)
	f.mu.Unlock()
	return nil
}

func (f *fakeFencer) fenced() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]string(nil), f.calls...)
	sort.Strings(out)
	return out
}

func (in *Input) assigned() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []string
	for id, ps := range in.parts {
		if !ps.revoking {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func TestTwoMembersSplitPartitionsAndRevokeFences(t *testing.T) {
	const parts = 4
	c := newCluster(t, parts)
	p := producer(t, c, "")
	for i := int32(0); i < parts; i++ {
		produce(t, p, i, seq("v", 10)...)
	}
	const group = "g-split"

	resA, _ := newResources()
	fencerA := &fakeFencer{}
	registry.Get(resA).AddFencer(fencerA.fence)
	a := newTestInput(t, resA, testYAML(c, group, ""))
	connect(t, a)

	// A reads every partition and holds the acknowledgements.
	type held struct {
		partition int32
		ack       service.AckFunc
	}
	var heldA []held
	readA := map[int32]int{}
	deadline := time.Now().Add(10 * time.Second)
	for len(readA) < parts || func() bool {
		for _, n := range readA {
			if n < 10 {
				return true
			}
		}
		return false
	}() {
		require.True(t, time.Now().Before(deadline), "member A read %v", readA)
		b, ack := readBatch(t, a, 10*time.Second)
		rs := toRecs(t, b)
		for _, m := range b {
			require.Equal(t, int64(1), metaInt(t, m, contract.KeyPartitionEpoch), "every message of A's first assignment carries epoch 1")
		}
		for _, r := range rs {
			readA[r.partition]++
		}
		heldA = append(heldA, held{rs[0].partition, ack})
	}
	require.Equal(t, []string{"cdc/0", "cdc/1", "cdc/2", "cdc/3"}, a.assigned())

	resB, _ := newResources()
	fencerB := &fakeFencer{}
	registry.Get(resB).AddFencer(fencerB.fence)
	b := newTestInput(t, resB, testYAML(c, group, ""))
	connect(t, b)

	// B reads what A gave up, from the start: A committed nothing.
	readB := map[int32][]rec{}
	var ackB []service.AckFunc
	deadline = time.Now().Add(15 * time.Second)
	for total := 0; total < 20; {
		require.True(t, time.Now().Before(deadline), "member B read %d records", total)
		batch, ack := tryReadBatch(t, b, 200*time.Millisecond)
		if batch == nil {
			continue
		}
		for _, r := range toRecs(t, batch) {
			readB[r.partition] = append(readB[r.partition], r)
			total++
		}
		for _, m := range batch {
			assert.Equal(t, int64(1), metaInt(t, m, contract.KeyPartitionEpoch), "B's first assignment")
		}
		ackB = append(ackB, ack)
	}
	require.Len(t, readB, 2, "B owns two partitions")
	revoked := fencerA.fenced()
	require.Len(t, revoked, 2, "A fenced exactly the partitions it gave up")
	var bParts []string
	for part, rs := range readB {
		bParts = append(bParts, contract.KafkaPartition(testTopic, part))
		assert.Equal(t, int64(0), rs[0].offset)
		assert.Equal(t, seq("v", 10), values(rs))
	}
	sort.Strings(bParts)
	assert.Equal(t, revoked, bParts)
	// A's assignment of what it gave up is over: a batch of it that reached
	// A's assembler or output late would be dropped there. B's is live.
	regA, regB := registry.Get(resA), registry.Get(resB)
	for _, id := range bParts {
		assert.True(t, regA.Stale(id, 1), "A fenced %s: its epoch 1 is stale", id)
		assert.Equal(t, uint64(1), regB.Epoch(id))
		assert.False(t, regB.Stale(id, 1))
	}
	for _, id := range a.assigned() {
		assert.False(t, regA.Stale(id, 1), "A keeps %s: its epoch stays live", id)
	}

	assert.Equal(t, bParts, b.assigned())
	assert.Len(t, a.assigned(), 2)
	assert.NotContains(t, a.assigned(), bParts[0])
	assert.Empty(t, fencerB.fenced())

	// A's late acknowledgements of the revoked partitions mark nothing; its
	// own partitions commit.
	for _, h := range heldA {
		require.NoError(t, h.ack(context.Background(), nil))
	}
	want := map[int32]int64{}
	for _, id := range a.assigned() {
		want[partitionOf(t, id)] = 10
	}
	waitCommittedOffsets(t, c, group, want)
	awaitCommitPass(t, a)
	assert.Equal(t, want, committedOffsets(t, c, group), "acks after the revoke committed nothing")

	for _, ack := range ackB {
		require.NoError(t, ack(context.Background(), nil))
	}
	waitCommittedOffsets(t, c, group, map[int32]int64{0: 10, 1: 10, 2: 10, 3: 10})

	// Closing B revokes (fences) its partitions.
	require.NoError(t, b.Close(context.Background()))
	assert.Equal(t, bParts, fencerB.fenced())

	// A is assigned them again: a new epoch, and its messages carry it.
	require.Eventually(t, func() bool { return regA.Epoch(bParts[0]) == 2 }, 15*time.Second, 20*time.Millisecond)
	assert.True(t, regA.Stale(bParts[0], 1))
	assert.False(t, regA.Stale(bParts[0], 2))
	produce(t, p, partitionOf(t, bParts[0]), seq("w", 3)...)
	deadline = time.Now().Add(15 * time.Second)
	for again := 0; again < 3; {
		require.True(t, time.Now().Before(deadline), "A re-read %d records of %s", again, bParts[0])
		batch, _ := tryReadBatch(t, a, 200*time.Millisecond)
		for i, r := range toRecs(t, batch) {
			if contract.KafkaPartition(testTopic, r.partition) == bParts[0] {
				assert.Equal(t, int64(2), metaInt(t, batch[i], contract.KeyPartitionEpoch), "the second assignment's messages carry epoch 2")
				again++
			}
		}
	}
}

func partitionOf(t *testing.T, id string) int32 {
	t.Helper()
	for p := int32(0); p < 64; p++ {
		if contract.KafkaPartition(testTopic, p) == id {
			return p
		}
	}
	t.Fatalf("bad partition id %q", id)
	return -1
}

func TestStartsAfterOutputProgress(t *testing.T) {
	c := newCluster(t, 2)
	p := producer(t, c, "progress")
	for part := int32(0); part < 2; part++ {
		produceTxn(t, p, part, true, "a0", "a1", "a2")
		produceTxn(t, p, part, true, "b0", "b1", "b2")
		produceTxn(t, p, part, true, "c0", "c1", "c2")
	}
	res, _ := newResources()
	registry.Get(res).SetProgress(func(_ context.Context, partition string) (int64, bool, error) {
		if partition == contract.KafkaPartition(testTopic, 0) {
			return 6, true, nil // StarRocks holds A and B of partition 0
		}
		return 0, false, nil
	})
	in := newTestInput(t, res, testYAML(c, "g-progress", ""))
	connect(t, in)
	first := map[int32]rec{}
	for len(first) < 2 {
		b, ack := readBatch(t, in, 10*time.Second)
		for _, r := range toRecs(t, b) {
			if _, ok := first[r.partition]; !ok {
				first[r.partition] = r
			}
		}
		require.NoError(t, ack(context.Background(), nil))
	}
	assert.Equal(t, rec{value: "c0", partition: 0, offset: 8}, first[0])
	assert.Equal(t, rec{value: "a0", partition: 1, offset: 0}, first[1])
}

// With start_after_progress off the group offset stands: the output is
// handed the replays and drops them itself.
func TestStartAfterProgressOff(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "progress-off")
	produceTxn(t, p, 0, true, "a0", "a1", "a2")
	produceTxn(t, p, 0, true, "b0", "b1", "b2")
	res, _ := newResources()
	var asked atomic.Bool
	registry.Get(res).SetProgress(func(_ context.Context, partition string) (int64, bool, error) {
		asked.Store(true)
		return 6, true, nil
	})
	in := newTestInput(t, res, testYAML(c, "g-progress-off", "start_after_progress: false\n"))
	connect(t, in)
	b, ack := readBatch(t, in, 10*time.Second)
	assert.Equal(t, rec{value: "a0", partition: 0, offset: 0}, toRecs(t, b)[0])
	require.NoError(t, ack(context.Background(), nil))
	assert.False(t, asked.Load(), "the progress is not read")
}

// TestRevokeCommitsWhatTheFenceCommitted: the output's commit that is in
// flight when the partition is revoked finishes inside fence and publishes
// its END; the revoke commits exactly that boundary, and the new owner
// starts at the next transaction.
func TestRevokeCommitsWhatTheFenceCommitted(t *testing.T) {
	c := newCluster(t, 2)
	p := producer(t, c, "revoke-commit")
	for part := int32(0); part < 2; part++ {
		produceTxn(t, p, part, true, "a0", "a1", "a2") // 0..2, marker 3
		produceTxn(t, p, part, true, "b0", "b1", "b2") // 4..6, marker 7
		produceTxn(t, p, part, true, "c0", "c1", "c2") // 8..10, marker 11
	}
	const group = "g-revoke-commit"

	resA, _ := newResources()
	regA := registry.Get(resA)
	regA.EnableTracking()
	var fencedMu sync.Mutex
	var fenced []string
	regA.AddFencer(func(_ context.Context, partition string) error {
		// The in-flight StarRocks commit that held A and B completes.
		regA.PublishCommitted(partition, 6)
		fencedMu.Lock()
		fenced = append(fenced, partition)
		fencedMu.Unlock()
		return nil
	})
	a := newTestInput(t, resA, testYAML(c, group, ""))
	connect(t, a)
	var heldA []service.AckFunc
	for n := 0; n < 18; {
		b, ack := readBatch(t, a, 10*time.Second)
		n += len(b)
		heldA = append(heldA, ack)
	}

	resB, _ := newResources()
	registry.Get(resB).EnableTracking()
	b := newTestInput(t, resB, testYAML(c, group, ""))
	connect(t, b)
	batch, ack := readBatch(t, b, 15*time.Second)
	rs := toRecs(t, batch)
	require.NoError(t, ack(context.Background(), nil))
	assert.Equal(t, "c0", rs[0].value, "the new owner starts after the fenced commit's boundary")
	assert.Equal(t, int64(8), rs[0].offset)

	fencedMu.Lock()
	require.Len(t, fenced, 1)
	moved := partitionOf(t, fenced[0])
	fencedMu.Unlock()
	assert.Equal(t, moved, rs[0].partition)
	assert.Equal(t, int64(7), committedOffsets(t, c, group)[moved])

	// A's late acknowledgements mark nothing, and A never committed its own
	// partition: its output published nothing for it.
	for _, h := range heldA {
		require.NoError(t, h(context.Background(), nil))
	}
	awaitCommitPass(t, a)
	_, committedOther := committedOffsets(t, c, group)[1-moved]
	assert.False(t, committedOther)
}
