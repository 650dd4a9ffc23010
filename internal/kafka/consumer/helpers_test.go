package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
)

const testTopic = "cdc"

// newCluster starts an in-process kfake cluster whose groups accept the
// short session timeouts the tests use.
func newCluster(t testing.TB, partitions int32) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, testTopic),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// testSpec is a consumer input's spec: the connection fields, topics and
// the group fields.
func testSpec() *service.ConfigSpec {
	return service.NewConfigSpec().Fields(append([]*service.ConfigField{
		kafka.SeedBrokersField(),
		TopicsField("Topics.", []string{"t"}),
	}, append(GroupFields(), kafka.ClientIDField(), kafka.TLSField(), kafka.SASLField())...)...)
}

// testYAML is a config with timings short enough for tests; extra is
// appended verbatim.
func testYAML(c *kfake.Cluster, group, extra string) string {
	return fmt.Sprintf(`
seed_brokers: [ %q ]
topics: [ %q ]
consumer_group: %q
commit_period: 50ms
revoke_timeout: 2s
session_timeout: 1s
rebalance_timeout: 4s
heartbeat_interval: 100ms
fetch_max_wait: 100ms
%s`, strings.Join(c.ListenAddrs(), ","), testTopic, group, extra)
}

// world is a test's shell with its fake input, registry and logs.
type world struct {
	t       *testing.T
	cluster *kfake.Cluster
	c       *Consumer
	in      *fakeInput
	reg     *registry.Registry
	logs    *testlog.Buffer
}

// newWorld builds a shell over a fake input from yaml; adjust may change
// the shell's config.
func newWorld(t *testing.T, yaml string, adjust func(*Config)) *world {
	t.Helper()
	logs := &testlog.Buffer{}
	res := service.MockResources(service.MockResourcesOptUseLogger(
		service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))))
	conf, err := testSpec().ParseYAML(yaml, nil)
	require.NoError(t, err)
	sc, err := ConfigFromParsed(conf, "topics must name a topic")
	require.NoError(t, err)
	sc.Name = "test_input"
	sc.CheckTopics, sc.CheckField = sc.Topics, FieldTopics
	sc.Describe = fmt.Sprintf("topics %v", sc.Topics)
	m := res.Metrics()
	sc.Commits = kafka.CommitCounters{Commits: m.NewCounter("commits"), Errors: m.NewCounter("commit_errors")}
	if adjust != nil {
		adjust(&sc)
	}
	w := &world{t: t, reg: registry.Get(res), logs: logs}
	w.in = &fakeInput{parts: map[string]*fakePart{}}
	w.c = New(sc, res, &w.in.mu, w.in)
	w.in.shell = w.c
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	return w
}

// connect connects the shell and closes it at the end of the test.
func (w *world) connect() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(w.t, w.c.Connect(ctx))
	w.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.c.Close(ctx)
	})
}

// read reads one batch, failing the test after timeout.
func (w *world) read(timeout time.Duration) (service.MessageBatch, service.AckFunc) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b, ack, err := w.c.ReadBatch(ctx)
	require.NoError(w.t, err)
	return b, ack
}

// produce writes values to a partition of topic.
func produce(t *testing.T, c *kfake.Cluster, topic string, partition int32, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, 0, len(values))
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)})
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

// fakeInput is the smallest input on the shell: one output partition per
// Kafka partition (<topic>/<partition>), every fetched record delivered in
// one batch, the offset after the acknowledged prefix committed.
type fakeInput struct {
	shell *Consumer

	mu      sync.Mutex
	cl      *kgo.Client
	parts   map[string]*fakePart
	assigns int
	drops   [][]string
	stopped [][]string
	// leaseAfterDrop is the registry's lease of each dropped partition
	// once the shell's release ended, before a new assignment can claim
	// the partition again.
	leaseAfterDrop map[string]leaseState
}

// leaseState is a partition's lease in the registry (registry Leased).
type leaseState struct {
	ok    bool
	until time.Time
}

type fakePart struct {
	tp        kafka.TopicPartition
	epoch     uint64
	queue     []*kgo.Record
	acked     int64
	delivered time.Time
	releasing bool
	committed int64
}

func (f *fakeInput) StartLocked(cl *kgo.Client) func(context.Context) {
	f.cl = cl
	return nil
}

func (f *fakeInput) Fetched(fetches kgo.Fetches) func() {
	return func() {
		fetches.EachRecord(func(r *kgo.Record) {
			if p := f.parts[kafka.TopicPartition{Topic: r.Topic, Partition: r.Partition}.String()]; p != nil && !p.releasing {
				p.queue = append(p.queue, r)
			}
		})
	}
}

