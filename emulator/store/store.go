package store

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"
)

// Store holds databases, tables and their committed rows. It is safe for concurrent use.
//
// Visibility model: the whole catalog and every table's rows form one immutable snapshot,
// published through an atomic pointer with a global version number. Writers (Apply and DDL)
// serialise on a mutex, build the next snapshot by cloning only the tables they touch
// (copy-on-write B+trees, so the cost is proportional to the rows written, not the table
// size), and publish it with one atomic store after every table is in place. A reader pins
// one snapshot for its whole duration (a Rows call, or a whole SQL query including every
// table it joins) and sees exactly the commits up to its version. Old snapshots are dropped
// by the garbage collector as soon as no reader holds them, which bounds memory.
type Store struct {
	mu     sync.Mutex // serialises writers
	cur    atomic.Pointer[snapshot]
	nextID int64
	useDB  string // current database of ExecDDL/ExecScript (USE)
	// journal, when set, receives every DDL statement and Apply before it is visible
	// (journal.go); replaying is set while the journal is being replayed.
	journal   *journal
	replaying bool
	// alterJobs are the applied ALTER TABLEs SHOW ALTER TABLE COLUMN shows (alterjobs.go).
	alterJobs []alterJob
}

type snapshot struct {
	version uint64
	dbs     map[string]*dbState
}

type dbState struct {
	name   string
	id     int64
	tables map[string]*tableState
}

type tableState struct {
	schema *TableSchema
	rows   *btree
	seq    uint64 // DUPLICATE KEY tables: next insertion sequence number
}

// New returns an empty store.
func New() *Store {
	s := &Store{nextID: 10000}
	s.cur.Store(&snapshot{dbs: map[string]*dbState{}})
	return s
}

// snap returns the current committed snapshot.
func (s *Store) snap() *snapshot { return s.cur.Load() }

// Version returns the global version of the latest committed snapshot.
func (s *Store) Version() uint64 { return s.snap().version }

func (sn *snapshot) db(name string) (*dbState, bool) {
	if d, ok := sn.dbs[name]; ok {
		return d, true
	}
	for k, d := range sn.dbs {
		if strings.EqualFold(k, name) {
			return d, true
		}
	}
	return nil, false
}

func (d *dbState) table(name string) (*tableState, bool) {
	if t, ok := d.tables[name]; ok {
		return t, true
	}
	for k, t := range d.tables {
		if strings.EqualFold(k, name) {
			return t, true
		}
	}
	return nil, false
}

func (sn *snapshot) table(db, table string) (*tableState, error) {
	d, ok := sn.db(db)
	if !ok {
		return nil, unknownDatabase(db)
	}
	t, ok := d.table(table)
	if !ok {
		return nil, unknownTable(db, table)
	}
	return t, nil
}

// DatabaseID returns the stable numeric id of a database.
func (s *Store) DatabaseID(db string) (int64, bool) {
	d, ok := s.snap().db(db)
	if !ok {
		return 0, false
	}
	return d.id, true
}

// Databases lists the database names in the current snapshot.
func (s *Store) Databases() []string {
	sn := s.snap()
	out := make([]string, 0, len(sn.dbs))
	for _, d := range sn.dbs {
		out = append(out, d.name)
	}
	return out
}

// Table returns a table's schema. The schema is shared: callers must not modify it.
func (s *Store) Table(db, table string) (*TableSchema, error) {
	t, err := s.snap().table(db, table)
	if err != nil {
		return nil, err
	}
	return t.schema, nil
}

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

// Apply makes all changes visible atomically, in one new snapshot. Within a table rows apply
// in order: PRIMARY KEY upsert/delete by key (later wins, deleting a missing key is a no-op),
// UNIQUE KEY replace by key, DUPLICATE KEY append. Nothing is applied if any table is unknown
// or a row does not fit its table (wrong value count, NULL in a NOT NULL column, a value that
// does not convert to the column type). Apply keeps the rows' Values slices (no copy) and may
// normalise their elements to the storage types in place: callers must not modify them
// afterwards.
func (s *Store) Apply(changes []TableChange) error { return s.ApplyWithMeta(changes, nil) }

