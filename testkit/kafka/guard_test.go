package kafka

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// produceAborting writes 300 committed source transactions, 30 % of the
// Kafka transactions aborted, to topic in batches of at most maxBatch.
func produceAborting(ctx context.Context, t *testing.T, brokers []string, topic string, partitions, maxBatch int32, seed uint64) *workload.Producer {
	t.Helper()
	g := workload.NewGenerator(workload.Options{Partitions: partitions, Seed: seed, Events: true})
	p, err := workload.NewProducer(workload.ProducerOptions{
		Brokers: brokers, Topic: topic, AbortRatio: 0.3, TxnsPerKafkaTxn: 2, BatchMaxBytes: maxBatch,
		TransactionalID: "guard-test-" + topic,
	}, g, workload.NewModel())
	require.NoError(t, err)
	t.Cleanup(p.Close)
	require.NoError(t, p.Produce(ctx, 300))
	require.Greater(t, p.Stats.Aborted.Load(), int64(50))
	return p
}

// readCommitted reads topics read_committed with fetches of at most
// fetchMaxBytes until it has want records and then until nothing more
// comes, and returns the records and the source transactions (topic and
// key) they belong to.
func readCommitted(ctx context.Context, t *testing.T, brokers []string, fetchMaxBytes int32, want int64, topics ...string) (int64, map[string]bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(fetchMaxBytes))
	require.NoError(t, err)
	defer cl.Close()
	var records int64
	txns := map[string]bool{}
	count := func(fs kgo.Fetches) int {
		require.NoError(t, ctx.Err())
		fs.EachRecord(func(r *kgo.Record) {
			records++
			txns[r.Topic+"|"+string(r.Key)] = true
		})
		return fs.NumRecords()
	}
	for records < want {
		count(cl.PollFetches(ctx))
	}
	for {
		quiet, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		n := count(cl.PollFetches(quiet))
		cancel()
		if n == 0 {
			return records, txns
		}
	}
}

// A read_committed consumer whose fetch responses are bounded by their
// MaxBytes (here 16 KiB over 4 partitions, as 50 MiB over 256 partitions in
// the bench) receives records of aborted producer transactions from kfake
// unless the cluster is the kit's; from the kit's, it receives exactly the
// committed source transactions.
func TestGuardKeepsAbortedRecordsOutOfReadCommittedFetches(t *testing.T) {
	const partitions, fetchMaxBytes = 4, 16 << 10
	maxBatch, err := GuardedBatchBytes(partitions, fetchMaxBytes)
	require.NoError(t, err)
	require.Equal(t, int32(2048), maxBatch)

	for _, guarded := range []bool{false, true} {
		t.Run("guarded="+strconv.FormatBool(guarded), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var brokers []string
			if guarded {
				c := New(t)
				require.NoError(t, c.CreateGuardedTopic("cdc", partitions, maxBatch))
				brokers = c.Brokers()
			} else {
				c, err := kfake.NewCluster(kfake.NumBrokers(1))
				require.NoError(t, err)
				defer c.Close()
				require.NoError(t, c.CreateTopic("cdc", partitions, map[string]string{"max.message.bytes": strconv.Itoa(int(maxBatch))}))
				brokers = c.ListenAddrs()
			}
			p := produceAborting(ctx, t, brokers, "cdc", partitions, maxBatch, 3)
			records, txns := readCommitted(ctx, t, brokers, fetchMaxBytes, p.Stats.Records.Load(), "cdc")
			if !guarded {
				assert.Greater(t, records, p.Stats.Records.Load(), "kfake served records of aborted transactions")
				assert.Greater(t, int64(len(txns)), p.Stats.Committed.Load())
				return
			}
			assert.Equal(t, p.Stats.Records.Load(), records)
			assert.Equal(t, p.Stats.Committed.Load(), int64(len(txns)), "exactly the committed source transactions")
		})
	}
}

// The guard bounds a request by all the partitions it names, whatever their
// topics: two topics read by one consumer whose budget covers the batch
// bounds of one topic only (each partition's share below twice a batch)
// still get exactly their committed transactions; the guard raises the
// response limit rather than let it cut a partition.
func TestGuardBoundsRequestsOfSeveralTopicsBeyondTheirBudget(t *testing.T) {
	const partitions, fetchMaxBytes = 4, 16 << 10
	maxBatch, err := GuardedBatchBytes(partitions, fetchMaxBytes)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := New(t)
	var want, committed int64
	for i, topic := range []string{"a", "b"} {
		require.NoError(t, c.CreateGuardedTopic(topic, partitions, maxBatch))
		p := produceAborting(ctx, t, c.Brokers(), topic, partitions, maxBatch, uint64(11+i))
		want += p.Stats.Records.Load()
		committed += p.Stats.Committed.Load()
	}
	records, txns := readCommitted(ctx, t, c.Brokers(), fetchMaxBytes, want, "a", "b")
	assert.Equal(t, want, records)
	assert.Equal(t, committed, int64(len(txns)), "exactly the committed source transactions of both topics")
}

// A fetch session lets a client name only the partitions that changed and
// the broker add the ones it remembers, with the limits of an earlier
// request: the guard's bound counts the partitions a request names, so it
// keeps read_committed fetches sessionless. Every fetch kfake handles then
// names every partition the consumer reads.
func TestGuardKeepsReadCommittedFetchesSessionless(t *testing.T) {
	const partitions, fetchMaxBytes = 4, 16 << 10
	maxBatch, err := GuardedBatchBytes(partitions, fetchMaxBytes)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := New(t, Topic("cdc", partitions, map[string]string{"max.message.bytes": strconv.Itoa(int(maxBatch))}))
	var mu sync.Mutex
	var seen []string
	// After the guard's: sees the request kfake will handle.
	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.FetchRequest)
		n := 0
		for _, rt := range req.Topics {
			n += len(rt.Partitions)
		}
		mu.Lock()
		seen = append(seen, fmt.Sprintf("epoch %d, %d partitions", req.SessionEpoch, n))
		mu.Unlock()
		return nil, nil, false
	})
	p := produceAborting(ctx, t, c.Brokers(), "cdc", partitions, maxBatch, 5)
	records, _ := readCommitted(ctx, t, c.Brokers(), fetchMaxBytes, p.Stats.Records.Load(), "cdc")
	assert.Equal(t, p.Stats.Records.Load(), records)

	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, len(seen), 5, "the consumer fetched several times")
	assert.GreaterOrEqual(t, c.Fetches(), int64(len(seen)), "every fetch counted")
	for i, s := range seen {
		assert.Equal(t, fmt.Sprintf("epoch -1, %d partitions", partitions), s, "fetch %d", i)
	}
}
