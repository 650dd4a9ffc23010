package emulator

import (
	"database/sql"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator/store"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// Schema change jobs over the emulator's real transactions, faults and restarts. Waits for a
// job to reach a state poll with a generous deadline; a check that a job stays where it is
// steps the jobs itself first (StepSchemaChanges), so it cannot pass by being early, and a
// check that a job outlasts its run time steps the emulator's clock past it first.

// heavyTable is a table without fast schema evolution: every ALTER on it is a job.
const heavyTable = `CREATE TABLE test.h (id BIGINT NOT NULL, v VARCHAR(8)) PRIMARY KEY(id) DISTRIBUTED BY HASH(id)
  PROPERTIES ("replication_num" = "1", "fast_schema_evolution" = "false")`

func startAlterEmu(t *testing.T, mod func(*Config)) (*Emulator, *sql.DB) {
	t.Helper()
	e := startEmu(t, func(c *Config) {
		c.MySQLAddr = "127.0.0.1:0"
		c.SchemaChangeTime = 50 * time.Millisecond
		if mod != nil {
			mod(c)
		}
	})
	db := openMySQL(t, e)
	_, err := db.Exec(heavyTable)
	require.NoError(t, err)
	return e, db
}

// lastJob is the newest schema change job.
func lastJob(t *testing.T, e *Emulator) store.AlterJob {
	t.Helper()
	jobs := e.Store().AlterJobs()
	require.NotEmpty(t, jobs)
	return jobs[len(jobs)-1]
}

// waitJob waits until the newest job is in state, failing at once when it settles in another
// final state.
func waitJob(t *testing.T, e *Emulator, state store.AlterJobState) store.AlterJob {
	t.Helper()
	var j store.AlterJob
	testkit.Poll(30*time.Second, func() bool {
		j = lastJob(t, e)
		return j.State == state || j.State == store.JobFinished || j.State == store.JobCancelled
	})
	require.Equal(t, state, j.State, "the newest job: %+v", j)
	return j
}

// stays steps the jobs and checks the newest job is still in state: a step moves every job
// as far as its transactions and the emulator's clock let it, at once.
func stays(t *testing.T, e *Emulator, state store.AlterJobState, why string) {
	t.Helper()
	e.Store().StepSchemaChanges()
	require.Equal(t, state, lastJob(t, e).State, why)
}

func hH(label string) hdrs {
	return hdrs{"db": "test", "label": label, "table": "h", "format": "json", "strip_outer_array": "true"}
}

// TestAlterJobWaitsForTransactions: a job waits in WAITING_TXN for the transactions on its
// table begun before it took its watershed: a classic one until it commits, a multi-table one
// from its first load into the table until it is rolled back. A classic transaction begun
// after the ALTER, and a multi-table one that loaded into another table only, do not hold
// it. A load planned during the job loses the new column's key; its rows commit after
// FINISHED with the DEFAULT; a load after FINISHED keeps it.
func TestAlterJobWaitsForTransactions(t *testing.T) {
	t.Parallel()
	e, db := startAlterEmu(t, nil)
	c := newClient(t, e)
	requireStatus(t, c.begin(hH("before")), "OK", "")
	requireStatus(t, c.load(hH("before"), `[{"id":1,"v":"a"}]`), "OK", "")
	c.multiTxn("other", [2]string{"orders", orderRows(1, 1)})
	requireStatus(t, c.begin(multiH("test", "mh")), "OK", "")

	_, err := db.Exec(`ALTER TABLE test.h ADD COLUMN n INT DEFAULT "5"`)
	require.NoError(t, err)
	j := waitJob(t, e, store.JobWaitingTxn)
	assert.Greater(t, j.TransactionID, int64(0))
	stays(t, e, store.JobWaitingTxn, "held by the classic transaction begun before")

	requireStatus(t, c.begin(hH("after")), "OK", "")
	requireStatus(t, c.load(hH("after"), `[{"id":3,"v":"c","n":9}]`), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "mh", "h"), `[{"id":2,"v":"b","n":9}]`), "OK", "")
	requireStatus(t, c.commit(hH("before")), "OK", "")
	stays(t, e, store.JobWaitingTxn, "now held by the multi-table transaction, begun before and loaded into h since")
	requireStatus(t, c.rollback(multiH("test", "mh")), "OK", "stream load mh abort")
	waitJob(t, e, store.JobFinished)

	requireStatus(t, c.commit(hH("after")), "OK", "")
	requireStatus(t, c.commit(multiH("test", "other")), "OK", "")
	requireStatus(t, c.begin(hH("later")), "OK", "")
	requireStatus(t, c.load(hH("later"), `[{"id":4,"v":"d","n":9}]`), "OK", "")
	requireStatus(t, c.commit(hH("later")), "OK", "")
	_, rows := queryRows(t, db, "SELECT id, n FROM test.h ORDER BY id")
	assert.Equal(t, [][]string{{"1", "5"}, {"3", "5"}, {"4", "9"}}, rows,
		"the key of a load planned during the job is lost, its row kept with the DEFAULT")
}

