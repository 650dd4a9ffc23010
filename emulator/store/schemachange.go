package store

import (
	"fmt"
	"hash/crc32"
	"time"
)

// Schema change jobs: ALTER TABLE … ADD / DROP / MODIFY COLUMN as StarRocks runs it
// (docs/notes/starrocks-protocol.md §11; AlterJobV2, SchemaChangeJobV2,
// SchemaChangeHandler).
//
// A table with fast schema evolution (the table property fast_schema_evolution, default the
// FE config enable_fast_schema_evolution, true) takes ADD and DROP of value columns and a
// VARCHAR widening as a metadata change: the statement changes the catalog at once and
// records a job that is FINISHED from the start (TransactionId: the next transaction id,
// Timeout 1), which SHOW ALTER TABLE COLUMN lists. Rows loaded under the old schema and
// committed later take the new one (a missing column its DEFAULT or NULL), as the history
// schema lets older transactions do.
//
// Every other change is a job that runs in the background (StepSchemaChanges):
//
//	PENDING      created by the statement; the table is in state SCHEMA_CHANGE, so another
//	             ALTER, a TRUNCATE or a DROP TABLE without FORCE is refused
//	WAITING_TXN  the job took a watershed transaction id (the next one) and waits until no
//	             running transaction with a smaller id involves the table: a classic or plain
//	             stream load on it, or a multi-table transaction that has loaded into it (a
//	             multi-table transaction counts for a table from its first load there, when
//	             StarRocks adds the table to the transaction's table list)
//	RUNNING      the data is converted: it lasts SetSchemaChangeRunTime (default 200 ms) or an
//	             alter_job fault's delay
//	FINISHED     the new schema is the table's: existing rows take an added column's DEFAULT
//	             (CURRENT_TIMESTAMP: the ALTER's time) or NULL, lose a dropped one, and have a
//	             modified one converted as a CAST does
//	CANCELLED    CANCEL ALTER TABLE COLUMN ("user cancelled"), the job's timeout
//	             (alter_table_timeout_second, "Timeout"), a value a MODIFY cannot convert into
//	             a NOT NULL column, or an alter_job fault; the table keeps its schema
//
// Until FINISHED the table's schema, as loads, queries, DESC and information_schema see it,
// is the old one: a load planned during the job reads the old columns (StarRocks plans a
// stream load on the base schema), so a JSON key for an added column is skipped and lost;
// its rows are kept and take the new schema at FINISHED.
//
// Jobs and their transitions are journaled (PENDING, WAITING_TXN, FINISHED, CANCELLED, as
// StarRocks's edit log has them; RUNNING is not): after a restart an unfinished job is back in
// PENDING or WAITING_TXN and runs again.

// AlterJobState is a schema change job's state (AlterJobV2.JobState).
type AlterJobState string

// The job states.
const (
	JobPending    AlterJobState = "PENDING"
	JobWaitingTxn AlterJobState = "WAITING_TXN"
	JobRunning    AlterJobState = "RUNNING"
	JobFinished   AlterJobState = "FINISHED"
	JobCancelled  AlterJobState = "CANCELLED"
)

func (s AlterJobState) final() bool { return s == JobFinished || s == JobCancelled }

// TxnOracle tells the schema change jobs about transactions: the server around the store
// implements it. Its methods are called without the store's lock held.
type TxnOracle interface {
	// NextTxnID takes a transaction id (a job's watershed).
	NextTxnID() int64
	// PendingTxns lists the running transactions of db with an id below the watershed that
	// involve the table (or whose tables are not known yet).
	PendingTxns(db, table string, below int64) []int64
}

// JobFaultAction is what an injected fault does to a schema change job.
type JobFaultAction int

// The job fault actions.
const (
	// JobRun runs the job normally.
	JobRun JobFaultAction = iota
	// JobDelay keeps the job RUNNING for Delay.
	JobDelay
	// JobCancel cancels the job when it would finish, with Message (default "user
	// cancelled"), as a CANCEL ALTER racing it does.
	JobCancel
	// JobError fails the job when it would finish: CANCELLED "schema change task failed:
	// <Message>", as a failed BE task does.
	JobError
)

// JobFault is an injected fault for one schema change job.
type JobFault struct {
	Action  JobFaultAction
	Delay   time.Duration
	Message string
}

