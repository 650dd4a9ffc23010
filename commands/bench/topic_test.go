package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The loaded topic is guarded against kfake serving records of aborted
// producer transactions to a read_committed consumer whose fetch responses
// end on their byte limit: the franz row reads exactly the committed
// records. The limit is lowered to 64 KiB so that a small topic reaches it,
// as the consumers' 8 MiB is reached at many partitions in a real run.
func TestLoadedTopicServesNoAbortedRecordsToFullFetches(t *testing.T) {
	defer func(b int32) { consumerFetchMaxBytes = b }(consumerFetchMaxBytes)
	consumerFetchMaxBytes = 64 << 10
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tp, err := loadTopic(ctx, Options{Txns: 600, AbortRatio: 0.3, Seed: 1}, Topic{Partitions: 8})
	require.NoError(t, err)
	defer tp.close()
	var size int64
	for _, p := range tp.cluster.PartitionInfos(topicName) {
		size += p.NumBytes
	}
	require.Greater(t, size, 4*int64(consumerFetchMaxBytes), "the topic takes several full fetches")

	res, err := runFranz(ctx, Result{}, tp, &profiler{}, "franz")
	require.NoError(t, err)
	assert.True(t, res.Verified, res.Verification)
}
