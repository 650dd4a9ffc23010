package txnassembler

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/bloblang"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// TestStreamUnderInputProcessors runs the processor the documented way: under
// input.processors, behind an input whose batching ends a batch at each
// TXN_END, and checks the contract that reaches the output.
func TestStreamUnderInputProcessors(t *testing.T) {
	b := service.NewStreamBuilder()
	require.NoError(t, b.SetLoggerYAML(`level: none`))
	require.NoError(t, b.AddInputYAML(`
broker:
  inputs:
    - generate:
        count: 12
        interval: ""
        mapping: |
          let n = counter() - 1
          let pos = $n % 4
          meta origin = "gen"
          root.partition = 7
          root.txnId = "t-" + ($n / 4).floor().string()
          root.type = match $pos {
            0 => "TXN_BEGIN"
            3 => "TXN_END"
            _ => "DATA"
          }
          root.database = if $pos == 1 || $pos == 2 { "test" }
          root.table = match $pos {
            1 => "orders"
            2 => "order_items"
          }
          root.json = if $pos == 1 || $pos == 2 { {"id": $n}.format_json().string() }
  batching:
    count: 100
    period: 1s
    check: 'this.type == "TXN_END"'
processors:
  - txn_assembler:
      format: envelope
      instance_id: stream-test
`))
	var mu sync.Mutex
	var batches []service.MessageBatch
	require.NoError(t, b.AddBatchConsumerFunc(func(_ context.Context, batch service.MessageBatch) error {
		mu.Lock()
		batches = append(batches, batch.Copy())
		mu.Unlock()
		return nil
	}))
	stream, err := b.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, stream.Run(ctx))

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, batches, 3, "one batch per source transaction, cut by batching.check")
	seq := int64(0)
	for txn, batch := range batches {
		require.Len(t, batch, 3, "two rows and the END marker; the BEGIN is dropped")
		for i, msg := range batch {
			require.NoError(t, msg.GetError())
			c, err := contract.Read(msg)
			require.NoError(t, err)
			seq++
			assert.Equal(t, seq, c.Seq)
			assert.True(t, strings.HasPrefix(c.SeqSource, "stream-test-"), c.SeqSource)
			assert.Equal(t, "7", c.Partition, "no Kafka metadata: the envelope's partition field")
			assert.Equal(t, "t-"+strconv.Itoa(txn), c.TxnID)
			assert.Equal(t, int64(txn*4+i+1), c.SourceOffset, "the arrival counter")
			origin, _ := msg.MetaGet("origin")
			assert.Equal(t, "gen", origin, "original metadata is kept")
			body, err := msg.AsBytes()
			require.NoError(t, err)
			if i < 2 {
				assert.Equal(t, "test", c.Database)
				assert.Equal(t, []string{"orders", "order_items"}[i], c.Table)
				assert.JSONEq(t, `{"id":`+strconv.Itoa(txn*4+i+1)+`,"__op":0}`, string(body))
				assert.False(t, c.TxnEnd)
			} else {
				assert.Empty(t, body)
				assert.True(t, c.TxnEnd && c.Marker)
			}
		}
	}
}