// ApplyWithMeta is Apply that also journals meta (the caller's facts about the change, such
// as the transaction it commits) in the same record, so both survive a restart or neither.
// Without a journal it is Apply; with one, a change with no rows still journals meta.
func (s *Store) ApplyWithMeta(changes []TableChange, meta any) error {
	if len(changes) == 0 && (meta == nil || s.journalless()) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applyLocked(changes, meta)
}

func (s *Store) journalless() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.journal == nil
}

func (s *Store) applyLocked(changes []TableChange, meta any) error {
	old := s.snap()
	next := &snapshot{version: old.version + 1, dbs: old.dbs}
	dbCopied := map[string]bool{}
	owned := map[*tableState]bool{}
	for _, ch := range changes {
		d, ok := next.db(ch.DB)
		if !ok {
			return fmt.Errorf("apply: %w", unknownDatabase(ch.DB))
		}
		t, ok := d.table(ch.Table)
		if !ok {
			return fmt.Errorf("apply: %w", unknownTable(ch.DB, ch.Table))
		}
		if !dbCopied[d.name] {
			if len(dbCopied) == 0 {
				m := make(map[string]*dbState, len(old.dbs))
				for k, v := range old.dbs {
					m[k] = v
				}
				next.dbs = m
			}
			nd := &dbState{name: d.name, id: d.id, tables: make(map[string]*tableState, len(d.tables))}
			for k, v := range d.tables {
				nd.tables[k] = v
			}
			next.dbs[d.name] = nd
			dbCopied[d.name] = true
			d = nd
		}
		if !owned[t] {
			t = &tableState{schema: t.schema, rows: t.rows.clone(), seq: t.seq}
			owned[t] = true
			d.tables[t.schema.Name] = t
		}
		if err := t.apply(ch.Rows); err != nil {
			return fmt.Errorf("apply to %s.%s: %w", ch.DB, ch.Table, err)
		}
	}
	// Durable before visible: a change whose record is not in the journal never shows.
	if err := s.journalApplyLocked(next, changes, meta); err != nil {
		return err
	}
	s.cur.Store(next)
	return nil
}

// apply applies rows to an owned (cloned) table state.
func (t *tableState) apply(rows []Row) error {
	sc := t.schema
	var kb []byte
	for i := range rows {
		r := &rows[i]
		if len(r.Values) != len(sc.Columns) {
			return fmt.Errorf("row %d has %d values, table has %d columns: the table changed (ALTER TABLE) after the rows were loaded; load them again", i, len(r.Values), len(sc.Columns))
		}
		for c := range r.Values {
			if r.Set != nil && c < len(r.Set) && !r.Set[c] && r.Values[c] == nil {
				continue // a partial-update column the row does not set
			}
			v, err := normalizeValue(&sc.Columns[c], r.Values[c])
			if err != nil {
				return fmt.Errorf("row %d: %w", i, err)
			}
			r.Values[c] = v
		}
		if sc.KeyType == DuplicateKey {
			t.seq++
			kb = appendSeqKey(kb[:0], t.seq)
			t.rows.set(string(kb), r.Values)
			continue
		}
		kb = appendRowKey(kb[:0], sc, r.Values)
		key := string(kb)
		if sc.KeyType == PrimaryKey && r.Op == OpDelete {
			t.rows.delete(key)
			continue
		}
		if sc.KeyType == AggregateKey {
			vals := r.Values
			if prev, ok := t.rows.get(key); ok {
				vals = aggregate(sc, prev, vals)
			}
			t.rows.set(key, vals)
			continue
		}
		vals := r.Values
		if r.MergeCol > 0 && r.MergeCol <= len(vals) && sc.KeyType == PrimaryKey {
			if prev, ok := t.rows.get(key); ok {
				mc := r.MergeCol - 1
				condSet := r.Set == nil || mc < len(r.Set) && r.Set[mc]
				if condSet && compareValues(vals[mc], prev[mc]) < 0 {
					continue // merge_condition: a smaller value does not replace the stored row
				}
			}
		}
		if r.Set != nil && sc.KeyType == PrimaryKey {
			if prev, ok := t.rows.get(key); ok {
				merged := make([]any, len(vals))
				for c := range vals {
					if c < len(r.Set) && r.Set[c] {
						merged[c] = vals[c]
					} else {
						merged[c] = prev[c]
					}
				}
				t.rows.set(key, merged)
				continue
			}
		}
		if r.Set != nil {
			// a partial-update row for a new key: unset columns take their defaults
			for c := range vals {
				if c < len(r.Set) && !r.Set[c] && vals[c] == nil {
					col := &sc.Columns[c]
					switch {
					case col.Default != nil && !col.DefaultCurrentTimestamp:
						vals[c] = col.defaultValue
					case !col.Nullable:
						vals[c] = zeroValue(col)
					}
				}
			}
		}
		t.rows.set(key, vals)
	}
	return nil
}

