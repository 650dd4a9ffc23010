package bench

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/internal/workload"
)

func TestMain(m *testing.M) {
	b, err := os.ReadFile("../../examples/schema.sql")
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
	var out bytes.Buffer
	app := &cli.App{Writer: &out, Commands: []*cli.Command{Command(Schema)}}
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
	st := byName[configs[0].Name]
	require.Equal(t, OutputStarRocksTxn, configs[0].Output)
	assert.Greater(t, number(t, st[col("commits")]), 0.0, "starrocks_txn committed")
	assert.Greater(t, number(t, st[col("HTTP loads/s")]), 0.0, "starrocks_txn loaded over HTTP")
	assert.Contains(t, st[col("peak buffered / buffer_size")], "/ 128 MiB")
	rec, bound, ok := strings.Cut(st[col("records/s (model bound)")], " ")
	require.True(t, ok, "starrocks_txn shows the commit-cycle bound")
	assert.Greater(t, number(t, rec), 0.0)
	assert.Greater(t, number(t, strings.Trim(bound, "()")), 0.0, "max_in_flight × batch ÷ commit_interval")
	assert.Contains(t, byName[configs[1].Name][col("records/s (model bound)")], "(-)", "drop has no commit cycle")
	assert.Equal(t, "0.0", byName[configs[1].Name][col("HTTP loads/s")], "drop makes no HTTP load")
	assert.Greater(t, number(t, byName[configs[2].Name][col("HTTP loads/s")]), number(t, st[col("HTTP loads/s")]),
		"plain stream loads per batch make more HTTP loads than shared transactions")
	assert.Contains(t, out.String(), "starrocks_txn_visibility_latency_ns", "the table says how latency is measured")
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
	require.Len(t, cs, 3+9)
	axes := map[string][]int{}
	for _, c := range cs[3:] {
		assert.Equal(t, OutputStarRocksTxn, c.Output, c.Name)
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
	assert.Len(t, Configs(Options{}), 3, "without --sweep only the comparison")
}

// A fast wrong result cannot pass: verification fails when records are
// missing and when the tables differ from the model.
func TestVerificationCatchesWrongResults(t *testing.T) {
	m := newMeter(10)
	m.onAck(9, time.Now(), nil)
	model := workload.NewModel()
	ok, msg, err := verify(context.Background(), Config{Output: OutputDrop}, Result{Records: 10}, m, metricscap.New(), model, nil)
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
	ok, msg, err = verify(context.Background(), Config{Output: OutputHTTPClient}, Result{Records: 10, SourceTxns: 1}, m, metricscap.New(), model, db)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Contains(t, msg, "orders: 1 rows missing")

	// Nacked records fail too.
	m = newMeter(10)
	m.onAck(10, time.Now(), nil)
	m.onAck(1, time.Now(), assert.AnError)
	ok, msg, err = verify(context.Background(), Config{Output: OutputDrop}, Result{Records: 10}, m, metricscap.New(), workload.NewModel(), nil)
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