// TestSpecExamples parses the processor config of every spec example, checks
// its batching.check Bloblang ends a batch exactly at a transaction end, and
// runs the processor on matching events.
func TestSpecExamples(t *testing.T) {
	spec := processorSpec()
	examples := specExamples(t)
	require.Len(t, examples, 3)

	events := map[string][2]string{ // format -> {a mid-transaction event, its END}
		"envelope": {envelope(0, "t", "DATA", "shop", "order_lines", `{"id":1}`), envelope(0, "t", "TXN_END", "", "", "")},
		"maxwell":  {maxwellRow1, maxwellRow2},
		"custom":   {`{"lsn":1,"tx":"42","op":"INSERT","tbl":"orders","row":{"id":1}}`, `{"lsn":2,"tx":"42","op":"COMMIT"}`},
	}
	for _, ex := range examples {
		var doc struct {
			Input struct {
				Batching   map[string]any   `yaml:"batching"`
				Processors []map[string]any `yaml:"processors"`
				Kafka      map[string]any   `yaml:"kafka_txn"`
				Broker     struct {
					Batching map[string]any `yaml:"batching"`
				} `yaml:"broker"`
			} `yaml:"input"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(ex), &doc))
		batching := doc.Input.Kafka["batching"]
		if batching == nil {
			batching = doc.Input.Broker.Batching
		}
		require.NotNil(t, batching, "every example shows the input batching")
		check, _ := batching.(map[string]any)["check"].(string)
		exec, err := bloblang.Parse(check)
		require.NoError(t, err, check)

		require.Len(t, doc.Input.Processors, 1)
		procYAML, err := yaml.Marshal(doc.Input.Processors[0][Name])
		require.NoError(t, err)
		conf, err := spec.ParseYAML(string(procYAML), nil)
		require.NoError(t, err)
		format, err := conf.FieldString(fieldFormat)
		require.NoError(t, err)
		ev := events[format]

		for i, body := range ev {
			v, err := exec.Query(mustJSON(t, body))
			require.NoError(t, err)
			assert.Equal(t, i == 1, v, "%s: batching.check %q on %s", format, check, body)
		}

		p, err := newFromConfig(conf, service.MockResources())
		require.NoError(t, err)
		msgs := []*service.Message{kafkaMsg("cdc", 0, 1, ev[0]), kafkaMsg("cdc", 0, 2, ev[1])}
		for _, m := range msgs {
			m.MetaSetMut("source_stream", "s")
		}
		got := readAll(t, run(t, p, msgs...))
		require.NotEmpty(t, got)
		for _, g := range got {
			assert.NoError(t, g.Err, format)
		}
		assert.True(t, got[len(got)-1].TxnEnd, format)
	}
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	require.NoError(t, err)
	return v
}

// specExamples returns the YAML of the spec's examples, read back from the
// rendered documentation data.
func specExamples(t *testing.T) []string {
	t.Helper()
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterBatchProcessor(Name, processorSpec(), func(*service.ParsedConfig, *service.Resources) (service.BatchProcessor, error) {
		return nil, nil
	}))
	var out []string
	env.WalkProcessors(func(name string, view *service.ConfigView) {
		if name != Name {
			return
		}
		data, err := view.TemplateData()
		require.NoError(t, err)
		for _, ex := range data.Examples {
			out = append(out, ex.Config)
		}
	})
	return out
}

func TestLintRules(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterBatchProcessor(Name, processorSpec(), func(c *service.ParsedConfig, r *service.Resources) (service.BatchProcessor, error) {
		return newFromConfig(c, r)
	}))
	linter := env.NewComponentConfigLinter()
	for _, tc := range []struct {
		yaml string
		lint string
	}{
		{"txn_assembler:\n  format: envelope\n  custom:\n    kind: 'root = \"data\"'\n", "custom is only read when format is custom"},
		{"txn_assembler:\n  table_mapping:\n    shop.a: ' '\n", `table_mapping entry "shop.a": " ": source and target must not be empty`},
		{"txn_assembler:\n  database: ' '\n", "database must not be blank"},
		{"txn_assembler:\n  format: debezium\n", "debezium"},
	} {
		lints, err := linter.LintProcessorYAML([]byte(tc.yaml))
		require.NoError(t, err)
		require.NotEmpty(t, lints, tc.yaml)
		assert.Contains(t, lints[0].What, tc.lint)
	}
	lints, err := linter.LintProcessorYAML([]byte("txn_assembler:\n  format: custom\n  custom:\n    kind: 'root = \"data\"'\n"))
	require.NoError(t, err)
	assert.Empty(t, lints)
}

// TestReadmeMapping runs the README's hand-written mapping and reads its
// contract back the way the output does.
func TestReadmeMapping(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	text := string(readme)
	start := strings.Index(text, "    - mapping: |\n")
	require.Positive(t, start)
	var lines []string
	for _, l := range strings.Split(text[start+len("    - mapping: |\n"):], "\n") {
		if !strings.HasPrefix(l, "        ") {
			break
		}
		lines = append(lines, strings.TrimPrefix(l, "        "))
	}
	exec, err := bloblang.Parse(strings.Join(lines, "\n"))
	require.NoError(t, err)

	for i, body := range []string{`{"table":"orders","row":{"id":1},"deleted":false}`, `{"table":"orders","row":{"id":1},"deleted":true}`} {
		res, err := kafkaMsg("orders", 3, int64(40+i), body).BloblangQuery(exec)
		require.NoError(t, err)
		c, err := contract.Read(res)
		require.NoError(t, err)
		assert.Equal(t, "orders/3", c.Partition)
		assert.Equal(t, int64(40+i), c.SourceOffset)
		assert.Equal(t, strconv.Itoa(40+i), c.TxnID)
		assert.True(t, c.TxnEnd)
		assert.Equal(t, int64(i+1), c.Seq)
		assert.Equal(t, "shop", c.Database)
		assert.Equal(t, "orders", c.Table)
		assert.True(t, c.HasContract())
		b, err := res.AsBytes()
		require.NoError(t, err)
		assert.JSONEq(t, `{"id":1,"__op":`+strconv.Itoa(i)+`}`, string(b))
	}
}
