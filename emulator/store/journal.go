package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// The journal makes a store durable: every DDL statement and every Apply (with the label
// facts the server around the store attaches, in the same record) is appended to one file,
// one JSON record a line, and synced before the call returns. Opening a store on an existing
// journal replays it: the DDL in order, the applies in order, so the tables, their rows and
// the DUPLICATE KEY insertion order come back as they were; the attached facts are handed to
// the caller. A record torn by a crash (the last line, cut short) is dropped and the file
// truncated to the last whole record: an Apply is visible after a restart exactly when its
// record was complete, and its label facts with it.
//
// Schema change jobs are journaled as StarRocks's edit log has them (schemachange.go): the
// creation with the statement, then WAITING_TXN, FINISHED and CANCELLED; the existing rows
// of a finished job are converted again on replay, with the job's creation time for a
// DEFAULT CURRENT_TIMESTAMP column it added. A CREATE TABLE record keeps the
// fast_schema_evolution the table took from the FE config. Nothing that is not a store
// change is journaled (the caller's own facts go through Journal).

type journalRecord struct {
	Kind    string          `json:"k"`
	DB      string          `json:"db,omitempty"`  // ddl, alter: the current database
	SQL     string          `json:"sql,omitempty"` // ddl, alter (the job's creation)
	Changes []journalChange `json:"changes,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
	// FSE is the fast_schema_evolution a CREATE TABLE without the property took from the
	// FE config.
	FSE *bool `json:"fse,omitempty"`
	// Job is a schema change job's state (alter): its creation with SQL, then each
	// transition StarRocks journals (WAITING_TXN, FINISHED, CANCELLED).
	Job *jobRecord `json:"job,omitempty"`
}

// jobRecord is a schema change job as the journal keeps it.
type jobRecord struct {
	ID        int64         `json:"id"`
	State     AlterJobState `json:"state"`
	Created   time.Time     `json:"created"`
	Finished  time.Time     `json:"finished,omitzero"`
	Watershed int64         `json:"watershed"`
	Msg       string        `json:"msg,omitempty"`
	Timeout   time.Duration `json:"timeout"`
}

type journalChange struct {
	DB    string       `json:"db"`
	Table string       `json:"table"`
	Rows  []journalRow `json:"rows"`
}

type journalRow struct {
	Op       Op                `json:"op,omitempty"`
	Values   []json.RawMessage `json:"v"`
	Set      []bool            `json:"set,omitempty"`
	MergeCol int               `json:"mc,omitempty"`
}

type journal struct {
	f *os.File
	w *bufio.Writer
}

// OpenJournal makes s durable in the file path: it replays the file if it exists (s must be
// empty), handing each attached fact to meta in order, then appends every later change. It
// reports whether there was anything to replay.
func (s *Store) OpenJournal(path string, meta func(json.RawMessage) error) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal != nil {
		return false, errors.New("the store already has a journal")
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, fmt.Errorf("opening the journal: %w", err)
	}
	replayed, end, err := s.replayLocked(f, meta)
	if err != nil {
		_ = f.Close()
		return false, fmt.Errorf("replaying the journal %s: %w", path, err)
	}
	if err := f.Truncate(end); err != nil {
		_ = f.Close()
		return false, fmt.Errorf("dropping the torn end of the journal %s: %w", path, err)
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		_ = f.Close()
		return false, fmt.Errorf("positioning the journal %s: %w", path, err)
	}
	s.journal = &journal{f: f, w: bufio.NewWriter(f)}
	for _, j := range s.sc.jobs {
		if !j.state.final() {
			s.wakeSchemaChanges() // a job the last run left unfinished runs on
		}
	}
	return replayed, nil
}

// CloseJournal flushes and closes the journal (a no-op without one).
func (s *Store) CloseJournal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal == nil {
		return nil
	}
	err := s.journal.w.Flush()
	if cerr := s.journal.f.Close(); err == nil {
		err = cerr
	}
	s.journal = nil
	return err
}

// Journal appends a fact of the caller's (no store change) in order with the store's
// changes; a no-op without a journal.
func (s *Store) Journal(meta any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal == nil {
		return nil
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("encoding a journal fact: %w", err)
	}
	return s.writeLocked(journalRecord{Kind: "meta", Meta: b})
}

func (s *Store) writeLocked(r journalRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding a journal record: %w", err)
	}
	j := s.journal
	if _, err := j.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing the journal: %w", err)
	}
	if err := j.w.Flush(); err != nil {
		return fmt.Errorf("writing the journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("syncing the journal: %w", err)
	}
	return nil
}

func (s *Store) journalDDLLocked(curDB, text string, fse *bool) error {
	if s.journal == nil || s.replaying {
		return nil
	}
	return s.writeLocked(journalRecord{Kind: "ddl", DB: curDB, SQL: text, FSE: fse})
}

// journalJobLocked journals a job's state; created: the record of its creation, with the
// statement.
func (s *Store) journalJobLocked(j *alterJob, created bool) error {
	if s.journal == nil || s.replaying {
		return nil
	}
	r := journalRecord{Kind: "alter", Job: &jobRecord{ID: j.id, State: j.state, Created: j.created,
		Finished: j.finished, Watershed: j.watershed, Msg: j.msg, Timeout: j.timeout}}
	if created {
		r.DB, r.SQL = j.curDB, j.sql
	}
	return s.writeLocked(r)
}

// replayJobLocked replays a job record: the job's creation, or a transition.
func (s *Store) replayJobLocked(r journalRecord) error {
	jr := r.Job
	if r.SQL != "" {
		toks, err := lexScript(r.SQL)
		if err != nil {
			return err
		}
		st, err := parseDDL(toks)
		if err != nil {
			return err
		}
		at, ok := st.(alterTableStmt)
		if !ok {
			return fmt.Errorf("the job %d was created by %q, which is no ALTER TABLE", jr.ID, abbreviate(r.SQL))
		}
		return s.alterTableLocked(at, r.DB, r.SQL, jr)
	}
	var j *alterJob
	for _, x := range s.sc.jobs {
		if x.id == jr.ID {
			j = x
		}
	}
	if j == nil {
		return fmt.Errorf("the journal has a state of the schema change job %d before its creation", jr.ID)
	}
	switch jr.State {
	case JobWaitingTxn:
		j.state, j.watershed = JobWaitingTxn, jr.Watershed
	case JobFinished:
		d, t := s.tableByID(j.tableID)
		if t == nil {
			return fmt.Errorf("the schema change job %d finished on table %d, which the journal does not have", j.id, j.tableID)
		}
		target := copySchema(j.target)
		target.indexID, target.schemaHash = j.indexID, j.schemaHash
		if err := finishSchema(target); err != nil {
			return err
		}
		nt, err := convertTable(t, target, j.created)
		if err != nil {
			return err
		}
		j.state, j.finished = JobFinished, jr.Finished
		s.publishTableLocked(d, nt)
	case JobCancelled:
		j.state, j.msg, j.finished = JobCancelled, jr.Msg, jr.Finished
	}
	return nil
}

func (s *Store) journalApplyLocked(next *snapshot, changes []TableChange, meta any) error {
	if s.journal == nil || s.replaying {
		return nil
	}
	r := journalRecord{Kind: "apply"}
	if meta != nil {
		b, err := json.Marshal(meta)
		if err != nil {
			return fmt.Errorf("encoding a journal fact: %w", err)
		}
		r.Meta = b
	}
	jcs, err := encodeChanges(next, changes)
	if err != nil {
		return err
	}
	r.Changes = jcs
	return s.writeLocked(r)
}

func encodeChanges(sn *snapshot, changes []TableChange) ([]journalChange, error) {
	var out []journalChange
	for _, ch := range changes {
		t, err := sn.table(ch.DB, ch.Table)
		if err != nil {
			return nil, err
		}
		rows := ch.Rows
		if slices.ContainsFunc(rows, func(r Row) bool { return r.sc != nil && r.sc != t.schema }) {
			// Rows loaded under an older schema are kept under the current one.
			rows = slices.Clone(rows)
			if err := remapRows(t.schema, rows, time.Now()); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", ch.DB, ch.Table, err)
			}
		}
		jc := journalChange{DB: ch.DB, Table: ch.Table, Rows: make([]journalRow, len(rows))}
		for i, row := range rows {
			jr := journalRow{Op: row.Op, Set: row.Set, MergeCol: row.MergeCol, Values: make([]json.RawMessage, len(row.Values))}
			for c, v := range row.Values {
				jr.Values[c] = encodeValue(&t.schema.Columns[c], v)
			}
			jc.Rows[i] = jr
		}
		out = append(out, jc)
	}
	return out, nil
}

// EncodeChanges is changes (not applied) as the journal writes rows, against the current
// schemas, for a caller that keeps pending rows in its own facts (a prepared transaction).
func (s *Store) EncodeChanges(changes []TableChange) (json.RawMessage, error) {
	jcs, err := encodeChanges(s.snap(), changes)
	if err != nil {
		return nil, err
	}
	return json.Marshal(jcs)
}

// DecodeChanges turns what EncodeChanges wrote back into changes, against the current
// schemas (during a replay: the schemas as of the record being replayed).
func (s *Store) DecodeChanges(raw json.RawMessage) ([]TableChange, error) {
	var jcs []journalChange
	if err := json.Unmarshal(raw, &jcs); err != nil {
		return nil, fmt.Errorf("decoding pending rows: %w", err)
	}
	return s.decodeChanges(jcs)
}

// replayLocked runs the records of f and returns the offset after the last whole one.
func (s *Store) replayLocked(f *os.File, meta func(json.RawMessage) error) (bool, int64, error) {
	s.replaying = true
	defer func() { s.replaying = false }()
	rd := bufio.NewReaderSize(f, 1<<20)
	var off int64
	any := false
	cur := ""
	for n := 1; ; n++ {
		line, err := rd.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// a last line without its newline was cut short by a crash: drop it
			return any, off, nil
		}
		if err != nil {
			return any, off, err
		}
		var r journalRecord
		if err := json.Unmarshal(bytes.TrimSpace(line), &r); err != nil {
			return any, off, fmt.Errorf("record %d is damaged: %w", n, err)
		}
		any = true
		switch r.Kind {
		case "ddl":
			cur = r.DB
			toks, err := lexScript(r.SQL)
			if err != nil {
				return any, off, fmt.Errorf("record %d: %w", n, err)
			}
			s.sc.replayFSE = r.FSE
			err = s.execLocked(toks, &cur, r.SQL)
			s.sc.replayFSE = nil
			if err != nil {
				return any, off, fmt.Errorf("record %d (%s): %w", n, abbreviate(r.SQL), err)
			}
		case "alter":
			if r.Job == nil {
				return any, off, fmt.Errorf("record %d is a schema change record without its job", n)
			}
			if err := s.replayJobLocked(r); err != nil {
				return any, off, fmt.Errorf("record %d (schema change job %d): %w", n, r.Job.ID, err)
			}
		case "apply":
			changes, err := s.decodeChanges(r.Changes)
			if err != nil {
				return any, off, fmt.Errorf("record %d: %w", n, err)
			}
			if err := s.applyLocked(changes, nil); err != nil {
				return any, off, fmt.Errorf("record %d: %w", n, err)
			}
		case "meta":
		default:
			return any, off, fmt.Errorf("record %d has the unknown kind %q", n, r.Kind)
		}
		if len(r.Meta) > 0 && meta != nil {
			if err := meta(r.Meta); err != nil {
				return any, off, fmt.Errorf("record %d: %w", n, err)
			}
		}
		off += int64(len(line))
	}
}

func (s *Store) decodeChanges(jcs []journalChange) ([]TableChange, error) {
	sn := s.snap()
	out := make([]TableChange, 0, len(jcs))
	for _, jc := range jcs {
		t, err := sn.table(jc.DB, jc.Table)
		if err != nil {
			return nil, err
		}
		ch := TableChange{DB: jc.DB, Table: jc.Table, Rows: make([]Row, len(jc.Rows))}
		for i, jr := range jc.Rows {
			if len(jr.Values) != len(t.schema.Columns) {
				return nil, fmt.Errorf("a row of %s.%s has %d values, the table %d columns", jc.DB, jc.Table, len(jr.Values), len(t.schema.Columns))
			}
			row := Row{Op: jr.Op, Set: jr.Set, MergeCol: jr.MergeCol, Values: make([]any, len(jr.Values)), sc: t.schema}
			for c, raw := range jr.Values {
				v, err := decodeValue(&t.schema.Columns[c], raw)
				if err != nil {
					return nil, fmt.Errorf("%s.%s column %s: %w", jc.DB, jc.Table, t.schema.Columns[c].Name, err)
				}
				row.Values[c] = v
			}
			ch.Rows[i] = row
		}
		out = append(out, ch)
	}
	return out, nil
}

const journalTime = "2006-01-02T15:04:05.999999999"

// encodeValue writes a storage value as JSON that decodeValue turns back into the same value.
func encodeValue(c *Column, v any) json.RawMessage {
	switch x := v.(type) {
	case nil:
		return json.RawMessage("null")
	case decimal.Decimal:
		return json.RawMessage(strconv.Quote(x.String()))
	case float32:
		return json.RawMessage(strconv.FormatFloat(float64(x), 'g', -1, 32))
	case float64:
		return json.RawMessage(strconv.FormatFloat(x, 'g', -1, 64))
	case time.Time:
		return json.RawMessage(strconv.Quote(x.Format(journalTime)))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func decodeValue(c *Column, raw json.RawMessage) (any, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	var s string
	switch c.Type {
	case TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt, TypeFloat, TypeDouble:
		return convertText(c, string(raw))
	case TypeBoolean:
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, err
	case TypeLargeInt, TypeDecimal:
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return decimal.NewFromString(s)
	case TypeDate, TypeDatetime:
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return time.ParseInLocation(journalTime, s, time.UTC)
	}
	err := json.Unmarshal(raw, &s)
	return s, err
}
