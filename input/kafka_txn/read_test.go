package kafka_txn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// readUntil reads and acknowledges batches until a message with value last
// arrives, and returns everything read in order.
func readUntil(t *testing.T, in *Input, last string) []rec {
	t.Helper()
	var out []rec
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		b, ack := tryReadBatch(t, in, time.Until(deadline))
		if b == nil {
			break
		}
		rs := toRecs(t, b)
		require.NoError(t, ack(context.Background(), nil))
		out = append(out, rs...)
		for _, r := range rs {
			if r.value == last {
				return out
			}
		}
	}
	t.Fatalf("did not read %q; read %v", last, values(out))
	return nil
}

func TestIsolationLevelAndAbortedTransactions(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "txn-producer")
	produceTxn(t, p, 0, true, seq("a", 5)...)
	produceTxn(t, p, 0, false, seq("b", 5)...)
	produceTxn(t, p, 0, true, seq("c", 5)...)

	t.Run("read_committed never delivers aborted records", func(t *testing.T) {
		res, _ := newResources()
		in := newTestInput(t, res, testYAML(c, "g-committed", ""))
		connect(t, in)
		got := readUntil(t, in, "c4")
		assert.Equal(t, append(seq("a", 5), seq("c", 5)...), values(got))
		// Each transaction marker occupies an offset: a0..a4 = 0..4, marker
		// 5, b0..b4 = 6..10, marker 11, c0 = 12.
		assert.Equal(t, int64(12), got[5].offset)
		// Nothing else arrives (the aborted records are filtered, not late).
		b, _ := tryReadBatch(t, in, 300*time.Millisecond)
		assert.Nil(t, b)
	})

	t.Run("read_uncommitted delivers aborted records", func(t *testing.T) {
		res, _ := newResources()
		in := newTestInput(t, res, testYAML(c, "g-uncommitted", "isolation_level: read_uncommitted\n"))
		connect(t, in)
		got := readUntil(t, in, "c4")
		want := append(append(seq("a", 5), seq("b", 5)...), seq("c", 5)...)
		assert.Equal(t, want, values(got))
	})
}

func TestOpenTransactionHoldsOnlyItsPartition(t *testing.T) {
	c := newCluster(t, 2)
	txp := producer(t, c, "open-txn")
	plain := producer(t, c, "")
	produceTxn(t, txp, 0, true, "p0-a")
	require.NoError(t, txp.BeginTransaction())
	produce(t, txp, 0, "p0-b", "p0-c")
	produce(t, plain, 1, "p1-x")

	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, "g-open", ""))
	connect(t, in)

	seen := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for !(seen["p0-a"] && seen["p1-x"]) && time.Now().Before(deadline) {
		b, ack := readBatch(t, in, 10*time.Second)
		for _, r := range toRecs(t, b) {
			seen[r.value] = true
		}
		require.NoError(t, ack(context.Background(), nil))
	}
	require.True(t, seen["p0-a"] && seen["p1-x"], "committed records of both partitions flow: %v", seen)

	// The open transaction holds partition 0 at its last stable offset while
	// partition 1 keeps flowing.
	produce(t, plain, 1, "p1-y")
	got := readUntil(t, in, "p1-y")
	for _, r := range got {
		assert.NotEqual(t, int32(0), r.partition, "partition 0 delivered %q past its LSO", r.value)
	}
	b, _ := tryReadBatch(t, in, 500*time.Millisecond)
	require.Nil(t, b, "nothing of the open transaction may be delivered")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, txp.EndTransaction(ctx, kgo.TryCommit))
	got = readUntil(t, in, "p0-c")
	assert.Equal(t, []string{"p0-b", "p0-c"}, values(got))
	assert.Less(t, got[0].offset, got[1].offset)
}

func TestMetadata(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "")
	ts := time.UnixMilli(1700000000123)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.ProduceSync(ctx,
		&kgo.Record{Key: []byte("k1"), Value: []byte(`{"id":1}`), Timestamp: ts, Headers: []kgo.RecordHeader{
			{Key: "trace", Value: []byte("abc")},
			{Key: consumer.MetaOffset, Value: []byte("999")},
		}},
		&kgo.Record{Key: []byte("k2"), Value: nil, Timestamp: ts},
	).FirstErr())

	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, "g-meta", "batching:\n  count: 2\n"))
	connect(t, in)
	b, ack := readBatch(t, in, 10*time.Second)
	defer func() { _ = ack(context.Background(), nil) }()
	require.Len(t, b, 2)

	m := b[0]
	get := func(key string) string {
		v, ok := m.MetaGet(key)
		require.True(t, ok, key)
		return v
	}
	assert.Equal(t, "k1", get(consumer.MetaKey))
	assert.Equal(t, testTopic, get(consumer.MetaTopic))
	assert.Equal(t, "0", get(consumer.MetaPartition))
	assert.Equal(t, "0", get(consumer.MetaOffset), "a header must not overwrite kafka_offset")
	assert.Equal(t, "1700000000", get(consumer.MetaTimestampSec))
	assert.Equal(t, "1700000000123", get(consumer.MetaTimestampMs))
	assert.Equal(t, "false", get(MetaTombstone))
	assert.Equal(t, "abc", get("trace"))
	assert.Equal(t, "1", get(MetaLag), "one record behind the high watermark")
	raw, err := m.AsBytes()
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":1}`, string(raw))

	m = b[1]
	assert.Equal(t, "k2", get(consumer.MetaKey))
	assert.Equal(t, "1", get(consumer.MetaOffset))
	assert.Equal(t, "true", get(MetaTombstone))
	assert.Equal(t, "0", get(MetaLag))
}

