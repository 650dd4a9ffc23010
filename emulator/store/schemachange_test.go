package store

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Schema change jobs on the store alone, with a fake transaction oracle and an explicit
// clock: every transition is driven by StepSchemaChanges, no test sleeps.

// fakeTxns is a TxnOracle over transactions the test begins and ends.
type fakeTxns struct {
	mu      sync.Mutex
	next    int64
	running map[int64]string // id -> table
}

func newFakeTxns() *fakeTxns { return &fakeTxns{next: 100, running: map[int64]string{}} }

func (f *fakeTxns) NextTxnID() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	return f.next
}

func (f *fakeTxns) begin(table string) int64 {
	id := f.NextTxnID()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running[id] = table
	return id
}

func (f *fakeTxns) end(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.running, id)
}

func (f *fakeTxns) PendingTxns(_, table string, below int64) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int64
	for id, tb := range f.running {
		if id < below && strings.EqualFold(tb, table) {
			out = append(out, id)
		}
	}
	return out
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type scEnv struct {
	s     *Store
	txns  *fakeTxns
	clock *fakeClock
	fault JobFault
}

// newSCEnv is a store with the oracle and the clock, a database db, and a table db.t without
// fast schema evolution (every change is a job) holding one row.
func newSCEnv(t *testing.T) *scEnv {
	t.Helper()
	env := &scEnv{s: New(), txns: newFakeTxns(), clock: &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)}}
	env.s.SetSchemaChangeHooks(SchemaChangeHooks{Txns: env.txns, Now: env.clock.now,
		JobFault: func(string, string) JobFault { return env.fault }})
	require.NoError(t, env.s.ExecScript(`CREATE DATABASE db;
CREATE TABLE db.t (id BIGINT NOT NULL, v VARCHAR(8)) PRIMARY KEY(id) DISTRIBUTED BY HASH(id)
  PROPERTIES ("replication_num" = "1", "fast_schema_evolution" = "false");`))
	load(t, env.s, "db", "t", `[{"id":1,"v":"a"}]`, jsonParams(nil))
	return env
}

func (env *scEnv) job(t *testing.T) AlterJob {
	t.Helper()
	jobs := env.s.AlterJobs()
	require.NotEmpty(t, jobs)
	return jobs[len(jobs)-1]
}

func (env *scEnv) columns(t *testing.T, table string) []string {
	t.Helper()
	sc, err := env.s.Table("db", table)
	require.NoError(t, err)
	var out []string
	for _, c := range sc.Columns {
		out = append(out, c.Name)
	}
	return out
}

