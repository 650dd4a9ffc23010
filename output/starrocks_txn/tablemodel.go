package starrocks_txn

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// modelQueryTimeout bounds one table-model lookup.
const modelQueryTimeout = 10 * time.Second

// tableModels learns, over the FE's MySQL port, whether a table has a
// primary key. StarRocks loads a delete row (`"__op": 1`) into a DUPLICATE
// KEY table as an ordinary appended row, without any error, so only the
// server's own table model can tell the output that such a source
// transaction must be poisoned instead.
type tableModels struct {
	db *sql.DB
	// infoMu serialises this output's information_schema queries (table
	// models, progress tables). They are rare; the emulator's SQL engine
	// races on concurrent information_schema plans.
	infoMu sync.Mutex

	mu     sync.Mutex
	models map[string]bool // db.table -> has a primary key
}

func newTableModels(addr, user, password string) (*tableModels, error) {
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = addr
	cfg.User = user
	cfg.Passwd = password
	cfg.InterpolateParams = true
	cfg.Timeout = modelQueryTimeout
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("configuring the MySQL connection to %s: %w", addr, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(2)
	return &tableModels{db: db, models: map[string]bool{}}, nil
}

// primaryKey reports whether db.table is a PRIMARY KEY table. known is
// false when the server could not tell (the table does not exist, or the
// query failed): the load then decides.
func (m *tableModels) primaryKey(ctx context.Context, db, table string) (pk, known bool, err error) {
	key := db + "." + table
	m.mu.Lock()
	pk, known = m.models[key]
	m.mu.Unlock()
	if known {
		return pk, true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, modelQueryTimeout)
	defer cancel()
	m.infoMu.Lock()
	defer m.infoMu.Unlock()
	var model string
	qerr := m.db.QueryRowContext(ctx,
		"SELECT TABLE_MODEL FROM information_schema.tables_config WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, table).Scan(&model)
	switch {
	case qerr == nil:
		pk, known = strings.EqualFold(model, "PRIMARY_KEYS"), true
	case qerr == sql.ErrNoRows:
		return false, false, nil
	default:
		// No tables_config (an older StarRocks, or the emulator): key
		// columns of a primary key table show as PRI.
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

func (m *tableModels) close() error { return m.db.Close() }

// isDelete reports whether a JSON row carries "__op": 1 (or "1").
func isDelete(body []byte) bool {
	if !bytes.Contains(body, []byte(`"__op"`)) {
		return false
	}
	var op struct {
		Op json.RawMessage `json:"__op"`
	}
	if err := json.Unmarshal(body, &op); err != nil {
		return false
	}
	v := strings.Trim(string(op.Op), `" `)
	return v == "1"
}
