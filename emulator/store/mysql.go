package store

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
)

// MySQLServer is a running MySQL-protocol server over a Store.
type MySQLServer interface {
	Addr() string
	// Statements is how many statements the server executed.
	Statements() int64
	Close() error
}

// ServeMySQL starts a MySQL-protocol server (go-mysql-server) on addr ("127.0.0.1:0" picks a
// free port) over the committed data. Only user/password is accepted (an empty password
// allows password-less login for user).
//
// Every query runs against one snapshot pinned when the query arrives, so a query joining or
// sub-selecting several tables sees each of them at the same commit. StarRocks DDL (CREATE /
// DROP DATABASE and TABLE) is intercepted before go-mysql-server parses it and runs through
// the store's DDL parser, so a mysql client can create tables in StarRocks syntax.
func (s *Store) ServeMySQL(addr, user, password string, opts ...MySQLOption) (MySQLServer, error) {
	if user == "" {
		return nil, fmt.Errorf("mysql server: user must not be empty")
	}
	br := &sqlBridge{store: s}
	engine := newEngine(br)
	engine.Analyzer.Catalog.InfoSchema = &infoSchema{Database: engine.Analyzer.Catalog.InfoSchema, bridge: br}
	// current_version() and @@version_comment answer as StarRocks does, naming the emulator.
	engine.Analyzer.Catalog.RegisterFunction(sql.NewEmptyContext(), sql.NewFunction0("current_version", func() sql.Expression {
		return expression.NewLiteral(Version, types.LongText)
	}))
	setVersionComment()
	mdb := engine.Analyzer.Catalog.MySQLDb
	ed := mdb.Editor()
	mdb.AddSuperUser(ed, user, "%", password)
	ed.Close()
	mdb.SetEnabled(true)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err // "listen tcp <addr>: …" names what failed
	}
	cfg := server.Config{Protocol: "tcp", Address: ln.Addr().String(), Listener: ln, Version: "8.0.33-StarRocks-emulator"}
	h := &ddlHandler{bridge: br, stop: make(chan struct{})}
	for _, o := range opts {
		o(h)
	}
	srv, err := server.NewServerWithHandler(cfg, engine, sql.NewContext, sessionBuilder, nil,
		func(inner mysql.Handler) (mysql.Handler, error) {
			h.Handler = inner
			return h, nil
		})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("mysql server: %w", err)
	}
	h.sm = srv.SessionManager()
	// Listener.Accept is what Server.Start runs, minus its start-up log lines.
	go srv.Listener.Accept()
	return &mysqlServer{srv: srv, addr: ln.Addr().String(), stop: h.stop, h: h}, nil
}

type mysqlServer struct {
	srv  *server.Server
	h    *ddlHandler
	addr string
	stop chan struct{}
	once sync.Once
	err  error
}

func (m *mysqlServer) Addr() string { return m.addr }

func (m *mysqlServer) Statements() int64 { return m.h.executed.Load() }

func (m *mysqlServer) Close() error {
	m.once.Do(func() {
		close(m.stop)
		m.err = m.srv.Close()
	})
	return m.err
}

var versionOnce sync.Once

// setVersionComment sets @@version_comment and @@time_zone (StarRocks's default,
// Asia/Shanghai, not the machine's SYSTEM), globals of go-mysql-server's process-wide
// system variables, once.
func setVersionComment() {
	versionOnce.Do(func() {
		_ = sql.SystemVariables.AssignValues(map[string]any{"version_comment": VersionComment, "time_zone": DefaultTimeZone})
	})
}

func sessionBuilder(ctx context.Context, conn *mysql.Conn, addr string) (sql.Session, error) {
	host, user := "", ""
	if u, ok := conn.UserData.(sql.MysqlConnectionUser); ok {
		host, user = u.Host, u.User
	}
	client := sql.Client{Address: host, User: user, Capabilities: conn.Capabilities}
	return sql.NewBaseSessionWithClientServer(addr, client, conn.ConnectionID), nil
}

// ddlHandler wraps go-mysql-server's handler: it pins a snapshot per query and runs StarRocks
// DDL through the store.
type ddlHandler struct {
	mysql.Handler
	bridge *sqlBridge
	sm     *server.SessionManager
	hook   StatementHook // nil: no faults
	stop   chan struct{} // closed when the server closes
	// executed counts the statements that ran (faulted ones included,
	// unless the fault refused or reset them first).
	executed atomic.Int64
}

func (h *ddlHandler) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	return h.withFault(c, query, callback, func(callback mysql.ResultSpoolFn) error {
		if res, ok, err := h.systemStatement(ctx, c, query); ok {
			if err != nil {
				return err
			}
			return callback(res, false)
		}
		if toks, ok := h.interceptable(query); ok {
			return h.runDDL(ctx, c, query, toks, false, callback)
		}
		defer h.bridge.pin(c.ConnectionID)()
		return h.Handler.ComQuery(ctx, c, query, callback)
	})
}

