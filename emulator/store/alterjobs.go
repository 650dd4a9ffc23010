package store

import (
	"strings"
	"time"

	"github.com/dolthub/vitess/go/sqltypes"
)

// StarRocks runs ALTER TABLE … ADD/DROP COLUMN as an asynchronous schema change job, and
// clients wait for it by polling SHOW ALTER TABLE COLUMN until the job's State is FINISHED.
// The store applies the change at once, so it keeps one FINISHED job per applied ALTER TABLE
// for that poll to see. Jobs are not journaled: after a restart the list starts empty (the
// schema itself is replayed).

// alterJob is one applied ALTER TABLE, as SHOW ALTER TABLE COLUMN shows it.
type alterJob struct {
	id, tableID       int64
	db, table         string
	created, finished time.Time
	schemaVersion     int
}

// firstAlterJobID is the first schema change job's id.
const firstAlterJobID = 1_000_001

// alterJobsKept bounds the jobs kept (history_job_keep_max_second keeps a week of them).
const alterJobsKept = 1000

// recordAlterLocked keeps the job of an ALTER TABLE just applied; curDB is the database
// current when it ran.
func (s *Store) recordAlterLocked(toks []token, curDB string) {
	st, err := parseDDL(toks)
	if err != nil {
		return
	}
	at, ok := st.(alterTableStmt)
	if !ok {
		return
	}
	db, err := tableDB(at.db, at.name, curDB)
	if err != nil {
		return
	}
	t, err := s.snap().table(db, at.name)
	if err != nil {
		return
	}
	version := 1
	for _, j := range s.alterJobs {
		if j.tableID == t.schema.ID {
			version = j.schemaVersion + 1
		}
	}
	// Job ids have their own sequence: taking catalog ids would shift the ids of tables
	// created later, and a replay (which records no jobs) would give them others.
	id := int64(firstAlterJobID)
	if n := len(s.alterJobs); n > 0 {
		id = s.alterJobs[n-1].id + 1
	}
	now := time.Now()
	s.alterJobs = append(s.alterJobs, alterJob{id: id, tableID: t.schema.ID, db: t.schema.DB, table: t.schema.Name,
		created: now, finished: now, schemaVersion: version})
	if n := len(s.alterJobs); n > alterJobsKept {
		s.alterJobs = append(s.alterJobs[:0:0], s.alterJobs[n-alterJobsKept:]...)
	}
}

// schemaChangeColumns are SchemaChangeProcDir.TITLE_NAMES.
var schemaChangeColumns = []string{"JobId", "TableName", "CreateTime", "FinishTime", "IndexName", "IndexId",
	"OriginIndexId", "SchemaVersion", "TransactionId", "State", "Msg", "Progress", "Timeout"}

// showAlter is SHOW ALTER TABLE COLUMN [FROM db]: the schema change jobs of the database's
// tables, every one FINISHED.
func (h *ddlHandler) showAlter(p *parser, cur string) (*sqltypes.Result, error) {
	const usage = "the emulator knows SHOW ALTER TABLE COLUMN [FROM db] (its ALTER TABLE is immediate: every job is FINISHED)"
	if p.expect("alter") != nil || p.expect("table") != nil || !p.accept("column") {
		return nil, sysErr("%s", usage)
	}
	db := cur
	if p.accept("from") || p.accept("in") {
		name, err := p.ident("a database name")
		if err != nil {
			return nil, sysErr("%s", err.Error())
		}
		db = name
	}
	if p.done() != nil {
		return nil, sysErr("%s", usage)
	}
	if db == "" {
		return nil, sysErr("No database selected")
	}
	s := h.bridge.store
	d, ok := s.snap().db(db)
	if !ok {
		return nil, sysErr("Unknown database '%s'", db)
	}
	s.mu.Lock()
	jobs := append([]alterJob(nil), s.alterJobs...)
	s.mu.Unlock()
	var rows [][]*string
	for _, j := range jobs {
		if !strings.EqualFold(j.db, d.name) {
			continue
		}
		rows = append(rows, []*string{num(j.id), str(j.table), timeCell(j.created), timeCell(j.finished), str(j.table),
			num(j.id + 1), num(j.tableID), num(int64(j.schemaVersion)), num(j.id), str("FINISHED"), str(""), nil, str("86400")})
	}
	return textResult(schemaChangeColumns, rows), nil
}
