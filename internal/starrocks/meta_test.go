package starrocks_test

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The metadata client against the emulator's MySQL port: the same
// statements run on a StarRocks cluster.
func TestMetaAgainstTheEmulator(t *testing.T) {
	schema, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: string(schema)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	m, err := starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	ctx := context.Background()

	t.Run("primary key", func(t *testing.T) {
		pk, known, err := m.PrimaryKey(ctx, "test", "orders")
		require.NoError(t, err)
		assert.True(t, known)
		assert.True(t, pk, "orders is a PRIMARY KEY table")
		pk, known, err = m.PrimaryKey(ctx, "test", "order_events")
		require.NoError(t, err)
		assert.True(t, known)
		assert.False(t, pk, "order_events is a DUPLICATE KEY table")
		_, known, err = m.PrimaryKey(ctx, "test", "no_such_table")
		require.NoError(t, err)
		assert.False(t, known, "a missing table: the load decides")
	})

	t.Run("tables and rows", func(t *testing.T) {
		progress := starrocks.TableDef{Name: "meta_progress", DDL: starrocks.ProgressDDL("test", "meta_progress"), Columns: starrocks.ProgressColumns}
		writers := starrocks.TableDef{Name: "meta_progress_writers", DDL: starrocks.WritersDDL("test", "meta_progress_writers"), Columns: starrocks.WritersColumns}
		require.NoError(t, m.EnsureTables(ctx, "test", progress, writers))
		require.NoError(t, m.EnsureTables(ctx, "test", progress, writers), "idempotent")
		dbs, err := m.DatabasesWith(ctx, "meta_progress")
		require.NoError(t, err)
		assert.Equal(t, []string{"test"}, dbs)
		dbs, err = m.DatabasesWith(ctx, "no_such_table")
		require.NoError(t, err)
		assert.Empty(t, dbs)

		require.NoError(t, e.Store().ExecDDL("CREATE TABLE test.old_layout (source_partition VARCHAR(255) NOT NULL, committed_offset BIGINT NOT NULL) PRIMARY KEY (source_partition) DISTRIBUTED BY HASH (source_partition)"))
		err = m.EnsureTables(ctx, "test", starrocks.TableDef{Name: "old_layout", DDL: starrocks.ProgressDDL("test", "old_layout"), Columns: starrocks.ProgressColumns})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "without the columns [pipeline_id txn_end_offset source_txn_id label updated_at]")
		assert.Contains(t, err.Error(), "CREATE TABLE IF NOT EXISTS `test`.`old_layout`")

		// Rows as the output loads them, in one multi-table transaction.
		cl, err := starrocks.New(starrocks.Config{LoadURLs: []string{e.FEURL()}, Username: "root", RequestTimeout: 5 * time.Second})
		require.NoError(t, err)
		txn := starrocks.Txn{DB: "test", Label: "meta-test-1", Multi: true, Timeout: time.Minute}
		_, err = cl.Begin(ctx, txn)
		require.NoError(t, err)
		at := time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC)
		load := func(table, body string) {
			t.Helper()
			lt := txn
			lt.Table = table
			_, err := cl.Load(ctx, starrocks.LoadRequest{Txn: lt, Headers: map[string]string{"format": "json", "strip_outer_array": "true"}, Body: []byte(body)})
			require.NoError(t, err)
		}
		load("meta_progress", `[{"pipeline_id":"pl","source_partition":"t/0","committed_offset":41,"txn_end_offset":42,"source_txn_id":"x","label":"meta-test-1","updated_at":"`+at.Format(starrocks.RowTimeLayout)+`"}]`)
		load("meta_progress_writers", `[{"pipeline_id":"pl","writer":"0dead0de","label_number":7,"open_labels":"`+starrocks.FormatOpenLabels([]int64{8, 9})+`","label":"meta-test-1","updated_at":"`+at.Format(starrocks.RowTimeLayout)+`"},`+
			`{"pipeline_id":"other","writer":"01234567","label_number":1,"open_labels":"","label":"x","updated_at":null}]`)
		_, err = cl.Commit(ctx, txn)
		require.NoError(t, err)

		got, err := m.ReadProgress(ctx, "meta_progress", "pl", "t/0")
		require.NoError(t, err)
		assert.Equal(t, []starrocks.ProgressRow{{DB: "test", Through: 41, TxnEnd: 42}}, got)
		got, err = m.ReadProgress(ctx, "meta_progress", "pl", "t/1")
		require.NoError(t, err)
		assert.Empty(t, got, "no row for the partition")

		ws, err := m.ReadWriterRows(ctx, "meta_progress_writers", "pl")
		require.NoError(t, err)
		assert.Equal(t, map[string][]starrocks.WriterRow{"test": {{Writer: "0dead0de", Number: 7, Open: []int64{8, 9}, Label: "meta-test-1", Updated: at}}}, ws)

		// One database's rows, with the label that wrote them.
		pr, found, err := m.ReadProgressRow(ctx, "test", "meta_progress", "pl", "t/0")
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, starrocks.LabeledProgress{Through: 41, TxnEnd: 42, Label: "meta-test-1"}, pr)
		_, found, err = m.ReadProgressRow(ctx, "test", "meta_progress", "pl", "t/1")
		require.NoError(t, err)
		assert.False(t, found)
		wr, found, err := m.ReadWriterRow(ctx, "test", "meta_progress_writers", "pl", "0dead0de")
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, starrocks.WriterRow{Writer: "0dead0de", Number: 7, Open: []int64{8, 9}, Label: "meta-test-1", Updated: at}, wr)
		_, found, err = m.ReadWriterRow(ctx, "test", "meta_progress_writers", "pl", "01234567")
		require.NoError(t, err)
		assert.False(t, found, "that writer's row is another pipeline's")
	})
}

