package starrocks

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/starrocks-txn/benthos-starrocks/internal/redact"
)

// metaTimeout is the default bound of one call of Meta: a catalog lookup, a
// DDL statement with its column check, a read of rows across databases, or
// one statement of a progress read (each chunk of partitions has its own).
const metaTimeout = 10 * time.Second

// Meta asks the FE over its MySQL port what the HTTP transaction API cannot
// tell: a table's key model, whether a table exists with the columns a
// caller needs (creating it when missing), which databases hold a table, and
// the rows of the progress and writers tables (progresstables.go).
type Meta struct {
	db *sql.DB
	// addr is the MySQL address, for errors.
	addr string
	// timeout bounds one call (MetaConfig.Timeout) while calls end in
	// time. Calls run concurrently, each on its own connection of the pool:
	// one call's bound never runs while it waits behind another's
	// statement.
	timeout time.Duration

	mu sync.Mutex
	// models caches primary-key answers: db.table -> has a primary key.
	models map[string]bool
	// calls bounds each call: timeout, or more after calls of its kind
	// ran out of their bound (see bound).
	calls callBounds
	// user is the account, for errors.
	user string
	// plugin is the last authentication plugin the driver did not know
	// (it names it only in a log line).
	plugin *atomic.Pointer[string]
}

// bound returns ctx bounded for one call of a kind (what it reads or
// writes, and in which database), and the function that ends the call, told
// whether it succeeded (callBound: a statement slower than Timeout every
// time is still answered after a few attempts; per kind, so that quick
// statements of other kinds in between do not shrink a slow one's bound).
func (m *Meta) bound(ctx context.Context, kind, db string) (context.Context, func(ok bool)) {
	return m.calls.get(kind + "\x00" + db).start(ctx)
}

// MetaConfig configures the metadata client.
type MetaConfig struct {
	// Addr is the FE MySQL-protocol address (host:9030).
	Addr           string
	User, Password string
	// TLS, when not nil, encrypts the connection; a server that does not
	// offer TLS is then refused (no fallback to plain text).
	TLS *tls.Config
	// Log receives the driver's own messages ("closing bad idle
	// connection: …", a connection reset while reading), one line each,
	// with whether the driver went on without any harm (an idle connection
	// it discarded). Nil: they are dropped. They never go to the driver's
	// process-wide logger (stderr), so several clients in one process
	// each keep their own.
	Log func(msg string, harmless bool)
	// Timeout bounds one call (a lookup, a DDL statement with its check, a
	// read across databases, one statement of a progress read) and the
	// dial; 0: 10 s.
	Timeout time.Duration
	// AllowCleartextPasswords sends the password as is when the server
	// asks for it with the mysql_clear_password plugin, as StarRocks does
	// for an account that authenticates through LDAP
	// (authentication_ldap_simple). Off, such an account is refused
	// (AuthPluginError). With TLS the password is encrypted on the way;
	// without, it crosses the network in clear.
	AllowCleartextPasswords bool
}

// OpenMeta connects to the FE MySQL-protocol address (host:9030) with the
// account of the HTTP loads, in plain text, dropping the driver's messages.
func OpenMeta(addr, user, password string) (*Meta, error) {
	return OpenMetaWith(MetaConfig{Addr: addr, User: user, Password: password})
}

// OpenMetaWith connects as cfg says. Errors name the address, never the
// password.
func OpenMetaWith(c MetaConfig) (*Meta, error) {
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = c.Addr
	cfg.User = c.User
	cfg.Passwd = c.Password
	cfg.InterpolateParams = true
	timeout := metaTimeout
	if c.Timeout > 0 {
		timeout = c.Timeout
	}
	cfg.Timeout = timeout
	if c.TLS != nil {
		cfg.TLS = c.TLS.Clone()
	}
	cfg.AllowCleartextPasswords = c.AllowCleartextPasswords
	plugin := &atomic.Pointer[string]{}
	cfg.Logger = driverLogger{log: c.Log, plugin: plugin}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("configuring the MySQL connection to %s: %w", redact.URL(c.Addr), redact.Error(err))
	}
	db := sql.OpenDB(conn)
	// Calls run concurrently (no lock): a few connections, so that a call
	// seldom waits for one within its bound.
	db.SetMaxOpenConns(4)
	m := NewMeta(db)
	m.addr, m.timeout, m.user, m.plugin = c.Addr, timeout, c.User, plugin
	m.calls = callBounds{base: timeout}
	return m, nil
}

