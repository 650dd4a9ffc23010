package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/testkit/emurig"
	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

func TestMain(m *testing.M) {
	b, err := os.ReadFile("../../examples/schema.sql")
	if err != nil {
		panic(err)
	}
	Schema = string(b)
	os.Exit(m.Run())
}

// The command's core in --quick mode, through the CLI, with a second
// partition count and a tables topic: one table with every row and every
// column, each row verified, figures only a real run produces, and the
// summary's ratios taken from the table's own figures.
func TestQuickCommandPrintsAVerifiedTable(t *testing.T) {
	var out, progress bytes.Buffer
	dir := t.TempDir()
	app := &cli.App{Writer: &out, ErrWriter: &progress, Commands: []*cli.Command{Command(Schema)}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, app.RunContext(ctx, []string{"bin", "bench", "--quick", "--partitions", "4,8", "--tables", "5",
		"--cpuprofile", dir + "/cpu", "--memprofile", dir + "/mem"}))
	t.Log("\n" + out.String())
	assert.Regexp(t, `load average [0-9.]+ / [0-9.]+ / [0-9.]+`, out.String(), "the header gives the load average")

	rows := tableRows(t, out.String())
	require.NotEmpty(t, rows)
	assert.Equal(t, Columns, rows[0], "header")
	o := Options{Partitions: []int{4, 8}, Tables: []int{5}}
	var configs []Config
	for _, tp := range Topics(o) {
		configs = append(configs, Configs(o, tp)...)
	}
	require.Len(t, configs, 12+3+2)
	require.Len(t, rows, 1+len(configs), "one row per configuration")
	col := func(name string) int {
		for i, c := range Columns {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %q", name)
		return -1
	}
	byKey := map[string][]string{}
	for i, c := range configs {
		r := rows[1+i]
		require.Len(t, r, len(Columns), "row %q has every column", c.Name)
		assert.Equal(t, c.Name, r[col("configuration")])
		assert.Equal(t, c.Topic.String(), r[col("topic")])
		if c.Kind == KindHTTP {
			// The baseline may apply a key's changes out of order under
			// max_in_flight (stale, resurrected or missing rows of the
			// PRIMARY KEY tables), but the append-only order_events table
			// shows every row exactly once: nothing lost or duplicated.
			if v := r[col("verified")]; v != "yes" {
				assert.Regexp(t, `^NO: (orders|order_items): `, v)
				assert.NotContains(t, v, "order_events", "http_client lost or duplicated rows")
			}
		} else {
			assert.Equal(t, "yes", r[col("verified")], "%s verified", c.Name)
		}
		for _, name := range []string{"records/s", "rows/s", "CPU µs/record", "B/record", "allocs/record", "cores"} {
			assert.Greater(t, number(t, r[col(name)]), 0.0, "%s: %s", c.Name, name)
		}
		if c.Kind == KindDrop {
			assert.Equal(t, "1.00", r[col("÷ kafka_txn → drop")])
		}
		if c.Loader() {
			assert.Greater(t, number(t, r[col("loads/s")]), 0.0, "%s loaded over HTTP", c.Name)
			assert.Greater(t, number(t, r[col("commits")]), 0.0, "%s committed", c.Name)
			assert.NotEqual(t, "0 / 0", r[col("p50 / p99 visibility")], c.Name)
		} else {
			assert.Equal(t, "-", r[col("loads/s")], "%s loads nothing", c.Name)
		}
		if c.Kind != KindFranz && c.Kind != KindDrop {
			ratio := number(t, r[col("÷ kafka_txn → drop")])
			assert.InDelta(t, number(t, r[col("records/s")])/number(t, byKey[c.Topic.String()+KindDrop][col("records/s")]), ratio, 0.01,
				"%s: the ratio is to kafka_txn → drop on the same topic", c.Name)
		}
		byKey[c.Topic.String()+c.Kind+c.Semantic+c.Mode] = r
		name := profileName(dir+"/cpu", slug(fmt.Sprintf("p%d-t%d-%s", c.Topic.Partitions, c.Topic.Tables, c.Name)))
		st, err := os.Stat(name)
		require.NoError(t, err, "a CPU profile per row")
		assert.Greater(t, st.Size(), int64(0))
		_, err = os.Stat(profileName(dir+"/mem", slug(fmt.Sprintf("p%d-t%d-%s", c.Topic.Partitions, c.Topic.Tables, c.Name))))
		require.NoError(t, err, "an allocation profile per row")
	}
	assert.Contains(t, out.String(), "starrocks_txn_visibility_latency_ns", "the table says how latency is measured")

	// The exactly_once row was checked against its progress table: one row
	// per partition at the partition's last END offset (an at_least_once
	// output writes none, so a broken exactly_once config fails here).
	eoLine := ""
	for _, l := range strings.Split(progress.String(), "\n") {
		if strings.Contains(l, "verified: ") && strings.Contains(l, "progress") {
			eoLine = l
		}
	}
	assert.Contains(t, eoLine, fmt.Sprintf("test.%s: %d partitions at their last END offset", ProgressTable, DefaultPartitions),
		"the exactly_once verification read the progress table:\n%s", progress.String())
	assert.Contains(t, progress.String(), "OK: 5 tables = model", "the tables topic verified every table")

	for _, want := range []string{"assembler ÷ drop (4 partitions, this run): ", "pipeline ÷ drop (4 partitions, this run): ",
		"output alone ÷ drop", "exactly_once ÷ at_least_once (4 partitions, this run): throughput ", "8 ÷ 4 partitions (starrocks_txn rows/s, this run): ",
		"loads per commit (starrocks_txn, 4 partitions): 5 tables ",
		"per_table (StarRocks 3.3) at_least_once (4 partitions, this run): commit window p50 / p99 / max ",
		"per_table (StarRocks 3.3) exactly_once (4 partitions, this run): commit window p50 / p99 / max "} {
		assert.Contains(t, out.String(), want)
	}
	// The per-table rows measured their commit windows.
	assert.NotContains(t, out.String(), "over 0 cycles", "every per-table row measured its commit window")
}

// tableRows returns the cells of every Markdown table line but the
// separator.
func tableRows(t *testing.T, s string) [][]string {
	t.Helper()
	var rows [][]string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

func number(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(strings.Fields(s)[0], 64)
	require.NoError(t, err, s)
	return f
}

// The first topic runs every row, further partition counts the rows the
// sweep compares, a tables topic the drop and pipeline rows; --sweep's
// values are the issue's.
func TestConfigsPerTopic(t *testing.T) {
	o := Options{Partitions: []int{4, 64, 256}, Tables: []int{3, 12, 48}}
	ts := Topics(o)
	require.Equal(t, []Topic{{4, 0}, {64, 0}, {256, 0}, {4, 3}, {4, 12}, {4, 48}}, ts)
	kinds := func(cs []Config) []string {
		var out []string
		for _, c := range cs {
			k := c.Kind + ":" + c.Semantic
			if c.Mode != "" {
				k += ":" + c.Mode
			}
			if c.SchemaEvolution != "" {
				k += ":" + c.SchemaEvolution
			}
			out = append(out, k)
		}
		return out
	}
	assert.Equal(t, []string{"franz:", "drop:", "assembler:", "pipeline:at_least_once", "pipeline:at_least_once:ignore", "pipeline:exactly_once",
		"pipeline:at_least_once:per_table", "pipeline:exactly_once:per_table", "http_client:", "output:at_least_once", "debezium:at_least_once", "debezium:at_least_once:ignore"},
		kinds(Configs(o, ts[0])))
	assert.Equal(t, []string{"drop:", "assembler:", "pipeline:at_least_once"}, kinds(Configs(o, ts[1])))
	assert.Equal(t, []string{"drop:", "pipeline:at_least_once"}, kinds(Configs(o, ts[3])))
	for _, c := range Configs(o, ts[0]) {
		assert.Equal(t, DefaultBatch, c.Batch)
		if c.Kind == KindHTTP {
			assert.Equal(t, DefaultHTTPMaxInFlight, c.MaxInFlight)
		} else {
			assert.Zero(t, c.MaxInFlight, "%s: starrocks_txn runs with its default max_in_flight", c.Name)
		}
	}
	assert.Equal(t, []string{"drop:"}, kinds(Configs(Options{Kinds: []string{KindDrop}}, Topic{Partitions: 4})))
	assert.Equal(t, []int{4, 64, 256}, SweepPartitions)
	assert.Equal(t, []int{3, 12, 48}, SweepTables)
}

// The exactly_once pipeline sets what the output needs for it, and the
// output's own lint rule would refuse it without the MySQL address: the
// YAML really is read as exactly_once. The drop row has no processor, the
// pre-built row no Kafka.
func TestPipelineYAML(t *testing.T) {
	cs := Configs(Options{}, Topic{Partitions: 4})
	byKind := map[string]Config{}
	for _, c := range cs {
		byKind[c.Kind+c.Semantic+c.Mode+c.SchemaEvolution] = c
	}
	env := service.GlobalEnvironment().Clone()
	require.NoError(t, registerTimedInput(env, newMeter(0)))
	require.NoError(t, registerPrebuiltInput(env, &prebuilt{}))
	yaml := func(c Config, mysqlAddr string) string {
		return PipelineYAML(c, Options{}, "g", "127.0.0.1:9092", "http://127.0.0.1:8030", mysqlAddr)
	}

	eo := yaml(byKind[KindPipeline+SemanticExactlyOnce], "127.0.0.1:9030")
	assert.Contains(t, eo, "semantic: exactly_once")
	assert.Contains(t, eo, "pipeline_id: "+PipelineID)
	assert.Contains(t, eo, "progress_table: "+ProgressTable)
	assert.Contains(t, eo, `mysql_address: "127.0.0.1:9030"`)
	assert.NotContains(t, eo, "max_in_flight", "the output's default")
	require.NoError(t, env.NewStreamBuilder().SetYAML(eo))

	err := env.NewStreamBuilder().SetYAML(yaml(byKind[KindPipeline+SemanticExactlyOnce], ""))
	require.Error(t, err, "exactly_once without mysql_address fails the output's lint")
	assert.Contains(t, err.Error(), "mysql_address")

	alo := yaml(byKind[KindPipeline+SemanticAtLeastOnce], "127.0.0.1:9030")
	assert.Contains(t, alo, "semantic: at_least_once")
	assert.Contains(t, alo, `mysql_address: "127.0.0.1:9030"`, "at_least_once checks schemas too (schema_evolution's default), which the bench measures")
	require.NoError(t, env.NewStreamBuilder().SetYAML(alo))

	// The per-table rows: transaction_mode per_table, the rest as their
	// multi-table twins.
	for _, sem := range []string{SemanticAtLeastOnce, SemanticExactlyOnce} {
		pt := yaml(byKind[KindPipeline+sem+ModePerTable], "127.0.0.1:9030")
		assert.Contains(t, pt, "transaction_mode: per_table")
		assert.Equal(t, yaml(byKind[KindPipeline+sem], "127.0.0.1:9030"), strings.Replace(pt, "    transaction_mode: per_table\n", "", 1))
		require.NoError(t, env.NewStreamBuilder().SetYAML(pt))
	}
	assert.NotContains(t, eo, "transaction_mode", "the multi-table rows run with the output's default mode")

	drop := yaml(byKind[KindDrop], "")
	assert.NotContains(t, drop, "txn_assembler")
	assert.Contains(t, drop, "drop: {}")
	require.NoError(t, env.NewStreamBuilder().SetYAML(drop))
	asm := yaml(byKind[KindAssembler], "")
	assert.Contains(t, asm, "txn_assembler")
	assert.Contains(t, asm, "drop: {}")

	out := yaml(byKind[KindOutput+SemanticAtLeastOnce], "127.0.0.1:9030")
	assert.Contains(t, out, prebuiltInputName)
	assert.NotContains(t, out, "kafka_txn")
	assert.Contains(t, out, "starrocks_txn")
	require.NoError(t, env.NewStreamBuilder().SetYAML(out))

	dbz := yaml(byKind[KindDebezium+SemanticAtLeastOnce], "127.0.0.1:9030")
	assert.Contains(t, dbz, "debezium_txn:")
	assert.Contains(t, dbz, "transaction_topic: "+debeziumNaming.TransactionTopic())
	assert.NotContains(t, dbz, "txn_assembler", "debezium_txn assembles the transactions itself")
	assert.Contains(t, dbz, "starrocks_txn")
	require.NoError(t, env.NewStreamBuilder().SetYAML(dbz))

	mif := PipelineYAML(byKind[KindPipeline+SemanticAtLeastOnce], Options{}, "g", "b", "http://x", "")
	c := byKind[KindPipeline+SemanticAtLeastOnce]
	c.MaxInFlight = 64
	assert.NotContains(t, mif, "max_in_flight")
	assert.Contains(t, PipelineYAML(c, Options{}, "g", "b", "http://x", ""), "max_in_flight: 64")
}

// The summary's ratios come from the rows of the same topic: the
// assembler's and the pipeline's over kafka_txn → drop, exactly_once over
// at_least_once, a further partition count over the first, loads per
// commit over the tables.
func TestSummary(t *testing.T) {
	four, many, wide := Topic{Partitions: 4}, Topic{Partitions: 256}, Topic{Partitions: 4, Tables: 12}
	mk := func(tp Topic, kind, sem string, records int64, p50, p99 time.Duration) Result {
		return Result{Config: Config{Topic: tp, Kind: kind, Semantic: sem, Name: rowName(kind, sem)},
			Records: records, Rows: records / 2, Elapsed: time.Second, VisP50: p50, VisP99: p99, Loads: 40, Commits: 10}
	}
	rs := []Result{
		mk(four, KindDrop, "", 1000, 0, 0),
		mk(four, KindAssembler, "", 700, 0, 0),
		mk(four, KindPipeline, SemanticAtLeastOnce, 400, 500*time.Millisecond, time.Second),
		mk(four, KindPipeline, SemanticExactlyOnce, 320, 600*time.Millisecond, 1500*time.Millisecond),
		mk(many, KindDrop, "", 900, 0, 0),
		mk(many, KindPipeline, SemanticAtLeastOnce, 360, 0, 1200*time.Millisecond),
		mk(wide, KindPipeline, SemanticAtLeastOnce, 300, 0, time.Second),
	}
	rs[1].DropRecordsPerSec, rs[2].DropRecordsPerSec = 1000, 1000
	rs[6].Loads = 130
	s := strings.Join(Summary(rs), "\n")
	assert.Contains(t, s, "assembler ÷ drop (4 partitions, this run): 0.70 (700 ÷ 1000 records/s)")
	assert.Contains(t, s, "pipeline ÷ drop (4 partitions, this run): 0.40 (400 ÷ 1000 records/s)")
	assert.Contains(t, s, "exactly_once ÷ at_least_once (4 partitions, this run): throughput 0.80× (160 ÷ 200 rows/s), p50 visibility 1.20× (600ms ÷ 500ms), p99 visibility 1.50× (1.5s ÷ 1s)")
	assert.Contains(t, s, "256 ÷ 4 partitions (starrocks_txn rows/s, this run): 0.90 (180 ÷ 200); p99 visibility 1.2s")
	assert.Contains(t, s, "loads per commit (starrocks_txn, 3 tables): 4 partitions 4.0, 256 partitions 4.0")
	assert.Contains(t, s, "loads per commit (starrocks_txn, 4 partitions): 12 tables 13.0")
	var out bytes.Buffer
	WriteTable(&out, rs)
	assert.Contains(t, out.String(), s)
	assert.Empty(t, Summary([]Result{rs[2]}), "no drop row, no ratio")
}

// A fast wrong result cannot pass: verification fails when messages are
// missing or nacked and when the tables differ from the model.
func TestVerificationCatchesWrongResults(t *testing.T) {
	m := newMeter(10)
	m.onAck(9, time.Now(), nil)
	tp := &loadedTopic{model: workload.NewModel()}
	ok, msg, err := verify(context.Background(), Config{Kind: KindDrop}, Result{Records: 10}, m, metricscap.New(), tp, nil, nil)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, msg, "9 of 10 messages")

	db := openEmulator(t, Schema)
	// The producer committed one source transaction that never arrived.
	tp.model.Apply(workload.NewGenerator(workload.Options{Partitions: 1, Seed: 3, Events: true}).Next(0))
	m = newMeter(10)
	m.onAck(10, time.Now(), nil)
	ok, msg, err = verify(context.Background(), Config{Kind: KindHTTP}, Result{Records: 10, SourceTxns: 1}, m, metricscap.New(), tp, db, nil)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, msg, "orders: 1 rows missing")

	// Nacked messages fail too.
	m = newMeter(10)
	m.onAck(10, time.Now(), nil)
	m.onAck(1, time.Now(), assert.AnError)
	ok, msg, err = verify(context.Background(), Config{Kind: KindDrop}, Result{Records: 10}, m, metricscap.New(), &loadedTopic{model: workload.NewModel()}, nil, nil)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, msg, "1 messages nacked")

	// A wide table that misses a row fails, naming it.
	wide := &loadedTopic{Topic: Topic{Partitions: 1, Tables: 2}, model: workload.NewModel()}
	wdb := openEmulator(t, workload.WideSchema(2))
	g := workload.NewGenerator(workload.Options{Partitions: 1, Seed: 4, Tables: 2})
	wide.model.Apply(g.Next(0))
	m = newMeter(1)
	m.onAck(1, time.Now(), nil)
	ok, msg, err = verify(context.Background(), Config{Kind: KindPipeline}, Result{SourceTxns: 1}, m, metricscap.New(), wide, wdb, nil)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Regexp(t, `FAILED: wide_00[01]: [1-5] rows missing`, msg)
}