// TestSchemaChangeJobLifecycle: a job that is not fast schema evolution goes PENDING →
// WAITING_TXN (taking the next transaction id as its watershed) → RUNNING for the run time →
// FINISHED, and only then does the table have the new column; while it runs the table
// refuses another ALTER, TRUNCATE and DROP TABLE without FORCE.
func TestSchemaChangeJobLifecycle(t *testing.T) {
	env := newSCEnv(t)
	s := env.s
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN n INT DEFAULT "5"`))
	j := env.job(t)
	assert.Equal(t, JobPending, j.State)
	assert.Equal(t, int64(-1), j.TransactionID, "no watershed before WAITING_TXN")
	assert.Equal(t, DefaultAlterTableTimeout, j.Timeout)
	assert.Equal(t, env.clock.now(), j.CreateTime)
	assert.True(t, j.Finished.IsZero())
	assert.Equal(t, 1, j.SchemaVersion)
	assert.NotEqual(t, j.IndexID, j.OriginIndex, "a shadow index")
	assert.Equal(t, []string{"id", "v"}, env.columns(t, "t"), "not visible before FINISHED")

	assert.EqualError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN m INT`),
		`ddl "ALTER TABLE db.t ADD COLUMN m INT": Table[t]'s state(SCHEMA_CHANGE) is not NORMAL. Do not allow doing ALTER ops`)
	assert.ErrorContains(t, s.ExecDDL(`TRUNCATE TABLE db.t`), "Table' state is not NORMAL: SCHEMA_CHANGE")
	assert.ErrorContains(t, s.ExecDDL(`DROP TABLE db.t`), "The table [t]'s state is SCHEMA_CHANGE, cannot be dropped. please cancel the operation on olap table firstly. If you want to forcibly drop(cannot be recovered), please use \"DROP table FORCE\".")

	want := env.txns.next + 1
	assert.Equal(t, 1, s.StepSchemaChanges())
	j = env.job(t)
	assert.Equal(t, JobWaitingTxn, j.State, "the first step takes the watershed")
	assert.Equal(t, want, j.TransactionID)
	assert.Equal(t, 1, s.StepSchemaChanges())
	assert.Equal(t, JobRunning, env.job(t).State, "nothing runs below the watershed")
	env.clock.add(DefaultSchemaChangeRunTime - time.Millisecond)
	assert.Equal(t, 1, s.StepSchemaChanges())
	assert.Equal(t, JobRunning, env.job(t).State)
	assert.Equal(t, []string{"id", "v"}, env.columns(t, "t"))
	env.clock.add(time.Millisecond)
	assert.Equal(t, 0, s.StepSchemaChanges())
	j = env.job(t)
	assert.Equal(t, JobFinished, j.State)
	assert.Equal(t, env.clock.now(), j.Finished)
	assert.Equal(t, []string{"id", "v", "n"}, env.columns(t, "t"))
	rows, err := s.Rows("db", "t")
	require.NoError(t, err)
	assert.Equal(t, []map[string]any{{"id": int64(1), "v": "a", "n": int32(5)}}, rows, "the existing row takes the DEFAULT")
	sc, _ := s.Table("db", "t")
	assert.Equal(t, j.IndexID, sc.indexID, "the shadow index is the table's now")
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN m INT`), "the table is NORMAL again")
}

// TestSchemaChangeWatershed: the job waits in WAITING_TXN for every running transaction on
// its table with an id below its watershed; one begun after the watershed, or on another
// table, does not hold it.
func TestSchemaChangeWatershed(t *testing.T) {
	env := newSCEnv(t)
	s := env.s
	before := env.txns.begin("t")
	other := env.txns.begin("other")
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t MODIFY COLUMN v VARCHAR(20)`))
	s.StepSchemaChanges()
	require.Equal(t, JobWaitingTxn, env.job(t).State)
	after := env.txns.begin("t")
	for range 3 {
		s.StepSchemaChanges()
		env.clock.add(time.Second)
		assert.Equal(t, JobWaitingTxn, env.job(t).State, "held by the transaction begun before the ALTER")
	}
	env.txns.end(before)
	s.StepSchemaChanges()
	assert.Equal(t, JobRunning, env.job(t).State, "the later transaction and the one on another table do not hold it")
	env.clock.add(DefaultSchemaChangeRunTime)
	s.StepSchemaChanges()
	assert.Equal(t, JobFinished, env.job(t).State)
	env.txns.end(after)
	env.txns.end(other)
}

