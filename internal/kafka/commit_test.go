package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCommitOffsetsReportsWhatTheGroupTook: the offsets reach the group,
// done sees the partitions the coordinator took and not those it refused,
// the error names the group and each refused partition (a deleted topic
// with the hint to fix topics).
func TestCommitOffsetsReportsWhatTheGroupTook(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	require.NoError(t, err)
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.DisableAutoCommit())
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	res := service.MockResources()
	m := CommitCounters{Commits: res.Metrics().NewCounter("commits"), Errors: res.Metrics().NewCounter("errors")}
	var got map[TopicPartition]int64
	done := func(c map[TopicPartition]int64) { got = c }
	require.NoError(t, CommitOffsets(ctx, cl, "g", map[TopicPartition]int64{{"t", 0}: 5, {"t", 1}: 7}, m, done))
	assert.Equal(t, map[TopicPartition]int64{{"t", 0}: 5, {"t", 1}: 7}, got)
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "g")
	require.NoError(t, err)
	o, _ := offs.Lookup("t", 1)
	assert.EqualValues(t, 7, o.At)

	got = nil
	err = CommitOffsets(ctx, cl, "g", map[TopicPartition]int64{{"t", 0}: 6, {"gone", 0}: 1}, m, done)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `committing offsets of group "g": gone/0: the topic no longer exists (deleted?), fix topics or recreate it`)
	assert.Equal(t, map[TopicPartition]int64{{"t", 0}: 6}, got)

	assert.NoError(t, CommitOffsets(ctx, cl, "g", nil, m, func(map[TopicPartition]int64) { t.Error("done called for nothing to commit") }))
}
