package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
	"github.com/starrocks-txn/benthos-starrocks/testkit/emurig"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure"

	_ "github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn"
)

// startEmulator runs an emulator with the examples' schema.
func startEmulator(t *testing.T) *emulator.Emulator {
	t.Helper()
	e, _ := emurig.StartSQL(t, emulator.Config{Schema: emurig.ExampleSchema(t)})
	return e
}

// runPipeline loads source transactions through a real exactly_once
// starrocks_txn output: partition orders/0 gets 3 (END offsets 10, 20, 30),
// orders/1 gets 2, one order row each. It returns once every one is
// committed, with the output still running (its writer row in place).
func runPipeline(t *testing.T, e *emulator.Emulator) {
	t.Helper()
	sb := service.NewStreamBuilder()
	require.NoError(t, sb.SetLoggerYAML("level: none"))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  load_urls: [ %q ]
  mysql_address: %s
  semantic: exactly_once
  pipeline_id: shop-cdc
  label_prefix: cdc
  commit_interval: 100ms
`, e.FEURL(), e.MySQLAddr())))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()
	t.Cleanup(func() { _ = stream.StopWithin(10 * time.Second) })

	var batch service.MessageBatch
	seq := int64(0)
	order := int64(0)
	for p, txns := range map[string]int{"orders/0": 3, "orders/1": 2} {
		for i := 1; i <= txns; i++ {
			seq++
			order++
			m := service.NewMessage([]byte(fmt.Sprintf(`{"order_id": %d, "customer_id": 7}`, order)))
			contract.Write(m, contract.Meta{Partition: p, Database: "test", Table: "orders",
				TxnID: fmt.Sprintf("%s-txn-%d", p, i), TxnEnd: true, HasSeq: true, Seq: seq, SeqSource: "asm",
				HasOffset: true, SourceOffset: int64(10 * i)})
			batch = append(batch, m)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, produce(ctx, batch), "every source transaction committed")
}

var update = flag.Bool("update", os.Getenv("UPDATE_GOLDEN") != "", "rewrite the golden files")

// golden compares got with testdata/name, or writes it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run UPDATE_GOLDEN=1 go test ./commands/inspect/ to create it")
	assert.Equal(t, string(want), string(got), "%s (UPDATE_GOLDEN=1 rewrites it)", path)
}

var labelTail = regexp.MustCompile(`^(.*-)([0-9a-f]{8})([0-9a-f]{8})$`)

// mask replaces what changes from run to run — the writer's random id, label
// numbers, times — by fixed values, after checking what they must be.
func mask(t *testing.T, r *Report) {
	t.Helper()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	then := now.Add(-90 * time.Second)
	age := int64(90)
	r.ReadAt = now
	maskLabel := func(l string) string {
		m := labelTail.FindStringSubmatch(l)
		require.NotNil(t, m, "%q is a numbered label", l)
		return m[1] + "wwwwwwww" + "nnnnnnnn"
	}
	for i := range r.Partitions {
		p := &r.Partitions[i]
		require.NotNil(t, p.UpdatedAt)
		p.Label = maskLabel(p.Label)
		p.UpdatedAt, p.AgeSeconds = &then, &age
	}
	for i := range r.Writers {
		w := &r.Writers[i]
		require.NotNil(t, w.UpdatedAt)
		w.Writer = "wwwwwwww"
		w.Label = maskLabel(w.Label)
		w.LabelNumber = 0
		// How many labels are open when the last row is written depends
		// on timing (the next cycle is begun eagerly when the previous
		// commit returns; a cycle begun later, or rolled back because it
		// aged waiting, leaves none open): one masked entry stands for
		// them.
		if len(w.OpenLabels) == 0 {
			w.OpenLabels = []string{w.Label} // masked above
		} else {
			w.OpenLabels = []string{maskLabel(w.OpenLabels[0])}
		}
		w.UpdatedAt, w.AgeSeconds = &then, &age
	}
}

// inspect against the emulator after a real pipeline: the committed offsets,
// source transactions and labels of its progress rows, its writer row with
// its open labels; as plain tables and as JSON (golden files, with the
// random parts masked), and through the subcommand.
func TestInspectARealPipeline(t *testing.T) {
	e := startEmulator(t)
	runPipeline(t, e)
	m, err := starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	r, err := Read(ctx, m, "shop-cdc", starrocks.DefaultProgressTable, time.Now())
	require.NoError(t, err)

	// What must hold before the masks.
	require.Len(t, r.Partitions, 2)
	require.Len(t, r.Writers, 1, "the running output's writer row")
	w := r.Writers[0]
	for _, p := range r.Partitions {
		assert.True(t, strings.HasPrefix(p.Label, "cdc-test-"+w.Writer), "%s was committed by the writer", p.Label)
		_, n, ok := starrocks.SplitSeqLabel(p.Label)
		require.True(t, ok)
		assert.LessOrEqual(t, n, w.LabelNumber, "the writer row is as new as any progress row")
		assert.Less(t, *p.AgeSeconds, int64(60))
	}
	_, n, ok := starrocks.SplitSeqLabel(w.Label)
	require.True(t, ok)
	// The row's label_number is its label's own number, or the higher one
	// of the row committed before it (the anchor committed for its cycle),
	// so that merge_condition keeps a commit's row over every earlier one.
	assert.GreaterOrEqual(t, w.LabelNumber, n, "label_number is at least the number of the row's label")
	for _, l := range w.OpenLabels {
		_, o, ok := starrocks.SplitSeqLabel(l)
		require.True(t, ok)
		assert.NotEqual(t, w.LabelNumber, o)
	}

	// The subcommand prints the same report.
	var out bytes.Buffer
	app := &cli.App{Writer: &out, Commands: []*cli.Command{Command()}, ExitErrHandler: func(*cli.Context, error) {}}
	require.NoError(t, app.Run([]string{"bin", "inspect", "--mysql", e.MySQLAddr(), "--pipeline-id", "shop-cdc", "--json"}))
	var viaCLI Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &viaCLI))
	assert.Equal(t, r.Partitions[0].CommittedOffset, viaCLI.Partitions[0].CommittedOffset)
	assert.Equal(t, r.Writers[0].Writer, viaCLI.Writers[0].Writer)

	mask(t, r)
	var text, js bytes.Buffer
	require.NoError(t, r.WriteText(&text))
	require.NoError(t, r.WriteJSON(&js))
	golden(t, "pipeline.txt", text.Bytes())
	golden(t, "pipeline.json", js.Bytes())
}

// Without the tables, or without the flags, inspect says what is wrong.
func TestInspectErrors(t *testing.T) {
	e := startEmulator(t)
	m, err := starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	defer m.Close()
	_, err = Read(context.Background(), m, "shop-cdc", "no_such_progress", time.Now())
	require.ErrorIs(t, err, ErrNoTables)
	assert.Contains(t, err.Error(), "no_such_progress_writers")

	var out bytes.Buffer
	assert.ErrorContains(t, Run(context.Background(), Options{PipelineID: "p"}, false, &out), "--mysql is required")
	assert.ErrorContains(t, Run(context.Background(), Options{MySQL: e.MySQLAddr()}, false, &out), "--pipeline-id is required")
	assert.ErrorContains(t, Run(context.Background(), Options{MySQL: e.MySQLAddr(), PipelineID: "p", ProgressTable: "bad`name"}, false, &out), "--progress-table")
	err = Run(context.Background(), Options{MySQL: e.MySQLAddr(), User: "root", Password: "wrong", PipelineID: "p"}, false, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "authentication")
	assert.NotContains(t, err.Error(), "wrong")
}