// TestSchemaChangeLoadsDuringJob: loads go on during the job under the old schema: a JSON key
// for the added column is skipped (lost), the rows are kept and take the DEFAULT when the job
// finishes, also rows loaded during the job and committed after it; a load planned after
// FINISHED keeps the key. A load stream keeps the schema of its first body.
func TestSchemaChangeLoadsDuringJob(t *testing.T) {
	env := newSCEnv(t)
	s := env.s
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN n INT DEFAULT "5"`))
	s.StepSchemaChanges()
	s.StepSchemaChanges()
	require.Equal(t, JobRunning, env.job(t).State)

	load(t, s, "db", "t", `[{"id":2,"v":"b","n":9}]`, jsonParams(nil))
	held, err := s.Parse("db", "t", []byte(`[{"id":3,"v":"c","n":9}]`), jsonParams(nil))
	require.NoError(t, err)
	csv, err := ParseLoadParams(map[string]string{"column_separator": ",", "columns": "id,v,n"})
	require.NoError(t, err)
	var st Stream
	first, err := s.ParseStream("db", "t", []byte("4,d,9\n"), csv, &st)
	require.NoError(t, err)

	env.clock.add(DefaultSchemaChangeRunTime)
	s.StepSchemaChanges()
	require.Equal(t, JobFinished, env.job(t).State)
	second, err := s.ParseStream("db", "t", []byte("5,e,9\n"), csv, &st)
	require.NoError(t, err, "the stream's plan is the old schema: n is a source field it skips")
	require.NoError(t, s.Apply([]TableChange{{DB: "db", Table: "t", Rows: held.Rows}}))
	require.NoError(t, s.Apply([]TableChange{{DB: "db", Table: "t", Rows: append(first.Rows, second.Rows...)}}))
	load(t, s, "db", "t", `[{"id":6,"v":"f","n":9}]`, jsonParams(nil))

	rows, err := s.Rows("db", "t")
	require.NoError(t, err)
	got := map[int64]any{}
	for _, r := range rows {
		got[r["id"].(int64)] = r["n"]
	}
	assert.Equal(t, map[int64]any{1: int32(5), 2: int32(5), 3: int32(5), 4: int32(5), 5: int32(5), 6: int32(9)}, got,
		"only the load planned after FINISHED keeps n")
}

// TestSchemaChangeFastSchemaEvolution: on a fast schema evolution table ADD and DROP of value
// columns and a VARCHAR widening are done at once, with a FINISHED job (Timeout 1, the
// ALTER's transaction id, the same index), whatever runs; a type change is a job there too.
// The default comes from enable_fast_schema_evolution, and SHOW CREATE TABLE prints it.
func TestSchemaChangeFastSchemaEvolution(t *testing.T) {
	env := newSCEnv(t)
	s := env.s
	require.NoError(t, s.ExecDDL(`CREATE TABLE db.f (id BIGINT NOT NULL, v VARCHAR(8), w INT) PRIMARY KEY(id) DISTRIBUTED BY HASH(id)`))
	sc, err := s.Table("db", "f")
	require.NoError(t, err)
	assert.True(t, sc.fse, "enable_fast_schema_evolution is true by default")
	assert.Contains(t, sc.DDL(), `"fast_schema_evolution" = "true"`)
	load(t, s, "db", "f", `[{"id":1,"v":"a","w":7}]`, jsonParams(nil))
	env.txns.begin("f")

	next := env.txns.next + 1
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.f ADD COLUMN n INT DEFAULT "5"`))
	j := env.job(t)
	assert.Equal(t, JobFinished, j.State, "finished by the statement, though a transaction runs on the table")
	assert.Equal(t, time.Second, j.Timeout)
	assert.Equal(t, next, j.TransactionID)
	assert.Equal(t, j.IndexID, j.OriginIndex)
	assert.Equal(t, j.CreateTime, j.Finished)
	assert.Equal(t, []string{"id", "v", "w", "n"}, env.columns(t, "f"))
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.f DROP COLUMN w`))
	assert.Equal(t, JobFinished, env.job(t).State)
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.f MODIFY COLUMN v VARCHAR(30)`))
	assert.Equal(t, JobFinished, env.job(t).State, "a VARCHAR widening is fast")
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.f MODIFY COLUMN n BIGINT DEFAULT "5"`))
	assert.Equal(t, JobPending, env.job(t).State, "any other type change rewrites the data")

	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN n INT`))
	assert.Equal(t, JobPending, env.job(t).State, "db.t has fast_schema_evolution false")

	s.SetFastSchemaEvolutionDefault(false)
	require.NoError(t, s.ExecDDL(`CREATE TABLE db.g (id BIGINT NOT NULL) PRIMARY KEY(id)`))
	sc, err = s.Table("db", "g")
	require.NoError(t, err)
	assert.False(t, sc.fse)
	assert.Contains(t, sc.DDL(), `"fast_schema_evolution" = "false"`)
	assert.ErrorContains(t, s.ExecDDL(`CREATE TABLE db.h (id INT) PROPERTIES ("fast_schema_evolution" = "yes")`), "fast_schema_evolution must be `true` or `false`")
}

