package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/emulator"

	"github.com/starrocks-txn/benthos-starrocks/testkit/emurig"
	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
)

// runExample runs one examples/*.yaml pipeline to the end of its input file
// against a fresh emulator and returns the emulator.
func runExample(t *testing.T, file string, vars map[string]string) *emulator.Emulator {
	t.Helper()
	em := emurig.Start(t, emulator.Config{Schema: emurig.ExampleSchema(t), MySQLAddr: "127.0.0.1:0"})

	conf, err := os.ReadFile(filepath.Join("examples", file))
	require.NoError(t, err)
	runConf(t, em, string(conf), vars)
	return em
}

// runConf runs a pipeline config against em until its input ends.
func runConf(t *testing.T, em *emulator.Emulator, conf string, vars map[string]string) {
	t.Helper()
	vars["STARROCKS_LOAD_URL"] = em.FEURL()
	vars["STARROCKS_MYSQL_ADDRESS"] = em.MySQLAddr()
	b := service.GlobalEnvironment().NewStreamBuilder()
	b.SetEnvVarLookupFunc(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	require.NoError(t, b.SetYAML(conf), "the example must lint cleanly")
	require.NoError(t, b.SetLoggerYAML("level: warn"))
	s, err := b.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, s.Run(ctx), "the pipeline must drain its file and stop by itself")
}

func rows(t *testing.T, em *emulator.Emulator, table string, cols ...string) []string {
	t.Helper()
	rs, err := em.Store().Rows("test", table)
	require.NoError(t, err)
	var out []string
	for _, r := range rs {
		var parts []string
		for _, c := range cols {
			parts = append(parts, fmt.Sprint(r[c]))
		}
		out = append(out, strings.Join(parts, "|"))
	}
	sort.Strings(out)
	return out
}

func TestExampleEnvelopeFile(t *testing.T) {
	em := runExample(t, "envelope_file.yaml", map[string]string{"INPUT_FILE": "examples/data/orders.envelope.jsonl"})
	assert.Equal(t, []string{"1|20|shipped", "2|199|created"}, rows(t, em, "orders", "order_id", "total_amount", "order_status"))
	// t-3 deleted item 2 of order 1 in the same transaction that changed the total.
	assert.Equal(t, []string{"1|1|keyboard", "2|1|monitor"}, rows(t, em, "order_items", "order_id", "item_id", "product"))
}

func TestExampleMaxwellFile(t *testing.T) {
	em := runExample(t, "maxwell_file.yaml", map[string]string{"INPUT_FILE": "examples/data/orders.maxwell.jsonl"})
	assert.Equal(t, []string{"100|paid"}, rows(t, em, "orders", "order_id", "order_status"))
	assert.Equal(t, []string{"100|1|webcam", "100|2|gift wrap"}, rows(t, em, "order_items", "order_id", "item_id", "product"))
}

func TestExampleDeadLetter(t *testing.T) {
	dl := filepath.Join(t.TempDir(), "dead_letter.jsonl")
	em := runExample(t, "dead_letter.yaml", map[string]string{
		"INPUT_FILE": "examples/data/poisoned.envelope.jsonl", "DEAD_LETTER_FILE": dl,
	})
	// The neighbours of the poisoned transaction commit; nothing of it does.
	assert.Equal(t, []string{"10", "12"}, rows(t, em, "orders", "order_id"))
	assert.Equal(t, []string{"10|1", "12|1"}, rows(t, em, "order_items", "order_id", "item_id"))

	raw, err := os.ReadFile(dl)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 2, "both rows of bad-2 reach the dead letter, whole and in order: %s", raw)
	var first, second map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	assert.Equal(t, "bad-2", first["txn"])
	assert.Equal(t, "orders", first["table"])
	assert.Equal(t, "order_itemz", second["table"])
	assert.Contains(t, fmt.Sprint(second["reason"]), "order_itemz", "the reason names the missing table")
}