// Every row's window is measured from the first read to the last
// acknowledgement: CPU time and allocations only grow, and the window is
// complete only once the last message is acknowledged.
func TestMeterMeasuresTheWindow(t *testing.T) {
	m := newMeter(3)
	_, ok := m.measured()
	assert.False(t, ok)
	m.onRead(2, time.Now())
	sink := make([][]byte, 0, 1000)
	for i := 0; i < 1000; i++ {
		sink = append(sink, make([]byte, 1024))
	}
	_ = sink
	m.onAck(2, time.Now(), nil)
	_, ok = m.measured()
	assert.False(t, ok, "one message is still out")
	m.onAck(1, time.Now(), nil)
	w, ok := m.measured()
	require.True(t, ok)
	assert.Greater(t, w.wall, time.Duration(0))
	assert.GreaterOrEqual(t, w.allocBytes, uint64(1000*1024), "the allocations made in the window")
	assert.GreaterOrEqual(t, w.allocObj, uint64(1000))
	select {
	case <-m.done:
	default:
		t.Fatal("the meter is done after the last acknowledgement")
	}
}

func TestParseInts(t *testing.T) {
	v, err := parseInts("4, 64,256")
	require.NoError(t, err)
	assert.Equal(t, []int{4, 64, 256}, v)
	v, err = parseInts("")
	require.NoError(t, err)
	assert.Empty(t, v)
	_, err = parseInts("4,x")
	assert.ErrorContains(t, err, `"x" is not a positive number`)
	_, err = parseInts("0")
	assert.Error(t, err)
	assert.Equal(t, "quick-p4", slug("Quick → p4"))
}

