package starrocks_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// What the per-table protocol (ARCHITECTURE.md §15) asks of the client, on
// the emulator in 3.x mode: the labels of a cycle, how a 3.x FE answers a
// multi-table begin, a label the FE cannot route, the prepare's
// prepared_timeout header and the FE's prepared timeout config.

func TestCycleAndPartLabels(t *testing.T) {
	w := starrocks.NewWriterID()
	// Short names: the cycle label is the writer's numbered label.
	cyc := starrocks.CycleLabel("benthos", "shop", w, 7)
	assert.Equal(t, starrocks.SeqLabel("benthos", "shop", w, 7), cyc)
	for _, part := range []string{"1", "42", "p", "9999999"} {
		l := starrocks.PartLabel(cyc, part)
		require.NoError(t, starrocks.ValidateLabel(l))
		c, p, ok := starrocks.SplitPartLabel(l)
		require.True(t, ok, l)
		assert.Equal(t, cyc, c)
		assert.Equal(t, part, p)
	}
	// Long names: shortened so that every part still fits 128 characters,
	// and the cycle label still splits as a numbered label.
	long := starrocks.CycleLabel(strings.Repeat("p", 200), strings.Repeat("d", 300), w, 0xfffffffe)
	assert.Len(t, long, starrocks.MaxLabelLen-starrocks.PartRoom)
	require.NoError(t, starrocks.ValidateLabel(starrocks.PartLabel(long, "9999999")))
	_, n, ok := starrocks.SplitSeqLabel(long)
	require.True(t, ok)
	assert.Equal(t, int64(0xfffffffe), n)
	// A cycle label is not a part; neither is anything else.
	for _, bad := range []string{cyc, "x-1", "benthos-shop-1", cyc + "-", cyc + "-12345678", cyc + "-P", cyc + "-a_b"} {
		_, _, ok := starrocks.SplitPartLabel(bad)
		assert.False(t, ok, bad)
	}
}

func start3x(t *testing.T, version string) (*emulator.Emulator, *starrocks.Client, *starrocks.Meta) {
	t.Helper()
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", StarRocksVersion: version,
		Schema: "CREATE DATABASE shop; CREATE TABLE shop.t (id INT NOT NULL, v INT) PRIMARY KEY (id) DISTRIBUTED BY HASH (id);"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	c, err := starrocks.New(starrocks.Config{LoadURLs: []string{e.FEURL()}, Username: "root"})
	require.NoError(t, err)
	m, err := starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return e, c, m
}

// A 3.x FE answers a multi-table begin with `unknown table "db."`, which
// NoMultiTable tells from a missing table or database; a 4.x FE begins it.
func TestNoMultiTableIsThe3xAnswerToAMultiTableBegin(t *testing.T) {
	ctx := context.Background()
	_, c, _ := start3x(t, "3.3")
	_, err := c.Begin(ctx, starrocks.Txn{DB: "shop", Label: "probe-1", Multi: true})
	require.Error(t, err)
	assert.True(t, starrocks.NoMultiTable(err, "shop"), "%v", err)
	assert.False(t, starrocks.NoMultiTable(err, "sho"), "only the begin's own database")
	assert.True(t, starrocks.IsTableWide(err), "the text also reads as a table-wide failure: callers ask NoMultiTable first")

	// A classic begin of a table that does not exist, and a database that
	// does not exist, are other answers.
	_, err = c.Begin(ctx, starrocks.Txn{DB: "shop", Table: "nope", Label: "probe-2"})
	require.Error(t, err)
	assert.False(t, starrocks.NoMultiTable(err, "shop"), "%v", err)
	_, err = c.Begin(ctx, starrocks.Txn{DB: "nodb", Label: "probe-3", Multi: true})
	require.Error(t, err)
	assert.False(t, starrocks.NoMultiTable(err, "nodb"), "%v", err)

	_, c4, _ := start3x(t, "4.0")
	_, err = c4.Begin(ctx, starrocks.Txn{DB: "shop", Label: "probe-4", Multi: true})
	require.NoError(t, err)
}

