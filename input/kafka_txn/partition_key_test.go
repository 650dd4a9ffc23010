package kafka_txn

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/starrocks-txn/benthos-starrocks/emulator"

	_ "github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn"
	_ "github.com/starrocks-txn/benthos-starrocks/processor/txn_assembler"
)

// emulatorStartMu serialises emulator starts (go-mysql-server's engine
// constructor writes process-global state).
var emulatorStartMu sync.Mutex

func startEmulator(t *testing.T) *emulator.Emulator {
	t.Helper()
	schema, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)
	emulatorStartMu.Lock()
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", Schema: string(schema), ReaperInterval: 50 * time.Millisecond})
	emulatorStartMu.Unlock()
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// envelopeTxn is one source transaction in the envelope format: one order
// row between TXN_BEGIN and TXN_END.
func envelopeTxn(id string, orderID int) []string {
	return []string{
		fmt.Sprintf(`{"txnId":%q,"type":"TXN_BEGIN"}`, id),
		fmt.Sprintf(`{"txnId":%q,"type":"DATA","database":"test","table":"orders","json":{"order_id":%d,"customer_id":1,"total_amount":"1.00","order_status":"created"}}`, id, orderID),
		fmt.Sprintf(`{"txnId":%q,"type":"TXN_END"}`, id),
	}
}

// runKeyPipeline runs kafka_txn → txn_assembler [→ mapping] → starrocks_txn
// until two source transactions per partition are visible in the emulator,
// then calls check, with the stream's input, while the stream still runs.
func runKeyPipeline(t *testing.T, group, mapping string, check func(c *kfake.Cluster, in *Input, logs *syncBuffer, m *captureMetrics)) {
	em := startEmulator(t)
	c := newCluster(t, 2)
	p := producer(t, c, "key-"+group)
	for part := range int32(2) {
		for i := range 2 {
			produceTxn(t, p, part, true, envelopeTxn(fmt.Sprintf("p%d-t%d", part, i), int(part)*100+i)...)
		}
	}

	metrics := &captureMetrics{values: map[string]int64{}}
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterMetricsExporter("capture", service.NewConfigSpec(),
		func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) { return metrics, nil }))
	// The input is kafka_txn under another name, whose constructor hands
	// the test the instance the stream runs.
	const probe = "kafka_txn_probe"
	var in *Input
	require.NoError(t, env.RegisterBatchInput(probe, ConfigSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchInput, error) {
		var err error
		in, err = New(conf, mgr)
		return in, err
	}))
	sb := env.NewStreamBuilder()
	logs := &syncBuffer{}
	sb.SetLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	procs := "    - txn_assembler:\n        format: envelope\n"
	if mapping != "" {
		procs += "    - mapping: " + mapping + "\n"
	}
	require.NoError(t, sb.SetYAML(fmt.Sprintf(`
input:
  %s:
%s  processors:
%s
output:
  starrocks_txn:
    schema_evolution: ignore
    load_urls: [ %q ]
    username: root
    commit_interval: 200ms
`, probe, "    "+strings.ReplaceAll(strings.TrimSpace(testYAML(c, group, "batching:\n  check: this.type == \"TXN_END\"\n  period: 20ms\n")), "\n", "\n    ")+"\n", procs, em.FEURL())))
	require.NoError(t, sb.SetMetricsYAML("capture: {}"))
	stream, err := sb.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx) }()
	defer func() {
		cancel()
		_ = stream.StopWithin(10 * time.Second)
		<-done
	}()
	require.Eventually(t, func() bool { return em.Counters().Rows >= 4 }, 20*time.Second, 20*time.Millisecond,
		"every source transaction committed; logs:\n%s", logs.String())
	check(c, in, logs, metrics)
}

// TestPartitionKeyThatMatchesNoKafkaPartitionIsReported: a mapping that
// changes starrocks_partition makes the output publish committed offsets
// and take fences under keys the input never assigned. The input says so
// once per key, naming both keys, and counts it; with the key left alone
// offsets are committed and nothing is reported.
func TestPartitionKeyThatMatchesNoKafkaPartitionIsReported(t *testing.T) {
	t.Run("a mapping renames the partition", func(t *testing.T) {
		const group = "g-key-wrong"
		runKeyPipeline(t, group, `'meta starrocks_partition = "shop-" + @kafka_partition.string()'`, func(c *kfake.Cluster, in *Input, logs *syncBuffer, metrics *captureMetrics) {
			require.Eventually(t, func() bool {
				n, _ := metrics.get("kafka_txn_unmatched_partition_keys{,root.input}")
				return n == 2
			}, 10*time.Second, 20*time.Millisecond, "metrics: %v", metrics.snapshot())
			// A commit after the output's commits were reported: what the
			// output published never reached the input's partitions.
			awaitCommitPass(t, in)
			assert.Empty(t, committedOffsets(t, c, group), "the input committed no offsets")
			out := logs.String()
			for _, key := range []string{"shop-0", "shop-1"} {
				// The text handler escapes the quotes.
				want := fmt.Sprintf(`Partition key \"%s\" of the metadata contract (starrocks_partition) matches none of the Kafka partitions the input assigned (cdc/0, cdc/1)`, key)
				assert.Equal(t, 1, strings.Count(out, want), "one warning for %s in:\n%s", key, out)
			}
			assert.Contains(t, out, "leave the txn_assembler's partition field unset and do not change starrocks_partition in a mapping")
		})
	})

	t.Run("the default key", func(t *testing.T) {
		const group = "g-key-right"
		runKeyPipeline(t, group, "", func(c *kfake.Cluster, _ *Input, logs *syncBuffer, metrics *captureMetrics) {
			// Two transactions of three records and a marker each: the END
			// of the second is offset 6, its marker 7.
			waitCommittedOffsets(t, c, group, map[int32]int64{0: 7, 1: 7})
			assert.NotContains(t, logs.String(), "matches none of the Kafka partitions")
			n, _ := metrics.get("kafka_txn_unmatched_partition_keys{,root.input}")
			assert.Zero(t, n)
		})
	})
}