func TestWeightedQuantile(t *testing.T) {
	s := []latencySample{{d: 3 * time.Second, n: 1}, {d: time.Second, n: 98}, {d: 2 * time.Second, n: 1}}
	assert.Equal(t, time.Second, weightedQuantile(s, 0.5))
	assert.Equal(t, time.Second, weightedQuantile(s, 0.98))
	assert.Equal(t, 2*time.Second, weightedQuantile(s, 0.99))
	assert.Equal(t, 3*time.Second, weightedQuantile(s, 1))
	assert.Zero(t, weightedQuantile(nil, 0.5))
}

func TestReadRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	assert.Greater(t, readRSS(), int64(1<<20), "this process uses more than 1 MiB")
}

// openEmulator starts an emulator with schema and returns a MySQL client of
// it.
func openEmulator(t *testing.T, schema string) *sql.DB {
	t.Helper()
	_, db := emurig.StartSQL(t, emulator.Config{Schema: schema})
	return db
}

// The exactly_once check fails unless every partition's committed_offset
// is its last END offset: a missing table or row, a wrong offset, another
// pipeline's row or a row of an unknown partition. The output's own '#…'
// bookkeeping rows are not partitions.
func TestCheckProgress(t *testing.T) {
	db := openEmulator(t, Schema)
	ctx := context.Background()
	want := map[string]int64{"cdc/0": 41, "cdc/1": 17}

	bad, err := CheckProgress(ctx, db, workload.Database, want)
	require.NoError(t, err)
	assert.Equal(t, "test.starrocks_txn_progress does not exist: the output wrote no progress (was it run with semantic exactly_once?)", bad,
		"no progress table at all is a finding, not a failure to check")

	_, err = db.ExecContext(ctx, "CREATE TABLE test."+ProgressTable+` (
  pipeline_id VARCHAR(128) NOT NULL,
  source_partition VARCHAR(255) NOT NULL,
  committed_offset BIGINT NOT NULL,
  txn_end_offset BIGINT NOT NULL
) PRIMARY KEY (pipeline_id, source_partition) DISTRIBUTED BY HASH (pipeline_id, source_partition)`)
	require.NoError(t, err)
	put := func(pipeline, part string, off int64) {
		t.Helper()
		_, err := db.ExecContext(ctx, "INSERT INTO test."+ProgressTable+" (pipeline_id, source_partition, committed_offset, txn_end_offset) VALUES (?, ?, ?, ?)", pipeline, part, off, off)
		require.NoError(t, err)
	}
	check := func() string {
		t.Helper()
		bad, err := CheckProgress(ctx, db, workload.Database, want)
		require.NoError(t, err)
		return bad
	}

	assert.Contains(t, check(), `holds no progress row of pipeline "bench" (want 2 partitions)`)
	put("other-pipeline", "cdc/0", 41)
	put("other-pipeline", "cdc/1", 17)
	assert.Contains(t, check(), "holds no progress row", "another pipeline's rows do not count")
	put(PipelineID, "cdc/0", 41)
	assert.Equal(t, "test.starrocks_txn_progress: cdc/1: no row (want committed_offset 17)", check())
	put(PipelineID, "cdc/1", 16)
	assert.Equal(t, "test.starrocks_txn_progress: cdc/1: committed_offset 16, want 17 (the last END offset)", check())
	put(PipelineID, "cdc/1", 17)
	assert.Empty(t, check())
	put(PipelineID, "cdc/2", 5)
	assert.Equal(t, "test.starrocks_txn_progress: cdc/2: unexpected row (committed_offset 5) of a partition with no source transaction", check())

	bad, err = CheckProgress(ctx, db, workload.Database, nil)
	require.NoError(t, err)
	assert.NotEmpty(t, bad, "nothing to compare is not a pass")

	// A broken connection is an error, not a finding.
	require.NoError(t, db.Close())
	_, err = CheckProgress(ctx, db, workload.Database, want)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading the progress table test."+ProgressTable)
}

