package starrocks_txn

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/exitstatus"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// transaction_mode (mode.go): auto decides from the FE's version over
// mysql_address, else from the FE's answer to a multi-table begin (at
// Connect with a literal database, else at the first begin), and logs why;
// multi_table against a 3.x FE stops the output at start, naming per_table.

func TestAutoModeDecidesFromTheFE(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		mysql         bool
		log           string
	}{
		{"3.3 by its version", "3.3", true, "transaction_mode auto: per-table transactions prepared together, as StarRocks 3.x has no multi-table transactions (the FE is StarRocks 3.3.0)"},
		{"3.4 by a multi-table begin at Connect", "3.4", false, "a multi-table begin in database test was answered `unknown table"},
		{"4.0 by its version", "4.0", true, "transaction_mode auto: multi-table transactions (the FE is StarRocks 4.0.0)"},
		{"4.0 by a multi-table begin at Connect", "4.0", false, "transaction_mode auto: multi-table transactions (a multi-table begin in database test succeeded)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startEmulator(t, func(c *emulator.Config) { c.StarRocksVersion = tc.version })
			out := fmt.Sprintf("    load_urls: [ %q ]\n", e.FEURL())
			if tc.mysql {
				out += fmt.Sprintf("    mysql_address: %s\n", e.MySQLAddr())
			}
			cs := startConnStream(t, out)
			testkit.WaitFor(t, 20*time.Second, func() bool { return e.Counters().Commits > 2 }, "the output commits; logs:\n%s", cs.logs.String())
			assert.Contains(t, cs.logs.String(), tc.log)
			require.NoError(t, cs.stream.StopWithin(10*time.Second))
			assert.NoError(t, exitstatus.Take())
		})
	}
}

// Without mysql_address and with a database taken from each message, the
// first begin decides: a 3.x FE answers it `unknown table "<db>."`, which
// neither poisons nor stalls anything.
func TestAutoModeDecidesAtTheFirstBegin(t *testing.T) {
	e := ptEmulator(t)
	res := runPerTable(t, e, ptRun{mode: modeAuto})
	assert.Contains(t, res.logs.String(), "the FE answered a multi-table begin in database test as 3.x does")
	assert.Zero(t, res.metrics.Counter("starrocks_txn_dead_lettered")+res.metrics.Counter("starrocks_txn_partition_stalls"))
}

// multi_table against a 3.x FE stops the output at start (exit status 1),
// with an error naming per_table and the upgrade: known from the version,
// or from the FE's answer to a multi-table begin at Connect.
func TestMultiTableOn3xStopsAtStart(t *testing.T) {
	for _, mysql := range []bool{true, false} {
		t.Run(fmt.Sprintf("mysql_address_%v", mysql), func(t *testing.T) {
			e := ptEmulator(t)
			out := fmt.Sprintf("    load_urls: [ %q ]\n    transaction_mode: multi_table\n", e.FEURL())
			if mysql {
				out += fmt.Sprintf("    mysql_address: %s\n", e.MySQLAddr())
			}
			cs := startConnStream(t, out)
			cs.waitStopped(t)
			logs := cs.logs.String()
			assert.Contains(t, logs, "The starrocks_txn output stops, and the pipeline with it")
			assert.Contains(t, logs, "transaction_mode multi_table needs StarRocks 4.0 or later")
			assert.Contains(t, logs, "set transaction_mode: per_table (or auto), or upgrade StarRocks")
			err := exitstatus.Take()
			require.Error(t, err, "the binary exits with status 1")
			assert.Contains(t, err.Error(), "per_table")
			assert.Zero(t, e.Counters().Commits, "nothing was written")
		})
	}
}

// Without mysql_address and with the database taken from each message,
// multi_table learns of the 3.x FE at its first begin: the output stops
// there (exit status 1) without poisoning or acknowledging anything.
func TestMultiTableOn3xStopsAtTheFirstBegin(t *testing.T) {
	e := ptEmulator(t)
	sb, metrics := metricStream(t)
	logs := &syncLog{}
	sb.SetLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf("starrocks_txn:\n  load_urls: [ %s ]\n  transaction_mode: multi_table\n  commit_interval: 100ms\n  schema_evolution: ignore\n", e.FEURL())))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()
	t.Cleanup(func() { _ = stream.StopWithin(time.Second); _ = exitstatus.Take() })
	s := newSrc("mt")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- produce(ctx, service.MessageBatch{s.row("p0", "t1", "orders", map[string]any{"order_id": 1, "customer_id": 1, "total_amount": 0}, true)})
	}()
	testkit.WaitFor(t, 10*time.Second, func() bool { return exitstatus.Take() != nil }, "a failure recorded for the exit status; logs:\n%s", logs.String())
	assert.Contains(t, logs.String(), "answered a multi-table begin in database test as StarRocks 3.x does")
	assert.Contains(t, logs.String(), "set transaction_mode: per_table (or auto), or upgrade StarRocks")
	assert.Error(t, <-done, "nothing is acknowledged")
	assert.Zero(t, metrics.Counter("starrocks_txn_dead_lettered")+metrics.Counter("starrocks_txn_partition_stalls"), "nothing poisoned")
	assert.Zero(t, e.Counters().Commits)
}

// The prepared timeout a cycle decides within: prepared_timeout from
// 3.5.4, the FE's config otherwise (read over mysql_address), the shorter
// of both when the version is not known.
func TestPerTableLearnsThePreparedTimeout(t *testing.T) {
	for _, tc := range []struct {
		name, version, header string
		config                string
		want                  time.Duration
	}{
		{"3.3 config", "3.3", "", "600", 600 * time.Second},
		{"3.3 ignores the header", "3.3", "1h", "600", 600 * time.Second},
		{"3.5.4 reads the header", "3.5.4", "1h", "600", time.Hour},
		{"3.5.4 config", "3.5.4", "", "", 24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startEmulator(t, func(c *emulator.Config) { c.StarRocksVersion = tc.version })
			if tc.config != "" {
				db, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/")
				require.NoError(t, err)
				_, err = db.Exec(`ADMIN SET FRONTEND CONFIG ("prepared_transaction_default_timeout_second" = "` + tc.config + `")`)
				require.NoError(t, err)
				require.NoError(t, db.Close())
			}
			yaml := ""
			if tc.header != "" {
				yaml = "prepared_timeout: " + tc.header + "\n"
			}
			o, _ := emulatorPTOutput(t, e, yaml)
			p := perTableOf(o.proto)
			require.NotNil(t, p)
			assert.Equal(t, tc.want, time.Duration(p.limit.Load()))
		})
	}
	assert.True(t, versionAtLeast("3.5.4", 3, 5, 4))
	assert.True(t, versionAtLeast("3.10", 3, 5, 4))
	assert.False(t, versionAtLeast("3.5", 3, 5, 4))
	assert.False(t, versionAtLeast("3.3.7", 3, 5, 4))
	assert.True(t, versionAtLeast("4.0.1", 3, 5, 4))
}
