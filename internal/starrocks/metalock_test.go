package starrocks_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// TestMetaTimeoutBoundsTheStatementNotTheQueue: three table-model lookups
// at once, each of whose statements takes 400 ms on the server, under a
// 1 s mysql_timeout. Each statement fits its bound, so each call must
// succeed; a client that serialises its calls behind one lock while their
// deadlines already run lets the later ones expire in the queue.
func TestMetaTimeoutBoundsTheStatementNotTheQueue(t *testing.T) {
	schema, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: string(schema)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	m, err := starrocks.OpenMetaWith(starrocks.MetaConfig{Addr: e.MySQLAddr(), User: "root", Timeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	// Warm the connection pool so that dialing is not part of the race.
	ctx := context.Background()
	var warm sync.WaitGroup
	for i := 0; i < 3; i++ {
		warm.Add(1)
		go func() { defer warm.Done(); _, _, _ = m.PrimaryKey(ctx, "test", "warm_no_such_table") }()
	}
	warm.Wait()
	require.NoError(t, e.Faults().Add(emulator.Fault{Op: emulator.OpMySQL, Action: emulator.ActDelay, Delay: 400 * time.Millisecond, Count: 3, Statement: "tables_config"}))
	tables := []string{"orders", "order_events", "no_such_table"}
	errs := make([]error, len(tables))
	var wg sync.WaitGroup
	for i, tbl := range tables {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = m.PrimaryKey(ctx, "test", tbl)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "lookup of %s", tables[i])
	}
}
