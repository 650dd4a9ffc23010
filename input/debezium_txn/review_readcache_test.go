package debezium_txn

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The transaction topic recreated while the process runs, on a broker
// that gives no topic id (or whose id this process could not learn): the
// group's offsets went with the old topic, the new one is consumed from its
// end (offset 30 here), which is past every start served before and every
// range read. The ids of [18, 24) must then be the new topic's ("n9".."n11"),
// not the old topic's ("r9".."r11") that the cache remembers: a
// transaction Debezium re-sends whole from there would not be recognised.
func TestReviewReadBackDoesNotTrustRangesOfAPossiblyRecreatedTopic(t *testing.T) {
	fake := &fakeTxnTopic{prefix: "r"}
	in, _ := cacheInput(t, fake)
	var unknown [16]byte

	require.True(t, in.ends.check(unknown, 24, 24))
	assert.Equal(t, ids(6, 12), in.readBackIDs(context.Background(), 24))
	fake.reset()

	// Recreated: same offsets, other ENDs.
	fake.prefix = "n"
	in.ends.check(unknown, 30, 30)
	got := in.readBackIDs(context.Background(), 30)
	assert.Equal(t, []string{"n9", "n10", "n11", "n12", "n13", "n14"}, got,
		"ids of a topic that may have been recreated are taken from what the old one held")
}

// checkAssignment learns the transaction topic's id from a listing of the
// topics; when that listing fails (a starved broker: the case the cache is
// for) it goes on, and the id of an earlier listing stays as if it were
// the current topic's: a topic recreated since then passes endCache.check.
func TestReviewFailedTopicListingKeepsAnOldTopicID(t *testing.T) {
	fake := &fakeTxnTopic{prefix: "r"}
	in, _ := cacheInput(t, fake)
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.RetryTimeout(100*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	in.conf.RevokeTimeout = 300 * time.Millisecond
	in.adm = kadm.NewClient(cl)
	old := [16]byte{7}
	in.txnTopicID = old
	require.NoError(t, in.checkAssignment(context.Background(), map[string][]int32{"shop.transaction": {0}, "shop.test.orders": {0}}, 1))
	assert.NotEqual(t, old, in.txnTopicID, "a listing that failed leaves the id of an earlier one as the current topic's")
}
