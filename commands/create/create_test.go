package create_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"gopkg.in/yaml.v3"

	"github.com/starrocks-txn/benthos-starrocks/commands/create"
	"github.com/starrocks-txn/benthos-starrocks/commands/lint"
	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/testkit/emurig"
	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"

	_ "github.com/starrocks-txn/benthos-starrocks/components"
)

// Two source transactions as envelope events, one Kafka record or stdin line
// each.
var events = []string{
	`{"partition":0,"txnId":"t-1","type":"TXN_BEGIN"}`,
	`{"partition":0,"txnId":"t-1","type":"DATA","database":"test","table":"orders","json":"{\"order_id\":1,\"customer_id\":42,\"total_amount\":\"30.00\",\"order_status\":\"created\"}"}`,
	`{"partition":0,"txnId":"t-1","type":"DATA","database":"test","table":"order_items","json":"{\"order_id\":1,\"item_id\":1,\"product\":\"keyboard\",\"quantity\":1,\"price\":\"30.00\"}"}`,
	`{"partition":0,"txnId":"t-1","type":"TXN_END"}`,
	`{"partition":0,"txnId":"t-2","type":"TXN_BEGIN"}`,
	`{"partition":0,"txnId":"t-2","type":"DATA","database":"test","table":"orders","json":"{\"order_id\":2,\"customer_id\":7,\"total_amount\":\"5.00\",\"order_status\":\"paid\"}"}`,
	`{"partition":0,"txnId":"t-2","type":"TXN_END"}`,
}

// generate runs `create` and sets only what it leaves for the user to fill
// in: the fields it marks "No default (required)". The HTTP server moves to a
// free local port so that tests can run side by side.
func generate(t *testing.T, expr string, required map[string]any) string {
	t.Helper()
	conf, err := create.Generate(service.GlobalEnvironment(), expr, false)
	require.NoError(t, err)

	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(conf), &doc))
	set(t, doc.Content[0], "http.address", "127.0.0.1:0")
	// schema_evolution's default reads the tables' columns over
	// mysql_address, which has a default ("") and so is not marked
	// required: the lint names it when it is left empty (below).
	if addr, ok := required["output.starrocks_txn.mysql_address"]; ok {
		var unset bytes.Buffer
		_ = yaml.NewEncoder(&unset).Encode(&doc)
		lints, err := service.GlobalEnvironment().FullConfigSchema("", "").NewStreamConfigLinter().LintYAML(unset.Bytes())
		require.NoError(t, err)
		named := false
		for _, l := range lints {
			named = named || strings.Contains(l.What, "mysql_address")
		}
		assert.True(t, named, "left empty, the lint names mysql_address: %v", lints)
		set(t, doc.Content[0], "output.starrocks_txn.mysql_address", addr)
		delete(required, "output.starrocks_txn.mysql_address")
	}
	var unfilled []string
	walk(doc.Content[0], "", func(path string, n *yaml.Node) {
		if strings.Contains(n.LineComment, "required") {
			v, ok := required[path]
			if !ok {
				unfilled = append(unfilled, path)
				return
			}
			require.NoError(t, n.Encode(v))
		}
	})
	assert.Empty(t, unfilled, "create left required fields the test does not know")
	out, err := yaml.Marshal(&doc)
	require.NoError(t, err)

	// The user's next step is `lint`: it is clean, Benthos's rules and the
	// binary's placement check alike.
	lints, err := service.GlobalEnvironment().FullConfigSchema("", "").NewStreamConfigLinter().LintYAML(out)
	require.NoError(t, err)
	assert.Empty(t, lints, "create's config lints clean once the required fields are set:\n%s", out)
	problems, err := lint.CheckYAML(out)
	require.NoError(t, err)
	assert.Empty(t, problems)
	return string(out)
}

func walk(n *yaml.Node, path string, fn func(string, *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		fn(path, n)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		p := n.Content[i].Value
		if path != "" {
			p = path + "." + p
		}
		walk(n.Content[i+1], p, fn)
	}
	fn(path, n)
}

func set(t *testing.T, root *yaml.Node, path string, v any) {
	t.Helper()
	found := false
	walk(root, "", func(p string, n *yaml.Node) {
		if p == path {
			require.NoError(t, n.Encode(v))
			found = true
		}
	})
	require.True(t, found, "no %s in the config", path)
}

func startEmulator(t *testing.T) *emulator.Emulator {
	t.Helper()
	// With the MySQL port: schema_evolution's default reads the columns.
	return emurig.Start(t, emulator.Config{Schema: emurig.ExampleSchema(t), MySQLAddr: "127.0.0.1:0"})
}

func startKafka(t *testing.T) (*kafka.Cluster, string) {
	t.Helper()
	const topic = "cdc"
	k := kafka.New(t, kafka.Topic(topic, 1, nil))
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...), kgo.DefaultProduceTopic(topic))
	require.NoError(t, err)
	defer cl.Close()
	var recs []*kgo.Record
	for _, e := range events {
		recs = append(recs, &kgo.Record{Value: []byte(e)})
	}
	require.NoError(t, cl.ProduceSync(context.Background(), recs...).FirstErr())
	return k, topic
}

