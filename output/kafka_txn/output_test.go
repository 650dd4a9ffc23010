package kafka_txn

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	kafkakit "github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
)

// TestBatchesArriveWholeAndInOrder writes batches one after another with
// the key partitioner and checks that every record arrives once, each key's
// records in the order written.
func TestBatchesArriveWholeAndInOrder(t *testing.T) {
	c := newCluster(t, 1, 3)
	o, _ := testOutput(t, c, "key: ${! @k }\n")
	var want []string
	for b := range 12 {
		bodies := seq(fmt.Sprintf("b%02d-", b), 25)
		batch := batchOf(bodies, nil)
		for i, m := range batch {
			m.MetaSetMut("k", fmt.Sprintf("key-%d", i%5))
		}
		require.NoError(t, write(t, o, batch))
		want = append(want, bodies...)
	}
	recs := consume(t, c, true)
	require.Len(t, recs, len(want))
	perKey := map[string][]string{}
	partOfKey := map[string]int32{}
	for _, r := range byPartitionRecords(recs) {
		k := string(r.Key)
		perKey[k] = append(perKey[k], string(r.Value))
		if p, seen := partOfKey[k]; seen {
			assert.Equal(t, p, r.Partition, "key %s is on one partition", k)
		}
		partOfKey[k] = r.Partition
	}
	for k, vals := range perKey {
		var exp []string
		for i, v := range want {
			if fmt.Sprintf("key-%d", (i%25)%5) == k {
				exp = append(exp, v)
			}
		}
		assert.Equal(t, exp, vals, "records of %s in the order written", k)
	}
}

// byPartitionRecords sorts records by partition and offset.
func byPartitionRecords(recs []*kgo.Record) []*kgo.Record {
	out := append([]*kgo.Record(nil), recs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && (out[j].Partition < out[j-1].Partition || out[j].Partition == out[j-1].Partition && out[j].Offset < out[j-1].Offset); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// TestKeysPartitionsAndHeaders: the key partitioner is murmur2 (kgo's
// Java-compatible sticky key partitioner), manual takes the interpolated
// partition, round_robin spreads, and the metadata filter picks the
// headers.
func TestKeysPartitionsAndHeaders(t *testing.T) {
	c := newCluster(t, 1, 4)

	t.Run("murmur2_hash", func(t *testing.T) {
		o, _ := testOutput(t, c, "key: ${! content() }\n")
		keys := seq("order-", 40)
		require.NoError(t, write(t, o, batchOf(keys, nil)))
		want := kgo.StickyKeyPartitioner(nil).ForTopic(testTopic)
		for _, r := range consume(t, c, true) {
			assert.Equal(t, string(r.Value), string(r.Key))
			assert.Equal(t, int32(want.Partition(&kgo.Record{Key: r.Key}, 4)), r.Partition, "key %s", r.Key)
		}
	})

	t.Run("manual and headers", func(t *testing.T) {
		topic := "manual"
		adm, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
		require.NoError(t, err)
		defer adm.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 4, 1
		req.Topics = append(req.Topics, rt)
		_, err = req.RequestWith(ctx, adm)
		require.NoError(t, err)

		o, _ := testOutput(t, c, `partitioner: manual
partition: ${! @part }
metadata:
  include_patterns: [ "^starrocks_" ]
`)
		o.conf.topic, err = service.NewInterpolatedString(topic)
		require.NoError(t, err)
		batch := batchOf([]string{"a", "b", "c"}, map[string]string{"starrocks_txn_id": "t-9", "starrocks_dead_letter_reason": "table x does not exist", "kafka_key": "not a header"})
		for i, m := range batch {
			m.MetaSetMut("part", fmt.Sprint(3-i))
		}
		require.NoError(t, write(t, o, batch))

		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		require.NoError(t, err)
		defer cl.Close()
		got := map[string]*kgo.Record{}
		for len(got) < 3 && ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[string(r.Value)] = r })
		}
		require.Len(t, got, 3)
		assert.Equal(t, int32(3), got["a"].Partition)
		assert.Equal(t, int32(2), got["b"].Partition)
		assert.Equal(t, int32(1), got["c"].Partition)
		assert.Equal(t, []kgo.RecordHeader{
			{Key: "starrocks_dead_letter_reason", Value: []byte("table x does not exist")},
			{Key: "starrocks_txn_id", Value: []byte("t-9")},
		}, got["a"].Headers, "matching metadata, sorted by key; kafka_key and part are left out")

		// A partition that is not a number fails the batch, naming the field.
		bad := batchOf([]string{"x"}, map[string]string{"part": "first"})
		err = write(t, o, bad)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `partition gave "first", not a partition number`)
	})

	t.Run("round_robin", func(t *testing.T) {
		c := newCluster(t, 1, 4)
		o, _ := testOutput(t, c, "partitioner: round_robin\n")
		require.NoError(t, write(t, o, batchOf(seq("r", 40), nil)))
		per := byPartition(consume(t, c, true))
		require.Len(t, per, 4, "every partition gets records")
		for p, vals := range per {
			assert.Len(t, vals, 10, "partition %d", p)
		}
	})
}