// TestSchemaChangeCancel: CANCEL ALTER ends the job CANCELLED "user cancelled" and the table
// keeps its schema; a table without a running job cannot be cancelled.
func TestSchemaChangeCancel(t *testing.T) {
	env := newSCEnv(t)
	s := env.s
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN n INT`))
	s.StepSchemaChanges()
	s.mu.Lock()
	require.NoError(t, s.cancelAlterLocked("db", "t"))
	err := s.cancelAlterLocked("db", "t")
	s.mu.Unlock()
	assert.EqualError(t, err, "Table[t] is not under SCHEMA_CHANGE/WAITING_STABLE.")
	j := env.job(t)
	assert.Equal(t, JobCancelled, j.State)
	assert.Equal(t, "user cancelled", j.Msg)
	assert.Equal(t, env.clock.now(), j.Finished)
	env.clock.add(time.Hour)
	assert.Equal(t, 0, s.StepSchemaChanges())
	assert.Equal(t, []string{"id", "v"}, env.columns(t, "t"), "the change is not applied")
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN n INT`), "the table is NORMAL again")
}

// TestSchemaChangeTimeout: a job older than alter_table_timeout_second is CANCELLED
// "Timeout", even while it waits for a transaction.
func TestSchemaChangeTimeout(t *testing.T) {
	env := newSCEnv(t)
	s := env.s
	s.SetAlterTableTimeout(time.Minute)
	env.txns.begin("t")
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN n INT`))
	s.StepSchemaChanges()
	env.clock.add(time.Minute)
	s.StepSchemaChanges()
	require.Equal(t, JobWaitingTxn, env.job(t).State, "not over the timeout yet")
	env.clock.add(time.Millisecond)
	s.StepSchemaChanges()
	j := env.job(t)
	assert.Equal(t, JobCancelled, j.State)
	assert.Equal(t, "Timeout", j.Msg)
	assert.Equal(t, time.Minute, j.Timeout)
	assert.Equal(t, []string{"id", "v"}, env.columns(t, "t"))
}

// TestSchemaChangeJobFaults: an injected fault keeps a job RUNNING for its delay, or ends it
// CANCELLED with its message.
func TestSchemaChangeJobFaults(t *testing.T) {
	for _, c := range []struct {
		name     string
		fault    JobFault
		run      time.Duration
		state    AlterJobState
		msg      string
		finished bool
	}{
		{"delay", JobFault{Action: JobDelay, Delay: time.Minute}, time.Minute, JobFinished, "", true},
		{"cancel", JobFault{Action: JobCancel}, DefaultSchemaChangeRunTime, JobCancelled, "user cancelled", false},
		{"cancel with a message", JobFault{Action: JobCancel, Message: "stopped"}, DefaultSchemaChangeRunTime, JobCancelled, "stopped", false},
		{"error", JobFault{Action: JobError, Message: "disk full"}, DefaultSchemaChangeRunTime, JobCancelled, "schema change task failed: disk full", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newSCEnv(t)
			env.fault = c.fault
			require.NoError(t, env.s.ExecDDL(`ALTER TABLE db.t ADD COLUMN n INT`))
			env.s.StepSchemaChanges()
			env.s.StepSchemaChanges()
			require.Equal(t, JobRunning, env.job(t).State)
			env.clock.add(c.run - time.Millisecond)
			env.s.StepSchemaChanges()
			require.Equal(t, JobRunning, env.job(t).State, "RUNNING for the fault's delay")
			env.clock.add(time.Millisecond)
			env.s.StepSchemaChanges()
			j := env.job(t)
			assert.Equal(t, c.state, j.State)
			assert.Equal(t, c.msg, j.Msg)
			assert.Equal(t, c.finished, slices.Contains(env.columns(t, "t"), "n"))
		})
	}
}

// TestSchemaChangeModify: MODIFY COLUMN converts the stored values as a CAST at FINISHED
// (a value that does not convert is NULL in a nullable column and cancels the job for a NOT
// NULL one), and refuses what StarRocks's checkSchemaChangeAllowed refuses.
func TestSchemaChangeModify(t *testing.T) {
	env := newSCEnv(t)
	s := env.s
	require.NoError(t, s.ExecDDL(`CREATE TABLE db.m (id INT NOT NULL, i INT, s VARCHAR(20), d DECIMAL(10,2), dt DATE, nn VARCHAR(10) NOT NULL)
  DUPLICATE KEY(id) PROPERTIES ("fast_schema_evolution" = "false")`))
	load(t, s, "db", "m", `[{"id":1,"i":7,"s":"12","d":"1.25","dt":"2024-03-04","nn":"1"},{"id":2,"i":8,"s":"abc","d":"2.50","dt":"2024-03-05","nn":"q"}]`, jsonParams(nil))
	finish := func() {
		t.Helper()
		for range 3 {
			s.StepSchemaChanges()
			env.clock.add(DefaultSchemaChangeRunTime)
		}
		s.StepSchemaChanges()
	}
	for stmt, want := range map[string]string{
		`ALTER TABLE db.m MODIFY COLUMN s VARCHAR(10)`:     "Cannot shorten string length",
		`ALTER TABLE db.m MODIFY COLUMN i INT NOT NULL`:    "Can not change from nullable to non-nullable",
		`ALTER TABLE db.m MODIFY COLUMN i INT DEFAULT "1"`: "Can not change default value",
		`ALTER TABLE db.m MODIFY COLUMN d DECIMAL(18,1)`:   "Can not change decimal64(10, 2) to decimal64(18, 1)",
		`ALTER TABLE db.m MODIFY COLUMN i BOOLEAN`:         "Can not change int to boolean",
		`ALTER TABLE db.m MODIFY COLUMN dt INT`:            "Can not change date to int",
		`ALTER TABLE db.m MODIFY COLUMN nope INT`:          "Column[nope] does not exists",
		`ALTER TABLE db.m MODIFY COLUMN i BIGINT AFTER x`:  "Column[x] does not exists",
		`ALTER TABLE db.m ADD COLUMN z INT AFTER x`:        "Column[x] does not found",
		`ALTER TABLE db.m DROP COLUMN id`:                  "No key column left. index[m]",
		`ALTER TABLE db.m ADD COLUMN z INT KEY FIRST`:      "", // a DUPLICATE KEY table takes a key column
	} {
		err := s.ExecDDL(stmt)
		if want == "" {
			require.NoError(t, err, stmt)
			s.mu.Lock()
			require.NoError(t, s.cancelAlterLocked("db", "m"))
			s.mu.Unlock()
			continue
		}
		assert.ErrorContains(t, err, want, stmt)
	}
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.m MODIFY COLUMN i BIGINT, MODIFY COLUMN s INT, MODIFY COLUMN d DECIMAL(18,4), MODIFY COLUMN dt DATETIME`))
	finish()
	require.Equal(t, JobFinished, env.job(t).State)
	rows, err := s.Rows("db", "m")
	require.NoError(t, err)
	assert.Equal(t, int64(7), rows[0]["i"])
	assert.Equal(t, int32(12), rows[0]["s"])
	assert.Nil(t, rows[1]["s"], "'abc' is no INT: NULL")
	d := rows[0]["d"].(decimal.Decimal)
	assert.Equal(t, "1.2500", d.StringFixed(4))
	assert.Equal(t, int32(-4), d.Exponent(), "stored at the new scale")
	assert.Equal(t, time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC), rows[0]["dt"])

	require.NoError(t, s.ExecDDL(`ALTER TABLE db.m MODIFY COLUMN nn INT NOT NULL`))
	finish()
	j := env.job(t)
	assert.Equal(t, JobCancelled, j.State, "'q' does not convert into the NOT NULL INT")
	assert.Contains(t, j.Msg, "schema change task failed: column 'nn'")
	sc, _ := s.Table("db", "m")
	assert.Equal(t, TypeVarchar, sc.Columns[sc.ColumnIndex("nn")].Type)
}