func build(t *testing.T, conf string) *service.Stream {
	t.Helper()
	b := service.GlobalEnvironment().NewStreamBuilder()
	require.NoError(t, b.SetYAML(conf))
	require.NoError(t, b.SetLoggerYAML("level: warn"))
	s, err := b.Build()
	require.NoError(t, err, "create's config starts:\n%s", conf)
	return s
}

// waitFor polls cond until it holds, failing at once when the stream stops
// first (a component that failed to start).
func waitFor(t *testing.T, done <-chan error, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		select {
		case err := <-done:
			t.Fatalf("the stream stopped before the condition held: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the condition did not hold within 30s")
	}
}

func orders(t *testing.T, em *emulator.Emulator) int {
	rs, err := em.Store().Rows("test", "orders")
	require.NoError(t, err)
	return len(rs)
}

// kafka_txn/txn_assembler/starrocks_txn, the pipeline the project is for:
// create's config, with only the required fields set, loads both source
// transactions into the emulator.
func TestCreateAllThreeStarts(t *testing.T) {
	em := startEmulator(t)
	k, topic := startKafka(t)
	conf := generate(t, "kafka_txn/txn_assembler/starrocks_txn", map[string]any{
		"input.kafka_txn.seed_brokers":   k.Brokers(),
		"input.kafka_txn.topics":         []string{topic},
		"input.kafka_txn.consumer_group": "create-test",
		"output.starrocks_txn.load_urls": []string{em.FEURL()},
		// schema_evolution's default reads the tables' columns over it.
		"output.starrocks_txn.mysql_address": em.MySQLAddr(),
	})
	assert.Contains(t, conf, "input:\n    kafka_txn:", conf)
	var doc struct {
		Input struct {
			Processors []map[string]any `yaml:"processors"`
		} `yaml:"input"`
		Pipeline struct {
			Processors []any `yaml:"processors"`
		} `yaml:"pipeline"`
		Output struct {
			StarRocks map[string]any `yaml:"starrocks_txn"`
		} `yaml:"output"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(conf), &doc))
	require.Len(t, doc.Input.Processors, 1, "the assembler is an input processor")
	assert.Contains(t, doc.Input.Processors[0], "txn_assembler")
	assert.Empty(t, doc.Pipeline.Processors)
	asm := doc.Input.Processors[0]["txn_assembler"].(map[string]any)
	assert.Equal(t, "", asm["database"], "an example is not a value: rows keep their database")

	s := build(t, conf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitFor(t, done, func() bool { return orders(t, em) == 2 })
	items, err := em.Store().Rows("test", "order_items")
	require.NoError(t, err)
	assert.Len(t, items, 1)
	require.NoError(t, s.StopWithin(20*time.Second))
	<-done
}

// //starrocks_txn: the output's section as create writes it loads rows; the
// input is a generator of contract-less rows with a target table in
// metadata, the shape the output admits one row per transaction.
func TestCreateOutputStarts(t *testing.T) {
	em := startEmulator(t)
	conf := generate(t, "//starrocks_txn", map[string]any{"output.starrocks_txn.load_urls": []string{em.FEURL()}, "output.starrocks_txn.mysql_address": em.MySQLAddr()})
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(conf), &doc))
	var in yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(`
generate:
  count: 3
  interval: ""
  mapping: |
    meta starrocks_database = "test"
    meta starrocks_table = "orders"
    root = {"order_id": count("create-output"), "customer_id": 1}
`), &in))
	for i := 0; i+1 < len(doc.Content[0].Content); i += 2 {
		if doc.Content[0].Content[i].Value == "input" {
			doc.Content[0].Content[i+1] = in.Content[0]
		}
	}
	out, err := yaml.Marshal(&doc)
	require.NoError(t, err)
	s := build(t, string(out))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, s.Run(ctx), "the generator ends and the output drains")
	assert.Equal(t, 3, orders(t, em))
}

// redirect points os.Stdin at a file holding in and os.Stdout at a file, for
// the stdin input and stdout output create puts around a single component.
func redirect(t *testing.T, in string) (stdout func() []string) {
	t.Helper()
	dir := t.TempDir()
	inPath, outPath := filepath.Join(dir, "stdin"), filepath.Join(dir, "stdout")
	require.NoError(t, os.WriteFile(inPath, []byte(in), 0o644))
	inF, err := os.Open(inPath)
	require.NoError(t, err)
	outF, err := os.Create(outPath)
	require.NoError(t, err)
	oldIn, oldOut := os.Stdin, os.Stdout
	os.Stdin, os.Stdout = inF, outF
	t.Cleanup(func() {
		os.Stdin, os.Stdout = oldIn, oldOut
		inF.Close()
		outF.Close()
	})
	return func() []string {
		f, err := os.Open(outPath)
		require.NoError(t, err)
		defer f.Close()
		var lines []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		return lines
	}
}

// /txn_assembler/: stdin → the assembler as create writes it → stdout. The
// events carry their partition, so the defaults (no Kafka metadata) apply:
// the three data rows come out, BEGINs dropped, ENDs as empty markers.
func TestCreateProcessorStarts(t *testing.T) {
	conf := generate(t, "/txn_assembler/", nil)
	assert.Contains(t, conf, "input:\n    stdin:", conf)
	stdout := redirect(t, strings.Join(events, "\n")+"\n")
	s := build(t, conf)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.Run(ctx))
	var rows []string
	for _, l := range stdout() {
		if l != "" {
			rows = append(rows, l)
		}
	}
	require.Len(t, rows, 3, "the data rows of both transactions: %v", rows)
	assert.Contains(t, rows[0], `"order_id":1`)
	assert.Contains(t, rows[2], `"order_id":2`)
}

// kafka_txn: the input as create writes it, into stdout: every event of the
// topic is printed.
func TestCreateInputStarts(t *testing.T) {
	k, topic := startKafka(t)
	conf := generate(t, "kafka_txn", map[string]any{
		"input.kafka_txn.seed_brokers":   k.Brokers(),
		"input.kafka_txn.topics":         []string{topic},
		"input.kafka_txn.consumer_group": "create-test",
	})
	stdout := redirect(t, "")
	s := build(t, conf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitFor(t, done, func() bool { return len(stdout()) >= len(events) })
	assert.Equal(t, events, stdout()[:len(events)])
	require.NoError(t, s.StopWithin(20*time.Second))
	<-done
}

// Benthos's own create puts processors under pipeline.processors; so does
// ours for every other processor.
func TestCreateKeepsOtherProcessorsInThePipeline(t *testing.T) {
	conf, err := create.Generate(service.GlobalEnvironment(), "stdin/mapping/stdout", false)
	require.NoError(t, err)
	var doc struct {
		Input    map[string]any `yaml:"input"`
		Pipeline struct {
			Processors []map[string]any `yaml:"processors"`
		} `yaml:"pipeline"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(conf), &doc))
	assert.NotContains(t, doc.Input, "processors")
	require.Len(t, doc.Pipeline.Processors, 1)
	assert.Contains(t, doc.Pipeline.Processors[0], "mapping")

	_, err = create.Generate(service.GlobalEnvironment(), "stdin/no_such_processor/stdout", false)
	assert.ErrorContains(t, err, "unrecognised processor type 'no_such_processor'")
}