// TestAlterJobWaitsForStreamLoadAndAbort: a plain stream load and a classic transaction that
// is rolled back hold the job only while they run.
func TestAlterJobWaitsForAbortedTransaction(t *testing.T) {
	t.Parallel()
	e, db := startAlterEmu(t, nil)
	c := newClient(t, e)
	requireStatus(t, c.begin(hH("gone")), "OK", "")
	_, err := db.Exec(`ALTER TABLE test.h MODIFY COLUMN v VARCHAR(20)`)
	require.NoError(t, err)
	waitJob(t, e, store.JobWaitingTxn)
	stays(t, e, store.JobWaitingTxn, "held by the open classic transaction")
	requireStatus(t, c.rollback(hH("gone")), "OK", "")
	waitJob(t, e, store.JobFinished)
}

// TestAlterJobFaults: an alter_job fault (POST /_emulator/faults) keeps a job RUNNING for its
// delay, or ends it CANCELLED with a message; it is taken only by a job on its table, and
// fast schema evolution (which runs no job) does not take it.
func TestAlterJobFaults(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	e, db := startAlterEmu(t, func(c *Config) { c.Now = clk.Now })
	c := newClient(t, e)
	// ranFor waits until the newest job is RUNNING, moves the emulator's clock a second
	// on (20 × the run time) and waits until the job is in state.
	ranFor := func(state store.AlterJobState) store.AlterJob {
		t.Helper()
		waitJob(t, e, store.JobRunning)
		clk.Add(time.Second)
		return waitJob(t, e, state)
	}
	post := func(body string) resp {
		return c.do(http.MethodPost, "/_emulator/faults", nil, body)
	}
	r := post(`{"op":"alter_job","action":"reset"}`)
	assert.Equal(t, http.StatusBadRequest, r.code)
	assert.Contains(t, r.raw, `fault action \"reset\" does not apply to op alter_job: use delay, cancel or error`)
	require.Equal(t, http.StatusOK, post(`{"op":"alter_job","action":"delay","delay":"1h","table":"h"}`).code)

	_, err := db.Exec(`ALTER TABLE test.orders ADD COLUMN note VARCHAR(10)`)
	require.NoError(t, err)
	assert.Equal(t, store.JobFinished, lastJob(t, e).State, "orders has fast schema evolution: no job to delay")
	assert.Len(t, e.Faults().Pending(), 1, "the fault is still pending")

	_, err = db.Exec(`ALTER TABLE test.h ADD COLUMN a INT`)
	require.NoError(t, err)
	waitJob(t, e, store.JobRunning)
	clk.Add(time.Second)
	stays(t, e, store.JobRunning, "RUNNING for the fault's hour, not the 50 ms run time")
	_, rows := queryRows(t, db, "SHOW ALTER TABLE COLUMN FROM test WHERE TableName = 'h'")
	assert.Equal(t, "0/1", rows[0][11], "Progress")
	_, err = db.Exec("CANCEL ALTER TABLE COLUMN FROM test.h")
	require.NoError(t, err)
	assert.Equal(t, "user cancelled", waitJob(t, e, store.JobCancelled).Msg)

	require.Equal(t, http.StatusOK, post(`[{"op":"alter_job","action":"cancel","message":"stop now"},{"op":"alter_job","action":"error"}]`).code)
	_, err = db.Exec(`ALTER TABLE test.h ADD COLUMN b INT`)
	require.NoError(t, err)
	assert.Equal(t, "stop now", ranFor(store.JobCancelled).Msg)
	_, err = db.Exec(`ALTER TABLE test.h ADD COLUMN b INT`)
	require.NoError(t, err)
	assert.Equal(t, "schema change task failed: injected fault", ranFor(store.JobCancelled).Msg)
	_, err = db.Exec(`ALTER TABLE test.h ADD COLUMN b INT`)
	require.NoError(t, err)
	ranFor(store.JobFinished)
	_, cols := queryRows(t, db, "SELECT COLUMN_NAME FROM information_schema.columns WHERE TABLE_SCHEMA = 'test' AND TABLE_NAME = 'h' ORDER BY ORDINAL_POSITION")
	assert.Equal(t, [][]string{{"id"}, {"v"}, {"b"}}, cols, "the cancelled changes are not applied")
}

