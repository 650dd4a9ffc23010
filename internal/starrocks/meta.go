package starrocks

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// metaTimeout bounds one call of Meta: a catalog lookup, a DDL statement
// with its column check, or a read of rows across databases.
const metaTimeout = 10 * time.Second

// Meta asks the FE over its MySQL port what the HTTP transaction API cannot
// tell: a table's key model, whether a table exists with the columns a
// caller needs (creating it when missing), which databases hold a table, and
// the rows of the progress and writers tables (progresstables.go).
type Meta struct {
	db *sql.DB
	// catalogMu serialises this client's statements. It exists only for
	// the emulator, whose SQL engine races on concurrent information_schema
	// plans; StarRocks needs no such lock, and it can go once the emulator
	// serialises catalog plans itself.
	catalogMu sync.Mutex

	mu sync.Mutex
	// models caches primary-key answers: db.table -> has a primary key.
	models map[string]bool
}

// OpenMeta connects to the FE MySQL-protocol address (host:9030) with the
// account of the HTTP loads. Errors name the address, never the password.
func OpenMeta(addr, user, password string) (*Meta, error) {
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = addr
	cfg.User = user
	cfg.Passwd = password
	cfg.InterpolateParams = true
	cfg.Timeout = metaTimeout
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("configuring the MySQL connection to %s: %w", addr, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(2)
	return NewMeta(db), nil
}

// NewMeta uses an open connection pool (tests open their own).
func NewMeta(db *sql.DB) *Meta {
	return &Meta{db: db, models: map[string]bool{}}
}

// Close closes the connections.
func (m *Meta) Close() error { return m.db.Close() }

func (m *Meta) lock() func() {
	m.catalogMu.Lock()
	return m.catalogMu.Unlock
}

// PrimaryKey reports whether db.table is a PRIMARY KEY table. known is
// false when the server could not tell (the table does not exist): the load
// then decides. StarRocks loads a delete row ("__op": 1) into a DUPLICATE KEY
// table as an ordinary appended row, without any error, so only the
// server's own table model can tell a caller to refuse such a delete.
// Answers are cached.
func (m *Meta) PrimaryKey(ctx context.Context, db, table string) (pk, known bool, err error) {
	key := db + "." + table
	m.mu.Lock()
	pk, known = m.models[key]
	m.mu.Unlock()
	if known {
		return pk, true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	defer m.lock()()
	var model string
	qerr := m.db.QueryRowContext(ctx,
		"SELECT TABLE_MODEL FROM information_schema.tables_config WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, table).Scan(&model)
	switch {
	case qerr == nil:
		pk, known = strings.EqualFold(model, "PRIMARY_KEYS"), true
	case qerr == sql.ErrNoRows:
		return false, false, nil
	default:
		// No tables_config (an older StarRocks): key columns of a primary
		// key table show as PRI.
		var total, pri int
		if err := m.db.QueryRowContext(ctx,
			"SELECT COUNT(*), COALESCE(SUM(CASE WHEN COLUMN_KEY = 'PRI' THEN 1 ELSE 0 END), 0) FROM information_schema.columns WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
			db, table).Scan(&total, &pri); err != nil {
			return false, false, fmt.Errorf("reading the table model of %s: %w (and tables_config: %v)", key, err, qerr)
		}
		if total == 0 {
			return false, false, nil
		}
		pk, known = pri > 0, true
	}
	m.mu.Lock()
	m.models[key] = pk
	m.mu.Unlock()
	return pk, known, nil
}

// TableDef is a table a caller needs: its name, the statement that creates
// it, and the columns it uses.
type TableDef struct {
	Name    string
	DDL     string
	Columns []string
}

// EnsureTables creates each table of db that is missing (its DDL must say IF
// NOT EXISTS) and checks that it has the columns, in one call.
func (m *Meta) EnsureTables(ctx context.Context, db string, tables ...TableDef) error {
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	defer m.lock()()
	for _, t := range tables {
		if err := m.ensureTable(ctx, db, t); err != nil {
			return err
		}
	}
	return nil
}

func (m *Meta) ensureTable(ctx context.Context, db string, t TableDef) error {
	if _, err := m.db.ExecContext(ctx, t.DDL); err != nil {
		return fmt.Errorf("creating the table %s.%s (run it yourself if the account may not: %s): %w", db, t.Name, t.DDL, err)
	}
	rows, err := m.db.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.columns WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, t.Name)
	if err != nil {
		return fmt.Errorf("reading the columns of %s.%s: %w", db, t.Name, err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			_ = rows.Close()
			return fmt.Errorf("reading the columns of %s.%s: %w", db, t.Name, err)
		}
		have[strings.ToLower(name)] = true
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("reading the columns of %s.%s: %w", db, t.Name, err)
	}
	var missing []string
	for _, c := range t.Columns {
		if !have[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the table %s.%s exists without the columns %v (an older layout?): drop it, or set progress_table to a new name; the output creates it as: %s", db, t.Name, missing, t.DDL)
	}
	return nil
}

// DatabasesWith lists the databases holding a table of that name.
func (m *Meta) DatabasesWith(ctx context.Context, table string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	defer m.lock()()
	return m.databasesWith(ctx, table)
}

func (m *Meta) databasesWith(ctx context.Context, table string) ([]string, error) {
	rows, err := m.db.QueryContext(ctx, "SELECT TABLE_SCHEMA FROM information_schema.tables WHERE TABLE_NAME = ?", table)
	if err != nil {
		return nil, fmt.Errorf("finding the tables %q: %w", table, err)
	}
	var dbs []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("finding the tables %q: %w", table, err)
		}
		if !strings.EqualFold(name, "information_schema") {
			dbs = append(dbs, name)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("finding the tables %q: %w", table, err)
	}
	return dbs, nil
}