// refuseProduce makes the cluster answer produce requests that touch
// partition part (on the broker that leads it) with errCode,
// without applying them, n times.
func refuseProduce(c *kafkakit.Cluster, part int32, errCode int16, n int32) *atomic.Int32 {
	var hits atomic.Int32
	leader := c.LeaderFor(testTopic, part)
	c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if hits.Load() >= n || c.CurrentNode() != leader {
			return nil, nil, false
		}
		req := kr.(*kmsg.ProduceRequest)
		touches := false
		for _, tp := range req.Topics {
			for _, p := range tp.Partitions {
				// Recent produce versions name the topic by ID only; the
				// tests write one topic at a time.
				if p.Partition == part {
					touches = true
				}
			}
		}
		if !touches {
			return nil, nil, false
		}
		hits.Add(1)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, tp := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, p := range tp.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = errCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	return &hits
}

// TestBrokerErrorFailsTheBatch: a refused produce is a WriteBatch error
// naming the failed messages and what to check; the records were not
// written, and the retried batch arrives once.
func TestBrokerErrorFailsTheBatch(t *testing.T) {
	c := newCluster(t, 1, 1)
	o, _ := testOutput(t, c, "")
	hits := refuseProduce(c, 0, kerr.TopicAuthorizationFailed.Code, 1)
	batch := batchOf(seq("v", 5), nil)
	idx := batch.Index()
	err := write(t, o, batch)
	require.Error(t, err)
	assert.EqualValues(t, 1, hits.Load())
	assert.Contains(t, err.Error(), "not authorized (check the ACLs for writing topic \"out\")")
	var berr *service.BatchError
	require.True(t, errors.As(err, &berr), "a BatchError names the failed messages")
	failed := 0
	berr.WalkMessagesIndexedBy(idx, func(_ int, _ *service.Message, err error) bool {
		if err != nil {
			failed++
		}
		return true
	})
	assert.Equal(t, 5, failed)

	require.NoError(t, write(t, o, batch), "the retry succeeds")
	assert.Equal(t, map[int32][]string{0: seq("v", 5)}, byPartition(consume(t, c, true)))
}

// TestStreamRetriesAFailedBatch runs the output in a stream: a broker error
// fails the batch, Benthos retries it, and every message arrives once (the
// generate input does not wait for a nacked batch, so retried messages come
// later than their neighbours).
func TestStreamRetriesAFailedBatch(t *testing.T) {
	c := newCluster(t, 1, 1)
	hits := refuseProduce(c, 0, kerr.TopicAuthorizationFailed.Code, 2)
	sb := service.NewEnvironment().NewStreamBuilder()
	require.NoError(t, sb.SetLoggerYAML("level: none"))
	// Bloblang's counters live as long as the process: each run (-count)
	// counts from 1 with a counter of its own.
	require.NoError(t, sb.AddInputYAML(fmt.Sprintf(`generate:
  count: 20
  interval: ""
  mapping: 'root = "m%%02d".format(count("stream-retry-%d") - 1)'
`, streamRetryRuns.Add(1))))
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`kafka_txn:
  seed_brokers: [ %q ]
  topic: %s
  max_in_flight: 1
  batching: { count: 5 }
`, strings.Join(c.ListenAddrs(), ","), testTopic)))
	s, err := sb.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.Run(ctx))
	assert.EqualValues(t, 2, hits.Load(), "two produce requests were refused")
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("m%02d", i))
	}
	got := byPartition(consume(t, c, true))[0]
	sort.Strings(got)
	assert.Equal(t, want, got)
}

