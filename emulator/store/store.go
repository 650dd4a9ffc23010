package store

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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
	// sc are the schema change jobs and their settings (schemachange.go).
	sc schemaChanges
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
	s := &Store{nextID: 10000, sc: newSchemaChanges()}
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
