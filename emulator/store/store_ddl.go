package store

import (
	"fmt"
	"slices"
	"strings"
	"time"
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
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.useDB
	if err := s.execLocked(stmts[0], &cur, stmt); err != nil {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.useDB
	for i, st := range splitStatements(toks) {
		if err := s.execLocked(st, &cur, script[st[0].off:st[len(st)-1].end]); err != nil {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.execLocked(stmts[0], curDB, stmt)
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
	if err := s.execStmtLocked(toks, curDB); err != nil {
		return err
	}
	if len(toks) > 0 && toks[0].is("use") {
		return nil
	}
	if len(toks) > 0 && toks[0].is("alter") && !s.replaying {
		s.recordAlterLocked(toks, before)
	}
	return s.journalDDLLocked(before, text)
}

func (s *Store) execStmtLocked(toks []token, curDB *string) error {
	st, err := parseDDL(toks)
	if err != nil {
		return err
	}
	old := s.snap()
	next := &snapshot{version: old.version + 1, dbs: make(map[string]*dbState, len(old.dbs)+1)}
	for k, v := range old.dbs {
		next.dbs[k] = v
	}
	switch st := st.(type) {
	case useStmt:
		if _, ok := old.db(st.name); !ok {
			return unknownDatabase(st.name)
		}
		*curDB = st.name
		return nil
	case createDatabaseStmt:
		if _, ok := old.db(st.name); ok {
			if st.ifNotExists {
				return nil
			}
			return fmt.Errorf("Can't create database '%s'; database exists", st.name)
		}
		s.nextID++
		next.dbs[st.name] = &dbState{name: st.name, id: s.nextID, tables: map[string]*tableState{}}
	case dropDatabaseStmt:
		d, ok := old.db(st.name)
		if !ok {
			if st.ifExists {
				return nil
			}
			return fmt.Errorf("Can't drop database '%s'; database doesn't exist", st.name)
		}
		delete(next.dbs, d.name)
		if strings.EqualFold(*curDB, d.name) {
			*curDB = ""
		}
	case createTableStmt:
		dbName, err := tableDB(st.db, st.name, *curDB)
		if err != nil {
			return err
		}
		d, ok := old.db(dbName)
		if !ok {
			return unknownDatabase(dbName)
		}
		if _, ok := d.table(st.name); ok {
			if st.ifNotExists {
				return nil
			}
			return fmt.Errorf("Table '%s' already exists", st.name)
		}
		s.nextID++
		st.schema.DB = d.name
		st.schema.ID = s.nextID
		nd := d.withTable(st.name, &tableState{schema: st.schema, rows: newBtree()})
		next.dbs[d.name] = nd
	case dropTableStmt:
		dbName, err := tableDB(st.db, st.name, *curDB)
		if err != nil {
			return err
		}
		d, ok := old.db(dbName)
		if !ok {
			if st.ifExists {
				return nil
			}
			return unknownDatabase(dbName)
		}
		t, ok := d.table(st.name)
		if !ok {
			if st.ifExists {
				return nil
			}
			return fmt.Errorf("Unknown table '%s'", st.name)
		}
		nd := d.withTable(t.schema.Name, nil)
		next.dbs[d.name] = nd
	case truncateTableStmt:
		dbName, err := tableDB(st.db, st.name, *curDB)
		if err != nil {
			return err
		}
		d, ok := old.db(dbName)
		if !ok {
			return unknownDatabase(dbName)
		}
		t, ok := d.table(st.name)
		if !ok {
			return unknownTable(d.name, st.name)
		}
		next.dbs[d.name] = d.withTable(t.schema.Name, &tableState{schema: t.schema, rows: newBtree()})
	case alterTableStmt:
		dbName, err := tableDB(st.db, st.name, *curDB)
		if err != nil {
			return err
		}
		d, ok := old.db(dbName)
		if !ok {
			return unknownDatabase(dbName)
		}
		t, ok := d.table(st.name)
		if !ok {
			return unknownTable(d.name, st.name)
		}
		nt, err := t.alter(st.ops)
		if err != nil {
			return err
		}
		next.dbs[d.name] = d.withTable(t.schema.Name, nt)
	default:
		return fmt.Errorf("unsupported statement %T", st)
	}
	s.cur.Store(next)
	return nil
}

// alter applies ADD COLUMN and DROP COLUMN to a copy of t: existing rows take an added
// column's default (or NULL), and lose a dropped one. The schema change is immediate; a
// transaction that loaded rows for the old columns fails at commit.
func (t *tableState) alter(ops []alterOp) (*tableState, error) {
	old := t.schema
	cols := append([]Column(nil), old.Columns...)
	// src[i] is the old index of new column i, -1 for an added one
	src := make([]int, len(cols))
	for i := range src {
		src[i] = i
	}
	for _, op := range ops {
		if op.drop != "" {
			i := -1
			for k, c := range cols {
				if strings.EqualFold(c.Name, op.drop) {
					i = k
				}
			}
			switch {
			case i < 0:
				return nil, fmt.Errorf("Column does not exists: %s", op.drop)
			case i < len(old.Key):
				return nil, fmt.Errorf("Can not drop key column %s: the emulator drops value columns only", cols[i].Name)
			case slices.ContainsFunc(old.distKeys, func(k string) bool { return strings.EqualFold(k, op.drop) }):
				return nil, fmt.Errorf("Can not drop column %s: it is a distribution column", cols[i].Name)
			case slices.ContainsFunc(old.sortKeys, func(k string) bool { return strings.EqualFold(k, op.drop) }):
				return nil, fmt.Errorf("Can not drop column %s: it is a sort key column", cols[i].Name)
			case len(cols) == 1:
				return nil, fmt.Errorf("Can not drop column %s: a table keeps at least one column", cols[i].Name)
			}
			cols = append(cols[:i:i], cols[i+1:]...)
			src = append(src[:i:i], src[i+1:]...)
			continue
		}
		c := *op.add
		for _, x := range cols {
			if strings.EqualFold(x.Name, c.Name) {
				return nil, fmt.Errorf("Duplicate column name '%s'", c.Name)
			}
		}
		if !c.Nullable && c.Default == nil {
			return nil, fmt.Errorf("column '%s' is NOT NULL without a DEFAULT: the rows already in %s would have no value; give a DEFAULT or make it NULL", c.Name, old.Name)
		}
		pos := len(cols)
		switch {
		case op.first:
			pos = 0
		case op.after != "":
			pos = -1
			for k, x := range cols {
				if strings.EqualFold(x.Name, op.after) {
					pos = k + 1
				}
			}
			if pos < 0 {
				return nil, fmt.Errorf("Column does not exists: %s", op.after)
			}
		}
		if pos < len(old.Key) {
			return nil, fmt.Errorf("column '%s' would become a key column: the emulator adds value columns after the key columns %s", c.Name, strings.Join(old.Key, ", "))
		}
		cols = append(cols[:pos], append([]Column{c}, cols[pos:]...)...)
		src = append(src[:pos], append([]int{-1}, src[pos:]...)...)
	}
	ns := *old
	ns.Columns = cols
	ns.Key = append([]string(nil), old.Key...)
	ns.keyIdx = nil
	ns.version++
	if err := finishSchema(&ns); err != nil {
		return nil, err
	}
	rows := newBtree()
	t.rows.ascend(func(key string, vals []any) bool {
		nv := make([]any, len(cols))
		for i, from := range src {
			if from >= 0 {
				nv[i] = vals[from]
				continue
			}
			if c := &ns.Columns[i]; c.DefaultCurrentTimestamp {
				now := time.Now()
				nv[i] = time.Date(now.Year(), now.Month(), now.Day(), now.Hour(), now.Minute(), now.Second(), 0, time.UTC)
			} else {
				nv[i] = c.defaultValue
			}
		}
		rows.set(key, nv)
		return true
	})
	return &tableState{schema: &ns, rows: rows, seq: t.seq}, nil
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
