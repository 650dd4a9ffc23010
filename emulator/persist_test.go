package emulator

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(to, 0o755))
	entries, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, en := range entries {
		b, err := os.ReadFile(filepath.Join(from, en.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, en.Name()), b, 0o644))
	}
}

// TestDataDirSurvivesRestart: with a data directory, committed rows (HTTP and MySQL writes,
// DDL over MySQL included) and label states survive a restart — a clean one and a crash (the
// directory copied while the emulator runs); what was running is ABORTED; a torn last record
// is dropped. Without one, a restart starts empty.
func TestDataDirSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := func(c *Config) { c.DataDir = dir; c.MySQLAddr = "127.0.0.1:0" }
	e1 := startEmu(t, cfg)
	c := newClient(t, e1)
	c.multiTxn("p-multi", [2]string{"orders", orderRows(1, 2)}, [2]string{"order_items", itemRows(1, 2)})
	requireStatus(t, c.commit(multiH("test", "p-multi")), "OK", "")
	requireStatus(t, c.begin(ctlH("p-classic")), "OK", "")
	requireStatus(t, c.load(classicH("p-classic"), orderRows(10, 1)), "OK", "")
	requireStatus(t, c.commit(ctlH("p-classic")), "OK", "")
	c.multiTxn("p-rolled", [2]string{"orders", orderRows(20, 1)})
	requireStatus(t, c.rollback(multiH("test", "p-rolled")), "OK", "stream load p-rolled abort")
	c.multiTxn("p-open", [2]string{"orders", orderRows(30, 1)})
	r := c.do("PUT", "/api/test/order_items/_stream_load", hdrs{"label": "p-stream", "format": "json", "strip_outer_array": "true"}, itemRows(40, 1))
	require.Equal(t, "Success", r.str("Status"), r.raw)
	db := openMySQL(t, e1)
	_, err := db.Exec("CREATE TABLE test.notes (id INT NOT NULL, note STRING) PRIMARY KEY(id) DISTRIBUTED BY HASH(id)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO test.notes VALUES (1, 'kept'), (2, 'also')")
	require.NoError(t, err)
	_, err = db.Exec("ALTER TABLE test.notes ADD COLUMN n INT DEFAULT \"5\"")
	require.NoError(t, err)
	wantOrders, _ := e1.Store().Rows("test", "orders")

	crashed, torn := t.TempDir(), t.TempDir()
	copyDir(t, dir, crashed) // a kill -9 now: every record is already synced
	copyDir(t, dir, torn)

	check := func(t *testing.T, e *Emulator) {
		c := newClient(t, e)
		got, err := e.Store().Rows("test", "orders")
		require.NoError(t, err)
		assert.Equal(t, wantOrders, got)
		assert.Equal(t, 3, countRows(t, e, "order_items"))
		notes, err := e.Store().Rows("test", "notes")
		require.NoError(t, err)
		assert.Equal(t, []map[string]any{{"id": int32(1), "note": "kept", "n": int32(5)}, {"id": int32(2), "note": "also", "n": int32(5)}}, notes)
		assert.Equal(t, "VISIBLE", c.state("test", "p-multi"))
		assert.Equal(t, "VISIBLE", c.state("test", "p-classic"))
		assert.Equal(t, "VISIBLE", c.state("test", "p-stream"))
		assert.Equal(t, "ABORTED", c.state("test", "p-rolled"))
		assert.Equal(t, "ABORTED", c.state("test", "p-open"), "running at the stop: cancelled by the restart")
		assert.Equal(t, "LABEL_ALREADY_EXISTS", c.begin(multiH("test", "p-multi")).str("Status"))
		requireStatus(t, c.commit(multiH("test", "p-multi")), "OK", "Transaction "+itoa(multiID(t, e, "p-multi"))+" has already committed, label is p-multi")
		requireStatus(t, c.rollback(multiH("test", "p-open")), "OK", "Transaction "+itoa(multiID(t, e, "p-open"))+" has already aborted, label is p-open")
		t.Log("new transactions get new ids and commit")
		c.multiTxn("p-after", [2]string{"orders", orderRows(50, 1)})
		requireStatus(t, c.commit(multiH("test", "p-after")), "OK", "")
		assert.Greater(t, multiID(t, e, "p-after"), multiID(t, e, "p-open"))
	}
	t.Run("after a crash", func(t *testing.T) {
		e := startEmu(t, func(c *Config) { c.DataDir = crashed })
		check(t, e)
	})
	require.NoError(t, e1.Close())
	t.Run("after a clean stop, the schema script not run again", func(t *testing.T) {
		e := startEmu(t, func(c *Config) { c.DataDir = dir })
		check(t, e)
		require.NoError(t, e.Close())
		e = startEmu(t, func(c *Config) { c.DataDir = dir })
		assert.Equal(t, "VISIBLE", newClient(t, e).state("test", "p-after"), "the second life's commit survives a third start")
	})
	t.Run("a torn last record is dropped", func(t *testing.T) {
		f, err := os.OpenFile(filepath.Join(torn, journalFile), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(`{"k":"apply","changes":[{"db":"test","table":"orders","rows":[{"v":[99`)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		e := startEmu(t, func(c *Config) { c.DataDir = torn })
		check(t, e)
	})
	t.Run("without a data directory, memory only", func(t *testing.T) {
		e := startEmu(t, nil)
		assert.Equal(t, 0, countRows(t, e, "orders"))
		assert.Equal(t, "UNKNOWN", newClient(t, e).state("test", "p-multi"))
	})
}

func itoa(n int64) string { return fmtInt(n) }

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }
