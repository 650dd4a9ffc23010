package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/internal/workload"
)

func TestMain(m *testing.M) {
	b, err := os.ReadFile("../../../examples/schema.sql")
	if err != nil {
		panic(err)
	}
	Schema = string(b)
	os.Exit(m.Run())
}

// The command's core in --quick mode, through the CLI: one table with every
// configuration and every column, each configuration verified, and figures
// that only a real run produces.
func TestQuickCommandPrintsAVerifiedTable(t *testing.T) {
	var out, progress bytes.Buffer
	app := &cli.App{Writer: &out, ErrWriter: &progress, Commands: []*cli.Command{Command(Schema)}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, app.RunContext(ctx, []string{"bin", "bench", "--quick"}))
	t.Log("\n" + out.String())

	rows := tableRows(t, out.String())
	require.NotEmpty(t, rows)
	assert.Equal(t, Columns, rows[0], "header")
	configs := Configs(Options{})
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
	byName := map[string][]string{}
	for i, c := range configs {
		r := rows[1+i]
		require.Len(t, r, len(Columns), "row %q has every column", c.Name)
		assert.Equal(t, c.Name, r[0])
		if c.Output == OutputHTTPClient {
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
		assert.Equal(t, strconv.Itoa(QuickTxns), r[col("source txns")], "%s: --quick runs %d source transactions", c.Name, QuickTxns)
		assert.Greater(t, number(t, r[col("rows/s")]), 0.0, c.Name)
		assert.Greater(t, number(t, r[col("source txns/s")]), 0.0, c.Name)
		assert.NotEqual(t, "0", r[col("p50 visibility")], c.Name)
		byName[c.Name] = r
	}
	find := func(output, semantic string) Config {
		for _, c := range configs {
			if c.Output == output && c.Semantic == semantic {
				return c
			}
		}
		t.Fatalf("no configuration %s %s", output, semantic)
		return Config{}
	}
	alo, eo := find(OutputStarRocksTxn, SemanticAtLeastOnce), find(OutputStarRocksTxn, SemanticExactlyOnce)
	drop, httpc := byName[find(OutputDrop, "").Name], byName[find(OutputHTTPClient, "").Name]
	for _, c := range []Config{alo, eo} {
		st := byName[c.Name]
		assert.Greater(t, number(t, st[col("commits")]), 0.0, "%s committed", c.Name)
		assert.Greater(t, number(t, st[col("HTTP loads/s")]), 0.0, "%s loaded over HTTP", c.Name)
		assert.Contains(t, st[col("peak buffered / buffer_size")], "/ 128 MiB")
		rec, bound, ok := strings.Cut(st[col("records/s (model bound)")], " ")
		require.True(t, ok, "%s shows the commit-cycle bound", c.Name)
		assert.Greater(t, number(t, rec), 0.0)
		assert.Greater(t, number(t, strings.Trim(bound, "()")), 0.0, "max_in_flight × batch ÷ commit_interval")
	}
	// How the loads/s compare is the benchmark's finding, not a test's: a
	// quick run on a loaded machine is too short to rank them.
	assert.Greater(t, number(t, httpc[col("HTTP loads/s")]), 0.0, "http_client loaded over HTTP")
	assert.Contains(t, drop[col("records/s (model bound)")], "(-)", "drop has no commit cycle")
	assert.Equal(t, "0.0", drop[col("HTTP loads/s")], "drop makes no HTTP load")
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

	// The summary gives exactly_once ÷ at_least_once from the table's own
	// figures.
	m := regexp.MustCompile(`exactly_once ÷ at_least_once \(starrocks_txn, same workload, this run\): throughput ([0-9.]+)× \(([0-9]+) ÷ ([0-9]+) rows/s\), p50 visibility ([0-9.]+)× \((\S+) ÷ (\S+)\), p99 visibility ([0-9.]+)× \((\S+) ÷ (\S+)\)`).
		FindStringSubmatch(out.String())
	require.NotNil(t, m, "the summary compares the semantics:\n%s", out.String())
	aloRow, eoRow := byName[alo.Name], byName[eo.Name]
	assert.Equal(t, eoRow[col("rows/s")], m[2])
	assert.Equal(t, aloRow[col("rows/s")], m[3])
	assert.InDelta(t, number(t, m[2])/number(t, m[3]), number(t, m[1]), 0.02, "throughput ratio")
	assert.Equal(t, []string{eoRow[col("p50 visibility")], aloRow[col("p50 visibility")]}, []string{m[5], m[6]})
	assert.Equal(t, []string{eoRow[col("p99 visibility")], aloRow[col("p99 visibility")]}, []string{m[8], m[9]})
	for i, q := range map[int][2]string{4: {m[5], m[6]}, 7: {m[8], m[9]}} {
		e, err := time.ParseDuration(q[0])
		require.NoError(t, err)
		a, err := time.ParseDuration(q[1])
		require.NoError(t, err)
		assert.InDelta(t, float64(e)/float64(a), number(t, m[i]), 0.02, "latency ratio %s ÷ %s", q[0], q[1])
	}
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

// The sweep varies one axis at a time around the defaults, on starrocks_txn.
func TestSweepVariesOneAxisAtATime(t *testing.T) {
	o := Options{Sweep: true}
	cs := Configs(o)
	require.Len(t, cs, 5+9)
	axes := map[string][]int{}
	for _, c := range cs[5:] {
		assert.Equal(t, OutputStarRocksTxn, c.Output, c.Name)
		assert.Equal(t, SemanticAtLeastOnce, c.Semantic, "%s sweeps the default semantic", c.Name)
		changed := 0
		if c.MaxInFlight != DefaultMaxInFlight {
			changed++
		}
		if c.Batch != DefaultBatch {
			changed++
		}
		if c.Partitions != DefaultPartitions {
			changed++
		}
		assert.LessOrEqual(t, changed, 1, "%s changes one axis", c.Name)
		switch c.Sweep {
		case "max_in_flight":
			axes[c.Sweep] = append(axes[c.Sweep], c.MaxInFlight)
		case "batch":
			axes[c.Sweep] = append(axes[c.Sweep], c.Batch)
		case "partitions":
			axes[c.Sweep] = append(axes[c.Sweep], c.Partitions)
		}
	}
	assert.Equal(t, []int{256, 1024, 4096}, axes["max_in_flight"])
	assert.Equal(t, []int{250, 1000, 4000}, axes["batch"])
	assert.Equal(t, []int{2, 4, 8}, axes["partitions"])
	assert.Len(t, Configs(Options{}), 5, "without --sweep only the comparison")
}

// The comparison runs starrocks_txn with both semantics side by side, the
// same settings otherwise; only those rows carry a semantic.
func TestComparisonRunsBothSemantics(t *testing.T) {
	cs := Configs(Options{})
	require.Len(t, cs, 5)
	assert.Equal(t, "starrocks_txn → emulator", cs[0].Name)
	assert.Equal(t, "starrocks_txn exactly_once → emulator", cs[1].Name)
	assert.Equal(t, []string{OutputStarRocksTxn, OutputStarRocksTxn, OutputDrop, OutputHTTPClient},
		[]string{cs[0].Output, cs[1].Output, cs[2].Output, cs[3].Output})
	assert.Equal(t, []string{SemanticAtLeastOnce, SemanticExactlyOnce, "", ""},
		[]string{cs[0].Semantic, cs[1].Semantic, cs[2].Semantic, cs[3].Semantic})
	a, e := cs[0], cs[1]
	e.Name, e.Semantic = a.Name, a.Semantic
	assert.Equal(t, a, e, "the two starrocks_txn rows differ only in semantic")
	d := cs[4]
	assert.Equal(t, "debezium_txn → starrocks_txn → emulator", d.Name)
	d.Name, d.Input = a.Name, a.Input
	assert.Equal(t, a, d, "the debezium_txn row differs from the kafka_txn row only in its input")
}

// The exactly_once pipeline sets what the output needs for it, and the
// output's own lint rule would refuse it without the MySQL address: the
// YAML really is read as exactly_once.
func TestPipelineYAMLSemantics(t *testing.T) {
	cs := Configs(Options{})
	env := service.GlobalEnvironment().Clone()
	require.NoError(t, registerTimedInput(env, newMeter(0)))

	eo := PipelineYAML(cs[1], Options{}, "127.0.0.1:9092", "http://127.0.0.1:8030", "127.0.0.1:9030")
	assert.Contains(t, eo, "semantic: exactly_once")
	assert.Contains(t, eo, "pipeline_id: "+PipelineID)
	assert.Contains(t, eo, "progress_table: "+ProgressTable)
	assert.Contains(t, eo, `mysql_address: "127.0.0.1:9030"`)
	require.NoError(t, env.NewStreamBuilder().SetYAML(eo))

	noAddr := PipelineYAML(cs[1], Options{}, "127.0.0.1:9092", "http://127.0.0.1:8030", "")
	err := env.NewStreamBuilder().SetYAML(noAddr)
	require.Error(t, err, "exactly_once without mysql_address fails the output's lint")
	assert.Contains(t, err.Error(), "mysql_address")

	alo := PipelineYAML(cs[0], Options{}, "127.0.0.1:9092", "http://127.0.0.1:8030", "127.0.0.1:9030")
	assert.Contains(t, alo, "semantic: at_least_once")
	assert.NotContains(t, alo, "mysql_address", "at_least_once runs without the MySQL port, as before")
	require.NoError(t, env.NewStreamBuilder().SetYAML(alo))
}

// The summary's ratios are exactly_once over at_least_once of the
// comparison rows, never of a sweep row.
func TestCompareSemantics(t *testing.T) {
	mk := func(sem, sweep string, rows int64, p50, p99 time.Duration) Result {
		return Result{Config: Config{Output: OutputStarRocksTxn, Semantic: sem, Sweep: sweep, Name: sem + sweep},
			Rows: rows, Elapsed: time.Second, VisP50: p50, VisP99: p99}
	}
	rs := []Result{
		mk(SemanticAtLeastOnce, "", 1000, 500*time.Millisecond, time.Second),
		mk(SemanticExactlyOnce, "", 800, 600*time.Millisecond, 1500*time.Millisecond),
		{Config: Config{Output: OutputDrop, Name: "drop"}, Rows: 5000, Elapsed: time.Second, VisP50: time.Millisecond, VisP99: time.Millisecond},
		mk(SemanticAtLeastOnce, "batch", 10, time.Second, time.Second),
	}
	sr, ok := CompareSemantics(rs)
	require.True(t, ok)
	assert.InDelta(t, 0.8, sr.Throughput, 1e-9)
	assert.InDelta(t, 1.2, sr.P50, 1e-9)
	assert.InDelta(t, 1.5, sr.P99, 1e-9)
	var out bytes.Buffer
	WriteTable(&out, rs)
	assert.Contains(t, out.String(), "exactly_once ÷ at_least_once (starrocks_txn, same workload, this run): throughput 0.80× (800 ÷ 1000 rows/s), p50 visibility 1.20× (600ms ÷ 500ms), p99 visibility 1.50× (1.5s ÷ 1s)")

	_, ok = CompareSemantics([]Result{rs[0], rs[2], rs[3]})
	assert.False(t, ok, "no exactly_once row, no ratio")
	out.Reset()
	WriteTable(&out, []Result{rs[0], rs[2]})
	assert.NotContains(t, out.String(), "exactly_once ÷")
}

// A fast wrong result cannot pass: verification fails when records are
// missing and when the tables differ from the model.
func TestVerificationCatchesWrongResults(t *testing.T) {
	m := newMeter(10)
	m.onAck(9, time.Now(), nil)
	model := workload.NewModel()
	ok, msg, err := verify(context.Background(), Config{Output: OutputDrop}, Result{Records: 10}, m, metricscap.New(), model, nil, nil)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, msg, "9 of 10 records")

	em, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: Schema})
	require.NoError(t, err)
	defer em.Close()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", em.MySQLAddr()
	conn, err := mysql.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(conn)
	defer db.Close()

	// The producer committed one source transaction that never arrived.
	model.Apply(workload.NewGenerator(workload.Options{Partitions: 1, Seed: 3, Events: true}).Next(0))
	m = newMeter(10)
	m.onAck(10, time.Now(), nil)
	ok, msg, err = verify(context.Background(), Config{Output: OutputHTTPClient}, Result{Records: 10, SourceTxns: 1}, m, metricscap.New(), model, db, nil)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, msg, "orders: 1 rows missing")

	// Nacked records fail too.
	m = newMeter(10)
	m.onAck(10, time.Now(), nil)
	m.onAck(1, time.Now(), assert.AnError)
	ok, msg, err = verify(context.Background(), Config{Output: OutputDrop}, Result{Records: 10}, m, metricscap.New(), workload.NewModel(), nil, nil)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, msg, "1 records nacked")
}