// SchemaChangeHooks connect the schema change jobs to the server around the store.
type SchemaChangeHooks struct {
	// Txns is the transaction oracle; without one a job never waits.
	Txns TxnOracle
	// JobFault is consulted once for every job that runs in the background (not for fast
	// schema evolution, which has nothing to delay); nil: none.
	JobFault func(db, table string) JobFault
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Defaults of the schema change settings.
const (
	DefaultSchemaChangeRunTime = 200 * time.Millisecond
	// DefaultAlterTableTimeout is alter_table_timeout_second (86400).
	DefaultAlterTableTimeout = 86400 * time.Second
	// fastJobTimeout is the timeout of a fast schema evolution job (SchemaChangeJobV2 with
	// timeoutMs 1000): SHOW ALTER TABLE COLUMN prints 1.
	fastJobTimeout = time.Second
)

// firstAlterJobID is the first job's id; jobs take two ids each (the job and its shadow
// index), from their own sequence so that table ids do not depend on the jobs.
const firstAlterJobID = 1_000_001

// alterJobsKept bounds the jobs kept (StarRocks keeps them history_job_keep_max_second).
const alterJobsKept = 1000

// schemaChanges is the store's schema change state; guarded by Store.mu.
type schemaChanges struct {
	jobs       []*alterJob
	nextJobID  int64
	hooks      SchemaChangeHooks
	runTime    time.Duration
	timeout    time.Duration
	fseDefault bool
	wake       chan struct{}
	// alterTxnID is the transaction id taken for the ALTER statement being executed (a fast
	// schema evolution job's TransactionId), 0 when none was.
	alterTxnID int64
	// replayFSE is the fast_schema_evolution a journaled CREATE TABLE was given by default.
	replayFSE *bool
}

func newSchemaChanges() schemaChanges {
	return schemaChanges{nextJobID: firstAlterJobID, runTime: DefaultSchemaChangeRunTime,
		timeout: DefaultAlterTableTimeout, fseDefault: true, wake: make(chan struct{}, 1)}
}

// alterJob is one schema change job.
type alterJob struct {
	id, tableID       int64
	db, table         string
	sql, curDB        string // the statement and the session's database, for the journal
	state             AlterJobState
	fast              bool
	created, finished time.Time
	runningSince      time.Time
	watershed         int64 // -1 until WAITING_TXN
	msg               string
	timeout           time.Duration
	indexID, origin   int64
	schemaVersion     int
	schemaHash        int32
	target            *TableSchema // the schema FINISHED gives the table
	fault             JobFault
}

// AlterJob is a schema change job as SHOW ALTER TABLE COLUMN shows it.
type AlterJob struct {
	ID                   int64
	DB, Table            string
	State                AlterJobState
	Msg                  string
	TransactionID        int64
	Fast                 bool
	CreateTime, Finished time.Time
	IndexID, OriginIndex int64
	SchemaVersion        int
	SchemaHash           int32
	Timeout              time.Duration
}

func (j *alterJob) info() AlterJob {
	return AlterJob{ID: j.id, DB: j.db, Table: j.table, State: j.state, Msg: j.msg, TransactionID: j.watershed,
		Fast: j.fast, CreateTime: j.created, Finished: j.finished, IndexID: j.indexID, OriginIndex: j.origin,
		SchemaVersion: j.schemaVersion, SchemaHash: j.schemaHash, Timeout: j.timeout}
}

// SetSchemaChangeHooks connects the jobs to the server around the store.
func (s *Store) SetSchemaChangeHooks(h SchemaChangeHooks) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sc.hooks = h
}

// SetSchemaChangeRunTime sets how long a job stays RUNNING (default 200 ms).
func (s *Store) SetSchemaChangeRunTime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sc.runTime = d
}

// SetAlterTableTimeout sets alter_table_timeout_second for the jobs created from now on.
func (s *Store) SetAlterTableTimeout(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sc.timeout = d
}

// SetFastSchemaEvolutionDefault sets enable_fast_schema_evolution: the fast_schema_evolution
// of the tables created from now on without the property.
func (s *Store) SetFastSchemaEvolutionDefault(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sc.fseDefault = on
}