func TestConnectErrors(t *testing.T) {
	t.Run("unreachable brokers name seed_brokers", func(t *testing.T) {
		res, _ := newResources()
		in := newTestInput(t, res, `
seed_brokers: [ "127.0.0.1:1" ]
topics: [ cdc ]
consumer_group: g
`)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := in.Connect(ctx)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "seed_brokers [127.0.0.1:1]")
		assert.Contains(t, err.Error(), "unreachable")
	})

	t.Run("unknown topic is named", func(t *testing.T) {
		c := newCluster(t, 1)
		res, _ := newResources()
		in := newTestInput(t, res, strings.Replace(testYAML(c, "g", ""), `topics: [ "cdc" ]`, `topics: [ "cdc", "nope" ]`, 1))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := in.Connect(ctx)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `["nope"] do not exist`)
	})

	t.Run("sasl", func(t *testing.T) {
		c := newCluster(t, 1, kfake.EnableSASL(),
			kfake.Superuser("SCRAM-SHA-256", "admin", "s3cret"),
			kfake.Superuser("PLAIN", "plainuser", "plainpass"))
		saslYAML := func(mech, user, pass string) string {
			return testYAML(c, "g-sasl", "sasl:\n  - mechanism: "+mech+"\n    username: "+user+"\n    password: "+pass+"\n")
		}
		for _, tc := range []struct {
			name, mech, user, pass string
			ok                     bool
		}{
			{"scram wrong password", "SCRAM-SHA-256", "admin", "wrong", false},
			{"plain wrong password", "PLAIN", "plainuser", "wrong", false},
			{"scram", "SCRAM-SHA-256", "admin", "s3cret", true},
			{"plain", "PLAIN", "plainuser", "plainpass", true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res, logs := newResources()
				in := newTestInput(t, res, saslYAML(tc.mech, tc.user, tc.pass))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err := in.Connect(ctx)
				if !tc.ok {
					require.Error(t, err)
					assert.Contains(t, err.Error(), "authentication")
					assert.Contains(t, err.Error(), "sasl")
					assert.NotContains(t, err.Error(), tc.pass)
					assert.NotContains(t, logs.String(), tc.pass)
					return
				}
				require.NoError(t, err)
				t.Cleanup(func() { _ = in.Close(context.Background()) })
			})
		}
		// An authenticated consumer reads.
		p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(testTopic),
			kgo.SASL(kafka.SASL{Mechanism: kafka.SASLScramSHA256, Username: "admin", Password: "s3cret"}.KgoMechanism()))
		require.NoError(t, err)
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr())
		res, _ := newResources()
		in := newTestInput(t, res, saslYAML("SCRAM-SHA-512", "admin", "s3cret"))
		// kfake creates SCRAM-SHA-512 credentials only when asked; the
		// SHA-256 superuser must be refused for SHA-512.
		err = in.Connect(ctx)
		require.Error(t, err)
		in = newTestInput(t, res, saslYAML("SCRAM-SHA-256", "admin", "s3cret"))
		connect(t, in)
		got := readUntil(t, in, "hello")
		assert.Equal(t, []string{"hello"}, values(got))
	})
}

func TestDeletedTopicIsNamedOnce(t *testing.T) {
	c := newCluster(t, 1)
	p := producer(t, c, "")
	produce(t, p, 0, "a")
	res, logs := newResources()
	in := newTestInput(t, res, testYAML(c, "g-deleted", ""))
	connect(t, in)
	// The batch is acknowledged only after the topic is gone, so the offset
	// commit that follows must fail (acknowledged before, it could commit
	// in time and leave nothing to commit).
	b, ack := readBatch(t, in, 10*time.Second)
	require.Equal(t, []string{"a"}, values(toRecs(t, b)))

	adm, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kadm.NewClient(adm).DeleteTopics(ctx, testTopic)
	require.NoError(t, err)
	require.NoError(t, ack(context.Background(), nil))

	const want = "cdc/0: the topic no longer exists (deleted?), fix topics or recreate it"
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), want) }, 5*time.Second, 20*time.Millisecond)
	// Ten more commits, each failing again.
	n := in.CommitPasses()
	testkit.WaitFor(t, 20*time.Second, func() bool { return in.CommitPasses() >= n+10 }, "ten more commit passes")
	assert.Equal(t, 1, strings.Count(logs.String(), want), "a repeating commit error is rate-limited")
	assert.LessOrEqual(t, strings.Count(logs.String(), "kafka client: unable to commit offset"), 1, "franz-go's repeated lines are rate-limited")
}