// streamRetryRuns numbers the runs of TestStreamRetriesAFailedBatch.
var streamRetryRuns atomic.Int64

// TestIdempotentRetryDoesNotDuplicate loses the reply of a produce request
// the broker applied: the client retries it, and with the idempotent
// producer (the default) the broker recognises the retry, so every record
// is written once. Without it the same fault writes the records twice.
func TestIdempotentRetryDoesNotDuplicate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		yaml       string
		duplicates bool
	}{
		{"idempotent (default)", "", false},
		{"idempotent_write false", "idempotent_write: false\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 1, 1)
			d := &replyLosingDialer{}
			o, _ := testOutput(t, c, tc.yaml, kgo.Dialer(d.dial))
			d.armed.Store(true)
			bodies := seq("i", 20)
			require.NoError(t, write(t, o, batchOf(bodies, nil)), "the client's retry succeeds")
			require.EqualValues(t, 1, d.dropped.Load(), "one reply was lost")
			got := byPartition(consume(t, c, true))[0]
			if tc.duplicates {
				assert.Greater(t, len(got), len(bodies), "without idempotence the retry duplicates: the fault is real")
				return
			}
			assert.Equal(t, bodies, got, "each record once, in order")
		})
	}
}

// TestTransactionalBatchIsAtomic: with transactional_id a batch over two
// partitions whose second partition is refused is aborted whole — a
// read_committed consumer sees none of it (a read_uncommitted one sees the
// half that was written) — and the retry commits it whole.
func TestTransactionalBatchIsAtomic(t *testing.T) {
	c := newCluster(t, 2, 2)
	if c.LeaderFor(testTopic, 0) == c.LeaderFor(testTopic, 1) {
		require.NoError(t, c.MoveTopicPartition(testTopic, 1, 1-c.LeaderFor(testTopic, 0)))
	}
	require.NotEqual(t, c.LeaderFor(testTopic, 0), c.LeaderFor(testTopic, 1), "the partitions are on different brokers")
	o, logs := testOutput(t, c, `transactional_id: dlq-test
partitioner: manual
partition: ${! @part }
`)
	batch := batchOf(seq("t", 10), nil)
	for i, m := range batch {
		m.MetaSetMut("part", fmt.Sprint(i%2))
	}
	hits := refuseProduce(c, 1, kerr.InvalidRecord.Code, 1)
	err := write(t, o, batch)
	require.Error(t, err)
	assert.EqualValues(t, 1, hits.Load())
	assert.Contains(t, err.Error(), "(aborted)")
	assert.Empty(t, consume(t, c, true), "read_committed sees nothing of the aborted batch")
	half := byPartition(consume(t, c, false))
	assert.Equal(t, []string{"t0000", "t0002", "t0004", "t0006", "t0008"}, half[0], "partition 0 was written, then aborted")
	assert.Empty(t, half[1])

	require.NoError(t, write(t, o, batch), "the retried batch commits; logs:\n%s", logs.String())
	got := byPartition(consume(t, c, true))
	assert.Equal(t, map[int32][]string{
		0: {"t0000", "t0002", "t0004", "t0006", "t0008"},
		1: {"t0001", "t0003", "t0005", "t0007", "t0009"},
	}, got, "the whole batch once")
}

