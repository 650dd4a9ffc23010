package starrocks_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// TestReadProgressOfManyChunksIsAnsweredWhenEachStatementIsSlow: every
// statement on the progress table takes 1.5 × mysql_timeout (a loaded FE),
// and the partitions waiting are 8 chunks of ProgressReadChunk. Each
// statement is answered once its bound has grown (as a read of one
// partition is); a read bounded as a whole — 8 statements of 1.5 × the
// timeout against at most 8 × the timeout — times out at every attempt,
// however often the output retries it, and the partitions' messages wait
// forever.
func TestReadProgressOfManyChunksIsAnsweredWhenEachStatementIsSlow(t *testing.T) {
	const timeout = 200 * time.Millisecond
	const table = "prog"
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: "CREATE DATABASE shop;"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	m, err := starrocks.OpenMetaWith(starrocks.MetaConfig{Addr: e.MySQLAddr(), User: "root", Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	ctx := context.Background()
	require.NoError(t, m.EnsureTables(ctx, "shop", starrocks.TableDef{Name: table, DDL: starrocks.ProgressDDL("shop", table), Columns: starrocks.ProgressColumns}))
	require.NoError(t, e.Faults().Add(emulator.Fault{Op: emulator.OpMySQL, Action: emulator.ActDelay,
		Delay: 3 * timeout / 2, Count: 1000, Statement: "FROM `shop`\\.`prog` WHERE"}))

	parts := make([]string, 8*starrocks.ProgressReadChunk)
	for i := range parts {
		parts[i] = fmt.Sprintf("t/%d", i)
	}
	var last error
	for attempt := 1; attempt <= 6; attempt++ {
		_, err := m.ReadProgressOf(ctx, table, "pl", parts)
		if err == nil {
			t.Logf("answered at attempt %d", attempt)
			return
		}
		require.True(t, errors.Is(err, context.DeadlineExceeded), "attempt %d: only the bound may end it: %v", attempt, err)
		last = err
	}
	t.Fatalf("six attempts, each timed out though every statement takes 1.5 × the timeout: the read of %d partitions is bounded as one call (last: %v)", len(parts), last)
}