// SchemaChangeWake is signalled when a job is created or continues after a restart: the
// server steps the jobs (StepSchemaChanges) until none is left unfinished.
func (s *Store) SchemaChangeWake() <-chan struct{} { return s.sc.wake }

// AlterJobs lists the schema change jobs, oldest first.
func (s *Store) AlterJobs() []AlterJob {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]AlterJob, len(s.sc.jobs))
	for i, j := range s.sc.jobs {
		out[i] = j.info()
	}
	return out
}

func (s *Store) now() time.Time {
	if s.sc.hooks.Now != nil {
		return s.sc.hooks.Now()
	}
	return time.Now()
}

func (s *Store) wakeSchemaChanges() {
	select {
	case s.sc.wake <- struct{}{}:
	default:
	}
}

// unfinishedJob is the table's running job, or nil: a table with one is in state
// SCHEMA_CHANGE.
func (s *Store) unfinishedJob(tableID int64) *alterJob {
	for _, j := range s.sc.jobs {
		if j.tableID == tableID && !j.state.final() {
			return j
		}
	}
	return nil
}

// schemaChangeStateErr is OlapTable.checkNormalStateForAlter's refusal.
func schemaChangeStateErr(table string) error {
	return fmt.Errorf("Table[%s]'s state(SCHEMA_CHANGE) is not NORMAL. Do not allow doing ALTER ops", table)
}

// schemaHash is a schema's hash as the FE keeps it (a positive 32-bit number).
func schemaHash(sc *TableSchema, version int) int32 {
	return int32(crc32.ChecksumIEEE([]byte(fmt.Sprint(version, sc.DDL()))) & 0x7fffffff)
}

// takeAlterTxnID takes a transaction id for an ALTER statement before the store's lock is
// taken (the oracle takes the server's lock, which is taken before the store's).
func (s *Store) takeAlterTxnID(toks []token) int64 {
	if len(toks) == 0 || !toks[0].is("alter") {
		return 0
	}
	s.mu.Lock()
	oracle := s.sc.hooks.Txns
	s.mu.Unlock()
	if oracle == nil {
		return 0
	}
	return oracle.NextTxnID()
}

// alterTableLocked runs an ALTER TABLE statement; rec is the journal's record of it during a
// replay (nil otherwise).
func (s *Store) alterTableLocked(st alterTableStmt, curDB, text string, rec *jobRecord) error {
	dbName, err := tableDB(st.db, st.name, curDB)
	if err != nil {
		return err
	}
	old := s.snap()
	d, ok := old.db(dbName)
	if !ok {
		return unknownDatabase(dbName)
	}
	t, ok := d.table(st.name)
	if !ok {
		return unknownTable(d.name, st.name)
	}
	if s.unfinishedJob(t.schema.ID) != nil {
		return schemaChangeStateErr(t.schema.Name)
	}
	plan, err := planAlter(t.schema, st)
	if err != nil {
		return err
	}
	now := s.now()
	if rec != nil {
		now = rec.Created
	}
	switch {
	case plan.noop:
		return nil
	case plan.comment:
		if err := s.journalDDLLocked(curDB, text, nil); err != nil {
			return err
		}
		s.publishTableLocked(d, &tableState{schema: plan.target, rows: t.rows, seq: t.seq})
		return nil
	}
	j := &alterJob{tableID: t.schema.ID, db: d.name, table: t.schema.Name, sql: text, curDB: curDB,
		created: now, watershed: -1, origin: t.schema.indexID, schemaVersion: plan.target.schemaVersion}
	if rec != nil {
		j.id = rec.ID
	} else {
		j.id = s.sc.nextJobID
	}
	s.sc.nextJobID = max(s.sc.nextJobID, j.id+2)
	if plan.fast {
		// A metadata change: the catalog changes now; the job is FINISHED from the start.
		j.fast, j.state, j.finished, j.timeout = true, JobFinished, now, fastJobTimeout
		j.indexID, j.schemaHash = t.schema.indexID, t.schema.schemaHash
		j.watershed = s.sc.alterTxnID
		if rec != nil {
			j.watershed, j.finished = rec.Watershed, rec.Finished
		}
		target := plan.target
		target.indexID, target.schemaHash = j.indexID, j.schemaHash
		nt, err := convertTable(t, target, now)
		if err != nil {
			return err
		}
		if err := s.journalJobLocked(j, true); err != nil {
			return err
		}
		s.addJobLocked(j)
		s.publishTableLocked(d, nt)
		return nil
	}
	j.state, j.timeout = JobPending, s.sc.timeout
	j.indexID = j.id + 1
	j.schemaHash = schemaHash(plan.target, plan.target.schemaVersion)
	j.target = plan.target
	if rec != nil {
		j.timeout = rec.Timeout
	} else if s.sc.hooks.JobFault != nil {
		j.fault = s.sc.hooks.JobFault(j.db, j.table)
	}
	if err := s.journalJobLocked(j, true); err != nil {
		return err
	}
	s.addJobLocked(j)
	s.wakeSchemaChanges()
	return nil
}