// verify fails an exactly_once row whose tables are right but whose
// progress table is not.
func TestVerifyExactlyOnceChecksProgress(t *testing.T) {
	db := openEmulator(t, Schema)
	m := newMeter(0)
	c := Config{Kind: KindPipeline, Semantic: SemanticExactlyOnce}
	tp := &loadedTopic{model: workload.NewModel()}
	// Nothing produced, nothing loaded: the tables equal the empty model,
	// but the progress table is missing.
	ok, msg, err := verify(context.Background(), c, Result{}, m, metricscap.New(), tp, db, map[string]int64{"cdc/0": 2})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, msg, "FAILED: test.starrocks_txn_progress does not exist")

	_, err = db.Exec("CREATE TABLE test." + ProgressTable + ` (pipeline_id VARCHAR(128) NOT NULL, source_partition VARCHAR(255) NOT NULL, committed_offset BIGINT NOT NULL) PRIMARY KEY (pipeline_id, source_partition) DISTRIBUTED BY HASH (pipeline_id)`)
	require.NoError(t, err)
	ok, msg, err = verify(context.Background(), c, Result{}, m, metricscap.New(), tp, db, map[string]int64{"cdc/0": 2})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, msg, "FAILED: test.starrocks_txn_progress holds no progress row")

	_, err = db.Exec("INSERT INTO test."+ProgressTable+" VALUES (?, ?, ?)", PipelineID, "cdc/0", 2)
	require.NoError(t, err)
	ok, msg, err = verify(context.Background(), c, Result{}, m, metricscap.New(), tp, db, map[string]int64{"cdc/0": 2})
	require.NoError(t, err)
	assert.True(t, ok, msg)
	assert.Contains(t, msg, "test.starrocks_txn_progress: 1 partitions at their last END offset")

	// at_least_once does not look at the progress table.
	ok, _, err = verify(context.Background(), Config{Kind: KindPipeline, Semantic: SemanticAtLeastOnce}, Result{}, m, metricscap.New(), tp, db, nil)
	require.NoError(t, err)
	assert.True(t, ok)
}