// TestSchemaChangeJournal: jobs survive a restart as StarRocks's edit log keeps them: a job
// that had taken its watershed comes back WAITING_TXN with it and runs on; a finished one
// (fast or not) keeps its schema and its rows (a CURRENT_TIMESTAMP column backfilled with the
// ALTER's time); a cancelled one stays cancelled; a table created under
// enable_fast_schema_evolution false keeps it.
func TestSchemaChangeJournal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j")
	env := newSCEnvJournal(t, path)
	s := env.s
	s.SetFastSchemaEvolutionDefault(false)
	require.NoError(t, s.ExecDDL(`CREATE TABLE db.slow (id INT NOT NULL) PRIMARY KEY(id)`))
	s.SetFastSchemaEvolutionDefault(true)
	require.NoError(t, s.ExecDDL(`CREATE TABLE db.f (id INT NOT NULL) PRIMARY KEY(id)`))
	load(t, s, "db", "f", `[{"id":1}]`, jsonParams(nil))
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.f ADD COLUMN ts DATETIME DEFAULT CURRENT_TIMESTAMP`))
	fastRows, err := s.Rows("db", "f")
	require.NoError(t, err)

	require.NoError(t, s.ExecDDL(`ALTER TABLE db.slow ADD COLUMN n INT`))
	s.mu.Lock()
	require.NoError(t, s.cancelAlterLocked("db", "slow"))
	s.mu.Unlock()
	require.NoError(t, s.ExecDDL(`ALTER TABLE db.t ADD COLUMN n INT DEFAULT "3"`))
	s.StepSchemaChanges()
	s.StepSchemaChanges()
	waiting := env.job(t)
	require.Equal(t, JobRunning, waiting.State)
	before := s.AlterJobs()
	require.NoError(t, s.CloseJournal())

	env2 := newSCEnvJournal(t, path)
	s2 := env2.s
	after := s2.AlterJobs()
	require.Len(t, after, len(before))
	for i := range before {
		assert.Equal(t, before[i].ID, after[i].ID)
		assert.Equal(t, before[i].TransactionID, after[i].TransactionID)
		assert.Equal(t, before[i].Msg, after[i].Msg)
		assert.True(t, before[i].CreateTime.Equal(after[i].CreateTime))
	}
	assert.Equal(t, JobWaitingTxn, after[len(after)-1].State, "RUNNING is not journaled: WAITING_TXN again, with its watershed")
	assert.Equal(t, JobCancelled, after[len(after)-2].State)
	assert.Equal(t, JobFinished, after[len(after)-3].State)
	got, err := s2.Rows("db", "f")
	require.NoError(t, err)
	assert.Equal(t, fastRows, got, "the backfilled CURRENT_TIMESTAMP is the ALTER's time, not the replay's")
	sc, _ := s2.Table("db", "slow")
	assert.False(t, sc.fse)
	assert.Equal(t, []string{"id"}, (&scEnv{s: s2}).columns(t, "slow"))
	s2.StepSchemaChanges()
	env2.clock.add(DefaultSchemaChangeRunTime)
	s2.StepSchemaChanges()
	assert.Equal(t, JobFinished, env2.job(t).State, "the job runs on after the restart")
	require.NoError(t, s2.CloseJournal())

	env3 := newSCEnvJournal(t, path)
	assert.Equal(t, JobFinished, env3.job(t).State)
	rows, err := env3.s.Rows("db", "t")
	require.NoError(t, err)
	assert.Equal(t, int32(3), rows[0]["n"])
	require.NoError(t, env3.s.CloseJournal())
}

func newSCEnvJournal(t *testing.T, path string) *scEnv {
	t.Helper()
	env := &scEnv{s: New(), txns: newFakeTxns(), clock: &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)}}
	env.s.SetSchemaChangeHooks(SchemaChangeHooks{Txns: env.txns, Now: env.clock.now})
	replayed, err := env.s.OpenJournal(path, nil)
	require.NoError(t, err)
	if !replayed {
		require.NoError(t, env.s.ExecScript(`CREATE DATABASE db;
CREATE TABLE db.t (id BIGINT NOT NULL, v VARCHAR(8)) PRIMARY KEY(id) DISTRIBUTED BY HASH(id)
  PROPERTIES ("replication_num" = "1", "fast_schema_evolution" = "false");`))
		load(t, env.s, "db", "t", `[{"id":1,"v":"a"}]`, jsonParams(nil))
	}
	return env
}
