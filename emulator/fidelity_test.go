package emulator

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// StarRocks behaviours checked against its source and regression tests,
// each a test that fails if the emulator drifts from it.

// A PREPARED classic transaction is durable in the FE: it survives an FE
// restart PREPARED until its prepared timeout, and a commit then takes the
// FE's PREPARED path (FE-TWCH: commitPreparedTransaction), which is what
// two-phase clients (the Flink connector's exactly-once) rely on.
func TestFidelityPreparedSurvivesFERestart(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	requireStatus(t, c.begin(ctlH("r12-prep")), "OK", "")
	requireStatus(t, c.load(classicH("r12-prep"), orderRows(1, 1)), "OK", "")
	requireStatus(t, c.prepare(ctlH("r12-prep")), "OK", "")
	require.Equal(t, "PREPARED", c.state("test", "r12-prep"))
	e.Restart()
	assert.Equal(t, "PREPARED", c.state("test", "r12-prep"), "a prepared transaction survives an FE restart")
	r := c.commit(ctlH("r12-prep"))
	assert.Equal(t, "OK", r.str("Status"), r.raw)
	assert.Equal(t, 1, countRows(t, e, "orders"))
}

// Same with --data-dir, after a clean stop and after a crash: a prepared
// transaction comes back PREPARED, with its rows, and commits.
func TestFidelityPreparedSurvivesDataDirRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e1 := startEmu(t, func(c *Config) { c.DataDir = dir })
	c := newClient(t, e1)
	requireStatus(t, c.begin(ctlH("r12-prep2")), "OK", "")
	requireStatus(t, c.load(classicH("r12-prep2"), orderRows(1, 1)), "OK", "")
	requireStatus(t, c.prepare(ctlH("r12-prep2")), "OK", "")
	crashed := t.TempDir()
	copyDir(t, dir, crashed) // a kill -9 now: the prepare is already synced
	require.NoError(t, e1.Close())
	for name, d := range map[string]string{"after a clean stop": dir, "after a crash": crashed} {
		t.Run(name, func(t *testing.T) {
			e2 := startEmu(t, func(c *Config) { c.DataDir = d })
			c2 := newClient(t, e2)
			assert.Equal(t, "PREPARED", c2.state("test", "r12-prep2"))
			r := c2.commit(ctlH("r12-prep2"))
			assert.Equal(t, "OK", r.str("Status"), r.raw)
			assert.Equal(t, "VISIBLE", c2.state("test", "r12-prep2"))
			assert.Equal(t, 1, countRows(t, e2, "orders"), "the prepared rows came back with it")
		})
	}
}

// The BE serves /api/_load_error_log without any credentials
// (be/src/http/download_action.cpp handle_error_log: no auth, no token), so
// the ErrorURL / tracking_url of a reply opens in a browser or a bare curl.
func TestFidelityErrorLogNeedsNoAuth(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.BEAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	h := hdrs{"label": "r12-bad", "format": "json", "strip_outer_array": "true"}
	r := c.do(http.MethodPut, "/api/test/orders/_stream_load", h, badOrderRows(1, 1))
	if r.code == http.StatusTemporaryRedirect {
		r = c.do(http.MethodPut, r.hdr.Get("Location"), h, badOrderRows(1, 1))
	}
	require.Equal(t, "Fail", r.str("Status"), r.raw)
	url := r.str("ErrorURL")
	require.NotEmpty(t, url, r.raw)
	res, err := http.Get(url)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode, "StarRocks's BE serves the error log to anyone")
}