// driverLogger is go-sql-driver/mysql's Logger of one client. The driver
// logs what it recovers from itself; a caller sees the error it returns.
type driverLogger struct {
	log func(msg string, harmless bool)
	// plugin receives the name of an authentication plugin the driver
	// does not know, which its error (ErrUnknownPlugin) leaves out.
	plugin *atomic.Pointer[string]
}

// unknownPluginLog is how the driver logs the plugin it does not know.
const unknownPluginLog = "unknown auth plugin:"

// Print takes a line of the driver, which starts with its source position
// ("auth.go:341 unknown auth plugin:dialog").
func (d driverLogger) Print(v ...any) {
	msg := strings.TrimSpace(fmt.Sprint(v...))
	if _, name, ok := strings.Cut(msg, unknownPluginLog); ok && d.plugin != nil {
		name = strings.TrimSpace(name)
		d.plugin.Store(&name)
	}
	if d.log == nil {
		return
	}
	d.log(redact.Text(msg), strings.Contains(msg, "closing bad idle connection"))
}

// NewMeta uses an open connection pool (tests open their own).
func NewMeta(db *sql.DB) *Meta {
	return &Meta{db: db, models: map[string]bool{}, timeout: metaTimeout, calls: callBounds{base: metaTimeout}}
}

// Close closes the connections.
func (m *Meta) Close() error { return m.db.Close() }

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
	ctx, end := m.bound(ctx, "table_model", db)
	defer func() { end(err == nil) }()
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

// checkIdents validates identifiers before they are put into a statement's
// text (between backticks): a database or table name of letters, digits,
// '_', '-' and '$' (ValidateName) can neither close the quoting nor carry a
// second statement. Names the server lists are checked too.
func checkIdents(db string, tables ...string) error {
	if err := ValidateName("database", db); err != nil {
		return fmt.Errorf("refusing to put it into SQL: %w", err)
	}
	for _, t := range tables {
		if err := ValidateName("table", t); err != nil {
			return fmt.Errorf("refusing to put it into SQL: %w", err)
		}
	}
	return nil
}

// EnsureTables creates each table of db that is missing (its DDL must say IF
// NOT EXISTS) and checks that it has the columns, in one call.
func (m *Meta) EnsureTables(ctx context.Context, db string, tables ...TableDef) (err error) {
	for _, t := range tables {
		if err := checkIdents(db, t.Name); err != nil {
			return err
		}
	}
	ctx, end := m.bound(ctx, "ensure_tables", db)
	defer func() { end(err == nil) }()
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
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
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
func (m *Meta) DatabasesWith(ctx context.Context, table string) (_ []string, err error) {
	ctx, end := m.bound(ctx, "databases_with "+table, "")
	defer func() { end(err == nil) }()
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
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("finding the tables %q: %w", table, err)
	}
	return dbs, nil
}

// MySQL error numbers a probe tells apart.
const (
	mysqlDBAccessDenied = 1044 // ER_DBACCESS_DENIED_ERROR
	mysqlAccessDenied   = 1045 // ER_ACCESS_DENIED_ERROR
	mysqlBadDB          = 1049 // ER_BAD_DB_ERROR
)

// Probe connects to the MySQL port and, when db is not empty, checks that
// the database exists. A failure is a *ProbeError whose Cause tells an
// operator's error (refused credentials, a host name that does not resolve,
// a TLS setup the server refuses, a missing database) from one that may pass
// (the FE is down).
func (m *Meta) Probe(ctx context.Context, db string) *ProbeError {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	fail := func(cause Cause, err error) *ProbeError {
		return &ProbeError{Addr: redact.URL(m.addr), Cause: cause, Err: redact.Error(err)}
	}
	if err := m.db.PingContext(ctx); err != nil {
		if pe := m.authPluginError(err); pe != nil {
			return fail(CauseAuthPlugin, pe)
		}
		cause := mysqlCause(err)
		if cause == CauseUnreachable && m.addr != "" && parent.Err() == nil {
			// No MySQL answer: perhaps no MySQL server (the FE's HTTP
			// port), which no retry fixes.
			if werr := sniffMySQLPort(parent, m.addr); werr != nil {
				return fail(CauseWrongPort, fmt.Errorf("%w (the driver: %v)", werr, err))
			}
		}
		return fail(cause, err)
	}
	if db == "" {
		return nil
	}
	var n int
	if err := m.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.schemata WHERE SCHEMA_NAME = ?", db).Scan(&n); err != nil {
		return fail(mysqlCause(err), fmt.Errorf("looking the database %s up: %w", db, err))
	}
	if n == 0 {
		return fail(CauseNoDatabase, fmt.Errorf("the database %s is not in information_schema.schemata: it does not exist, or user %q may not see it (schemata lists only the databases the user holds a privilege on); create it, or grant the user its privileges on it (INSERT, and CREATE TABLE for tables the client creates)", db, m.user))
	}
	return nil
}