func (s *Store) addJobLocked(j *alterJob) {
	s.sc.jobs = append(s.sc.jobs, j)
	if n := len(s.sc.jobs); n > alterJobsKept {
		// Drop the oldest finished jobs; an unfinished one is kept whatever its age.
		kept := s.sc.jobs[:0:0]
		drop := n - alterJobsKept
		for _, x := range s.sc.jobs {
			if drop > 0 && x.state.final() {
				drop--
				continue
			}
			kept = append(kept, x)
		}
		s.sc.jobs = kept
	}
}

// publishTableLocked publishes a snapshot in which d's table t.schema.Name is t.
func (s *Store) publishTableLocked(d *dbState, t *tableState) {
	old := s.snap()
	next := &snapshot{version: old.version + 1, dbs: make(map[string]*dbState, len(old.dbs))}
	for k, v := range old.dbs {
		next.dbs[k] = v
	}
	next.dbs[d.name] = d.withTable(t.schema.Name, t)
	s.cur.Store(next)
}

// tableByID finds a table of the current snapshot by id.
func (s *Store) tableByID(id int64) (*dbState, *tableState) {
	for _, d := range s.snap().dbs {
		for _, t := range d.tables {
			if t.schema.ID == id {
				return d, t
			}
		}
	}
	return nil, nil
}