// LastEndOffsets finds each partition's last TXN_END among committed
// records only: an aborted producer transaction's END is not the partition's
// last.
func TestLastEndOffsets(t *testing.T) {
	cluster := kafka.New(t, kafka.Topic("t", 3, nil))
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.Brokers()...), kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("last-end-test"))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	produce := func(commit bool, recs ...*kgo.Record) []*kgo.Record {
		t.Helper()
		require.NoError(t, cl.BeginTransaction())
		require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
		require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
		return recs
	}
	ev := func(part int32, typ string) *kgo.Record {
		return &kgo.Record{Partition: part, Value: []byte(fmt.Sprintf(`{"partition":%d,"txnId":"x","type":%q}`, part, typ))}
	}
	committed := produce(true, ev(0, "TXN_BEGIN"), ev(0, "DATA"), ev(0, "TXN_END"), ev(1, "TXN_BEGIN"), ev(1, "TXN_END"),
		ev(0, "TXN_BEGIN"), ev(0, "TXN_END"))
	produce(false, ev(0, "TXN_BEGIN"), ev(0, "TXN_END"), ev(2, "TXN_BEGIN"), ev(2, "TXN_END"))
	committed = append(committed, produce(true, ev(1, "TXN_BEGIN"), ev(1, "DATA"), ev(1, "TXN_END"), ev(2, "DATA"))...)

	want := map[string]int64{}
	for _, r := range committed {
		if strings.Contains(string(r.Value), "TXN_END") {
			want[fmt.Sprintf("t/%d", r.Partition)] = max(want[fmt.Sprintf("t/%d", r.Partition)], r.Offset)
		}
	}
	require.Len(t, want, 2)
	got, err := LastEndOffsets(ctx, cluster.Brokers(), "t", int64(len(committed)))
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, committed[6].Offset, got["t/0"], "partition 0 ends at its second committed END, not the aborted one")

	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	_, err = LastEndOffsets(short, cluster.Brokers(), "t", int64(len(committed))+1)
	require.Error(t, err, "fewer committed records than asked for ends with the context")
	assert.Contains(t, err.Error(), fmt.Sprintf("%d of %d records read", len(committed), len(committed)+1))
}