// create never gives a field without a default one of its spec's examples
// as a value (Benthos's marshaller does): a required field is left at its
// type's zero value, marked "No default (required)", and lint names every
// one of them until it is filled in; an optional one is left out and named
// in a comment. A consumer_group of starrocks-loader would make every
// pipeline from the template share a group; a database of analytics would
// move every Debezium row.
func TestCreateLeavesNoExampleAsAValue(t *testing.T) {
	for _, expr := range []string{"kafka_txn/txn_assembler/starrocks_txn", "debezium_txn//kafka_txn"} {
		t.Run(expr, func(t *testing.T) {
			conf, err := create.Generate(service.GlobalEnvironment(), expr, false)
			require.NoError(t, err)
			var doc yaml.Node
			require.NoError(t, yaml.Unmarshal([]byte(conf), &doc))
			required := map[int]string{} // line → path
			walk(doc.Content[0], "", func(path string, n *yaml.Node) {
				comment := strings.TrimLeft(n.LineComment, "# ")
				if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
					return
				}
				assert.NotEqual(t, "No default (optional)", comment, "%s: an optional field without a default is left out, not given an example", path)
				if comment == "No default (required)" {
					assert.Empty(t, n.Value, "%s: a required field is left for the user", path)
					required[n.Line] = path
				}
			})
			walk(doc.Content[0], "", func(path string, n *yaml.Node) {
				if strings.TrimLeft(n.LineComment, "# ") == "No default (required)" && (n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode) && len(n.Content) == 0 && !strings.HasSuffix(path, "processors") {
					required[n.Line] = path
				}
			})
			require.NotEmpty(t, required)
			assert.NotContains(t, conf, "starrocks-loader", "the spec's example consumer group is not a value")
			assert.NotContains(t, conf, "analytics", "debezium_txn's example database is not a value")
			if strings.HasPrefix(expr, "debezium_txn") {
				assert.Contains(t, conf, "# optional, not set (no default): database, table\n", "the optional fields left out are named")
			}

			// The next step the README gives, lint, names each unfilled one.
			lints, err := service.GlobalEnvironment().FullConfigSchema("", "").NewStreamConfigLinter().LintYAML([]byte(conf))
			require.NoError(t, err)
			linted := map[int]string{}
			for _, l := range lints {
				linted[l.Line] = l.What
			}
			for line, path := range required {
				assert.Contains(t, linted, line, "lint names the unfilled required field %s (line %d): %v", path, line, lints)
			}
		})
	}
}
