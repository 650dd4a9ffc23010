package store

import (
	"database/sql"
	"fmt"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// TestConcurrentCatalogQueries runs information_schema and SHOW queries on
// several connections at once, in every spelling a client uses (qualified,
// after USE information_schema, joined with data), as the output's table
// model lookups and progress reads do. Under -race it fails if planning
// one query writes what another query's plan reads.
func TestConcurrentCatalogQueries(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript(`CREATE DATABASE db;
CREATE TABLE db.pk (id BIGINT NOT NULL, v VARCHAR(10)) PRIMARY KEY (id) DISTRIBUTED BY HASH (id);
CREATE TABLE db.dup (id BIGINT, v VARCHAR(10)) DUPLICATE KEY (id) DISTRIBUTED BY HASH (id);`))
	srv, err := s.ServeMySQL("127.0.0.1:0", "root", "")
	require.NoError(t, err)
	defer srv.Close()
	queries := []struct{ db, q string }{
		{"", "SELECT TABLE_MODEL FROM information_schema.tables_config WHERE TABLE_SCHEMA = 'db' AND TABLE_NAME = 'pk'"},
		{"", "SELECT COUNT(*), COALESCE(SUM(CASE WHEN COLUMN_KEY = 'PRI' THEN 1 ELSE 0 END), 0) FROM information_schema.columns WHERE TABLE_SCHEMA = 'db' AND TABLE_NAME = 'pk'"},
		{"", "SELECT TABLE_SCHEMA FROM information_schema.tables WHERE TABLE_NAME = 'dup'"},
		{"information_schema", "SELECT COUNT(*) FROM columns WHERE TABLE_SCHEMA = 'db'"},
		{"information_schema", "SELECT COUNT(*) FROM tables WHERE TABLE_SCHEMA = 'db'"},
		{"information_schema", "SELECT COUNT(*) FROM schemata"},
		{"db", "SELECT COUNT(*) FROM pk JOIN information_schema.tables t ON t.TABLE_NAME = 'pk'"},
		{"db", "SHOW TABLES"},
		{"db", "SHOW COLUMNS FROM pk"},
		{"db", "DESCRIBE dup"},
		{"", "SHOW DATABASES"},
		{"information_schema", "SELECT COUNT(*) FROM statistics"},
		{"information_schema", "SELECT COUNT(*) FROM routines"},
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(queries))
	// Two workers per query, each on its own connection, so every query
	// runs concurrently with itself and with the others.
	for w := 0; w < 2*len(queries); w++ {
		q := queries[w%len(queries)]
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", srv.Addr(), q.db
		cfg.InterpolateParams = true
		conn, err := mysql.NewConnector(cfg)
		require.NoError(t, err)
		db := sql.OpenDB(conn)
		defer db.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				rows, err := db.Query(q.q)
				if err == nil {
					for rows.Next() {
					}
					err = rows.Close()
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", q.q, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
