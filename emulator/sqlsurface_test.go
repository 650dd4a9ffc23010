package emulator

import (
	"database/sql"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queryRows runs q and returns the column names and every row as strings ("NULL" for NULL).
func queryRows(t *testing.T, db *sql.DB, q string, args ...any) ([]string, [][]string) {
	t.Helper()
	rows, err := db.Query(q, args...)
	require.NoError(t, err, q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	require.NoError(t, rows.Err())
	return cols, out
}

func column(t *testing.T, cols []string, row []string, name string) string {
	t.Helper()
	for i, c := range cols {
		if c == name {
			return row[i]
		}
	}
	t.Fatalf("no column %s in %v", name, cols)
	return ""
}

// TestShowProcAndTransaction: SHOW PROC '/transactions…' and SHOW TRANSACTION show the
// database's transactions with TransProcDir's columns.
func TestShowProcAndTransaction(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	db := openMySQL(t, e)
	c.multiTxn("sp-done", [2]string{"orders", orderRows(1, 1)})
	requireStatus(t, c.commit(multiH("test", "sp-done")), "OK", "")
	c.multiTxn("sp-open", [2]string{"orders", orderRows(2, 1)})
	requireStatus(t, c.begin(ctlH("sp-classic")), "OK", "")
	c.multiTxn("sp-empty") // not registered until its first load

	cols, rows := queryRows(t, db, "SHOW PROC '/transactions/test/running'")
	// 4.0 (the default version) has the columns 3.5.4 added: PreparedTime, PreparedTimeoutMs
	// (TestV3ShowProcPrepared has 3.3's fourteen)
	assert.Equal(t, []string{"TransactionId", "Label", "Coordinator", "TransactionStatus", "LoadJobSourceType",
		"PrepareTime", "PreparedTime", "CommitTime", "PublishTime", "FinishTime", "Reason", "ErrorReplicasCount", "ListenerId",
		"TimeoutMs", "PreparedTimeoutMs", "ErrMsg"}, cols)
	require.Len(t, rows, 2, "the registered running ones: %v", rows)
	assert.Equal(t, "sp-open", rows[0][1])
	assert.Equal(t, "FE: 127.0.0.1", rows[0][2])
	assert.Equal(t, "PREPARE", rows[0][3])
	assert.Equal(t, "MULTI_STATEMENT_STREAMING", rows[0][4])
	assert.Equal(t, "sp-classic", rows[1][1])
	assert.Equal(t, "BACKEND_STREAMING", rows[1][4])
	assert.Equal(t, "20000", column(t, cols, rows[1], "TimeoutMs"), "the default timeout")
	assert.Equal(t, "NULL", column(t, cols, rows[1], "PreparedTime"), "not prepared")

	cols, rows = queryRows(t, db, "SHOW PROC '/transactions/test/finished'")
	require.Len(t, rows, 1)
	assert.Equal(t, "sp-done", rows[0][1])
	assert.Equal(t, "VISIBLE", rows[0][3])
	assert.NotEqual(t, "NULL", column(t, cols, rows[0], "CommitTime"))
	assert.NotEqual(t, "NULL", column(t, cols, rows[0], "FinishTime"))

	dbID, _ := e.Store().DatabaseID("test")
	_, rows = queryRows(t, db, fmt.Sprintf("SHOW PROC '/transactions/%d'", dbID))
	assert.Equal(t, [][]string{{"running", "2"}, {"finished", "1"}}, rows)
	_, rows = queryRows(t, db, "SHOW PROC '/transactions'")
	assert.Contains(t, rows, []string{strconv.FormatInt(dbID, 10), "test"})

	id := txnID(t, e, "sp-done")
	_, rows = queryRows(t, db, fmt.Sprintf("SHOW TRANSACTION FROM test WHERE ID = %d", id))
	require.Len(t, rows, 1)
	assert.Equal(t, "sp-done", rows[0][1])
	// StarRocks takes only WHERE ID = n (WHERE LABEL is refused: TestFidelityShowTransactionByLabelIsRefused)
	_, rows = queryRows(t, db, fmt.Sprintf("SHOW TRANSACTION WHERE ID = %d", txnIDClassic(t, e, "sp-classic")))
	require.Len(t, rows, 1)
	assert.Equal(t, "sp-classic", rows[0][1])
	assert.Equal(t, "PREPARE", rows[0][3])
	_, err := db.Exec("SHOW TRANSACTION WHERE ID = 1")
	assert.ErrorContains(t, err, "transaction with id 1 does not exist")
	_, err = db.Exec("SHOW PROC '/backends/x'")
	assert.ErrorContains(t, err, "not supported by the emulator")

	cols, rows = queryRows(t, db, "SHOW LOAD FROM test")
	assert.Empty(t, rows, "SHOW LOAD lists broker and insert jobs, not stream loads")
	assert.Equal(t, "JobId", cols[0])
	assert.Contains(t, cols, "TrackingSQL")
}

// TestInformationSchemaLoads: the per-table rows of a multi transaction whose table's rows
// were all rejected: CANCELLED with its counters, and a TRACKING_SQL that returns the
// rejected row (test_multi_table_all_rows_rejected_tracking).
func TestInformationSchemaLoads(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	db := openMySQL(t, e)
	_, err := db.Exec("CREATE TABLE test.rejected_rows (id INT NOT NULL, marker VARCHAR(64)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")
	require.NoError(t, err)
	requireStatus(t, c.begin(multiH("test", "rj")), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "rj", "orders"), orderRows(1, 1)), "OK", "")
	requireStatus(t, c.load(multiH("test", "rj", "table", "rejected_rows", "column_separator", ",", "strict_mode", "true",
		"max_filter_ratio", "1"), "not_an_int,marker_rejected_rj"), "OK", "")
	r := c.commit(multiH("test", "rj"))
	require.Equal(t, "FAILED", r.str("Status"))
	assert.Contains(t, r.str("Message"), "Failed to load table rejected_rows")
	assert.Contains(t, r.str("Message"), "tracking_url:")

	cols, rows := queryRows(t, db, "SELECT STATE, SINK_ROWS, FILTERED_ROWS, TYPE, ID, TRACKING_SQL FROM information_schema.loads WHERE DB_NAME = 'test' AND LABEL = 'rj' AND TABLE_NAME = 'rejected_rows'")
	require.Len(t, rows, 1, "%v %v", cols, rows)
	assert.Equal(t, []string{"CANCELLED", "0", "1", "STREAM"}, rows[0][:4])
	tracking := rows[0][5]
	assert.Equal(t, "select tracking_log from information_schema.load_tracking_logs where job_id="+rows[0][4], tracking)
	_, logs := queryRows(t, db, tracking)
	require.Len(t, logs, 1)
	assert.Contains(t, logs[0][0], "marker_rejected_rj", "the rejected row")
	assert.Contains(t, logs[0][0], "'id'", "its reason names the column")
	_, rows = queryRows(t, db, "SELECT TABLE_NAME, STATE, SINK_ROWS FROM information_schema.loads WHERE LABEL = 'rj' ORDER BY ID")
	assert.Equal(t, [][]string{{"orders", "CANCELLED", "0"}, {"rejected_rows", "CANCELLED", "0"}}, rows)

	c.multiTxn("ok", [2]string{"orders", orderRows(5, 2)})
	requireStatus(t, c.commit(multiH("test", "ok")), "OK", "")
	_, rows = queryRows(t, db, "SELECT STATE, SINK_ROWS, SCAN_ROWS, TRACKING_SQL FROM information_schema.loads WHERE LABEL = 'ok'")
	assert.Equal(t, [][]string{{"FINISHED", "2", "2", "NULL"}}, rows)
}