// TestProduceFaultMatrix runs every outcome of a produce request against
// both write modes: the batch ends up written once, whole and in order, and
// WriteBatch reports success only when it is (a failed call is retried, as
// Benthos does).
func TestProduceFaultMatrix(t *testing.T) {
	// apply arms the fault and returns how often it fired.
	type fault struct {
		name  string
		apply func(c *kafkakit.Cluster, d *replyLosingDialer) func() int32
	}
	faults := []fault{
		{"refused definitely", func(c *kafkakit.Cluster, _ *replyLosingDialer) func() int32 {
			return refuseProduce(c, 0, kerr.InvalidRecord.Code, 1).Load
		}},
		{"not applied, connection reset", func(c *kafkakit.Cluster, _ *replyLosingDialer) func() int32 {
			var n atomic.Int32
			c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
				n.Add(1)
				return nil, errors.New("reset before applying"), true
			})
			return n.Load
		}},
		{"applied, reply lost", func(_ *kafkakit.Cluster, d *replyLosingDialer) func() int32 {
			d.armed.Store(true)
			return d.dropped.Load
		}},
		{"slow", func(c *kafkakit.Cluster, _ *replyLosingDialer) func() int32 {
			var n atomic.Int32
			c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
				n.Add(1)
				// Real time: the slowness is the fault (a broker that
				// answers late, but within the output's timeout).
				time.Sleep(300 * time.Millisecond)
				return nil, nil, false
			})
			return n.Load
		}},
	}
	for _, mode := range []struct{ name, yaml string }{
		{"idempotent", ""},
		{"transactional", "transactional_id: fault-matrix\n"},
	} {
		for _, f := range faults {
			t.Run(mode.name+"/"+f.name, func(t *testing.T) {
				c := newCluster(t, 1, 1)
				d := &replyLosingDialer{}
				o, logs := testOutput(t, c, mode.yaml, kgo.Dialer(d.dial))
				// One clean batch first, so the fault hits an established
				// producer.
				require.NoError(t, write(t, o, batchOf(seq("a", 3), nil)))
				fired := f.apply(c, d)
				bodies := seq("f", 10)
				var err error
				for attempt := 0; attempt < 5; attempt++ {
					if err = write(t, o, batchOf(bodies, nil)); err == nil {
						break
					}
					if errors.Is(err, service.ErrNotConnected) {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						require.NoError(t, o.Connect(ctx))
						cancel()
					}
				}
				require.NoError(t, err, "logs:\n%s", logs.String())
				assert.EqualValues(t, 1, fired(), "the fault fired once")
				got := byPartition(consume(t, c, true))[0]
				assert.Equal(t, append(seq("a", 3), bodies...), got, "each record once, whole and in order")
			})
		}
	}
}

// The contract's typed keys (in starrocks_contract, not set as strings by
// the txn_assembler) become headers as the strings a mapping would set; a
// key set after the assembler keeps its value, and the message itself is
// not changed.
func TestTypedContractBecomesStringHeaders(t *testing.T) {
	c := newCluster(t, 1, 1)
	o, _ := testOutput(t, c, "metadata:\n  include_patterns: [ \"^starrocks_\" ]\n")
	msg := service.NewMessage([]byte(`{"id":1}`))
	contract.Write(msg, contract.Meta{Partition: "cdc/0", TxnID: "t-9", HasSeq: true, Seq: 41, SeqSource: "a1",
		HasOffset: true, SourceOffset: 700, TxnEnd: true, Marker: true})
	msg.MetaSetMut(contract.KeyMarker, "false")
	recs, err := o.records(service.MessageBatch{msg})
	require.NoError(t, err)
	headers := map[string]string{}
	for _, h := range recs[0].Headers {
		headers[h.Key] = string(h.Value)
	}
	for k, want := range map[string]string{
		contract.KeyPartition: "cdc/0", contract.KeyTxnID: "t-9", contract.KeySeq: "41", contract.KeySeqSource: "a1",
		contract.KeySourceOffset: "700", contract.KeyTxnEnd: "true", contract.KeyMarker: "false",
	} {
		assert.Equal(t, want, headers[k], k)
	}
	assert.NotContains(t, headers, contract.KeyTxnAbort, "a false flag is no header")
	_, set := msg.MetaGetMut(contract.KeySeq)
	assert.False(t, set, "the message itself is unchanged")
}
