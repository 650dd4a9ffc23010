package store

import (
	"fmt"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
)

// The catalog go-mysql-server sees: the store's databases at the snapshot a statement (or a
// session's open transaction) pinned; views, procedures and triggers are refused.

// sqlBridge implements sql.DatabaseProvider over the store's snapshots.
type sqlBridge struct {
	store *Store
	sys   System   // nil: no system views
	pins  sync.Map // connection id -> *snapshot
}

// pin fixes the snapshot the connection's next query reads; the returned func unpins it.
func (b *sqlBridge) pin(conn uint32) func() {
	b.pins.Store(conn, b.store.snap())
	return func() { b.pins.Delete(conn) }
}

func (b *sqlBridge) snapFor(ctx *sql.Context) *snapshot {
	if ctx != nil && ctx.Session != nil {
		if v, ok := b.pins.Load(ctx.Session.ID()); ok {
			return v.(*snapshot)
		}
	}
	return b.store.snap()
}

var _ sql.DatabaseProvider = (*sqlBridge)(nil)

func (b *sqlBridge) Database(ctx *sql.Context, name string) (sql.Database, error) {
	d, ok := b.snapFor(ctx).db(name)
	if !ok {
		return nil, sql.ErrDatabaseNotFound.New(name)
	}
	return &sqlDatabase{bridge: b, name: d.name}, nil
}

func (b *sqlBridge) HasDatabase(ctx *sql.Context, name string) bool {
	_, ok := b.snapFor(ctx).db(name)
	return ok
}

func (b *sqlBridge) AllDatabases(ctx *sql.Context) []sql.Database {
	sn := b.snapFor(ctx)
	out := make([]sql.Database, 0, len(sn.dbs))
	for _, d := range sn.dbs {
		out = append(out, &sqlDatabase{bridge: b, name: d.name})
	}
	return out
}

type sqlDatabase struct {
	bridge *sqlBridge
	name   string
}

var _ sql.Database = (*sqlDatabase)(nil)

func (d *sqlDatabase) Name() string { return d.name }

func (d *sqlDatabase) GetTableInsensitive(ctx *sql.Context, tblName string) (sql.Table, bool, error) {
	db, ok := d.bridge.snapFor(ctx).db(d.name)
	if !ok {
		return nil, false, nil
	}
	t, ok := db.table(tblName)
	if !ok {
		return nil, false, nil
	}
	return newSQLTable(d.bridge.store, t), true, nil
}

func (d *sqlDatabase) GetTableNames(ctx *sql.Context) ([]string, error) {
	db, ok := d.bridge.snapFor(ctx).db(d.name)
	if !ok {
		return nil, nil
	}
	out := make([]string, 0, len(db.tables))
	for _, t := range db.tables {
		out = append(out, t.schema.Name)
	}
	return out, nil
}

var _ sql.ViewDatabase = (*sqlDatabase)(nil)

// CreateView implements sql.ViewDatabase: the emulator has no views.
func (d *sqlDatabase) CreateView(*sql.Context, string, string, string) error {
	return fmt.Errorf("views are not supported by the StarRocks emulator")
}

// DropView implements sql.ViewDatabase.
func (d *sqlDatabase) DropView(_ *sql.Context, name string) error {
	return sql.ErrViewDoesNotExist.New(d.name, name)
}

// GetViewDefinition implements sql.ViewDatabase: no view exists.
func (d *sqlDatabase) GetViewDefinition(*sql.Context, string) (sql.ViewDefinition, bool, error) {
	return sql.ViewDefinition{}, false, nil
}

// AllViews implements sql.ViewDatabase.
func (d *sqlDatabase) AllViews(*sql.Context) ([]sql.ViewDefinition, error) { return nil, nil }

var _ sql.StoredProcedureDatabase = (*sqlDatabase)(nil)

// GetStoredProcedure implements sql.StoredProcedureDatabase: StarRocks tables have no stored
// procedures, so information_schema.routines is empty rather than an error.
func (d *sqlDatabase) GetStoredProcedure(*sql.Context, string) (sql.StoredProcedureDetails, bool, error) {
	return sql.StoredProcedureDetails{}, false, nil
}

// GetStoredProcedures implements sql.StoredProcedureDatabase.
func (d *sqlDatabase) GetStoredProcedures(*sql.Context) ([]sql.StoredProcedureDetails, error) {
	return nil, nil
}

// SaveStoredProcedure implements sql.StoredProcedureDatabase.
func (d *sqlDatabase) SaveStoredProcedure(*sql.Context, sql.StoredProcedureDetails) error {
	return fmt.Errorf("stored procedures are not supported by the StarRocks emulator")
}

// DropStoredProcedure implements sql.StoredProcedureDatabase.
func (d *sqlDatabase) DropStoredProcedure(_ *sql.Context, name string) error {
	return sql.ErrStoredProcedureDoesNotExist.New(name)
}

var _ sql.TriggerDatabase = (*sqlDatabase)(nil)

// GetTriggers implements sql.TriggerDatabase: the emulator has no triggers.
func (d *sqlDatabase) GetTriggers(*sql.Context) ([]sql.TriggerDefinition, error) { return nil, nil }

// CreateTrigger implements sql.TriggerDatabase.
func (d *sqlDatabase) CreateTrigger(*sql.Context, sql.TriggerDefinition) error {
	return fmt.Errorf("triggers are not supported by the StarRocks emulator")
}

// DropTrigger implements sql.TriggerDatabase.
func (d *sqlDatabase) DropTrigger(_ *sql.Context, name string) error {
	return sql.ErrTriggerDoesNotExist.New(name)
}