// SHOW [ALL] STREAM LOAD (ShowStreamLoadStmt) lists the transaction stream
// load tasks of StreamLoadMgr (one row per table of a multi-table task),
// only the unfinished ones without ALL.
func TestFidelityShowStreamLoad(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	db := openMySQL(t, e)
	c.multiTxn("r12-ssl", [2]string{"orders", orderRows(1, 1)})
	requireStatus(t, c.commit(multiH("test", "r12-ssl")), "OK", "")
	rows, err := db.Query("SHOW ALL STREAM LOAD FROM test")
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	assert.Equal(t, "Label", cols[0])
	assert.Contains(t, cols, "TrackingURL")
	rows.Close()

	c.multiTxn("r12-ssl-open", [2]string{"orders", orderRows(2, 1)}, [2]string{"order_items", itemRows(2, 1)})
	cols, got := queryRows(t, db, "SHOW ALL STREAM LOAD FROM test WHERE LABEL = 'r12-ssl'")
	require.Len(t, got, 1)
	row := map[string]string{}
	for i, col := range cols {
		row[col] = got[0][i]
	}
	assert.Equal(t, "r12-ssl", row["Label"])
	assert.Equal(t, itoa(multiID(t, e, "r12-ssl")), row["TxnId"])
	assert.Equal(t, "test", row["DbName"])
	assert.Equal(t, "orders", row["TableName"])
	assert.Equal(t, "FINISHED", row["State"])
	assert.Equal(t, "1", row["NumRowsNormal"])
	_, got = queryRows(t, db, "SHOW STREAM LOAD FROM test")
	require.Len(t, got, 2, "without ALL only the open task, one row per table: %v", got)
	assert.Equal(t, []string{"r12-ssl-open", "r12-ssl-open"}, []string{got[0][0], got[1][0]})
	assert.Equal(t, "LOADING", got[0][6])
	_, err = db.Exec("SHOW STREAM LOAD FROM test WHERE STATE = 'x'")
	assert.ErrorContains(t, err, "SHOW [ALL] STREAM LOAD [FROM db] [WHERE LABEL = 'label']")
}

// The emulator's own no-rows message tells the user to run
// ADMIN SET FRONTEND CONFIG ('empty_load_as_error' = 'false'); StarRocks
// accepts it (a mutable FE config), after which an empty plain stream load
// succeeds.
func TestFidelityEmptyLoadAsErrorConfig(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	db := openMySQL(t, e)
	r := c.do(http.MethodPut, "/api/test/orders/_stream_load", hdrs{"label": "r12-e1", "format": "json"}, "")
	require.Contains(t, r.str("Message"), "empty_load_as_error", r.raw)
	_, err := db.Exec(`ADMIN SET FRONTEND CONFIG ('empty_load_as_error' = 'false')`)
	require.NoError(t, err, "the statement the emulator's own error message advises")
	r = c.do(http.MethodPut, "/api/test/orders/_stream_load", hdrs{"label": "r12-e2", "format": "json"}, "")
	assert.Equal(t, "Success", r.str("Status"), r.raw)
	assert.Equal(t, "VISIBLE", c.state("test", "r12-e2"))
	_, got := queryRows(t, db, "ADMIN SHOW FRONTEND CONFIG LIKE 'empty_load_as_error'")
	assert.Equal(t, [][]string{{"empty_load_as_error", "[]", "false", "boolean", "true", "a stream load or classic transaction that imported no rows fails (false: it commits)"}}, got)
	_, err = db.Exec(`ADMIN SET FRONTEND CONFIG ('empty_load_as_error' = 'maybe')`)
	assert.ErrorContains(t, err, "Invalid boolean value: maybe")
	_, err = db.Exec(`ADMIN SET FRONTEND CONFIG ('empty_load_as_error' = 'true')`)
	require.NoError(t, err)
	r = c.do(http.MethodPut, "/api/test/orders/_stream_load", hdrs{"label": "r12-e3", "format": "json"}, "")
	assert.Contains(t, r.str("Message"), "empty_load_as_error", "set back to true, an empty load fails again: %s", r.raw)
}