// A row whose key is present with another value is stale (an older change
// won), one absent is missing, an extra one (or a duplicate event) is
// unexpected.
func TestDiffTableTellsStaleFromMissing(t *testing.T) {
	want := []string{"1|a", "2|b", "3|c"}
	got := []string{"1|a", "2|old", "4|x"}
	assert.Equal(t, tableDiff{missing: 1, stale: 1, unexpected: 1}, diffTable(1, want, got))
	assert.Equal(t, tableDiff{unexpected: 1}, diffTable(0, []string{"7", "8"}, []string{"7", "7", "8"}))
	assert.Equal(t, tableDiff{}, diffTable(2, []string{"1|1|p"}, []string{"1|1|p"}))
	assert.Contains(t, describeDiff(workload.Snapshot{Orders: want}, workload.Snapshot{Orders: got}),
		"orders: 1 rows missing, 1 stale (an older version of the row is visible), 1 unexpected")
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

// openEmulator starts an emulator with the bench schema and returns a MySQL
// client of it.
func openEmulator(t *testing.T) *sql.DB {
	t.Helper()
	em, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: Schema})
	require.NoError(t, err)
	t.Cleanup(func() { em.Close() })
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", em.MySQLAddr()
	conn, err := mysql.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

// The exactly_once check fails unless every partition's committed_offset
// is its last END offset: a missing table or row, a wrong offset, another
// pipeline's row or a row of an unknown partition. The output's own '#…'
// bookkeeping rows are not partitions.
func TestCheckProgress(t *testing.T) {
	db := openEmulator(t)
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
	db := openEmulator(t)
	m := newMeter(0)
	c := Config{Output: OutputStarRocksTxn, Semantic: SemanticExactlyOnce}
	// Nothing produced, nothing loaded: the tables equal the empty model,
	// but the progress table is missing.
	ok, msg, err := verify(context.Background(), c, Result{}, m, metricscap.New(), workload.NewModel(), db, map[string]int64{"cdc/0": 2})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, msg, "FAILED: test.starrocks_txn_progress does not exist")

	_, err = db.Exec("CREATE TABLE test." + ProgressTable + ` (pipeline_id VARCHAR(128) NOT NULL, source_partition VARCHAR(255) NOT NULL, committed_offset BIGINT NOT NULL) PRIMARY KEY (pipeline_id, source_partition) DISTRIBUTED BY HASH (pipeline_id)`)
	require.NoError(t, err)
	ok, msg, err = verify(context.Background(), c, Result{}, m, metricscap.New(), workload.NewModel(), db, map[string]int64{"cdc/0": 2})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, msg, "FAILED: test.starrocks_txn_progress holds no progress row")

	_, err = db.Exec("INSERT INTO test."+ProgressTable+" VALUES (?, ?, ?)", PipelineID, "cdc/0", 2)
	require.NoError(t, err)
	ok, msg, err = verify(context.Background(), c, Result{}, m, metricscap.New(), workload.NewModel(), db, map[string]int64{"cdc/0": 2})
	require.NoError(t, err)
	assert.True(t, ok, msg)
	assert.Contains(t, msg, "test.starrocks_txn_progress: 1 partitions at their last END offset")

	// at_least_once does not look at the progress table.
	ok, _, err = verify(context.Background(), Config{Output: OutputStarRocksTxn, Semantic: SemanticAtLeastOnce}, Result{}, m, metricscap.New(), workload.NewModel(), db, nil)
	require.NoError(t, err)
	assert.True(t, ok)
}

// LastEndOffsets finds each partition's last TXN_END among committed
// records only: an aborted producer transaction's END is not the partition's
// last.
func TestLastEndOffsets(t *testing.T) {
	kafka, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "t"))
	require.NoError(t, err)
	defer kafka.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.ListenAddrs()...), kgo.DefaultProduceTopic("t"),
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
	got, err := LastEndOffsets(ctx, kafka.ListenAddrs(), "t", int64(len(committed)))
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, committed[6].Offset, got["t/0"], "partition 0 ends at its second committed END, not the aborted one")

	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	_, err = LastEndOffsets(short, kafka.ListenAddrs(), "t", int64(len(committed))+1)
	require.Error(t, err, "fewer committed records than asked for ends with the context")
	assert.Contains(t, err.Error(), fmt.Sprintf("%d of %d records read", len(committed), len(committed)+1))
}
