package store

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
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
	setGlobals()
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
	h := &ddlHandler{bridge: br, stop: make(chan struct{}), version: defaultServerVersion}
	for _, o := range opts {
		o(h)
	}
	// current_version() and @@version_comment answer as StarRocks does (version.go).
	h.registerVersion(engine.Analyzer.Catalog)
	srv, err := server.NewServerWithHandler(cfg, engine, sql.NewContext, h.sessionBuilder, nil,
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

var globalsOnce sync.Once

// setGlobals sets @@time_zone (StarRocks's default, Asia/Shanghai, not the machine's
// SYSTEM), a global of go-mysql-server's process-wide system variables, once.
// @@version_comment is set per session (version.go).
func setGlobals() {
	globalsOnce.Do(func() {
		_ = sql.SystemVariables.AssignValues(map[string]any{"time_zone": DefaultTimeZone})
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
	// version is what current_version(), @@version_comment and SHOW PROC's columns say.
	version ServerVersion
	stop    chan struct{} // closed when the server closes
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
	s := h.bridge.store
	txnID := s.takeAlterTxnID(toks)
	s.mu.Lock()
	err := s.execWithTxnLocked(toks, &cur, stmt, txnID)
	s.mu.Unlock()
	if err != nil {
		// StarRocks answers a refused DDL statement with error 1064 (the DdlException's
		// message), as its regression tests show (docs/notes/starrocks-protocol.md §11.2).
		return sysErr("%s", err.Error())
	}
	if sess != nil && cur != before {
		sess.SetCurrentDatabase(cur)
	}
	return callback(&sqltypes.Result{}, more)
}
