package debezium_txn

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// kworld is one test's Kafka with Debezium traffic.
type kworld struct {
	t       *testing.T
	cluster *kfake.Cluster
	src     *workload.DebeziumSource
	model   *workload.Model
	prod    *workload.DebeziumProducer
}

func newKWorld(t *testing.T, opts workload.DebeziumOptions) *kworld {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	src := workload.NewDebeziumSource(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, workload.CreateDebeziumTopics(ctx, c.ListenAddrs(), src))
	w := &kworld{t: t, cluster: c, src: src, model: workload.NewModel()}
	w.prod, err = workload.NewDebeziumProducer(workload.DebeziumProducerOptions{Brokers: c.ListenAddrs()}, src, w.model)
	require.NoError(t, err)
	t.Cleanup(w.prod.Close)
	return w
}

func (w *kworld) produce(n int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if w.prod.Stats.Txns.Load() == 0 && w.prod.Stats.SnapshotRows.Load() == 0 {
		require.NoError(w.t, w.prod.Snapshot(ctx))
	}
	require.NoError(w.t, w.prod.Produce(ctx, int(w.prod.Stats.Txns.Load())+n))
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testlog.Buffer

// yaml is a config with short test timings; extra is appended.
func (w *kworld) yaml(group, extra string) string {
	return fmt.Sprintf(`
seed_brokers: [ %q ]
topics: [ %s ]
transaction_topic: %q
consumer_group: %q
commit_period: 50ms
revoke_timeout: 3s
session_timeout: 4s
rebalance_timeout: 8s
heartbeat_interval: 200ms
fetch_max_wait: 50ms
missing_events_timeout: 2s
%s`, strings.Join(w.cluster.ListenAddrs(), ","), strings.Join(w.src.DataTopics(), ", "), w.src.TransactionTopic(), group, extra)
}

func (w *kworld) newInput(group, extra string) (*Input, *syncBuffer) {
	w.t.Helper()
	return w.newInputWith(group, extra, nil)
}

// newInputWith is newInput with setup run on the input's registry before
// it connects (an output's fencer and progress reader).
func (w *kworld) newInputWith(group, extra string, setup func(*registry.Registry)) (*Input, *syncBuffer) {
	w.t.Helper()
	logs := &syncBuffer{}
	res := service.MockResources(service.MockResourcesOptUseLogger(
		service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))))
	conf, err := ConfigSpec().ParseYAML(w.yaml(group, extra), nil)
	require.NoError(w.t, err)
	in, err := New(conf, res)
	require.NoError(w.t, err)
	if setup != nil {
		setup(registry.Get(res))
	}
	w.t.Cleanup(func() {
		if w.t.Failed() {
			w.t.Logf("input logs:\n%s", logs.String())
		}
		_ = in.Close(context.Background())
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(w.t, in.Connect(ctx))
	return in, logs
}

// sink applies what an input emits to a model and checks the contract:
// starrocks_seq dense from 1 per seq source, source offsets strictly
// increasing per starrocks_partition, each transaction ending with
// starrocks_txn_end, no transaction emitted twice.
type sink struct {
	t       *testing.T
	model   *workload.Model
	seq     map[string]int64
	offsets map[string]int64
	// epochs: a new assignment epoch of a partition starts its source
	// offsets over (the output's fence forgot the old ones).
	epochs map[string]uint64
	open   map[string]string // partition → transaction not yet ended
	txns   map[string]int
	rows   int
	// stale, when set, reports a message of a fenced or outdated
	// assignment epoch (registry.Epochs.Stale): its batch is dropped
	// whole, as an output drops what a fence caught; applied holds per
	// starrocks_partition the highest source offset applied, whatever
	// the epoch (an exactly_once output's progress).
	stale   func(partition string, epoch uint64) bool
	applied map[string]int64
	dropped int
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

func newSink(t *testing.T) *sink {
	return &sink{t: t, model: workload.NewModel(), seq: map[string]int64{}, offsets: map[string]int64{}, epochs: map[string]uint64{},
		open: map[string]string{}, txns: map[string]int{}, applied: map[string]int64{}}
}

func (s *sink) take(batch service.MessageBatch) {
	s.t.Helper()
	if s.dropStale(batch) {
		return
	}
	var changes []workload.Change
	for _, msg := range batch {
		m, err := contract.Read(msg)
		require.NoError(s.t, err)
		require.True(s.t, m.HasSeq && m.HasOffset && m.HasEpoch && m.Partition != "" && m.TxnID != "")
		require.Equal(s.t, s.seq[m.SeqSource]+1, m.Seq, "starrocks_seq is dense")
		s.seq[m.SeqSource] = m.Seq
		if e := s.epochs[m.Partition]; m.Epoch > e {
			s.epochs[m.Partition] = m.Epoch
			delete(s.offsets, m.Partition)
		} else {
			require.Equal(s.t, e, m.Epoch, "an older epoch of %s is never emitted again", m.Partition)
		}
		if last, ok := s.offsets[m.Partition]; ok {
			require.Greater(s.t, m.SourceOffset, last, "source offsets increase in %s", m.Partition)
		}
		s.offsets[m.Partition] = m.SourceOffset
		if cur, ok := s.applied[m.Partition]; !ok || m.SourceOffset > cur {
			s.applied[m.Partition] = m.SourceOffset
		}
		if open, ok := s.open[m.Partition]; ok {
			require.Equal(s.t, open, m.TxnID, "a transaction of %s is emitted whole before the next", m.Partition)
		}
		s.open[m.Partition] = m.TxnID
		if m.TxnEnd {
			delete(s.open, m.Partition)
			s.txns[m.TxnID]++
		}
		body, err := msg.AsBytes()
		require.NoError(s.t, err)
		var row workload.Row
		require.NoError(s.t, json.Unmarshal(body, &row))
		_, del := row["__op"]
		require.Equal(s.t, workload.Database, m.Database)
		changes = append(changes, workload.Change{Table: m.Table, Row: row, Delete: del})
		s.rows++
	}
	require.Empty(s.t, s.open, "a batch ends at a transaction boundary")
	s.model.Apply(workload.Txn{Changes: changes})
}

// dropStale drops a batch that holds a message of a stale epoch (only
// with stale set): nothing of it is applied; its sequence numbers are
// still taken, as they were handed out.
func (s *sink) dropStale(batch service.MessageBatch) bool {
	s.t.Helper()
	if s.stale == nil {
		return false
	}
	metas := make([]contract.Meta, 0, len(batch))
	stale := false
	for _, msg := range batch {
		m, err := contract.Read(msg)
		require.NoError(s.t, err)
		metas = append(metas, m)
		stale = stale || s.stale(m.Partition, m.Epoch)
	}
	if !stale {
		return false
	}
	for _, m := range metas {
		require.Equal(s.t, s.seq[m.SeqSource]+1, m.Seq, "starrocks_seq is dense")
		s.seq[m.SeqSource] = m.Seq
	}
	s.dropped++
	return true
}

// readUntil reads and acknowledges batches until done() or the timeout.
func readUntil(t *testing.T, in *Input, s *sink, within time.Duration, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !done() {
		require.True(t, time.Now().Before(deadline), "timed out reading")
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		batch, ack, err := in.ReadBatch(ctx)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			continue
		}
		s.take(batch)
		require.NoError(t, ack(context.Background(), nil))
	}
}

func (w *kworld) converged(s *sink) func() bool {
	want := w.model.Snapshot()
	return func() bool {
		got := s.model.Snapshot()
		return fmt.Sprint(got) == fmt.Sprint(want)
	}
}