// A 3.x FE that has no BE for a label refuses the request before routing
// it: transient (nothing happened), for a commit too, never ambiguous.
func TestHasNoNodeIsTransient(t *testing.T) {
	ctx := context.Background()
	e, c, _ := start3x(t, "3.3")
	txn := starrocks.Txn{DB: "shop", Table: "t", Label: "lost-1"}
	_, err := c.Begin(ctx, txn)
	require.NoError(t, err)
	// An FE restart forgets the running transaction and the label → BE map.
	e.Restart()
	_, err = c.Load(ctx, starrocks.LoadRequest{Txn: txn, Headers: map[string]string{"format": "json", "strip_outer_array": "true"}, Body: []byte(`[{"id":1,"v":1}]`)})
	require.ErrorContains(t, err, "has no node")
	assert.Equal(t, starrocks.ClassTransient, starrocks.ClassOf(err))
	for _, op := range []string{starrocks.OpCommit, starrocks.OpPrepare, starrocks.OpRollback, starrocks.OpLoad} {
		assert.Equal(t, starrocks.ClassTransient, starrocks.Classify(op, 200, "FAILED",
			"Transaction with op["+op+"] and label[lost-1] has no node.", ""), op)
	}
}

// The prepare sends prepared_timeout in whole seconds: a 3.5.4 FE keeps it
// as the transaction's own (and would refuse 0, which the client never
// sends), a 3.3 FE ignores it.
func TestPrepareSendsPreparedTimeout(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ version, want string }{{"3.3", ""}, {"3.5.4", "2000"}} {
		t.Run(tc.version, func(t *testing.T) {
			e, c, m := start3x(t, tc.version)
			txn := starrocks.Txn{DB: "shop", Table: "t", Label: "pt-1", PreparedTimeout: 1500 * time.Millisecond}
			_, err := c.Begin(ctx, txn)
			require.NoError(t, err)
			_, err = c.Load(ctx, starrocks.LoadRequest{Txn: txn, Headers: map[string]string{"format": "json", "strip_outer_array": "true"}, Body: []byte(`[{"id":1,"v":1}]`)})
			require.NoError(t, err)
			_, err = c.Prepare(ctx, txn)
			require.NoError(t, err)
			rows, err := m.RunningTransactions(ctx, "shop", "pt-")
			require.NoError(t, err)
			require.Len(t, rows, 1)
			assert.True(t, rows[0].Prepared())
			// 1.5 s goes as 2 whole seconds; 3.3's SHOW PROC has no
			// PreparedTimeoutMs (its prepare did not refuse the header).
			assert.Equal(t, tc.want, preparedTimeoutMs(t, e, "shop"))
		})
	}
}

// FEConfig reads prepared_transaction_default_timeout_second, as the
// output does to know how long a prepared transaction waits.
func TestFEConfigReadsThePreparedTimeout(t *testing.T) {
	ctx := context.Background()
	e, _, m := start3x(t, "3.3")
	v, found, err := m.FEConfig(ctx, "prepared_transaction_default_timeout_second")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "86400", v)
	execSQL(t, e, `ADMIN SET FRONTEND CONFIG ("prepared_transaction_default_timeout_second" = "120")`)
	v, _, err = m.FEConfig(ctx, "prepared_transaction_default_timeout_second")
	require.NoError(t, err)
	assert.Equal(t, "120", v)
	_, found, err = m.FEConfig(ctx, "no_such_key")
	require.NoError(t, err)
	assert.False(t, found)
	_, _, err = m.FEConfig(ctx, "x' OR '1")
	assert.Error(t, err)
}

func sqlDB(t *testing.T, e *emulator.Emulator) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func execSQL(t *testing.T, e *emulator.Emulator, stmt string) {
	t.Helper()
	_, err := sqlDB(t, e).Exec(stmt)
	require.NoError(t, err)
}

// preparedTimeoutMs is the PreparedTimeoutMs column of the one running
// transaction of db ("" when SHOW PROC has no such column).
func preparedTimeoutMs(t *testing.T, e *emulator.Emulator, db string) string {
	t.Helper()
	q, err := sqlDB(t, e).Query("SHOW PROC '/transactions/" + db + "/running'")
	require.NoError(t, err)
	defer q.Close()
	names, err := q.Columns()
	require.NoError(t, err)
	vals := make([]sql.NullString, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	require.True(t, q.Next())
	require.NoError(t, q.Scan(ptrs...))
	for i, n := range names {
		if n == "PreparedTimeoutMs" {
			return vals[i].String
		}
	}
	return ""
}