// --rate adds a paced copy of each at_least_once pipeline row: its input
// delivers no faster than the rate, it is verified like the others, it has
// no ratio to drop, and the summary gives its visibility.
//
// The rate is below what the pipeline does on an idle two-core machine
// under the race detector (about 2300–3000 records/s), so that the pacer
// has something to hold back; a loaded machine (load 20–30) brings the
// pipeline itself down to 400–1300 records/s, and the row with it: what
// the pacer must not do is hold it below the rate or below the
// pipeline's own pace, whichever is lower. The row fails that check only
// if it is at most half the rate (its window E at least 2N/rate for N
// records) and the pacer held it for at least half the window (W ≥ E/2,
// so W ≥ N/rate); a pacer that keeps the rate holds at most until the
// last batch's due time, (N − last batch)/rate, whatever the load.
func TestPacedRowKeepsItsRate(t *testing.T) {
	const rate = 1000
	// Seven rows, each bounded by Timeout: they take about 15 s each at a
	// load of 25–30, 3 s on an idle machine.
	o := Options{Txns: 600, Kinds: []string{KindDrop, KindPipeline}, Rate: rate, Timeout: 2 * time.Minute}
	var paced int
	for _, c := range Configs(o, Topic{Partitions: 4}) {
		if c.Rate > 0 {
			paced++
			assert.Equal(t, SemanticAtLeastOnce, c.Semantic)
			assert.Contains(t, c.Name, "paced at 1000 records/s")
		}
	}
	require.Equal(t, 1, paced, "one paced copy, of the at_least_once pipeline")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	rs, err := Run(ctx, o)
	require.NoError(t, err)
	var found bool
	for _, r := range rs {
		if r.Rate == 0 {
			continue
		}
		found = true
		assert.True(t, r.Verified, r.Verification)
		// The pipeline's own pace in this row: the rate it would have
		// reached without the pacer's holds.
		own := float64(r.Records) / (r.Elapsed - r.PaceWait).Seconds()
		t.Logf("%.0f records/s in %v (read at %.0f records/s, the last batch %d), the pacer holding %v of it (the pipeline's own pace %.0f records/s)",
			r.RecordsPerSec(), r.Elapsed, r.ReadRate(), r.LastBatch, r.PaceWait, own)
		// The whole window may pass the rate by the last batch, which the
		// pacer lets go once the records before it fit. The read rate
		// leaves it out, and is exact: the first read starts the
		// schedule, and no batch counts as read before its due time.
		assert.LessOrEqual(t, r.ReadRate(), rate*1.001, "the input kept the pace")
		assert.Greater(t, r.RecordsPerSec(), 0.5*min(rate, own), "and the pacer did not hold it far below the rate, or below the pipeline's own pace")
	}
	require.True(t, found)
	var line string
	for _, l := range Summary(rs) {
		if strings.HasPrefix(l, "paced at 1000 records/s") {
			line = l
		}
	}
	assert.Contains(t, line, "p50 / p99 visibility", "the summary gives the paced row's visibility")
}