// Rows without a time or a label print "-", and several open labels are
// listed.
func TestWriteTextOfSparseRows(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	age := int64(3725)
	r := &Report{PipelineID: "p", ProgressTable: "pt", WritersTable: "pt_writers", ReadAt: at,
		Partitions: []Partition{{Partition: "t/0", Database: "db", CommittedOffset: -1, TxnEndOffset: -1}},
		Writers: []Writer{
			{Database: "db", Writer: "0123abcd", Label: "x-db-0123abcd00000010", LabelNumber: 16,
				OpenLabels: []string{"x-db-0123abcd00000011", "x-db-0123abcd00000012"}, UpdatedAt: &at, AgeSeconds: &age},
			{Database: "db", Writer: "old", Label: "", OpenLabels: []string{}},
		}}
	var b bytes.Buffer
	require.NoError(t, r.WriteText(&b))
	assert.Equal(t, `pipeline p: progress table pt, writers table pt_writers, read at 2026-01-02 03:04:05 UTC

PARTITIONS (committed offset: every source transaction ending at or below it is resolved)
PARTITION  DATABASE  COMMITTED_OFFSET  TXN_END_OFFSET  SOURCE_TXN  LABEL  UPDATED_AT  AGE
t/0        db        -1                -1              -           -      -           -

WRITERS (a live run's row, or the row of one that died: its open labels may still be committed)
DATABASE  WRITER    LABEL                  LABEL_NUMBER  OPEN_LABELS                                  UPDATED_AT           AGE
db        0123abcd  x-db-0123abcd00000010  16            x-db-0123abcd00000011,x-db-0123abcd00000012  2026-01-02 03:04:05  1h2m5s
db        old       -                      0             -                                            -                    -
`, b.String())

	empty := &Report{PipelineID: "p", ProgressTable: "pt", WritersTable: "pt_writers", ReadAt: at}
	b.Reset()
	require.NoError(t, empty.WriteText(&b))
	assert.Contains(t, b.String(), "(no progress rows for pipeline_id p)")
	assert.Contains(t, b.String(), "(no writer rows for pipeline_id p)")
}
