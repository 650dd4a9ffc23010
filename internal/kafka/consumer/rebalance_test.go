package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// committedOffsets returns the group's committed offset per partition of
// the test topic.
func committedOffsets(t *testing.T, addrs []string, group string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := map[int32]int64{}
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return out
	}
	require.NoError(t, err)
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == testTopic && o.Err == nil {
			out[o.Partition] = o.At
		}
	})
	return out
}

// TestLostPartitionsAreFencedNotCommitted drives the loss callback directly:
// kfake cannot be made to expire one member's session on demand.
func TestLostPartitionsAreFencedNotCommitted(t *testing.T) {
	c := newCluster(t, 1)
	produce(t, c, testTopic, 0, "a", "b", "c", "d", "e")
	const group = "g-lost"
	w := newWorld(t, testYAML(c, group, "commit_period: 1h\n"), nil)
	fencer := &fakeFencer{}
	w.reg.AddFencer(fencer.fence)
	w.connect()
	b, ack := w.read(10 * time.Second)
	require.Len(t, b, 5)
	require.NoError(t, ack(context.Background(), nil))

	w.c.lost(context.Background(), w.in.cl, map[string][]int32{testTopic: {0}})
	assert.Equal(t, []string{"cdc/0"}, fencer.fenced())
	assert.Empty(t, w.in.held())
	assert.Empty(t, committedOffsets(t, c.ListenAddrs(), group), "a lost partition is not committed")
	assert.Contains(t, w.logs.String(), "Lost partitions [cdc/0] (fenced, not committed)")
	ok, until := w.reg.Leased("cdc/0", time.Now())
	assert.True(t, ok && until.IsZero(), "a lost partition's lease is dropped")
}

// TestRevokeCommitsWhatWasAcknowledged: a revoke commits the released
// partitions' offsets after their fence, and only theirs.
func TestRevokeCommitsWhatWasAcknowledged(t *testing.T) {
	c := newCluster(t, 2)
	produce(t, c, testTopic, 0, "a", "b")
	produce(t, c, testTopic, 1, "c")
	const group = "g-revoke-commit"
	w := newWorld(t, testYAML(c, group, "commit_period: 1h\n"), nil)
	w.connect()
	var n int
	for n < 3 {
		b, ack := w.read(10 * time.Second)
		n += len(b)
		require.NoError(t, ack(context.Background(), nil))
	}
	w.c.revoked(context.Background(), w.in.cl, map[string][]int32{testTopic: {0}})
	assert.Equal(t, map[int32]int64{0: 2}, committedOffsets(t, c.ListenAddrs(), group), "the revoked partition is committed, the other is not")
	assert.Equal(t, []string{"cdc/1"}, w.in.held())
	assert.Contains(t, w.logs.String(), "Revoked partitions [cdc/0] (fenced, committed, released)")
}

// TestRevokeLetsJustDeliveredBatchesReachTheOutput: a revoke that follows a
// delivery closely waits a moment before it fences, so that a batch still on
// its way to the output is dropped by the fence rather than admitted after
// it; a partition idle for longer is fenced at once.
func TestRevokeLetsJustDeliveredBatchesReachTheOutput(t *testing.T) {
	c := newCluster(t, 2)
	w := newWorld(t, testYAML(c, "g-drain", ""), nil)
	fencer := &fakeFencer{}
	w.reg.AddFencer(fencer.fence)
	w.connect()
	delivered := map[int32]time.Time{}
	for _, p := range []int32{0, 1} {
		produce(t, c, testTopic, p, "x")
		b, _ := w.read(10 * time.Second)
		require.Len(t, b, 1)
		delivered[p] = time.Now()
	}
	const recent, idle = 1, 0
	// The idle partition's delivery is moved back by twice the drain: the
	// input tells the shell when it last delivered (StopLocked).
	w.in.mu.Lock()
	w.in.parts[fmt.Sprintf("cdc/%d", idle)].delivered = delivered[idle].Add(-2 * kafka.MaxRevokeDrain)
	w.in.mu.Unlock()

	start := time.Now()
	w.c.revoked(context.Background(), w.in.cl, map[string][]int32{testTopic: {idle}})
	// A drain would have held the fence until MaxRevokeDrain after the
	// delivery, a whole MaxRevokeDrain from now on.
	assert.Less(t, fencer.fencedAt(fmt.Sprintf("cdc/%d", idle)).Sub(start), kafka.MaxRevokeDrain, "an idle partition is fenced at once")

	w.c.revoked(context.Background(), w.in.cl, map[string][]int32{testTopic: {recent}})
	assert.GreaterOrEqual(t, fencer.fencedAt(fmt.Sprintf("cdc/%d", recent)).Sub(delivered[recent]), kafka.MaxRevokeDrain-10*time.Millisecond)
}

// TestFetchErrorLogIsBounded reports fetch errors whose texts never repeat
// (an offset in each), as a long run with a flapping broker does: the
// rate-limiter's memory stays bounded, and a repeated error is still logged
// once.
func TestFetchErrorLogIsBounded(t *testing.T) {
	w := newWorld(t, `
seed_brokers: [ "127.0.0.1:1" ]
topics: [ cdc ]
consumer_group: g
`, nil)
	for i := range 20000 {
		w.c.reportFetchError(testTopic, 0, fmt.Errorf("fetch offset %d: connection reset", i))
	}
	assert.LessOrEqual(t, w.c.lim.Len(), 2048)

	same := errors.New("broker 1 is unreachable")
	for range 5 {
		w.c.reportFetchError(testTopic, 1, same)
	}
	assert.Equal(t, 1, strings.Count(w.logs.String(), "broker 1 is unreachable"), "a repeating error is rate-limited")
}

// A fetch error names what to fix: the field that lists a topic that does
// not exist (the input tells which), the ACLs of a refused one, else the
// brokers.
func TestFetchErrorNamesTheFieldToFix(t *testing.T) {
	w := newWorld(t, `
seed_brokers: [ "127.0.0.1:1" ]
topics: [ cdc ]
consumer_group: g
`, func(sc *Config) {
		sc.TopicField = func(topic string) string {
			if topic == "cdc.transaction" {
				return "transaction_topic"
			}
			return FieldTopics
		}
	})
	w.c.reportFetchError("cdc.transaction", 0, kerr.UnknownTopicOrPartition)
	w.c.reportFetchError(testTopic, 0, kerr.UnknownTopicOrPartition)
	w.c.reportFetchError(testTopic, 1, kerr.TopicAuthorizationFailed)
	w.c.reportFetchError(testTopic, 2, errors.New("connection reset"))
	w.c.reportFetchError("", 0, errors.New("unable to join group session"))
	logs := w.logs.String()
	assert.Contains(t, logs, `Fetching cdc.transaction/0: topic \"cdc.transaction\" does not exist (deleted?): fix transaction_topic or recreate it`)
	assert.Contains(t, logs, `Fetching cdc/0: topic \"cdc\" does not exist (deleted?): fix topics or recreate it`)
	assert.Contains(t, logs, `Fetching cdc/1: not authorized, check sasl and the ACLs of topic \"cdc\" and consumer_group \"g\"`)
	assert.Contains(t, logs, "Fetching cdc/2 from seed_brokers [127.0.0.1:1]: connection reset")
	assert.Contains(t, logs, "Polling records from seed_brokers [127.0.0.1:1]: unable to join group session", "an error of no partition names none")
}