// Rows returns the committed rows of a table as column-name maps, in key order for keyed
// tables and insertion order for DUPLICATE KEY tables.
func (s *Store) Rows(db, table string) ([]map[string]any, error) {
	t, err := s.snap().table(db, table)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, t.rows.len)
	cols := t.schema.Columns
	t.rows.ascend(func(_ string, vals []any) bool {
		m := make(map[string]any, len(cols))
		for i, c := range cols {
			m[c.Name] = vals[i]
		}
		out = append(out, m)
		return true
	})
	return out, nil
}

// tableDB is the database a table statement addresses: its own qualifier,
// else the session's current database.
func tableDB(qualifier, table, current string) (string, error) {
	if qualifier != "" {
		return qualifier, nil
	}
	if current == "" {
		return "", fmt.Errorf("No database selected: qualify the table as db.%s or run USE db first", table)
	}
	return current, nil
}

// Tables lists the table names of a database in the current snapshot.
func (s *Store) Tables(db string) []string {
	d, ok := s.snap().db(db)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(d.tables))
	for _, t := range d.tables {
		out = append(out, t.schema.Name)
	}
	return out
}

// aggregate merges a loaded row into the stored row with the same key of an AGGREGATE KEY
// table: SUM adds (NULL adds nothing), MAX and MIN keep the extreme (NULL is no value),
// REPLACE takes the new value, REPLACE_IF_NOT_NULL the new value unless it is NULL.
func aggregate(sc *TableSchema, prev, next []any) []any {
	out := make([]any, len(next))
	copy(out, next)
	for i := len(sc.Key); i < len(sc.Columns); i++ {
		c := &sc.Columns[i]
		a, b := prev[i], next[i]
		switch c.Agg {
		case AggSum:
			switch {
			case b == nil:
				out[i] = a
			case a != nil:
				out[i] = addValues(a, b)
			}
		case AggMax, AggMin:
			switch {
			case b == nil:
				out[i] = a
			case a == nil:
			case c.Agg == AggMax && compareValues(a, b) > 0, c.Agg == AggMin && compareValues(a, b) < 0:
				out[i] = a
			}
		case AggReplaceIfNotNull:
			if b == nil {
				out[i] = a
			}
		}
	}
	return out
}

// addValues adds two values of one numeric storage type (integer sums wrap as the BE's do).
func addValues(a, b any) any {
	switch x := a.(type) {
	case int8:
		return x + b.(int8)
	case int16:
		return x + b.(int16)
	case int32:
		return x + b.(int32)
	case int64:
		return x + b.(int64)
	case float32:
		return x + b.(float32)
	case float64:
		return x + b.(float64)
	case decimal.Decimal:
		return x.Add(b.(decimal.Decimal))
	}
	return b
}
