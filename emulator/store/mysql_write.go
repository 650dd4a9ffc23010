package store

import (
	"encoding/json"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
)

// Writes over the MySQL port: INSERT (an upsert on PRIMARY KEY and UNIQUE KEY tables, an
// append on DUPLICATE KEY tables, as in StarRocks), and UPDATE / DELETE on PRIMARY KEY tables.
// Each statement is one Apply, so it becomes visible atomically. The rows a statement reads
// come from the snapshot pinned when the query arrived; a commit racing with an UPDATE can
// therefore be overwritten by it (the emulator has no row locks).

var (
	_ sql.InsertableTable = (*sqlTable)(nil)
	_ sql.UpdatableTable  = (*sqlTable)(nil)
	_ sql.DeletableTable  = (*sqlTable)(nil)
)

func (t *sqlTable) Inserter(*sql.Context) sql.RowInserter { return t.editor() }
func (t *sqlTable) Updater(*sql.Context) sql.RowUpdater   { return t.editor() }
func (t *sqlTable) Deleter(*sql.Context) sql.RowDeleter   { return t.editor() }

func (t *sqlTable) editor() *sqlEditor { return &sqlEditor{table: t} }

type sqlEditor struct {
	table *sqlTable
	rows  []Row
}

func (e *sqlEditor) StatementBegin(*sql.Context) { e.rows = e.rows[:0] }

func (e *sqlEditor) DiscardChanges(*sql.Context, error) error {
	e.rows = nil
	return nil
}

func (e *sqlEditor) StatementComplete(*sql.Context) error {
	if len(e.rows) == 0 {
		return nil
	}
	sc := e.table.state.schema
	for i := range e.rows {
		e.rows[i].sc = sc // the rows are the pinned snapshot's: a schema change since maps them
	}
	err := e.table.store.Apply([]TableChange{{DB: sc.DB, Table: sc.Name, Rows: e.rows}})
	e.rows = nil
	return err
}

func (e *sqlEditor) Close(*sql.Context) error { return nil }

func (e *sqlEditor) Insert(_ *sql.Context, row sql.Row) error {
	vals, err := e.values(row)
	if err != nil {
		return err
	}
	e.rows = append(e.rows, Row{Op: OpUpsert, Values: vals})
	return nil
}

func (e *sqlEditor) Update(_ *sql.Context, old, new sql.Row) error {
	sc := e.table.state.schema
	if sc.KeyType != PrimaryKey {
		return fmt.Errorf("UPDATE is only supported on PRIMARY KEY tables; %s is a %s table", sc.Name, sc.KeyType)
	}
	ov, err := e.values(old)
	if err != nil {
		return err
	}
	nv, err := e.values(new)
	if err != nil {
		return err
	}
	if string(appendRowKey(nil, sc, ov)) != string(appendRowKey(nil, sc, nv)) {
		e.rows = append(e.rows, Row{Op: OpDelete, Values: ov})
	}
	e.rows = append(e.rows, Row{Op: OpUpsert, Values: nv})
	return nil
}

func (e *sqlEditor) Delete(_ *sql.Context, row sql.Row) error {
	sc := e.table.state.schema
	if sc.KeyType != PrimaryKey {
		return fmt.Errorf("DELETE is only supported on PRIMARY KEY tables by the emulator; %s is a %s table", sc.Name, sc.KeyType)
	}
	vals, err := e.values(row)
	if err != nil {
		return err
	}
	e.rows = append(e.rows, Row{Op: OpDelete, Values: vals})
	return nil
}

// values converts a go-mysql-server row into storage values.
func (e *sqlEditor) values(row sql.Row) ([]any, error) {
	cols := e.table.state.schema.Columns
	if len(row) != len(cols) {
		return nil, fmt.Errorf("row has %d values, table %s has %d columns", len(row), e.table.state.schema.Name, len(cols))
	}
	out := make([]any, len(cols))
	for i, v := range row {
		if w, ok := v.(sql.JSONWrapper); ok {
			doc, err := w.ToInterface()
			if err != nil {
				return nil, fmt.Errorf("column '%s': %w", cols[i].Name, err)
			}
			b, err := json.Marshal(doc)
			if err != nil {
				return nil, fmt.Errorf("column '%s': %w", cols[i].Name, err)
			}
			v = string(b)
		}
		nv, err := normalizeValue(&cols[i], v)
		if err != nil {
			return nil, err
		}
		out[i] = nv
	}
	return out, nil
}