// StepSchemaChanges advances every unfinished job as far as it can go now and returns how
// many are still unfinished. The server calls it while any is.
func (s *Store) StepSchemaChanges() int {
	type probe struct {
		j                  *alterJob
		db, table          string
		watershed          int64
		pending, needsTxns bool
	}
	s.mu.Lock()
	oracle := s.sc.hooks.Txns
	var probes []probe
	for _, j := range s.sc.jobs {
		switch j.state {
		case JobPending:
			probes = append(probes, probe{j: j, pending: true})
		case JobWaitingTxn:
			probes = append(probes, probe{j: j, db: j.db, table: j.table, watershed: j.watershed, needsTxns: true})
		}
	}
	s.mu.Unlock()
	ids := map[*alterJob]int64{}
	blocked := map[*alterJob]bool{}
	for _, p := range probes {
		switch {
		case oracle == nil && p.pending:
			ids[p.j] = 0
		case oracle == nil:
			blocked[p.j] = false
		case p.pending:
			ids[p.j] = oracle.NextTxnID()
		default:
			blocked[p.j] = len(oracle.PendingTxns(p.db, p.table, p.watershed)) > 0
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	unfinished := 0
	for _, j := range s.sc.jobs {
		if j.state.final() {
			continue
		}
		s.stepJobLocked(j, now, ids, blocked)
		if !j.state.final() {
			unfinished++
		}
	}
	return unfinished
}

// stepJobLocked is AlterJobV2.run: the timeout first, then each state's step as long as the
// state changes.
func (s *Store) stepJobLocked(j *alterJob, now time.Time, ids map[*alterJob]int64, blocked map[*alterJob]bool) {
	d, t := s.tableByID(j.tableID)
	if t == nil {
		s.cancelJobLocked(j, fmt.Sprintf("Table %d does not exist", j.tableID), now)
		return
	}
	if now.Sub(j.created) > j.timeout {
		s.cancelJobLocked(j, "Timeout", now)
		return
	}
	for {
		switch j.state {
		case JobPending:
			id, ok := ids[j]
			if !ok {
				return // created after this step looked: the next one takes its watershed
			}
			j.watershed, j.state = id, JobWaitingTxn
			if err := s.journalJobLocked(j, false); err != nil {
				j.watershed, j.state = -1, JobPending
				return
			}
		case JobWaitingTxn:
			if b, ok := blocked[j]; !ok || b {
				return
			}
			j.state, j.runningSince = JobRunning, now
		case JobRunning:
			run := s.sc.runTime
			if j.fault.Action == JobDelay {
				run = j.fault.Delay
			}
			if now.Before(j.runningSince.Add(run)) {
				return
			}
			s.finishJobLocked(j, d, t, now)
			return
		default:
			return
		}
	}
}

// finishJobLocked ends a RUNNING job: the table takes the new schema, or the job fails.
func (s *Store) finishJobLocked(j *alterJob, d *dbState, t *tableState, now time.Time) {
	switch j.fault.Action {
	case JobCancel:
		msg := j.fault.Message
		if msg == "" {
			msg = "user cancelled"
		}
		s.cancelJobLocked(j, msg, now)
		return
	case JobError:
		msg := j.fault.Message
		if msg == "" {
			msg = "injected fault"
		}
		s.cancelJobLocked(j, "schema change task failed: "+msg, now)
		return
	}
	target := copySchema(j.target)
	target.indexID, target.schemaHash = j.indexID, j.schemaHash
	if err := finishSchema(target); err != nil {
		s.cancelJobLocked(j, err.Error(), now)
		return
	}
	nt, err := convertTable(t, target, j.created)
	if err != nil {
		s.cancelJobLocked(j, "schema change task failed: "+err.Error(), now)
		return
	}
	j.state, j.finished = JobFinished, now
	if err := s.journalJobLocked(j, false); err != nil {
		j.state, j.finished = JobRunning, time.Time{}
		return
	}
	s.publishTableLocked(d, nt)
}

// cancelJobLocked ends a job CANCELLED with msg; the table keeps its schema.
func (s *Store) cancelJobLocked(j *alterJob, msg string, now time.Time) {
	j.state, j.msg, j.finished = JobCancelled, msg, now
	_ = s.journalJobLocked(j, false) // replayed without it, the job runs again: as an FE restart does
}

// RequeueSchemaChanges is an FE restart for the jobs: RUNNING is not in the edit log, so a
// RUNNING job is WAITING_TXN again and runs anew.
func (s *Store) RequeueSchemaChanges() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.sc.jobs {
		if j.state == JobRunning {
			// The tasks are sent again: an injected fault was the first run's.
			j.state, j.fault = JobWaitingTxn, JobFault{}
		}
	}
	s.wakeSchemaChanges()
}

// cancelAlterLocked is CANCEL ALTER TABLE COLUMN FROM [db.]t.
func (s *Store) cancelAlterLocked(db, table string) error {
	d, ok := s.snap().db(db)
	if !ok {
		return unknownDatabase(db)
	}
	t, ok := d.table(table)
	if !ok {
		return unknownTable(d.name, table)
	}
	j := s.unfinishedJob(t.schema.ID)
	if j == nil {
		return fmt.Errorf("Table[%s] is not under SCHEMA_CHANGE/WAITING_STABLE.", t.schema.Name)
	}
	s.cancelJobLocked(j, "user cancelled", s.now())
	return nil
}

// convertTable is t's rows under the schema target: an added column takes its DEFAULT
// (CURRENT_TIMESTAMP: the wall clock of at) or NULL, a dropped one goes, a modified one is
// converted. A value that does not convert is NULL, or an error for a NOT NULL column.
func convertTable(t *tableState, target *TableSchema, at time.Time) (*tableState, error) {
	m := newColMap(t.schema, target)
	rows := newBtree()
	var err error
	var kb []byte
	t.rows.ascend(func(key string, vals []any) bool {
		var nv []any
		if nv, err = m.convert(vals, at); err != nil {
			return false
		}
		if target.KeyType != DuplicateKey {
			kb = appendRowKey(kb[:0], target, nv)
			key = string(kb)
			if prev, ok := rows.get(key); ok && target.KeyType == AggregateKey {
				nv = aggregate(target, prev, nv)
			}
		}
		rows.set(key, nv)
		return true
	})
	if err != nil {
		return nil, err
	}
	return &tableState{schema: target, rows: rows, seq: t.seq}, nil
}

// wallClock is t's wall clock as a DATETIME value (UTC holding the wall clock, whole seconds).
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
}