// TestNodesVersionAndLiveness: SHOW FRONTENDS / BACKENDS name the ports (the BE's HTTP port
// when there is a BE), current_version() and @@version_comment say what answers, and the
// liveness probes need no credentials.
func TestNodesVersionAndLiveness(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0"; c.BEAddr = "127.0.0.1:0" })
	db := openMySQL(t, e)
	cols, rows := queryRows(t, db, "SHOW FRONTENDS")
	require.Len(t, rows, 1)
	assert.Equal(t, strconv.Itoa(port(e.feLn.Addr().String())), column(t, cols, rows[0], "HttpPort"))
	assert.Equal(t, strconv.Itoa(port(e.MySQLAddr())), column(t, cols, rows[0], "QueryPort"))
	assert.Equal(t, "LEADER", column(t, cols, rows[0], "Role"))
	assert.Equal(t, "true", column(t, cols, rows[0], "Alive"))
	cols, rows = queryRows(t, db, "SHOW BACKENDS")
	require.Len(t, rows, 1)
	assert.Equal(t, strconv.Itoa(port(e.beLn.Addr().String())), column(t, cols, rows[0], "HttpPort"))
	assert.Equal(t, "true", column(t, cols, rows[0], "Alive"))

	var v string
	// "<version>-<commit hash>", both (3.3.7 and 3.4.3: UtilityFunctions::current_version,
	// GlobalVariable.versionComment; StarRocks issue #37407 shows 3.1.5's "3.1.5-5d8438a"); the
	// emulator's hash is "emulator"
	require.NoError(t, db.QueryRow("SELECT current_version()").Scan(&v))
	assert.Equal(t, "4.0.0-emulator", v)
	require.NoError(t, db.QueryRow("SELECT @@version_comment").Scan(&v))
	assert.Equal(t, "4.0.0-emulator", v)

	for _, p := range []string{"/api/health", "/api/bootstrap"} {
		res, err := http.Get(e.FEURL() + p)
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode, p)
	}
	anon := &client{t: t, base: e.FEURL(), hc: http.DefaultClient}
	r := anon.do(http.MethodGet, "/api/health", nil, "")
	assert.Equal(t, "OK", r.str("status"))
	assert.Equal(t, int64(1), r.num("online_backend_num"))
	r = anon.do(http.MethodGet, "/api/bootstrap", nil, "")
	assert.Equal(t, int64(port(e.MySQLAddr())), r.num("queryPort"))
	r = anon.do(http.MethodGet, e.BEURL()+"/api/health", nil, "")
	assert.Equal(t, "OK", r.str("status"))
}