func (h *ddlHandler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	var rest string
	err := h.withFault(c, query, callback, func(callback mysql.ResultSpoolFn) error {
		var err error
		rest, err = h.multiQuery(ctx, c, query, callback)
		return err
	})
	return rest, err
}

func (h *ddlHandler) multiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	if res, ok, err := h.systemStatement(ctx, c, query); ok {
		if err != nil {
			return "", err
		}
		return "", callback(res, false)
	}
	if toks, ok := h.interceptable(query); ok {
		// run the first statement only and hand back the rest
		end := len(toks)
		for i, t := range toks {
			if t.isPunct(";") {
				end = i
				break
			}
		}
		rest := ""
		stmt := query
		if end < len(toks) {
			stmt = query[:toks[end].off]
			rest = strings.TrimSpace(query[toks[end].end:])
		}
		return rest, h.runDDL(ctx, c, stmt, toks[:end], rest != "", callback)
	}
	defer h.bridge.pin(c.ConnectionID)()
	return h.Handler.ComMultiQuery(ctx, c, query, callback)
}

func (h *ddlHandler) ComPrepare(ctx context.Context, c *mysql.Conn, query string, prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	defer h.bridge.pin(c.ConnectionID)()
	return h.Handler.ComPrepare(ctx, c, query, prepare)
}

func (h *ddlHandler) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	spool := func(r *sqltypes.Result, _ bool) error { return callback(r) }
	return h.withFault(c, prepare.PrepareStmt, spool, func(spool mysql.ResultSpoolFn) error {
		defer h.bridge.pin(c.ConnectionID)()
		return h.Handler.ComStmtExecute(ctx, c, prepare, func(r *sqltypes.Result) error { return spool(r, false) })
	})
}

// interceptable reports whether query starts with CREATE/DROP DATABASE/SCHEMA/TABLE or
// TRUNCATE.
func (h *ddlHandler) interceptable(query string) ([]token, bool) {
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) < 4 {
		return nil, false
	}
	if w := strings.ToLower(q[:4]); w != "crea" && w != "drop" && w != "trun" && w != "alte" && !strings.HasPrefix(q, "/*") && !strings.HasPrefix(q, "--") && !strings.HasPrefix(q, "#") {
		return nil, false
	}
	toks, err := lexScript(query)
	if err != nil || len(toks) < 2 {
		return nil, false
	}
	if toks[0].is("truncate") || toks[0].is("alter") && toks[1].is("table") {
		return toks, true
	}
	if !(toks[0].is("create") || toks[0].is("drop")) {
		return nil, false
	}
	if k := toks[1]; k.is("database") || k.is("schema") || k.is("table") {
		return toks, true
	}
	return nil, false
}

// runDDL executes one intercepted statement; more tells the client further statements of a
// multi-statement query follow.
func (h *ddlHandler) runDDL(ctx context.Context, c *mysql.Conn, stmt string, toks []token, more bool, callback mysql.ResultSpoolFn) error {
	var sess sql.Session
	cur := ""
	if h.sm != nil {
		sctx, err := h.sm.NewContextWithQuery(ctx, c, stmt)
		if err != nil {
			return err
		}
		sess = sctx.Session
		cur = sess.GetCurrentDatabase()
	}
	if n := len(toks); n > 0 && toks[n-1].isPunct(";") {
		toks = toks[:n-1]
	}
	before := cur
	h.bridge.store.mu.Lock()
	err := h.bridge.store.execLocked(toks, &cur, stmt)
	h.bridge.store.mu.Unlock()
	if err != nil {
		return mysql.NewSQLError(mysql.ERUnknownError, mysql.SSUnknownSQLState, "%s", err.Error())
	}
	if sess != nil && cur != before {
		sess.SetCurrentDatabase(cur)
	}
	return callback(&sqltypes.Result{}, more)
}

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

// sqlTable is one table at one snapshot.
type sqlTable struct {
	store  *Store
	state  *tableState
	schema sql.Schema
}

var _ sql.Table = (*sqlTable)(nil)

func newSQLTable(s *Store, t *tableState) *sqlTable {
	sc := t.schema
	out := make(sql.Schema, len(sc.Columns))
	for i := range sc.Columns {
		c := &sc.Columns[i]
		col := &sql.Column{
			Name:           c.Name,
			Type:           sqlType(c),
			Nullable:       c.Nullable,
			Source:         sc.Name,
			DatabaseSource: sc.DB,
			PrimaryKey:     i < len(sc.keyIdx) && sc.KeyType == PrimaryKey, // COLUMN_KEY PRI only for PRIMARY KEY tables
			Comment:        c.Comment,
		}
		col.Default = sqlDefault(c, col.Type)
		out[i] = col
	}
	return &sqlTable{store: s, state: t, schema: out}
}

