package kafka_txn

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fetch_max_partition_bytes accepts up to 1 GiB (its lint rule). Before the
// response bound was set, franz-go clamped a partition bound above its
// 50 MiB default response bound and the input ran; with the response bound
// raised to the partition bound (fetchMaxBytes), a partition bound above
// franz-go's BrokerMaxReadBytes (100 MiB) makes the client refuse its own
// options, and the input never connects, with an error that names neither
// the field nor what to do.
func TestReviewLargePartitionFetchBoundStillConnects(t *testing.T) {
	c := newCluster(t, 1)
	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, "g-review-fetch", "fetch_max_partition_bytes: 200MiB\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := in.Connect(ctx)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = in.Close(ctx)
	})
	require.NoError(t, err, "a fetch_max_partition_bytes the config accepts")
}
