package schemasync_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
	"github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn/schemasync"
)

func orders(extra ...schema.Column) *schema.Table {
	return &schema.Table{Columns: append([]schema.Column{
		{Name: "order_id", Type: schema.BigInt}, {Name: "status", Type: schema.Varchar(40), Nullable: true},
	}, extra...), Key: []string{"order_id"}}
}

// The schema manager against the emulator's schema-change jobs: a change
// on a table without fast schema evolution waits in WAITING_TXN for a
// transaction begun before it, runs, and only then does Resolve return —
// with the column visible (ARCHITECTURE.md §14.3).
func TestResolveWaitsForTheEmulatorsJob(t *testing.T) {
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: "CREATE DATABASE shop;"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	meta, err := starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = meta.Close() })
	c, err := starrocks.New(starrocks.Config{LoadURLs: []string{e.FEURL()}, Username: "root"})
	require.NoError(t, err)
	ctx := context.Background()

	b := schemasync.New(meta, schemasync.Config{Mode: schemasync.Evolve, PollMin: 5 * time.Millisecond, PollMax: 20 * time.Millisecond,
		CreateProperties: map[string]string{"replication_num": "1", "fast_schema_evolution": "false"}})
	v := b.Resolve(ctx, "shop", "orders", schemasync.Ref{Typed: orders()})
	require.NoError(t, v.Err)

	// A multi-table transaction that loaded into orders before the change:
	// the job waits for it.
	txn := starrocks.Txn{DB: "shop", Label: "before-1", Multi: true}
	_, err = c.Begin(ctx, txn)
	require.NoError(t, err)
	load := starrocks.LoadRequest{Txn: starrocks.Txn{DB: "shop", Label: "before-1", Table: "orders", Multi: true},
		Headers: map[string]string{"format": "json", "strip_outer_array": "true"}, Body: []byte(`[{"order_id":1,"status":"old","coupon":"lost"}]`)}
	_, err = c.Load(ctx, load)
	require.NoError(t, err)

	want := orders(schema.Column{Name: "coupon", Type: schema.Varchar(16)})
	done := make(chan schemasync.Verdict, 1)
	go func() { done <- b.Resolve(ctx, "shop", "orders", schemasync.Ref{Typed: want}) }()
	select {
	case v := <-done:
		t.Fatalf("Resolve returned while a transaction begun before the change was open: %+v", v)
	case <-time.After(300 * time.Millisecond): // real time: an absence (Resolve still waiting) has no event to wait on
	}
	jobs, err := meta.AlterJobs(ctx, "shop", "orders", 1)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, starrocks.JobWaitingTxn, jobs[0].State)

	_, err = c.Commit(ctx, txn)
	require.NoError(t, err)
	select {
	case v := <-done:
		require.NoError(t, v.Err)
		assert.False(t, v.ReadyAt.IsZero())
	case <-time.After(20 * time.Second):
		t.Fatal("Resolve did not return after the transaction committed")
	}
	have, _, err := meta.Columns(ctx, "shop", "orders")
	require.NoError(t, err)
	_, ok := have.Column("coupon")
	assert.True(t, ok)
	jobs, err = meta.AlterJobs(ctx, "shop", "orders", 1)
	require.NoError(t, err)
	assert.Equal(t, starrocks.JobFinished, jobs[0].State)
	assert.True(t, b.Known("shop", "orders", schemasync.Ref{Typed: want}))
}

// A job the emulator cancels (fault alter_job cancel) poisons with its
// message; the operator's own ALTER then heals the table.
func TestResolveReportsACancelledJob(t *testing.T) {
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: "CREATE DATABASE shop;"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	meta, err := starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = meta.Close() })
	ctx := context.Background()
	b := schemasync.New(meta, schemasync.Config{Mode: schemasync.Evolve, PollMin: 5 * time.Millisecond, PollMax: 20 * time.Millisecond,
		CreateProperties: map[string]string{"fast_schema_evolution": "false"}})
	require.NoError(t, b.Resolve(ctx, "shop", "orders", schemasync.Ref{Typed: orders()}).Err)
	require.NoError(t, e.Faults().Add(emulator.Fault{Op: "alter_job", Action: "cancel", Message: "disk full"}))
	want := orders(schema.Column{Name: "coupon", Type: schema.Varchar(16)})
	v := b.Resolve(ctx, "shop", "orders", schemasync.Ref{Typed: want})
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "StarRocks cancelled the schema change of shop.orders")
	assert.True(t, strings.Contains(v.Err.Error(), "disk full"), v.Err.Error())
	require.NoError(t, e.Store().ExecDDL("ALTER TABLE shop.orders ADD COLUMN coupon VARCHAR(16) NULL"))
	require.Eventually(t, func() bool {
		return b.Resolve(ctx, "shop", "orders", schemasync.Ref{Typed: want}).Err == nil
	}, 20*time.Second, 50*time.Millisecond, "the stall heals once the table has the column")
}
