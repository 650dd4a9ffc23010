package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The in-process Kafka's fault that the guard (guard.go) works around, shown on one
// partition holding a committed transaction, an aborted one and a committed
// one: a read_committed fetch whose response ends on its MaxBytes right after
// the aborted transaction's data returns that data with no
// AbortedTransactions, and franz-go delivers it; the same bytes ended by the
// partition's own PartitionMaxBytes come with the aborted transaction listed.
// This test asserts kfake's behaviour as it is: when it fails on the first
// two assertions, kfake lists the aborted transactions of the partition a
// response ends in and the guard can go.
func TestKfakeOmitsTheAbortedTransactionsOfThePartitionAResponseEndsIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	defer c.Close()

	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("t"), kgo.TransactionalID("repro"))
	require.NoError(t, err)
	defer prod.Close()
	for _, txn := range []struct {
		values []string
		end    kgo.TransactionEndTry
	}{
		{[]string{"c1"}, kgo.TryCommit},
		{[]string{"a1", "a2"}, kgo.TryAbort},
		{[]string{"c2"}, kgo.TryCommit},
	} {
		require.NoError(t, prod.BeginTransaction())
		var recs []*kgo.Record
		for _, v := range txn.values {
			recs = append(recs, kgo.StringRecord(v))
		}
		require.NoError(t, prod.ProduceSync(ctx, recs...).FirstErr())
		require.NoError(t, prod.EndTransaction(ctx, txn.end))
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	id := c.TopicInfo("t").TopicID
	fetch := func(isolation int8, maxBytes, partitionMaxBytes int32) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.IsolationLevel = isolation
		req.MaxBytes = maxBytes
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "t", id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = partitionMaxBytes
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		require.Len(t, resp.Topics, 1)
		require.Len(t, resp.Topics[0].Partitions, 1)
		p := resp.Topics[0].Partitions[0]
		require.Zero(t, p.ErrorCode)
		return p
	}

	// The log: c1, its commit marker, a1 a2, the abort marker, c2, its
	// commit marker. budget is the bytes up to the end of a1 a2.
	type batch struct {
		first   int64
		control bool
		size    int
	}
	var log []batch
	for raw := fetch(0, 1<<20, 1<<20).RecordBatches; len(raw) > 0; {
		var b kmsg.RecordBatch
		require.NoError(t, b.ReadFrom(raw))
		size := int(b.Length) + 12 // the offset and the length precede the length's count
		log = append(log, batch{first: b.FirstOffset, control: b.Attributes&0x20 != 0, size: size})
		raw = raw[size:]
	}
	// The first control batch is c1's commit, the second the abort.
	var controls []int
	for i, b := range log {
		if b.control {
			controls = append(controls, i)
		}
	}
	require.Len(t, controls, 3)
	abortedFirst := log[controls[0]+1].first
	var budget int32
	for _, b := range log[:controls[1]] {
		budget += int32(b.size)
	}

	// Ended by MaxBytes: the aborted data, no aborted transaction listed.
	byResponse := fetch(1, budget, 1<<20)
	assert.Len(t, byResponse.RecordBatches, int(budget), "the response ends after a1 a2")
	assert.Empty(t, byResponse.AbortedTransactions, "kfake lists no aborted transaction for the partition the response ended in")

	// Ended by PartitionMaxBytes: the same bytes, the aborted one listed.
	byPartition := fetch(1, 1<<20, budget)
	assert.Equal(t, byResponse.RecordBatches, byPartition.RecordBatches)
	require.Len(t, byPartition.AbortedTransactions, 1)
	assert.Equal(t, abortedFirst, byPartition.AbortedTransactions[0].FirstOffset)

	// franz-go, read_committed, delivers a1 and a2 when its fetch limit
	// ends a response there, and not with its default limits.
	read := func(opts ...kgo.Opt) []string {
		t.Helper()
		cons, err := kgo.NewClient(append([]kgo.Opt{
			kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		}, opts...)...)
		require.NoError(t, err)
		defer cons.Close()
		var got []string
		for len(got) == 0 || got[len(got)-1] != "c2" {
			fs := cons.PollFetches(ctx)
			require.NoError(t, ctx.Err())
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got
	}
	assert.Equal(t, []string{"c1", "a1", "a2", "c2"}, read(kgo.FetchMaxBytes(budget)), "aborted records delivered")
	assert.Equal(t, []string{"c1", "c2"}, read())
}
