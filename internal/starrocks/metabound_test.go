package starrocks_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// TestMetaBoundGrowsWhenEveryStatementIsSlow: every table-model statement
// takes 2.5 × mysql_timeout on the server (a loaded FE). A caller that
// retries a failed call, as the output does, must get its answer after a
// few attempts; a client that gives every attempt the same bound times
// every one of them out and never reads the table model.
func TestMetaBoundGrowsWhenEveryStatementIsSlow(t *testing.T) {
	m := slowTableModel(t, 200*time.Millisecond, "")
	ctx := context.Background()
	var last error
	for attempt := 1; attempt <= 6; attempt++ {
		pk, known, err := m.PrimaryKey(ctx, "test", "orders")
		if err == nil {
			require.True(t, known, "orders exists")
			require.True(t, pk, "orders is a PRIMARY KEY table")
			t.Logf("answered at attempt %d", attempt)
			return
		}
		require.True(t, errors.Is(err, context.DeadlineExceeded), "attempt %d: only the bound may end it: %v", attempt, err)
		last = err
	}
	t.Fatalf("six attempts, each timed out: the bound never grew (last: %v)", last)
}

// TestMetaBoundGrowsForASlowStatementBesideQuickOnes: the table-model
// statement takes 2.5 × mysql_timeout (a busy catalog) while the other
// statements the output sends in between (a progress read of another
// database's worker, between two of this worker's replays) answer at once.
// The Meta has one bound for every statement, so each quick statement
// halves what the slow one's timeout had just doubled, and the slow one
// times out at mysql_timeout forever.
func TestMetaBoundGrowsForASlowStatementBesideQuickOnes(t *testing.T) {
	m := slowTableModel(t, 200*time.Millisecond, "\nCREATE TABLE IF NOT EXISTS `test`.`prog` (`pipeline_id` VARCHAR(64) NOT NULL, `source_partition` VARCHAR(255) NOT NULL, `committed_offset` BIGINT NOT NULL, `txn_end_offset` BIGINT NULL, `label` VARCHAR(128) NULL) ENGINE=OLAP PRIMARY KEY(`pipeline_id`, `source_partition`) DISTRIBUTED BY HASH(`pipeline_id`) BUCKETS 1 PROPERTIES(\"replication_num\" = \"1\");\n")
	ctx := context.Background()
	var last error
	for attempt := 1; attempt <= 6; attempt++ {
		_, _, err := m.PrimaryKey(ctx, "test", "orders")
		if err == nil {
			t.Logf("answered at attempt %d", attempt)
			return
		}
		last = err
		_, _, qerr := m.ReadProgressRow(ctx, "test", "prog", "p", "x/0")
		require.NoError(t, qerr, "the quick statement")
	}
	t.Fatalf("six attempts of the slow statement, each timed out while quick statements ran in between: the bound never grew (last: %v)", last)
}

// slowTableModel starts an emulator with the example schema (and extra DDL)
// whose table-model statements each take 2.5 × timeout, and a Meta bounded
// by timeout.
func slowTableModel(t *testing.T, timeout time.Duration, extra string) *starrocks.Meta {
	schema, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: string(schema) + extra})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	m, err := starrocks.OpenMetaWith(starrocks.MetaConfig{Addr: e.MySQLAddr(), User: "root", Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, e.Faults().Add(emulator.Fault{Op: emulator.OpMySQL, Action: emulator.ActDelay,
		Delay: 5 * timeout / 2, Count: 1000, Statement: "tables_config"}))
	return m
}