// ReadRate is the rate a paced input bounds: a batch is let go once the
// messages before it fit the rate, so the last batch's messages count for
// no time; they do not count.
func TestReadRateLeavesOutTheLastBatch(t *testing.T) {
	m := newMeter(700)
	t0 := time.Now()
	m.onRead(100, t0)
	m.onRead(100, t0.Add(100*time.Millisecond))
	m.onRead(500, t0.Add(200*time.Millisecond))
	span, last := m.reads()
	assert.Equal(t, 200*time.Millisecond, span)
	r := Result{Delivered: m.read.Load(), ReadSpan: span, LastBatch: int64(last)}
	assert.InDelta(t, 1000, r.ReadRate(), 1e-9, "200 messages read before the last batch, over 200 ms")
	assert.Zero(t, Result{}.ReadRate(), "nothing read")
}

// A per-table row's summary line gives its commit window and its ratio to
// the multi-table row of the same semantic; the multi-table ratios ignore
// it.
func TestSummaryPerTable(t *testing.T) {
	four := Topic{Partitions: 4}
	mk := func(kind, sem, mode string, records int64, p99 time.Duration) Result {
		c := Config{Topic: four, Kind: kind, Semantic: sem, Name: rowName(kind, sem)}
		if mode != "" {
			c = perTable(c)
		}
		return Result{Config: c, Records: records, Rows: records / 2, Elapsed: time.Second, VisP50: p99 / 2, VisP99: p99, Loads: 40, Commits: 10}
	}
	rs := []Result{
		mk(KindDrop, "", "", 1000, 0),
		mk(KindPipeline, SemanticAtLeastOnce, "", 400, time.Second),
		mk(KindPipeline, SemanticAtLeastOnce, ModePerTable, 300, 2*time.Second),
	}
	rs[1].DropRecordsPerSec, rs[2].DropRecordsPerSec = 1000, 1000
	rs[2].Windows, rs[2].WindowP50, rs[2].WindowP99, rs[2].WindowMax = 12, 400*time.Microsecond, 3*time.Millisecond, 20*time.Millisecond
	s := strings.Join(Summary(rs), "\n")
	assert.Contains(t, s, "pipeline ÷ drop (4 partitions, this run): 0.40 (400 ÷ 1000 records/s)", "the multi-table row, not the per-table one")
	assert.Contains(t, s, "per_table (StarRocks 3.3) at_least_once (4 partitions, this run): commit window p50 / p99 / max 400µs / 3ms / 20ms over 12 cycles")
	assert.Contains(t, s, "÷ multi_table: throughput 0.75× (150 ÷ 200 rows/s), p99 visibility 2.00× (2s ÷ 1s)")
	assert.Equal(t, "kafka_txn → txn_assembler → starrocks_txn per_table (StarRocks 3.3)", rs[2].Name)
	// Without a drop row (--only pipeline) the per-table line stays.
	assert.Contains(t, strings.Join(Summary(rs[1:]), "\n"), "commit window p50 / p99 / max 400µs / 3ms / 20ms over 12 cycles")
}
