package kafka_txn

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	kafkakit "github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
)

const testTopic = "out"

func newCluster(t testing.TB, brokers int, partitions int32) *kafkakit.Cluster {
	t.Helper()
	return kafkakit.New(t, kafkakit.Brokers(brokers), kafkakit.Topic(testTopic, partitions, nil))
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testlog.Buffer

// testOutput builds and connects an output from YAML (seed_brokers and topic
// are added); extra kgo options go to its client.
func testOutput(t *testing.T, c *kafkakit.Cluster, yaml string, extra ...kgo.Opt) (*Output, *syncBuffer) {
	t.Helper()
	full := fmt.Sprintf("seed_brokers: [ %q ]\ntopic: %s\ntimeout: 5s\n%s", strings.Join(c.ListenAddrs(), ","), testTopic, yaml)
	conf, err := ConfigSpec().ParseYAML(full, nil)
	require.NoError(t, err)
	oc, err := outputConfigFromParsed(conf)
	require.NoError(t, err)
	logs := &syncBuffer{}
	res := service.MockResources(service.MockResourcesOptUseLogger(service.NewLoggerFromSlog(
		slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))))
	o := newOutput(oc, res, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, o.Connect(ctx))
	t.Cleanup(func() { _ = o.Close(context.Background()) })
	return o, logs
}

func write(t *testing.T, o *Output, b service.MessageBatch) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return o.WriteBatch(ctx, b)
}

// batchOf builds a batch of messages with the given bodies; meta is set on
// every message.
func batchOf(bodies []string, meta map[string]string) service.MessageBatch {
	b := make(service.MessageBatch, 0, len(bodies))
	for _, v := range bodies {
		m := service.NewMessage([]byte(v))
		for k, mv := range meta {
			m.MetaSetMut(k, mv)
		}
		b = append(b, m)
	}
	return b
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return out
}

// consume reads the topic from the start with the isolation level until no
// record arrives for quiet, and returns the records in fetch order.
func consume(t *testing.T, c *kafkakit.Cluster, readCommitted bool, quiet time.Duration) []*kgo.Record {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if readCommitted {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(testTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(50*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	var out []*kgo.Record
	for {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r); n++ })
		if n == 0 {
			return out
		}
	}
}

// byPartition groups record values per partition, in offset order.
func byPartition(recs []*kgo.Record) map[int32][]string {
	sorted := append([]*kgo.Record(nil), recs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Partition != sorted[j].Partition {
			return sorted[i].Partition < sorted[j].Partition
		}
		return sorted[i].Offset < sorted[j].Offset
	})
	out := map[int32][]string{}
	for _, r := range sorted {
		out[r.Partition] = append(out[r.Partition], string(r.Value))
	}
	return out
}

// replyLosingDialer loses the reply of the first produce request once the
// broker has had time to apply it: the connection is closed where the
// client waits for the answer ("applied, reply lost").
type replyLosingDialer struct {
	armed   atomic.Bool
	dropped atomic.Int32
}

func (d *replyLosingDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &replyLosingConn{Conn: conn, d: d}, nil
}

type replyLosingConn struct {
	net.Conn
	d       *replyLosingDialer
	produce atomic.Bool
}

func (c *replyLosingConn) Write(p []byte) (int, error) {
	// A request is a 4-byte length, then the 2-byte API key: 0 is Produce.
	if len(p) >= 6 && p[4] == 0 && p[5] == 0 && c.d.armed.CompareAndSwap(true, false) {
		c.produce.Store(true)
	}
	return c.Conn.Write(p)
}

func (c *replyLosingConn) Read(p []byte) (int, error) {
	if c.produce.Load() {
		time.Sleep(200 * time.Millisecond) // the broker applies the request
		c.d.dropped.Add(1)
		_ = c.Conn.Close()
		return 0, net.ErrClosed
	}
	return c.Conn.Read(p)
}
