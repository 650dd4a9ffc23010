package kafka_txn

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
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

// consume reads the topic from the start with the isolation level through
// the end its partitions have when it is called — the last stable offset
// under read_committed, the high watermark otherwise — and returns the
// data records in fetch order. The transaction markers are read too (and
// not returned), so that a partition whose last entry is a marker is known
// to be read through. (A partition would never be, under read_committed,
// if its last stable entry were a record of an aborted transaction whose
// marker came after an open transaction's first record: no test here
// interleaves two producers' transactions.)
func consume(t *testing.T, c *kafkakit.Cluster, readCommitted bool) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer adm.Close()
	iso, list := kgo.ReadUncommitted(), kadm.NewClient(adm).ListEndOffsets
	if readCommitted {
		iso, list = kgo.ReadCommitted(), kadm.NewClient(adm).ListCommittedOffsets
	}
	ends, err := list(ctx, testTopic)
	require.NoError(t, err)
	require.NoError(t, ends.Error())

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(testTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(50*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	// next is, per partition, the offset after the last entry read.
	next := map[int32]int64{}
	readThrough := func() bool {
		through := true
		ends.Each(func(o kadm.ListedOffset) { through = through && next[o.Partition] >= o.Offset })
		return through
	}
	var out []*kgo.Record
	for !readThrough() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: read up to %v of the ends %v: %v", testTopic, next, ends.Offsets(), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
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

// replyLosingDialer loses the reply of the first produce request once it
// is armed: the reply is read off the connection (the broker answers after
// it applied the request) and dropped, and the connection is closed where
// the client waits for it ("applied, reply lost").
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
	// correlation is the correlation id of the produce request whose reply
	// is lost.
	correlation atomic.Int32
}

func (c *replyLosingConn) Write(p []byte) (int, error) {
	// A request is a 4-byte length, the 2-byte API key (0 is Produce), the
	// 2-byte version and the 4-byte correlation id.
	if len(p) >= 12 && p[4] == 0 && p[5] == 0 && c.d.armed.CompareAndSwap(true, false) {
		c.correlation.Store(int32(binary.BigEndian.Uint32(p[8:12])))
		c.produce.Store(true)
	}
	return c.Conn.Write(p)
}

func (c *replyLosingConn) Read(p []byte) (int, error) {
	if !c.produce.Load() {
		return c.Conn.Read(p)
	}
	// A reply is a 4-byte length, then the 4-byte correlation id of its
	// request. The replies up to the lost one's are read and dropped.
	for {
		var head [8]byte
		if _, err := io.ReadFull(c.Conn, head[:]); err != nil {
			return 0, err
		}
		size := int64(binary.BigEndian.Uint32(head[:4]))
		if _, err := io.CopyN(io.Discard, c.Conn, size-4); err != nil {
			return 0, err
		}
		if int32(binary.BigEndian.Uint32(head[4:])) == c.correlation.Load() {
			break
		}
	}
	c.d.dropped.Add(1)
	_ = c.Conn.Close()
	return 0, net.ErrClosed
}
