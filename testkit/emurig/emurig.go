// Package emurig starts the StarRocks emulator inside a test: one way for
// every package's tests, started one at a time (go-mysql-server's engine
// constructor writes process-global status variables, a race when two start
// at once), closed when the test ends, with a MySQL client when the test
// reads through SQL.
package emurig

import (
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
)

// startMu serialises emulator starts in this test binary.
var startMu sync.Mutex

// Start starts an emulator with cfg for t and closes it when t ends. An
// empty HTTPAddr is a free loopback port (the emulator's own default is
// the fixed 8030); MySQLAddr stays as given ("" = no MySQL port).
func Start(t testing.TB, cfg emulator.Config) *emulator.Emulator {
	t.Helper()
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	startMu.Lock()
	em, err := emulator.Start(cfg)
	startMu.Unlock()
	require.NoError(t, err, "starting the emulator")
	t.Cleanup(func() { _ = em.Close() })
	return em
}

// StartSQL is Start with a MySQL port (a free loopback port when
// cfg.MySQLAddr is empty) and a client on it as root, closed when t ends.
func StartSQL(t testing.TB, cfg emulator.Config) (*emulator.Emulator, *sql.DB) {
	t.Helper()
	if cfg.MySQLAddr == "" {
		cfg.MySQLAddr = "127.0.0.1:0"
	}
	em := Start(t, cfg)
	return em, Open(t, em.MySQLAddr())
}

// Open opens a MySQL client as root on addr and closes it when t ends.
func Open(t testing.TB, addr string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", addr
	connector, err := mysql.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(connector)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// ExampleSchema is examples/schema.sql: the orders, order_items and
// order_events tables of the workload (testkit/workload).
func ExampleSchema(t testing.TB) string {
	t.Helper()
	return readRepoFile(t, "examples", "schema.sql")
}

// readRepoFile reads a file of the repository by its path from the root
// (this source file is testkit/emurig/emurig.go).
func readRepoFile(t testing.TB, elem ...string) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	require.True(t, ok, "locating the test kit's source")
	root := filepath.Join(filepath.Dir(self), "..", "..")
	b, err := os.ReadFile(filepath.Join(append([]string{root}, elem...)...))
	require.NoError(t, err)
	return string(b)
}
