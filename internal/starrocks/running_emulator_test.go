package starrocks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// A PREPARED classic transaction is found by its label among the running
// ones: what the per-table take-over looks for (ARCHITECTURE.md §15.2).
func TestRunningTransactionsListPreparedLabels(t *testing.T) {
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0",
		Schema: "CREATE DATABASE shop; CREATE TABLE shop.t (id INT NOT NULL, v INT) PRIMARY KEY (id) DISTRIBUTED BY HASH (id);"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	c, err := starrocks.New(starrocks.Config{LoadURLs: []string{e.FEURL()}, Username: "root"})
	require.NoError(t, err)
	m, err := starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	ctx := context.Background()

	for _, label := range []string{"p-shop-w1-0", "p-shop-w1-1", "other-1"} {
		txn := starrocks.Txn{DB: "shop", Table: "t", Label: label}
		_, err := c.Begin(ctx, txn)
		require.NoError(t, err, label)
		_, err = c.Load(ctx, starrocks.LoadRequest{Txn: txn, Headers: map[string]string{"format": "json", "strip_outer_array": "true"}, Body: []byte(`[{"id":1,"v":2}]`)})
		require.NoError(t, err, label)
		if label != "p-shop-w1-1" {
			_, err = c.Prepare(ctx, txn)
			require.NoError(t, err, label)
		}
	}
	txns, err := m.RunningTransactions(ctx, "shop", "p-shop-w1-")
	require.NoError(t, err)
	require.Len(t, txns, 2)
	byLabel := map[string]starrocks.RunningTxn{}
	for _, x := range txns {
		byLabel[x.Label] = x
	}
	assert.True(t, byLabel["p-shop-w1-0"].Prepared(), "%+v", byLabel["p-shop-w1-0"])
	assert.False(t, byLabel["p-shop-w1-1"].Prepared(), "%+v", byLabel["p-shop-w1-1"])
	assert.NotEmpty(t, byLabel["p-shop-w1-0"].ID)

	_, err = m.RunningTransactions(ctx, "no`db", "")
	assert.ErrorContains(t, err, "refusing to put it into SQL")
}
