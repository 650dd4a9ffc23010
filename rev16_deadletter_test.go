package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
)

// A dead_letter kafka_txn with a batching policy lints clean; a count the
// poisoned transaction does not reach holds its write forever and the pipeline
// never drains (the docs only advise leaving batching unset). Also: one
// poisoned source transaction must be one Kafka transaction (consecutive
// offsets: each Kafka commit leaves a control record).
func TestRev16DeadLetterWithBatchingDrains(t *testing.T) {
	const topic = "starrocks.dead_letter"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	conf, err := os.ReadFile("examples/dead_letter_kafka.yaml")
	require.NoError(t, err)
	c := strings.Replace(string(conf), "        transactional_id:", "        batching: { count: 10 }\n        transactional_id:", 1)
	require.NotEqual(t, string(conf), c)
	schema, err := os.ReadFile("examples/schema.sql")
	require.NoError(t, err)
	em, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", Schema: string(schema)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = em.Close() })
	runConf(t, em, c, map[string]string{
		"INPUT_FILE":    "examples/data/poisoned.envelope.jsonl",
		"KAFKA_BROKERS": strings.Join(cluster.ListenAddrs(), ","),
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	require.NoError(t, err)
	defer cl.Close()
	var offs []int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && len(offs) < 3; {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { offs = append(offs, r.Offset) })
		cancel()
	}
	t.Logf("offsets %v", offs)
	require.Len(t, offs, 3)
	require.Equal(t, []int64{offs[0], offs[0] + 1, offs[0] + 2}, offs,
		"one poisoned source transaction must be one Kafka transaction (no control record between its records)")
}
