package kafka_txn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

func TestCommitTarget(t *testing.T) {
	base := func() *partState {
		return &partState{firstOffset: 10, deliveredNext: 30, ackedNext: 25, committedThru: 19, failedAt: -1, lastCommitted: -1}
	}
	for _, tc := range []struct {
		name     string
		mod      func(ps *partState)
		tracking bool
		want     int64
	}{
		{"tracking commits the END plus one", nil, true, 20},
		{"tracking ignores the acknowledged prefix", func(ps *partState) { ps.committedThru = -1 }, true, -1},
		{"tracking never commits past what was delivered", func(ps *partState) { ps.committedThru = 100 }, true, 30},
		{"tracking ignores an END from before this assignment", func(ps *partState) { ps.committedThru = 5 }, true, -1},
		{"tracking stops at a nacked batch", func(ps *partState) { ps.failed = errors.New("x"); ps.failedAt = 15 }, true, 15},
		{"acknowledged prefix", nil, false, 25},
		{"acknowledged prefix stops at a nacked batch", func(ps *partState) { ps.failed = errors.New("x"); ps.failedAt = 22 }, false, 22},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := base()
			if tc.mod != nil {
				tc.mod(ps)
			}
			assert.Equal(t, tc.want, ps.commitTarget(tc.tracking))
		})
	}
}

func TestRestartResumesAtCommittedTransactionBoundary(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "restart")
	// A = 0..2 (marker 3), B = 4..6 (marker 7), C = 8..10 (marker 11).
	produceTxn(t, p, 0, true, "a0", "a1", "a2")
	produceTxn(t, p, 0, true, "b0", "b1", "b2")
	produceTxn(t, p, 0, true, "c0", "c1", "c2")
	const group = "g-restart"
	id := contract.KafkaPartition(testTopic, 0)

	res, _ := newResources()
	reg := registry.Get(res)
	reg.EnableTracking()
	in := newTestInput(t, res, testYAML(c, group, "batching:\n  count: 3\n"))
	connect(t, in)

	// Every batch is acknowledged, as an output that releases acks would, but
	// StarRocks committed only through B's END (offset 6).
	got := readUntil(t, in, "c2")
	require.Equal(t, []string{"a0", "a1", "a2", "b0", "b1", "b2", "c0", "c1", "c2"}, values(got))
	require.Equal(t, int64(6), got[5].offset)
	awaitCommitPass(t, in)
	assert.Empty(t, committedOffsets(t, c, group), "acknowledgements alone commit nothing while the output tracks commits")

	reg.PublishCommitted(id, 2)
	waitCommittedOffsets(t, c, group, map[int32]int64{0: 3})
	reg.PublishCommitted(id, 6)
	waitCommittedOffsets(t, c, group, map[int32]int64{0: 7})
	awaitCommitPass(t, in)
	assert.Equal(t, map[int32]int64{0: 7}, committedOffsets(t, c, group), "nothing past the committed boundary")
	require.NoError(t, in.Close(context.Background()))

	// A restart resumes with C, the first transaction StarRocks did not
	// commit; the offset committed (7) is B's marker, not a data record.
	res2, _ := newResources()
	registry.Get(res2).EnableTracking()
	in2 := newTestInput(t, res2, testYAML(c, group, "batching:\n  count: 3\n"))
	connect(t, in2)
	b, ack := readBatch(t, in2, 10*time.Second)
	require.NoError(t, ack(context.Background(), nil))
	rs := toRecs(t, b)
	assert.Equal(t, "c0", rs[0].value)
	assert.Equal(t, int64(8), rs[0].offset)
}

// waitCommittedOffsets waits until the group's committed offsets equal want.
func waitCommittedOffsets(t *testing.T, c *kfake.Cluster, group string, want map[int32]int64) {
	t.Helper()
	var got map[int32]int64
	ok := assert.Eventually(t, func() bool {
		got = committedOffsets(t, c, group)
		if len(got) != len(want) {
			return false
		}
		for p, o := range want {
			if got[p] != o {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond)
	if !ok {
		t.Fatalf("committed offsets are %v, want %v", got, want)
	}
}

func TestNackStopsPartitionAndCommitsNothingPastIt(t *testing.T) {
	c := newCluster(t, 2)
	p := producer(t, c, "")
	produce(t, p, 0, seq("p0-", 6)...)
	produce(t, p, 1, seq("p1-", 4)...)
	const group = "g-nack"

	res, logs := newResources()
	in := newTestInput(t, res, testYAML(c, group, "batching:\n  count: 2\n  period: 1s\n"))
	connect(t, in)

	type held struct {
		rs  []rec
		ack service.AckFunc
	}
	var p0 []held
	p1n := 0
	deadline := time.Now().Add(10 * time.Second)
	for (len(p0) < 3 || p1n < 4) && time.Now().Before(deadline) {
		b, ack := readBatch(t, in, 10*time.Second)
		rs := toRecs(t, b)
		if rs[0].partition == 1 {
			p1n += len(rs)
			require.NoError(t, ack(context.Background(), nil))
			continue
		}
		p0 = append(p0, held{rs, ack})
	}
	require.Len(t, p0, 3)
	require.Equal(t, []int64{2, 3}, []int64{p0[1].rs[0].offset, p0[1].rs[1].offset})
	require.NoError(t, p0[0].ack(context.Background(), nil))
	require.NoError(t, p0[1].ack(context.Background(), errors.New("boom")))
	require.NoError(t, p0[2].ack(context.Background(), nil))

	waitCommittedOffsets(t, c, group, map[int32]int64{0: 2, 1: 4})
	assert.Contains(t, logs.String(), "partition cdc/0 is stopped: the batch at offsets 2-3 was rejected by the output: boom")

	// The stopped partition delivers nothing more; the other one flows.
	produce(t, p, 0, "p0-late")
	produce(t, p, 1, "p1-late")
	got := readUntil(t, in, "p1-late")
	if t.Failed() {
		t.Log(logs.String())
	}
	assert.Equal(t, []string{"p1-late"}, values(got))
	b, _ := tryReadBatch(t, in, 300*time.Millisecond)
	assert.Nil(t, b)
	awaitCommitPass(t, in)
	assert.Equal(t, map[int32]int64{0: 2, 1: 5}, committedOffsets(t, c, group))
}
