package kafka_txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
)

const testTopic = "cdc"

// newCluster starts an in-process kfake cluster whose groups accept the short
// session timeouts the tests use.
func newCluster(t testing.TB, partitions int32, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts = append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.SeedTopics(partitions, testTopic),
		kfake.GroupMinSessionTimeout(100 * time.Millisecond),
	}, opts...)
	c, err := kfake.NewCluster(opts...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testlog.Buffer

// newResources returns mock resources whose log lines land in the returned
// buffer.
func newResources() (*service.Resources, *syncBuffer) {
	logs := &syncBuffer{}
	l := service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	return service.MockResources(service.MockResourcesOptUseLogger(l)), logs
}

// testYAML is a config with timings short enough for tests; extra is
// appended verbatim. Heartbeats are frequent, so that a rebalance begins
// at once; the session and the rebalance timeouts are long, so that a
// member starved of CPU on a loaded machine (heartbeats more than a second
// apart were seen at a load of 25 on two cores) is not expired and loses
// no partition: no test here waits for a session to expire, and members
// leave the group when they close.
func testYAML(c *kfake.Cluster, group, extra string) string {
	return fmt.Sprintf(`
seed_brokers: [ %q ]
topics: [ %q ]
consumer_group: %q
commit_period: 50ms
revoke_timeout: 2s
session_timeout: 10s
rebalance_timeout: 10s
heartbeat_interval: 100ms
fetch_max_wait: 100ms
checkpoint_stall_timeout: 300ms
%s`, strings.Join(c.ListenAddrs(), ","), testTopic, group, extra)
}

func newTestInput(t *testing.T, res *service.Resources, yaml string) *Input {
	t.Helper()
	conf, err := ConfigSpec().ParseYAML(yaml, nil)
	require.NoError(t, err)
	in, err := New(conf, res)
	require.NoError(t, err)
	return in
}

func connect(t *testing.T, in *Input) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, in.Connect(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = in.Close(ctx)
	})
}

// readBatch reads one batch, failing the test after timeout.
func readBatch(t *testing.T, in *Input, timeout time.Duration) (service.MessageBatch, service.AckFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b, ack, err := in.ReadBatch(ctx)
	require.NoError(t, err)
	return b, ack
}

// tryReadBatch reads one batch or returns nil once timeout passes.
func tryReadBatch(t *testing.T, in *Input, timeout time.Duration) (service.MessageBatch, service.AckFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b, ack, err := in.ReadBatch(ctx)
	if err != nil {
		require.ErrorIs(t, err, context.DeadlineExceeded)
		return nil, nil
	}
	return b, ack
}

// rec is the part of a delivered message that tests look at.
type rec struct {
	value     string
	partition int32
	offset    int64
}

func metaInt(t *testing.T, m *service.Message, key string) int64 {
	t.Helper()
	v, ok := m.MetaGet(key)
	require.True(t, ok, "metadata %s missing", key)
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err)
	return n
}

func toRecs(t *testing.T, b service.MessageBatch) []rec {
	t.Helper()
	out := make([]rec, 0, len(b))
	for _, m := range b {
		v, err := m.AsBytes()
		require.NoError(t, err)
		out = append(out, rec{
			value:     string(v),
			partition: int32(metaInt(t, m, consumer.MetaPartition)),
			offset:    metaInt(t, m, consumer.MetaOffset),
		})
	}
	return out
}

// producer returns a client producing with manual partitioning; txnID makes
// it transactional.
func producer(t *testing.T, c *kfake.Cluster, txnID string) *kgo.Client {
	t.Helper()
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID))
	}
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func produce(t *testing.T, cl *kgo.Client, partition int32, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, 0, len(values))
	for _, v := range values {
		recs = append(recs, &kgo.Record{Partition: partition, Value: []byte(v)})
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

// produceTxn writes values to one partition in one producer transaction and
// commits or aborts it.
func produceTxn(t *testing.T, cl *kgo.Client, partition int32, commit bool, values ...string) {
	t.Helper()
	require.NoError(t, cl.BeginTransaction())
	produce(t, cl, partition, values...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
}

// awaitCommitPass waits until a commit of in that began after the call ran
// to its end (two more passes: one may be under way at the call): what the
// input commits because of what happened before the call, it has
// committed by then.
func awaitCommitPass(t *testing.T, in *Input) {
	t.Helper()
	n := in.CommitPasses()
	testkit.WaitFor(t, 10*time.Second, func() bool { return in.CommitPasses() >= n+2 }, "a commit pass of the input")
}

// committedOffsets returns the group's committed offset per partition.
func committedOffsets(t *testing.T, c *kfake.Cluster, group string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
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

func values(rs []rec) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.value)
	}
	return out
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}