// AuthPluginError is a connection the client gave up during authentication
// because the server asked for an authentication plugin it does not use, or
// may not: the clear-text password of an LDAP account without
// MetaConfig.AllowCleartextPasswords, the pre-4.1 password hash, a plugin
// the driver does not know. The account is the same on every FE, so no
// retry helps.
type AuthPluginError struct {
	// Plugin is the plugin the server asked for ("" when the driver did
	// not name it).
	Plugin string
	// Cleartext is set when the plugin is mysql_clear_password: allowing
	// clear-text passwords (MetaConfig.AllowCleartextPasswords) fixes it.
	Cleartext bool
	Err       error
}

// The plugins the messages name.
const (
	pluginClearPassword = "mysql_clear_password"
	pluginOldPassword   = "mysql_old_password"
	pluginNative        = "mysql_native_password"
)

func (e *AuthPluginError) Error() string {
	switch e.Plugin {
	case pluginClearPassword:
		return fmt.Sprintf("the server asks for the password in clear text (%s), as StarRocks does for an account that authenticates through LDAP (authentication_ldap_simple), and clear-text passwords are not allowed: allow them, with TLS so the password is encrypted on the way, or use an account with a password of StarRocks's own (%s): %v", e.Plugin, pluginNative, e.Err)
	case pluginOldPassword:
		return fmt.Sprintf("the server asks for the pre-4.1 password hash (%s), which the client refuses: give the account a new password: %v", e.Plugin, e.Err)
	case pluginNative:
		return fmt.Sprintf("the server asks for %s, which the client is set to refuse: %v", e.Plugin, e.Err)
	case "":
		return fmt.Sprintf("the server asks for an authentication plugin the MySQL driver does not support (named in the driver's log line): use an account that authenticates with %s, or through LDAP (%s): %v", pluginNative, pluginClearPassword, e.Err)
	}
	return fmt.Sprintf("the server asks for the authentication plugin %s, which the MySQL driver does not support: use an account that authenticates with %s, or through LDAP (%s): %v", e.Plugin, pluginNative, pluginClearPassword, e.Err)
}

func (e *AuthPluginError) Unwrap() error { return e.Err }

// authPluginError is err as an AuthPluginError when the driver gave up on
// the plugin the server asked for, nil otherwise.
func (m *Meta) authPluginError(err error) *AuthPluginError {
	switch {
	case errors.Is(err, mysql.ErrCleartextPassword):
		return &AuthPluginError{Plugin: pluginClearPassword, Cleartext: true, Err: err}
	case errors.Is(err, mysql.ErrOldPassword):
		return &AuthPluginError{Plugin: pluginOldPassword, Err: err}
	case errors.Is(err, mysql.ErrNativePassword):
		return &AuthPluginError{Plugin: pluginNative, Err: err}
	case errors.Is(err, mysql.ErrUnknownPlugin):
		e := &AuthPluginError{Err: err}
		if m.plugin != nil {
			if p := m.plugin.Load(); p != nil {
				e.Plugin = *p
			}
		}
		return e
	}
	return nil
}

// mysqlCause classifies an error of the MySQL driver.
func mysqlCause(err error) Cause {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case mysqlAccessDenied, mysqlDBAccessDenied:
			return CauseAuth
		case mysqlBadDB:
			return CauseNoDatabase
		}
		return CauseUnreachable
	}
	if errors.Is(err, mysql.ErrNoTLS) {
		return CauseTLS
	}
	return transportCause(err)
}
