package emulator

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mysqlConn opens one connection with the given read timeout (the
// client's timeout of the matrix).
func mysqlConn(t *testing.T, e *Emulator, timeout time.Duration) *sql.Conn {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", e.MySQLAddr()
	cfg.InterpolateParams = true
	cfg.ReadTimeout = timeout
	conn, err := mysql.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(conn)
	t.Cleanup(func() { _ = db.Close() })
	c, err := db.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestFaultMatrixMySQL runs the statements the output sends over the MySQL
// port — information_schema lookups, CREATE TABLE, SELECTs of the progress
// and writer tables — under each outcome: refused with an error, reset
// before executing, executed then dropped, reply late, slow.
func TestFaultMatrixMySQL(t *testing.T) {
	t.Parallel()
	const late = 400 * time.Millisecond
	type stmt struct {
		name, pattern string
		query         func(n int) string
		// applied tells whether the statement's effect is there; nil for
		// reads, whose execution the statement counter shows.
		applied func(e *Emulator, n int) bool
		// result checks a successful reply.
		result func(t *testing.T, rows *sql.Rows)
		// version is the StarRocks version the emulator answers as ("": 4.0).
		version string
	}
	scalar := func(want string) func(t *testing.T, rows *sql.Rows) {
		return func(t *testing.T, rows *sql.Rows) {
			require.True(t, rows.Next(), "one row")
			var got sql.NullString
			require.NoError(t, rows.Scan(&got))
			assert.Equal(t, want, got.String)
		}
	}
	stmts := []stmt{
		{
			name: "information_schema lookup", pattern: `information_schema\.tables_config`,
			query: func(int) string {
				return "SELECT TABLE_MODEL FROM information_schema.tables_config WHERE TABLE_SCHEMA = 'test' AND TABLE_NAME = 'orders'"
			},
			result: scalar("PRIMARY_KEYS"),
		},
		{
			name: "CREATE TABLE", pattern: `^\s*CREATE TABLE`,
			query: func(n int) string {
				return fmt.Sprintf("CREATE TABLE test.progress_%d (k VARCHAR(64) NOT NULL, v BIGINT) PRIMARY KEY (k) DISTRIBUTED BY HASH (k)", n)
			},
			applied: func(e *Emulator, n int) bool {
				_, err := e.Store().Table("test", fmt.Sprintf("progress_%d", n))
				return err == nil
			},
		},
		{
			name: "SELECT of the progress table", pattern: `FROM test\.orders`,
			query:  func(int) string { return "SELECT COUNT(*) FROM test.orders" },
			result: scalar("0"),
		},
		{
			// what transaction_mode auto reads of a FE (docs/notes/starrocks-protocol.md §12.2)
			name: "3.3 current_version()", pattern: `current_version`, version: "3.3",
			query:  func(int) string { return "SELECT current_version()" },
			result: scalar("3.3.0-emulator"),
		},
		{
			// how a client finds its prepared labels after a crash (§12.4)
			name: "3.3 SHOW PROC of the running transactions", pattern: `(?i)^\s*show\s+proc`, version: "3.3",
			query: func(int) string { return "SHOW PROC '/transactions/test/running'" },
		},
	}
	type cell struct {
		name    string
		fault   Fault
		timeout time.Duration
		ran     bool
		check   func(t *testing.T, err error, elapsed time.Duration)
	}
	bad := func(t *testing.T, err error, _ time.Duration) {
		require.Error(t, err)
		assert.ErrorIs(t, err, mysql.ErrInvalidConn, "the connection broke without a reply")
	}
	cells := []cell{
		{"refused", Fault{Action: ActSQLError, Code: 1064, Message: "injected refusal"}, 5 * time.Second, false,
			func(t *testing.T, err error, _ time.Duration) {
				var me *mysql.MySQLError
				require.True(t, errors.As(err, &me), "a MySQL error: %v", err)
				assert.Equal(t, uint16(1064), me.Number)
				assert.Equal(t, "injected refusal", me.Message)
			}},
		{"reset before executing", Fault{Action: ActReset}, 5 * time.Second, false, bad},
		{"executed then dropped", Fault{Action: ActReplyLost}, 5 * time.Second, true, bad},
		{"executed then dropped (mysql_reply_lost)", Fault{Action: ActMySQLReplyLost}, 5 * time.Second, true, bad},
		{"reply after the client's timeout", Fault{Action: ActReplyLate, Delay: 5 * time.Second}, late, true,
			func(t *testing.T, err error, elapsed time.Duration) {
				require.Error(t, err)
				assert.GreaterOrEqual(t, elapsed, late)
			}},
		{"reply late to a patient client", Fault{Action: ActReplyLate, Delay: late}, 10 * time.Second, true,
			func(t *testing.T, err error, elapsed time.Duration) {
				require.NoError(t, err)
				assert.GreaterOrEqual(t, elapsed, late)
			}},
		{"no answer", Fault{Action: ActNoAnswer}, late, true, func(t *testing.T, err error, _ time.Duration) { require.Error(t, err) }},
		{"slow", Fault{Action: ActDelay, Delay: late}, 10 * time.Second, true,
			func(t *testing.T, err error, elapsed time.Duration) {
				require.NoError(t, err)
				assert.GreaterOrEqual(t, elapsed, late)
			}},
	}
	for _, st := range stmts {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0"; c.StarRocksVersion = st.version })
			var n atomic.Int64
			for _, cl := range cells {
				t.Run(cl.name, func(t *testing.T) {
					i := int(n.Add(1))
					conn := mysqlConn(t, e, cl.timeout)
					require.NoError(t, conn.PingContext(context.Background()))
					f := cl.fault
					f.Op, f.Statement = OpMySQL, st.pattern
					require.NoError(t, e.Faults().Add(f))
					before := e.Counters().Statements
					start := time.Now()
					rows, err := conn.QueryContext(context.Background(), st.query(i))
					if err == nil && st.result != nil {
						st.result(t, rows)
					}
					if err == nil {
						err = rows.Close()
					}
					cl.check(t, err, time.Since(start))
					assert.Empty(t, e.Faults().Pending(), "the fault fired")
					ran := func() bool { return e.Counters().Statements > before }
					if st.applied != nil {
						ran = func() bool { return st.applied(e, i) }
					}
					if cl.ran {
						require.Eventually(t, ran, 5*time.Second, 10*time.Millisecond, "the statement executed")
					} else {
						assert.False(t, ran(), "the statement did not execute")
					}
					// The next statement on a fresh connection is served.
					var one int
					require.NoError(t, mysqlConn(t, e, 5*time.Second).QueryRowContext(context.Background(), "SELECT 1").Scan(&one))
				})
			}
		})
	}
}

// TestFaultMySQLStatementPattern: a fault hits only the statements its
// pattern matches, and exactly Count of them.
func TestFaultMySQLStatementPattern(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	require.NoError(t, e.Faults().Add(Fault{Op: OpMySQL, Action: ActSQLError, Statement: "information_schema", Count: 2}))
	db := openMySQL(t, e)
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM test.orders").Scan(&n), "not matched")
	for i := 0; i < 2; i++ {
		err := db.QueryRow("SELECT COUNT(*) FROM INFORMATION_SCHEMA.columns WHERE TABLE_SCHEMA = 'test'").Scan(&n)
		require.Error(t, err, "matched case-insensitively")
	}
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.columns WHERE TABLE_SCHEMA = 'test'").Scan(&n))
	assert.Positive(t, n)
	r := newClient(t, e).do("POST", "/_emulator/faults", nil, `{"op":"mysql","action":"reply_late","statement":"^SELECT","delay":"10ms"}`)
	require.Equal(t, 200, r.code, r.raw)
	require.Len(t, e.Faults().Pending(), 1)
	assert.Equal(t, "^SELECT", e.Faults().Pending()[0].Statement)
}
