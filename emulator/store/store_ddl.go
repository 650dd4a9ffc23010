package store

import (
	"fmt"
	"strings"
)

// DDL on the store: statements run under the store lock and publish a new snapshot whose
// catalog has the database or table created, dropped, truncated or altered.

// ExecDDL runs one DDL statement (CREATE/DROP DATABASE, CREATE/DROP TABLE, TRUNCATE TABLE,
// USE).
func (s *Store) ExecDDL(stmt string) error {
	toks, err := lexScript(stmt)
	if err != nil {
		return fmt.Errorf("ddl: %w", err)
	}
	stmts := splitStatements(toks)
	if len(stmts) != 1 {
		return fmt.Errorf("ddl: expected exactly one statement, got %d", len(stmts))
	}
	txnID := s.takeAlterTxnID(stmts[0])
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.useDB
	if err := s.execWithTxnLocked(stmts[0], &cur, stmt, txnID); err != nil {
		return fmt.Errorf("ddl %q: %w", abbreviate(stmt), err)
	}
	s.useDB = cur
	return nil
}

// ExecScript runs ;-separated DDL statements in order, stopping at the first error, which
// names the statement (1-based) and the offending token.
func (s *Store) ExecScript(script string) error {
	toks, err := lexScript(script)
	if err != nil {
		return fmt.Errorf("ddl script: %w", err)
	}
	stmts := splitStatements(toks)
	txnIDs := make([]int64, len(stmts))
	for i, st := range stmts {
		txnIDs[i] = s.takeAlterTxnID(st)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.useDB
	for i, st := range stmts {
		if err := s.execWithTxnLocked(st, &cur, script[st[0].off:st[len(st)-1].end], txnIDs[i]); err != nil {
			return fmt.Errorf("ddl script statement %d (line %d, %q): %w", i+1, st[0].line, abbreviate(script[st[0].off:st[len(st)-1].end]), err)
		}
	}
	s.useDB = cur
	return nil
}

// execDDLIn runs one statement with an explicit current database (the MySQL session's).
func (s *Store) execDDLIn(stmt string, curDB *string) error {
	toks, err := lexScript(stmt)
	if err != nil {
		return err
	}
	stmts := splitStatements(toks)
	if len(stmts) != 1 {
		return fmt.Errorf("expected exactly one statement, got %d", len(stmts))
	}
	txnID := s.takeAlterTxnID(stmts[0])
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.execWithTxnLocked(stmts[0], curDB, stmt, txnID)
}

// execWithTxnLocked is execLocked for a statement that took a transaction id beforehand
// (takeAlterTxnID: an ALTER TABLE's fast schema evolution job records it).
func (s *Store) execWithTxnLocked(toks []token, curDB *string, text string, txnID int64) error {
	s.sc.alterTxnID = txnID
	defer func() { s.sc.alterTxnID = 0 }()
	return s.execLocked(toks, curDB, text)
}

func abbreviate(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// execLocked parses and runs one statement (text is its source, for the journal); s.mu is
// held.
func (s *Store) execLocked(toks []token, curDB *string, text string) error {
	before := *curDB
	st, err := parseDDL(toks)
	if err != nil {
		return err
	}
	if at, ok := st.(alterTableStmt); ok {
		return s.alterTableLocked(at, before, text, nil)
	}
	fse, err := s.execStmtLocked(st, curDB)
	if err != nil {
		return err
	}
	if _, ok := st.(useStmt); ok {
		return nil
	}
	return s.journalDDLLocked(before, text, fse)
}

// execStmtLocked runs a statement other than ALTER TABLE; for a CREATE TABLE without the
// property it returns the fast_schema_evolution the table took from the FE config (the
// journal keeps it, as the config may differ when the journal is replayed).
func (s *Store) execStmtLocked(st ddlStmt, curDB *string) (*bool, error) {
	old := s.snap()
	next := &snapshot{version: old.version + 1, dbs: make(map[string]*dbState, len(old.dbs)+1)}
	for k, v := range old.dbs {
		next.dbs[k] = v
	}
	var fse *bool
	switch st := st.(type) {
	case useStmt:
		if _, ok := old.db(st.name); !ok {
			return nil, unknownDatabase(st.name)
		}
		*curDB = st.name
		return nil, nil
	case createDatabaseStmt:
		if _, ok := old.db(st.name); ok {
			if st.ifNotExists {
				return nil, nil
			}
			return nil, fmt.Errorf("Can't create database '%s'; database exists", st.name)
		}
		s.nextID++
		next.dbs[st.name] = &dbState{name: st.name, id: s.nextID, tables: map[string]*tableState{}}
	case dropDatabaseStmt:
		d, ok := old.db(st.name)
		if !ok {
			if st.ifExists {
				return nil, nil
			}
			return nil, fmt.Errorf("Can't drop database '%s'; database doesn't exist", st.name)
		}
		delete(next.dbs, d.name)
		if strings.EqualFold(*curDB, d.name) {
			*curDB = ""
		}
	case createTableStmt:
		dbName, err := tableDB(st.db, st.name, *curDB)
		if err != nil {
			return nil, err
		}
		d, ok := old.db(dbName)
		if !ok {
			return nil, unknownDatabase(dbName)
		}
		if _, ok := d.table(st.name); ok {
			if st.ifNotExists {
				return nil, nil
			}
			return nil, fmt.Errorf("Table '%s' already exists", st.name)
		}
		s.nextID++
		st.schema.DB = d.name
		st.schema.ID = s.nextID
		st.schema.indexID = st.schema.ID
		if !st.schema.fseSet {
			// PropertyAnalyzer: without the property, the FE config decides.
			st.schema.fse = s.sc.fseDefault
			if s.sc.replayFSE != nil {
				st.schema.fse = *s.sc.replayFSE
			}
			v := st.schema.fse
			fse = &v
		}
		st.schema.schemaHash = schemaHash(st.schema, 0)
		nd := d.withTable(st.name, &tableState{schema: st.schema, rows: newBtree()})
		next.dbs[d.name] = nd
	case dropTableStmt:
		dbName, err := tableDB(st.db, st.name, *curDB)
		if err != nil {
			return nil, err
		}
		d, ok := old.db(dbName)
		if !ok {
			if st.ifExists {
				return nil, nil
			}
			return nil, unknownDatabase(dbName)
		}
		t, ok := d.table(st.name)
		if !ok {
			if st.ifExists {
				return nil, nil
			}
			return nil, fmt.Errorf("Unknown table '%s'", st.name)
		}
		if !st.force && s.unfinishedJob(t.schema.ID) != nil {
			// LocalMetastore.dropTable: a table under a schema change is dropped with FORCE
			// only (its job then ends CANCELLED: the table no longer exists).
			return nil, fmt.Errorf("The table [%s]'s state is SCHEMA_CHANGE, cannot be dropped. please cancel the operation on olap table firstly. If you want to forcibly drop(cannot be recovered), please use \"DROP table FORCE\".", t.schema.Name)
		}
		nd := d.withTable(t.schema.Name, nil)
		next.dbs[d.name] = nd
	case truncateTableStmt:
		dbName, err := tableDB(st.db, st.name, *curDB)
		if err != nil {
			return nil, err
		}
		d, ok := old.db(dbName)
		if !ok {
			return nil, unknownDatabase(dbName)
		}
		t, ok := d.table(st.name)
		if !ok {
			return nil, unknownTable(d.name, st.name)
		}
		if s.unfinishedJob(t.schema.ID) != nil {
			return nil, fmt.Errorf("Table' state is not NORMAL: SCHEMA_CHANGE")
		}
		next.dbs[d.name] = d.withTable(t.schema.Name, &tableState{schema: t.schema, rows: newBtree()})
	default:
		return nil, fmt.Errorf("unsupported statement %T", st)
	}
	s.cur.Store(next)
	return fse, nil
}

// withTable returns a copy of d with table name set to t (nil: removed).
func (d *dbState) withTable(name string, t *tableState) *dbState {
	nd := &dbState{name: d.name, id: d.id, tables: make(map[string]*tableState, len(d.tables)+1)}
	for k, v := range d.tables {
		nd.tables[k] = v
	}
	if t == nil {
		delete(nd.tables, name)
	} else {
		nd.tables[name] = t
	}
	return nd
}