// A relative path in a config is taken from the working directory, as
// everywhere in Benthos, not from the config file's directory: the
// examples' default paths name their data from the repository root, where
// the README runs them.
func TestExampleRelativePathsAreFromTheWorkingDirectory(t *testing.T) {
	conf, err := os.ReadFile("examples/envelope_file.yaml")
	require.NoError(t, err)
	require.Contains(t, string(conf), "${INPUT_FILE:./examples/data/orders.envelope.jsonl}")
	schema := emurig.ExampleSchema(t)
	start := func() *emulator.Emulator {
		return emurig.Start(t, emulator.Config{Schema: schema, MySQLAddr: "127.0.0.1:0"})
	}

	// From the repository root the default path finds the data.
	em := start()
	runConf(t, em, string(conf), map[string]string{})
	assert.Equal(t, []string{"1|20|shipped", "2|199|created"}, rows(t, em, "orders", "order_id", "total_amount", "order_status"))

	// From the config file's own directory the same path names no file:
	// the input says so, and nothing is loaded.
	t.Chdir("examples")
	em = start()
	var logs syncBuffer
	b := service.GlobalEnvironment().NewStreamBuilder()
	b.SetEnvVarLookupFunc(func(k string) (string, bool) {
		switch k {
		case "STARROCKS_LOAD_URL":
			return em.FEURL(), true
		case "STARROCKS_MYSQL_ADDRESS":
			return em.MySQLAddr(), true
		}
		return "", false
	})
	require.NoError(t, b.SetYAML(string(conf)))
	b.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	s, err := b.Build()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "open ./examples/data/orders.envelope.jsonl: no such file or directory")
	}, 30*time.Second, 20*time.Millisecond, "the input names the path it cannot open")
	require.NoError(t, s.StopWithin(10*time.Second))
	<-done
	assert.Empty(t, rows(t, em, "orders", "order_id"), "./examples/data/… is not looked up beside the config file")
}

// syncBuffer is a log sink the stream writes from its goroutines.
type syncBuffer = testlog.Buffer

// TestExampleDeadLetterKafka runs examples/dead_letter_kafka.yaml against
// kfake: the poisoned source transaction arrives in the dead-letter topic
// whole, in order, as one Kafka transaction, with its reason as a header.
func TestExampleDeadLetterKafka(t *testing.T) {
	const topic = "starrocks.dead_letter"
	cluster := kafka.New(t, kafka.Topic(topic, 3, nil))
	em := runExample(t, "dead_letter_kafka.yaml", map[string]string{
		"INPUT_FILE":    "examples/data/poisoned.envelope.jsonl",
		"KAFKA_BROKERS": strings.Join(cluster.Brokers(), ","),
	})
	assert.Equal(t, []string{"10", "12"}, rows(t, em, "orders", "order_id"), "the neighbours commit")
	assert.Equal(t, []string{"10|1", "12|1"}, rows(t, em, "order_items", "order_id", "item_id"))

	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.Brokers()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	require.NoError(t, err)
	defer cl.Close()
	// The pipeline has stopped: everything it dead-lettered is committed.
	var recs []*kgo.Record
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r); n++ })
		if n == 0 && len(recs) > 0 {
			break
		}
	}
	header := func(r *kgo.Record, key string) string {
		for _, h := range r.Headers {
			if h.Key == key {
				return string(h.Value)
			}
		}
		return ""
	}
	require.Len(t, recs, 3, "both rows and the END marker of bad-2, nothing else")
	var tables, values []string
	for _, r := range recs {
		assert.Equal(t, "bad-2", header(r, "starrocks_txn_id"))
		assert.Contains(t, header(r, "starrocks_dead_letter_reason"), "order_itemz", "the reason names the missing table")
		assert.Equal(t, recs[0].Partition, r.Partition, "one partition, so in order")
		assert.True(t, r.Attrs.IsTransactional(), "written in a Kafka transaction")
		tables = append(tables, header(r, "starrocks_table"))
		values = append(values, string(r.Value))
	}
	for i := 1; i < len(recs); i++ {
		assert.Less(t, recs[i-1].Offset, recs[i].Offset)
	}
	assert.Equal(t, []string{"orders", "order_itemz", ""}, tables, "in source order")
	assert.JSONEq(t, `{"order_id":11,"customer_id":2,"total_amount":"9.00","order_status":"created","__op":0}`, values[0])
	assert.JSONEq(t, `{"order_id":11,"item_id":1,"product":"dock","quantity":1,"price":"9.00","__op":0}`, values[1])
	assert.Empty(t, values[2], "the END marker has no row")
	assert.Equal(t, "true", header(recs[2], "starrocks_txn_end"), "the END marker closes the transaction")
	assert.Equal(t, "true", header(recs[2], "starrocks_marker"))
}