// TestAdminFrontendConfig: ADMIN SET FRONTEND CONFIG changes the settings the emulator has,
// at once; ADMIN SHOW FRONTEND CONFIG lists them; an unknown key is StarRocks's error.
func TestAdminFrontendConfig(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	db := openMySQL(t, e)
	c.multiTxn("ac1", [2]string{"orders", orderRows(1, 1)})
	requireStatus(t, c.commit(multiH("test", "ac1")), "OK", "")
	assert.Equal(t, "VISIBLE", c.state("test", "ac1"))

	_, err := db.Exec(`ADMIN SET FRONTEND CONFIG ("label_keep_max_num" = "0")`)
	require.NoError(t, err)
	assert.Equal(t, "UNKNOWN", c.state("test", "ac1"), "evicted at once")
	cols, rows := queryRows(t, db, "ADMIN SHOW FRONTEND CONFIG LIKE 'label_keep%'")
	assert.Equal(t, []string{"Key", "AliasNames", "Value", "Type", "IsMutable", "Comment"}, cols)
	require.Len(t, rows, 2)
	assert.Equal(t, []string{"label_keep_max_num", "[]", "0"}, rows[0][:3])

	_, err = db.Exec(`ADMIN SET FRONTEND CONFIG ('max_running_txn_num_per_db' = '1')`)
	require.NoError(t, err)
	c.multiTxn("ac2", [2]string{"orders", orderRows(2, 1)})
	requireStatus(t, c.begin(multiH("test", "ac3")), "OK", "")
	r := c.load(jsonLoadH("test", "ac3", "orders"), orderRows(3, 1))
	assert.Equal(t, "FAILED", r.str("Status"))
	assert.Contains(t, r.str("Message"), "larger than limit 1")

	_, err = db.Exec(`ADMIN SET FRONTEND CONFIG ("no_such_config" = "1")`)
	assert.ErrorContains(t, err, "Config 'no_such_config' does not exist or is not mutable")
	_, err = db.Exec(`ADMIN SET FRONTEND CONFIG ("label_keep_max_num" = "many")`)
	assert.ErrorContains(t, err, "Failed to set config 'label_keep_max_num'")
}

// TestShowCreateTable prints StarRocks DDL (keys, DISTRIBUTED BY, PROPERTIES), not InnoDB's,
// and the text creates the same table again.
func TestShowCreateTable(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	db := openMySQL(t, e)
	var name, ddl string
	require.NoError(t, db.QueryRow("SHOW CREATE TABLE test.orders").Scan(&name, &ddl))
	assert.Equal(t, "orders", name)
	for _, want := range []string{"CREATE TABLE `orders` (", "`order_id` bigint(20) NOT NULL", ") ENGINE=OLAP",
		"PRIMARY KEY(`order_id`)", "DISTRIBUTED BY HASH(`order_id`)"} {
		assert.Contains(t, ddl, want)
	}
	assert.NotContains(t, ddl, "InnoDB")
	_, err := db.Exec("CREATE DATABASE copydb")
	require.NoError(t, err)
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(t.Context(), "USE copydb")
	require.NoError(t, err)
	_, err = conn.ExecContext(t.Context(), ddl)
	require.NoError(t, err, ddl)
	var again string
	require.NoError(t, conn.QueryRowContext(t.Context(), "SHOW CREATE TABLE orders").Scan(&name, &again))
	assert.Equal(t, ddl, again)
}

// TestUnsupportedStorageStatements: statements about storage the emulator
// does not have answer an error naming the statement and what to do, not a
// parser error.
func TestUnsupportedStorageStatements(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	db := openMySQL(t, e)
	for stmt, want := range map[string]string{
		"CREATE MATERIALIZED VIEW test.mv AS SELECT order_id FROM test.orders": "CREATE MATERIALIZED VIEW is not supported by the emulator",
		"SHOW PARTITIONS FROM test.orders":                                     "SHOW PARTITIONS is not supported by the emulator",
		"SHOW TEMPORARY PARTITIONS FROM test.orders":                           "SHOW PARTITIONS is not supported by the emulator",
		"SHOW TABLET FROM test.orders":                                         "SHOW TABLET is not supported by the emulator",
		"SHOW DATA FROM test.orders":                                           "SHOW DATA is not supported by the emulator",
	} {
		_, err := db.Exec(stmt)
		assert.ErrorContains(t, err, want, stmt)
	}
	_, err := db.Exec("CREATE TABLE test.still_works (id INT NOT NULL) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id)")
	assert.NoError(t, err, "other CREATE statements go on as before")
	_, rows := queryRows(t, db, "SHOW TABLES FROM test LIKE 'still_works'")
	assert.Equal(t, [][]string{{"still_works"}}, rows)
}