// The stream load `timezone` header defaults to Asia/Shanghai and drives
// from_unixtime in the columns header (STREAM_LOAD doc, "timezone"), and
// @@time_zone is Asia/Shanghai.
func TestFidelityColumnsFromUnixtimeTimezone(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	db := openMySQL(t, e)
	_, err := db.Exec("CREATE TABLE test.tz (id INT NOT NULL, ts DATETIME) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id)")
	require.NoError(t, err)
	r := c.do(http.MethodPut, "/api/test/tz/_stream_load", hdrs{"label": "r12-tz1", "column_separator": ",",
		"timezone": "Asia/Shanghai", "columns": "id, t, ts = from_unixtime(t)"}, "1,0")
	require.Equal(t, "Success", r.str("Status"), r.raw)
	r = c.do(http.MethodPut, "/api/test/tz/_stream_load", hdrs{"label": "r12-tz2", "column_separator": ",",
		"columns": "id, t, ts = from_unixtime(t)"}, "2,0")
	require.Equal(t, "Success", r.str("Status"), r.raw)
	r = c.do(http.MethodPut, "/api/test/tz/_stream_load", hdrs{"label": "r12-tz3", "column_separator": ",",
		"timezone": "UTC", "columns": "id, t, ts = from_unixtime(t)"}, "3,0")
	require.Equal(t, "Success", r.str("Status"), r.raw)
	_, got := queryRows(t, db, "SELECT id, ts FROM test.tz ORDER BY id")
	assert.Equal(t, [][]string{{"1", "1970-01-01 08:00:00"}, {"2", "1970-01-01 08:00:00"}, {"3", "1970-01-01 00:00:00"}}, got)
	_, got = queryRows(t, db, "SHOW VARIABLES LIKE 'time_zone'")
	assert.Equal(t, [][]string{{"time_zone", "Asia/Shanghai"}}, got, "StarRocks's default session time zone")
}

// SHOW ALTER TABLE COLUMN is how a StarRocks client waits for the
// (asynchronous) schema change ALTER TABLE … ADD COLUMN starts. test.orders
// has fast schema evolution (the FE config's default), so ADD and DROP of a
// value column are metadata changes: their jobs are FINISHED from the start.
func TestFidelityShowAlterTableColumn(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	db := openMySQL(t, e)
	_, err := db.Exec("ALTER TABLE test.orders ADD COLUMN note VARCHAR(10)")
	require.NoError(t, err)
	cols, got := queryRows(t, db, "SHOW ALTER TABLE COLUMN FROM test")
	assert.Contains(t, cols, "State")
	require.Len(t, got, 1, "one job for the one ALTER")
	row := map[string]string{}
	for i, col := range cols {
		row[col] = got[0][i]
	}
	assert.Equal(t, "orders", row["TableName"])
	assert.Equal(t, "FINISHED", row["State"], "fast schema evolution: the change is made at once")
	assert.Equal(t, "1", row["Timeout"], "a fast schema evolution job's timeout is 1 s")
	_, err = db.Exec("ALTER TABLE test.orders DROP COLUMN note")
	require.NoError(t, err)
	_, got = queryRows(t, db, "SHOW ALTER TABLE COLUMN FROM test")
	require.Len(t, got, 2)
	assert.True(t, strings.HasPrefix(got[1][7], "2:"), "the second schema change of the table has SchemaVersion 2 (version:hash): %s", got[1][7])
	_, err = db.Exec("SHOW ALTER TABLE ROLLUP FROM test")
	assert.ErrorContains(t, err, "SHOW ALTER TABLE COLUMN [FROM db]")
}

// Two emulators on one --data-dir would both append to its journal:
// transaction ids would collide and one process's records could vanish. The
// second is refused while the first runs.
func TestFidelityDataDirIsExclusive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e1 := startEmu(t, func(c *Config) { c.DataDir = dir })
	_, err := Start(Config{HTTPAddr: "127.0.0.1:0", DataDir: dir})
	assert.Error(t, err, "a second emulator on a data directory in use is refused")
	assert.ErrorContains(t, err, "in use by another emulator")
	require.NoError(t, e1.Close())
	e2, err := Start(Config{HTTPAddr: "127.0.0.1:0", DataDir: dir})
	require.NoError(t, err, "once the first one stopped, the directory is free")
	require.NoError(t, e2.Close())
}