// sqlDefault renders a column's DEFAULT for go-mysql-server (INSERT, DESCRIBE).
func sqlDefault(c *Column, typ sql.Type) *sql.ColumnDefaultValue {
	var expr sql.Expression
	switch {
	case c.DefaultCurrentTimestamp:
		now, err := function.NewNow()
		if err != nil {
			return nil
		}
		expr = now
	case c.Default != nil:
		expr = expression.NewLiteral(toSQLValue(c, c.defaultValue), typ)
	default:
		return nil
	}
	d, err := sql.NewColumnDefaultValue(expr, typ, !c.DefaultCurrentTimestamp, false, c.Nullable)
	if err != nil {
		return nil
	}
	return d
}

func sqlType(c *Column) sql.Type {
	switch c.Type {
	case TypeTinyInt:
		return types.Int8
	case TypeSmallInt:
		return types.Int16
	case TypeInt:
		return types.Int32
	case TypeBigInt:
		return types.Int64
	case TypeLargeInt:
		return types.MustCreateDecimalType(39, 0)
	case TypeDecimal:
		return types.MustCreateDecimalType(uint8(c.Precision), uint8(c.Scale))
	case TypeFloat:
		return types.Float32
	case TypeDouble:
		return types.Float64
	case TypeBoolean:
		return types.Boolean
	case TypeChar:
		return types.MustCreateStringWithDefaults(sqltypes.Char, int64(c.Length))
	case TypeVarchar:
		if c.Length <= 16383 {
			return types.MustCreateStringWithDefaults(sqltypes.VarChar, int64(c.Length))
		}
		return types.LongText
	case TypeString:
		return types.Text
	case TypeDate:
		return types.Date
	case TypeDatetime:
		return types.DatetimeMaxPrecision
	case TypeJSON:
		return types.JSON
	}
	return types.LongText
}

func (t *sqlTable) Name() string               { return t.state.schema.Name }
func (t *sqlTable) String() string             { return t.state.schema.Name }
func (t *sqlTable) Schema() sql.Schema         { return t.schema }
func (t *sqlTable) Collation() sql.CollationID { return sql.Collation_Default }

var _ sql.StatisticsTable = (*sqlTable)(nil)

// RowCount implements sql.StatisticsTable: the exact count of the pinned snapshot, which lets
// go-mysql-server answer COUNT(*) without scanning.
func (t *sqlTable) RowCount(*sql.Context) (uint64, bool, error) {
	return uint64(t.state.rows.len), true, nil
}

// DataLength implements sql.StatisticsTable with a rough estimate.
func (t *sqlTable) DataLength(*sql.Context) (uint64, error) {
	return uint64(t.state.rows.len) * uint64(16*len(t.schema)), nil
}

type onePartition struct{}

func (onePartition) Key() []byte { return []byte("all") }

func (t *sqlTable) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return sql.PartitionsToPartitionIter(onePartition{}), nil
}

func (t *sqlTable) PartitionRows(*sql.Context, sql.Partition) (sql.RowIter, error) {
	return &rowIter{cur: newCursor(t.state.rows), cols: t.state.schema.Columns}, nil
}

type rowIter struct {
	cur  *cursor
	cols []Column
}

func (it *rowIter) Next(*sql.Context) (sql.Row, error) {
	vals, ok := it.cur.next()
	if !ok {
		return nil, io.EOF
	}
	row := make(sql.Row, len(vals))
	for i, v := range vals {
		row[i] = toSQLValue(&it.cols[i], v)
	}
	return row, nil
}

func (it *rowIter) Close(*sql.Context) error { return nil }

func toSQLValue(c *Column, v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		if x {
			return int8(1)
		}
		return int8(0)
	case string:
		if c.Type == TypeJSON {
			return types.NewLazyJSONDocument([]byte(x))
		}
		return x
	case time.Time:
		return x
	default:
		return v
	}
}

// cursor walks a B+tree snapshot in key order.
type cursor struct {
	stack []cursorFrame
}

type cursorFrame struct {
	n *bnode
	i int
}

func newCursor(t *btree) *cursor {
	c := &cursor{}
	c.descend(t.root)
	return c
}

func (c *cursor) descend(n *bnode) {
	for {
		c.stack = append(c.stack, cursorFrame{n: n})
		if n.leaf() {
			return
		}
		if len(n.kids) == 0 {
			return
		}
		n = n.kids[0]
	}
}

func (c *cursor) next() ([]any, bool) {
	for len(c.stack) > 0 {
		top := &c.stack[len(c.stack)-1]
		if top.n.leaf() {
			if top.i < len(top.n.vals) {
				v := top.n.vals[top.i]
				top.i++
				return v, true
			}
			c.stack = c.stack[:len(c.stack)-1]
			continue
		}
		top.i++
		if top.i < len(top.n.kids) {
			c.descend(top.n.kids[top.i])
			continue
		}
		c.stack = c.stack[:len(c.stack)-1]
	}
	return nil, false
}