func TestOpenLabelsAndRowTimes(t *testing.T) {
	assert.Equal(t, "12,15", starrocks.FormatOpenLabels([]int64{12, 15}))
	assert.Equal(t, "", starrocks.FormatOpenLabels(nil))
	ns, err := starrocks.ParseOpenLabels(" 12, 15 ")
	require.NoError(t, err)
	assert.Equal(t, []int64{12, 15}, ns)
	ns, err = starrocks.ParseOpenLabels("")
	require.NoError(t, err)
	assert.Nil(t, ns)
	_, err = starrocks.ParseOpenLabels("12,x")
	assert.ErrorContains(t, err, `open label list "12,x"`)
	at := time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC)
	assert.Equal(t, at, starrocks.ParseRowTime(at.Format(starrocks.RowTimeLayout)))
	assert.True(t, starrocks.ParseRowTime("not a time").IsZero(), "a row whose time cannot be read is never taken as stale")
}

// No identifier reaches a statement's text unchecked: a database or table
// name that could close the backquotes or add a statement is refused
// before anything is sent.
func TestMetaRefusesHostileIdentifiers(t *testing.T) {
	// Nothing listens there: a statement sent would fail with a dial error.
	db, err := sql.Open("mysql", "root@tcp(127.0.0.1:1)/")
	require.NoError(t, err)
	m := starrocks.NewMeta(db)
	defer m.Close()
	ctx := context.Background()
	bad := "p`; DROP TABLE test.orders; --"
	check := func(err error) {
		t.Helper()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "refusing to put it into SQL")
		assert.NotContains(t, err.Error(), "dial", "refused before any statement was sent")
	}
	check(m.EnsureTables(ctx, "test", starrocks.TableDef{Name: bad, DDL: "CREATE TABLE x (a INT)"}))
	check(m.EnsureTables(ctx, bad, starrocks.TableDef{Name: "ok", DDL: "CREATE TABLE x (a INT)"}))
	_, _, err = m.ReadProgressRow(ctx, bad, "starrocks_txn_progress", "pl", "p0")
	check(err)
	_, _, err = m.ReadWriterRow(ctx, "test", bad, "pl", "w")
	check(err)
	_, err = m.ReadProgress(ctx, bad, "pl", "p0")
	check(err)
	_, err = m.ReadWriterRows(ctx, bad, "pl")
	check(err)
}
