package debezium_txn

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/exitstatus"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// committedOffsets reads what the group committed.
func (w *kworld) committedOffsets(group string) map[tp]int64 {
	w.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.cluster.ListenAddrs()...))
	require.NoError(w.t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	require.NoError(w.t, err)
	out := map[tp]int64{}
	resp.Each(func(o kadm.OffsetResponse) { out[tp{o.Topic, o.Partition}] = o.At })
	return out
}

func (w *kworld) endOffsets() map[tp]int64 {
	w.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.cluster.ListenAddrs()...))
	require.NoError(w.t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	topics := append(w.src.DataTopics(), w.src.TransactionTopic())
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	require.NoError(w.t, err)
	out := map[tp]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[tp{o.Topic, o.Partition}] = o.Offset })
	return out
}

// The input against kfake, with and without schemas: the snapshot, then
// transactions with large ones over every topic and re-sent copies, arrive
// whole, each once, with a dense sequence and increasing source offsets; the
// tables they build equal the source's; once everything is acknowledged the
// group's offsets reach every partition's end.
func TestInputLoadsDebeziumTraffic(t *testing.T) {
	for _, schemas := range []bool{false, true} {
		t.Run(map[bool]string{false: "schemaless", true: "schemas"}[schemas], func(t *testing.T) {
			w := newKWorld(t, workload.DebeziumOptions{Partitions: 3, Schemas: schemas, SnapshotOrders: 15,
				LargeEvery: 9, LargeSize: 6, ResendRatio: 0.2, Seed: 21})
			w.produce(150)
			in, _ := w.newInput("g-load", "")
			s := newSink(t)
			readUntil(t, in, s, 30*time.Second, w.converged(s))
			for id, n := range s.txns {
				if len(id) > 9 && id[:9] == "snapshot:" {
					continue
				}
				require.Equal(t, 1, n, "transaction %s emitted once", id)
			}
			assert.Equal(t, 150, len(s.txns)-int(w.prod.Stats.SnapshotRows.Load()))
			ends := w.endOffsets()
			require.Eventually(t, func() bool {
				got := w.committedOffsets("g-load")
				for p, e := range ends {
					if got[p] != e {
						return false
					}
				}
				return true
			}, 10*time.Second, 20*time.Millisecond, "the floors reach every partition's end")
		})
	}
}

// partitionTransactionTopic gives w's transaction topic a second partition.
func partitionTransactionTopic(t *testing.T, w *kworld) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.cluster.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).CreatePartitions(ctx, 1, w.src.TransactionTopic())
	require.NoError(t, err)
}

// A transaction topic with more than one partition is refused at Connect,
// for good: no retry can fix it, so the input ends (service.ErrEndOfInput)
// and records the failure for the exit status.
func TestInputRefusesPartitionedTransactionTopic(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Prefix: "p2"})
	partitionTransactionTopic(t, w)
	conf, err := ConfigSpec().ParseYAML(w.yaml("g", ""), nil)
	require.NoError(t, err)
	in, err := New(conf, service.MockResources())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = in.Connect(ctx)
	require.ErrorContains(t, err, "has 2 partitions")
	require.ErrorContains(t, err, "commit order")
	require.ErrorIs(t, err, service.ErrEndOfInput, "no retry can fix it")
	require.Error(t, exitstatus.Take(), "the binary exits with status 1")
	require.ErrorIs(t, in.Connect(ctx), service.ErrEndOfInput, "a later Connect does not try again")
}

// In a stream, the partitioned transaction topic stops the pipeline at once
// (before, Benthos retried Connect every second for ever) with a log line
// saying why, and the binary's exit status is 1.
func TestPartitionedTransactionTopicStopsThePipeline(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Prefix: "p3"})
	partitionTransactionTopic(t, w)
	logs := &syncBuffer{}
	sb := service.NewStreamBuilder()
	sb.SetLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	indented := strings.ReplaceAll(strings.TrimPrefix(w.yaml("g-stop", ""), "\n"), "\n", "\n    ")
	require.NoError(t, sb.SetYAML("input:\n  debezium_txn:\n    "+indented+"\noutput:\n  drop: {}\n"))
	stream, err := sb.Build()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- stream.Run(context.Background()) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = stream.StopWithin(time.Second)
		t.Fatalf("the stream did not stop; logs:\n%s", logs.String())
	}
	assert.Contains(t, logs.String(), "The debezium_txn input stops, and the pipeline with it")
	assert.Contains(t, logs.String(), "has 2 partitions")
	assert.Equal(t, 1, strings.Count(logs.String(), "has 2 partitions"), "Connect is not retried")
	assert.Error(t, exitstatus.Take(), "the binary exits with status 1")
}