// TestAlterStatementFaults: the mysql op's faults on an ALTER statement: reply_lost means the
// statement ran (the job exists and runs), reset means nothing happened.
func TestAlterStatementFaults(t *testing.T) {
	t.Parallel()
	e, db := startAlterEmu(t, nil)
	require.NoError(t, e.Faults().Add(Fault{Op: OpMySQL, Action: ActReset, Statement: `^ALTER TABLE test\.h ADD COLUMN r`}))
	_, err := db.Exec(`ALTER TABLE test.h ADD COLUMN r INT`)
	require.Error(t, err, "the connection was reset")
	assert.Empty(t, e.Store().AlterJobs(), "reset: the statement did not run")
	_, cols := queryRows(t, db, "DESC test.h")
	assert.Len(t, cols, 2)

	require.NoError(t, e.Faults().Add(Fault{Op: OpMySQL, Action: ActReplyLost, Statement: `^ALTER TABLE test\.h ADD COLUMN l`}))
	_, err = db.Exec(`ALTER TABLE test.h ADD COLUMN l INT`)
	require.Error(t, err, "no reply")
	require.Len(t, e.Store().AlterJobs(), 1, "reply_lost: the job was created")
	waitJob(t, e, store.JobFinished)
	_, cols = queryRows(t, db, "DESC test.h")
	assert.Equal(t, "l", cols[2][0])
	_, err = db.Exec(`ALTER TABLE test.h ADD COLUMN l INT`)
	assert.ErrorContains(t, err, "Error 1064 (HY000): Can not add column which already exists in base table: l",
		"the client's retry of a statement whose reply was lost")
}

// TestAlterJobRestarts: a job RUNNING when the FE restarts runs again from WAITING_TXN (the
// edit log has no RUNNING), and with --data-dir the jobs survive the process: an unfinished
// one runs on and finishes, a finished one is listed with its schema.
func TestAlterJobRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, db := startAlterEmu(t, func(c *Config) { c.DataDir = dir })
	require.NoError(t, e.Faults().Add(Fault{Op: OpAlterJob, Action: ActDelay, Delay: time.Hour}))
	_, err := db.Exec(`ALTER TABLE test.h ADD COLUMN x INT DEFAULT "1"`)
	require.NoError(t, err)
	waitJob(t, e, store.JobRunning)
	e.Restart()
	waitJob(t, e, store.JobFinished)

	require.NoError(t, e.Faults().Add(Fault{Op: OpAlterJob, Action: ActDelay, Delay: time.Hour}))
	_, err = db.Exec(`ALTER TABLE test.h ADD COLUMN y INT DEFAULT "2"`)
	require.NoError(t, err)
	waitJob(t, e, store.JobRunning)
	_, err = db.Exec(`ALTER TABLE test.orders ADD COLUMN z INT`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO test.h (id, v, x) VALUES (1, 'a', 7)`)
	require.NoError(t, err)
	before := e.Store().AlterJobs()
	require.Len(t, before, 3)
	require.Equal(t, store.JobRunning, before[1].State)
	require.NoError(t, e.Close())

	e2 := startEmu(t, func(c *Config) {
		c.DataDir = dir
		c.MySQLAddr = "127.0.0.1:0"
		c.SchemaChangeTime = 50 * time.Millisecond
	})
	after := e2.Store().AlterJobs()
	require.Len(t, after, 3)
	assert.Equal(t, store.JobFinished, after[0].State)
	assert.Equal(t, store.JobFinished, after[2].State, "the fast schema evolution job")
	assert.Equal(t, before[1].TransactionID, after[1].TransactionID)
	testkit.Poll(30*time.Second, func() bool { return e2.Store().AlterJobs()[1].State == store.JobFinished })
	require.Equal(t, store.JobFinished, e2.Store().AlterJobs()[1].State, "the job left RUNNING by the stop runs on: %+v", e2.Store().AlterJobs()[1])
	_, rows := queryRows(t, openMySQL(t, e2), "SELECT id, x, y FROM test.h")
	assert.Equal(t, [][]string{{"1", "7", "2"}}, rows)
	sc, err := e2.Store().Table("test", "orders")
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(sc.Columns, func(c store.Column) bool { return c.Name == "z" }))
}