// The BE checks the label before transaction_type (TransactionManagerAction::
// handle: "empty label" first), refuses any transaction_type, and
// pretty-prints its replies.
func TestFidelityBEEmptyLabelFirst(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.BEAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	r := c.do(http.MethodPost, e.BEURL()+"/api/transaction/begin", hdrs{"db": "test", "transaction_type": "multi"}, "")
	assert.Equal(t, "INVALID_ARGUMENT", r.str("Status"))
	assert.Equal(t, "empty label", r.str("Message"), r.raw)
	assert.True(t, strings.HasPrefix(r.raw, "{\n    \""), "BE replies are pretty-printed (test_be_reject_transaction_type R file): %q", r.raw)
	r = c.do(http.MethodPost, e.BEURL()+"/api/transaction/commit", hdrs{"db": "test", "label": "r12-tt", "transaction_type": "whatever"}, "")
	assert.Equal(t, "INVALID_ARGUMENT", r.str("Status"), r.raw)
	assert.Equal(t, "Multi-statement transaction requests can only be sent to FE nodes, not BE nodes", r.str("Message"), "any transaction_type is refused on the BE")
	r = c.do(http.MethodPost, e.BEURL()+"/api/transaction/rollback", hdrs{"db": "test"}, "")
	assert.Equal(t, "empty label", r.str("Message"), r.raw)
}

// StarRocks's SHOW TRANSACTION takes only WHERE id = N (ShowTransactionStmt:
// "SHOW TRANSACTION WHERE id=123", a txnId and nothing else), so WHERE
// LABEL = '…' is refused: a script written against the emulator must work on
// a cluster.
func TestFidelityShowTransactionByLabelIsRefused(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	db := openMySQL(t, e)
	requireStatus(t, c.begin(ctlH("r12-st")), "OK", "")
	_, err := db.Exec("SHOW TRANSACTION FROM test WHERE LABEL = 'r12-st'")
	assert.Error(t, err, "StarRocks accepts only WHERE id = N")
	assert.ErrorContains(t, err, "Where clause should looks like: ID = $transaction_id")
	_, err = db.Exec("SHOW TRANSACTION FROM test WHERE ID = '123'")
	assert.ErrorContains(t, err, "Where clause should looks like: ID = $transaction_id", "a quoted id is refused too")
	_, err = db.Exec("SHOW TRANSACTION FROM test")
	assert.ErrorContains(t, err, "should supply condition like: ID = $transaction_id")
}

// A multi-table transaction whose first load fails to plan (a `columns`
// header leaving out a NOT NULL column without a default) is registered and
// then aborted: StreamLoadMultiStmtTask.tryLoad activates the table in the
// explicit transaction (DatabaseTransactionMgr) before the sub-task plans,
// and cancelOnException rolls it back, so get_load_state answers ABORTED. A
// first load naming a table that does not exist fails before the
// activation: the label stays UNKNOWN.
func TestFidelityFailedFirstMultiLoadIsAborted(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	requireStatus(t, c.begin(multiH("test", "r12-plan")), "OK", "")
	r := c.load(jsonLoadH("test", "r12-plan", "orders", "columns", "order_id"), orderRows(1, 1))
	require.Equal(t, "FAILED", r.str("Status"), r.raw)
	assert.Equal(t, "ABORTED", c.state("test", "r12-plan"), "registered at the table's activation, then aborted")

	requireStatus(t, c.begin(multiH("test", "r12-notable")), "OK", "")
	r = c.load(jsonLoadH("test", "r12-notable", "no_such_table"), orderRows(1, 1))
	require.Equal(t, "FAILED", r.str("Status"), r.raw)
	assert.Equal(t, "UNKNOWN", c.state("test", "r12-notable"), "the table lookup fails before the activation")
}
