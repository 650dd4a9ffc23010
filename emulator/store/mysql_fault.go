package store

import (
	"errors"
	"net"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
)

// StatementAction is what the MySQL server does with one statement, as a StatementHook
// decides.
type StatementAction int

// The statement actions: the five outcomes a client of the MySQL port must survive.
const (
	// StatementRun executes the statement normally.
	StatementRun StatementAction = iota
	// StatementError refuses the statement with a MySQL error; nothing executes.
	StatementError
	// StatementReset drops the connection (RST) before the statement executes.
	StatementReset
	// StatementDelay waits, then executes the statement normally.
	StatementDelay
	// StatementReplyLost executes the statement, then drops the connection without a reply.
	StatementReplyLost
	// StatementReplyLate executes the statement and holds its reply for the delay.
	StatementReplyLate
	// StatementNoAnswer executes the statement, then sends nothing until the delay passes (or,
	// without one, until the client closes its side) and drops the connection.
	StatementNoAnswer
)

// StatementFault is a StatementHook's answer for one statement.
type StatementFault struct {
	Action StatementAction
	Delay  time.Duration
	// Code and Message are the MySQL error of StatementError (SQLSTATE HY000).
	Code    int
	Message string
}

// StatementHook is consulted once for every statement a MySQL client sends (a text query,
// a multi-statement query or the execution of a prepared statement; not the prepare itself).
type StatementHook func(stmt string) StatementFault

// MySQLOption configures ServeMySQL.
type MySQLOption func(*ddlHandler)

// WithStatementHook makes the server consult hook before every statement.
func WithStatementHook(hook StatementHook) MySQLOption {
	return func(h *ddlHandler) { h.hook = hook }
}

// errDropped is what a handler returns after it dropped the connection: vitess then fails to
// write to it and ends the connection.
var errDropped = errors.New("connection dropped by an injected fault")

// dropConn closes the client connection abruptly (RST where possible).
func dropConn(c *mysql.Conn) {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// wait sleeps d or until the server closes; it reports whether d passed.
func (h *ddlHandler) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.stop:
		return false
	}
}

// waitClientGone blocks until the client closes its side of c or the server closes. Nothing
// else reads c while a statement runs, and c is dropped right after.
func (h *ddlHandler) waitClientGone(c *mysql.Conn) {
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		var b [1]byte
		for {
			if _, err := c.Conn.Read(b[:]); err != nil {
				return
			}
		}
	}()
	select {
	case <-gone:
	case <-h.stop:
	}
}

// withFault runs exec, which sends the statement's results through the spool it is given,
// under the fault the hook names for stmt.
func (h *ddlHandler) withFault(c *mysql.Conn, stmt string, callback mysql.ResultSpoolFn, exec func(mysql.ResultSpoolFn) error) error {
	run := exec
	exec = func(spool mysql.ResultSpoolFn) error {
		defer h.executed.Add(1)
		return run(spool)
	}
	if h.hook == nil {
		return exec(callback)
	}
	f := h.hook(stmt)
	discard := func(*sqltypes.Result, bool) error { return nil }
	switch f.Action {
	case StatementError:
		code := f.Code
		if code == 0 {
			code = 1064
		}
		msg := f.Message
		if msg == "" {
			msg = "injected error"
		}
		return mysql.NewSQLError(code, "HY000", "%s", msg)
	case StatementReset:
		dropConn(c)
		return errDropped
	case StatementDelay:
		h.wait(f.Delay)
		return exec(callback)
	case StatementReplyLost:
		_ = exec(discard)
		dropConn(c)
		return errDropped
	case StatementReplyLate:
		type spooled struct {
			res  *sqltypes.Result
			more bool
		}
		var held []spooled
		err := exec(func(r *sqltypes.Result, more bool) error {
			held = append(held, spooled{deepCopy(r), more})
			return nil
		})
		if !h.wait(f.Delay) {
			dropConn(c)
			return errDropped
		}
		for _, s := range held {
			if cerr := callback(s.res, s.more); cerr != nil {
				return cerr
			}
		}
		return err
	case StatementNoAnswer:
		_ = exec(discard)
		if f.Delay > 0 {
			h.wait(f.Delay)
		} else {
			h.waitClientGone(c)
		}
		dropConn(c)
		return errDropped
	}
	return exec(callback)
}

// deepCopy copies a result with its values' bytes: go-mysql-server reuses the buffers behind
// a result's values once the spool returns.
func deepCopy(r *sqltypes.Result) *sqltypes.Result {
	out := r.Copy()
	for _, row := range out.Rows {
		for i, v := range row {
			if v.IsNull() {
				continue
			}
			row[i] = sqltypes.MakeTrusted(v.Type(), append([]byte(nil), v.Raw()...))
		}
	}
	return out
}