func (f *fakeInput) NextBatchLocked(context.Context) (service.MessageBatch, service.AckFunc, time.Duration) {
	var batch service.MessageBatch
	var done []func()
	for _, id := range f.sortedIDs() {
		p := f.parts[id]
		if p.releasing || len(p.queue) == 0 {
			continue
		}
		for _, r := range p.queue {
			msg := service.NewMessage(r.Value)
			msg.MetaSetMut(MetaTopic, r.Topic)
			msg.MetaSetMut(MetaPartition, int(r.Partition))
			msg.MetaSetMut(MetaOffset, int(r.Offset))
			batch = append(batch, msg)
		}
		last := p.queue[len(p.queue)-1].Offset
		p.queue, p.delivered = nil, time.Now()
		done = append(done, func() {
			if !p.releasing && last+1 > p.acked {
				p.acked = last + 1
			}
		})
	}
	if len(batch) == 0 {
		return nil, nil, 0
	}
	return batch, func(context.Context, error) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, d := range done {
			d()
		}
		return nil
	}, 0
}

func (f *fakeInput) Assign(_ context.Context, assigned map[string][]int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.assigns++
	for topic, parts := range assigned {
		for _, p := range parts {
			tp := kafka.TopicPartition{Topic: topic, Partition: p}
			if f.parts[tp.String()] == nil {
				f.parts[tp.String()] = &fakePart{tp: tp, epoch: f.shell.ClaimLocked(tp.String()), committed: -1}
			}
		}
	}
	f.shell.SignalLocked()
}

func (f *fakeInput) AdjustOffsets(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	return offsets, nil
}

func (f *fakeInput) StopLocked(tps map[string][]int32, _ bool) ([]string, time.Time) {
	var ids []string
	var last time.Time
	for topic, parts := range tps {
		for _, p := range parts {
			id := kafka.TopicPartition{Topic: topic, Partition: p}.String()
			if fp := f.parts[id]; fp != nil {
				fp.releasing = true
				ids = append(ids, id)
				if fp.delivered.After(last) {
					last = fp.delivered
				}
			}
		}
	}
	sort.Strings(ids)
	f.stopped = append(f.stopped, ids)
	return ids, last
}

func (f *fakeInput) DropLocked(ids []string, _ bool) func() {
	for _, id := range ids {
		delete(f.parts, id)
	}
	f.drops = append(f.drops, ids)
	return func() {
		// The shell's release is over (franz-go assigns nothing before
		// its callback returned): the leases it left.
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.leaseAfterDrop == nil {
			f.leaseAfterDrop = map[string]leaseState{}
		}
		for _, id := range ids {
			ok, until := f.shell.reg.Leased(id, time.Now())
			f.leaseAfterDrop[id] = leaseState{ok, until}
		}
	}
}

func (f *fakeInput) CommitLocked(ids []string) (map[kafka.TopicPartition]int64, func(map[kafka.TopicPartition]int64)) {
	offsets := map[kafka.TopicPartition]int64{}
	for id, p := range f.parts {
		if (ids == nil && !p.releasing) || contains(ids, id) {
			if p.acked > 0 {
				offsets[p.tp] = p.acked
			}
		}
	}
	return offsets, nil
}

func (f *fakeInput) CommittedLocked(id string, offset int64) {
	if p := f.parts[id]; p != nil {
		p.committed = offset
	}
}

func (f *fakeInput) Closed(context.Context) {}

// held are the partitions the input holds and is not releasing.
func (f *fakeInput) held() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, id := range f.sortedIDs() {
		if !f.parts[id].releasing {
			out = append(out, id)
		}
	}
	return out
}

// dropped reports whether a release dropped partitions.
func (f *fakeInput) dropped() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.drops) > 0
}

// leaseAfter is the lease a release left to id, once it ended (ok false
// while no release of id ended).
func (f *fakeInput) leaseAfter(id string) (leaseState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.leaseAfterDrop[id]
	return l, ok
}

// generation is how many assignments franz-go handed over.
func (f *fakeInput) generation() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.assigns
}

func (f *fakeInput) sortedIDs() []string {
	ids := make([]string, 0, len(f.parts))
	for id := range f.parts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// fakeFencer records the partitions the shell fences.
type fakeFencer struct {
	mu    sync.Mutex
	calls []string
	at    map[string]time.Time
}

func (f *fakeFencer) fence(_ context.Context, partition string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, partition)
	if f.at == nil {
		f.at = map[string]time.Time{}
	}
	f.at[partition] = time.Now()
	return nil
}

func (f *fakeFencer) fenced() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]string(nil), f.calls...)
	sort.Strings(out)
	return out
}

func (f *fakeFencer) fencedAt(id string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at[id]
}
