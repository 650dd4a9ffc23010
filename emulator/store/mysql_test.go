package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

func serve(t *testing.T, s *Store, user, pass string) MySQLServer {
	t.Helper()
	srv, err := s.ServeMySQL("127.0.0.1:0", user, pass)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func openDB(t *testing.T, srv MySQLServer, user, pass, db string, extra string) *sql.DB {
	t.Helper()
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s?parseTime=true%s", user, pass, srv.Addr(), db, extra)
	conn, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func seedOrders(t *testing.T, s *Store) {
	load(t, s, "test", "orders", `[
		{"order_id":1,"customer_id":10,"total_amount":"12.50","order_status":"new","updated_at":"2024-01-02 03:04:05.25"},
		{"order_id":2,"customer_id":10,"total_amount":"7.25","order_status":"paid","updated_at":"2024-01-03 00:00:00"},
		{"order_id":3,"customer_id":20,"total_amount":"100","order_status":"new"}]`, jsonParams(nil))
	load(t, s, "test", "order_items", `[
		{"order_id":1,"item_id":1,"product":"pen","quantity":2,"price":"1.25"},
		{"order_id":1,"item_id":2,"product":"ink","quantity":1,"price":"10.00"},
		{"order_id":2,"item_id":1,"product":"pad","quantity":5,"price":"1.45"}]`, jsonParams(nil))
}

func TestMySQLQueries(t *testing.T) {
	s := schemaStore(t)
	seedOrders(t, s)
	srv := serve(t, s, "root", "secret")
	db := openDB(t, srv, "root", "secret", "test", "")

	t.Run("where order by and typed scans", func(t *testing.T) {
		rows, err := db.Query("SELECT order_id, customer_id, total_amount, order_status, updated_at FROM orders WHERE customer_id = 10 ORDER BY order_id DESC")
		require.NoError(t, err)
		defer rows.Close()
		type rec struct {
			id, cust int64
			amt      string
			st       string
			ts       sql.NullTime
		}
		var got []rec
		for rows.Next() {
			var r rec
			require.NoError(t, rows.Scan(&r.id, &r.cust, &r.amt, &r.st, &r.ts))
			got = append(got, r)
		}
		require.NoError(t, rows.Err())
		require.Len(t, got, 2)
		assert.Equal(t, int64(2), got[0].id)
		assert.Equal(t, "7.25", got[0].amt)
		assert.Equal(t, "paid", got[0].st)
		assert.Equal(t, time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC), got[0].ts.Time)
		assert.Equal(t, time.Date(2024, 1, 2, 3, 4, 5, 250000000, time.UTC), got[1].ts.Time)
		assert.Equal(t, "12.50", got[1].amt)
	})
	t.Run("prepared statement with arguments", func(t *testing.T) {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM orders WHERE customer_id = ? AND total_amount > ?", 10, "1").Scan(&n))
		assert.Equal(t, 2, n)
	})
	t.Run("a prepared statement executed again sees new commits", func(t *testing.T) {
		stmt, err := db.Prepare("SELECT COUNT(*) FROM orders WHERE customer_id = ?")
		require.NoError(t, err)
		defer stmt.Close()
		var n int
		require.NoError(t, stmt.QueryRow(30).Scan(&n))
		assert.Equal(t, 0, n)
		load(t, s, "test", "orders", `[{"order_id":30,"customer_id":30}]`, jsonParams(nil))
		require.NoError(t, stmt.QueryRow(30).Scan(&n))
		assert.Equal(t, 1, n)
		load(t, s, "test", "orders", `[{"order_id":30,"customer_id":30,"__op":1}]`, jsonParams(nil))
		require.NoError(t, stmt.QueryRow(30).Scan(&n))
		assert.Equal(t, 0, n)
	})
	t.Run("a prepared COUNT(*) executed again sees new commits", func(t *testing.T) {
		stmt, err := db.Prepare("SELECT COUNT(*) FROM orders")
		require.NoError(t, err)
		defer stmt.Close()
		var before, after int
		require.NoError(t, stmt.QueryRow().Scan(&before))
		load(t, s, "test", "orders", `[{"order_id":31,"customer_id":31}]`, jsonParams(nil))
		require.NoError(t, stmt.QueryRow().Scan(&after))
		assert.Equal(t, before+1, after)
		load(t, s, "test", "orders", `[{"order_id":31,"customer_id":31,"__op":1}]`, jsonParams(nil))
		require.NoError(t, stmt.QueryRow().Scan(&after))
		assert.Equal(t, before, after)
	})
	t.Run("NULL datetime", func(t *testing.T) {
		var ts sql.NullTime
		require.NoError(t, db.QueryRow("SELECT updated_at FROM orders WHERE order_id = 3").Scan(&ts))
		assert.False(t, ts.Valid)
	})
	t.Run("join group by count sum", func(t *testing.T) {
		rows, err := db.Query(`SELECT o.customer_id, COUNT(*), SUM(i.quantity), SUM(i.price * i.quantity)
			FROM orders o JOIN order_items i ON o.order_id = i.order_id GROUP BY o.customer_id ORDER BY o.customer_id`)
		require.NoError(t, err)
		defer rows.Close()
		require.True(t, rows.Next())
		var cust, n int64
		var qty, total string
		require.NoError(t, rows.Scan(&cust, &n, &qty, &total))
		assert.Equal(t, int64(10), cust)
		assert.Equal(t, int64(3), n)
		assert.Equal(t, "8", qty)
		assert.Equal(t, "19.75", strings.TrimRight(total, "0"))
		assert.False(t, rows.Next())
	})
	t.Run("bigint scans into int64 interface", func(t *testing.T) {
		var v any
		require.NoError(t, db.QueryRow("SELECT order_id FROM orders WHERE order_id = 1").Scan(&v))
		assert.Equal(t, int64(1), v)
	})
	t.Run("show databases, show tables, describe, use", func(t *testing.T) {
		dbs := queryStrings(t, db, "SHOW DATABASES")
		assert.Contains(t, dbs, "test")
		assert.ElementsMatch(t, []string{"orders", "order_items", "order_events"}, queryStrings(t, db, "SHOW TABLES"))
		rows, err := db.Query("DESCRIBE orders")
		require.NoError(t, err)
		defer rows.Close()
		cols, _ := rows.Columns()
		var fields []string
		for rows.Next() {
			vals := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			fields = append(fields, string(vals[0])+" "+string(vals[1]))
		}
		assert.Equal(t, []string{"order_id bigint", "customer_id bigint", "total_amount decimal(10,2)", "order_status varchar(32)", "updated_at datetime"}, fields)

		conn, err := db.Conn(context.Background())
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.ExecContext(context.Background(), "USE information_schema")
		require.NoError(t, err)
		var n int
		require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM test.orders").Scan(&n))
		assert.Equal(t, 3, n)
	})
	t.Run("unknown table", func(t *testing.T) {
		_, err := db.Query("SELECT * FROM nope")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "nope")
	})
}

func queryStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestMySQLTypes(t *testing.T) {
	s := convStore(t)
	load(t, s, "db", "conv", `[{"id":1,"ti":-1,"si":2,"i":3,"b":4,"l":"170141183460469231731687303715884105727","d":"-1.5","f":1.5,"g":2.25,
		"bo":true,"c":"abc","v":"wxyz","s":"long","dt":"2024-02-29","ts":"2024-01-02 03:04:05.123456","j":{"a":[1,{"b":null}]}}]`, jsonParams(nil))
	srv := serve(t, s, "u", "p")
	db := openDB(t, srv, "u", "p", "db", "")
	var (
		ti, si, i, b int64
		l, d         string
		f, g         float64
		bo           bool
		c, v, str    string
		dt, ts       time.Time
		j            []byte
	)
	require.NoError(t, db.QueryRow("SELECT ti, si, i, b, l, d, f, g, bo, c, v, s, dt, ts, j FROM conv").Scan(&ti, &si, &i, &b, &l, &d, &f, &g, &bo, &c, &v, &str, &dt, &ts, &j))
	assert.Equal(t, []int64{-1, 2, 3, 4}, []int64{ti, si, i, b})
	assert.Equal(t, "170141183460469231731687303715884105727", l)
	assert.Equal(t, "-1.50", d)
	assert.Equal(t, 1.5, f)
	assert.Equal(t, 2.25, g)
	assert.True(t, bo)
	assert.Equal(t, []string{"abc", "wxyz", "long"}, []string{c, v, str})
	assert.Equal(t, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), dt)
	assert.Equal(t, time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC), ts)
	var doc any
	require.NoError(t, json.Unmarshal(j, &doc))
	assert.Equal(t, map[string]any{"a": []any{1.0, map[string]any{"b": nil}}}, doc)

	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM conv WHERE JSON_EXTRACT(j, '$.a[0]') = 1 AND d < 0 AND ts > '2024-01-01'").Scan(&n))
	assert.Equal(t, 1, n)
}

func TestMySQLAuth(t *testing.T) {
	s := schemaStore(t)
	srv := serve(t, s, "root", "secret")
	for _, c := range []struct{ user, pass string }{{"root", "wrong"}, {"root", ""}, {"other", "secret"}} {
		db := openDB(t, srv, c.user, c.pass, "test", "")
		err := db.Ping()
		require.Error(t, err, "%s/%s must be refused", c.user, c.pass)
		if c.pass == "wrong" {
			var me *mysql.MySQLError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, uint16(1045), me.Number, "access denied")
		}
	}
	require.NoError(t, openDB(t, srv, "root", "secret", "test", "").Ping())

	// an empty password configures a password-less user
	srv2 := serve(t, s, "root", "")
	require.NoError(t, openDB(t, srv2, "root", "", "test", "").Ping())
	require.Error(t, openDB(t, srv2, "root", "x", "test", "").Ping())
}

func TestMySQLStarRocksDDL(t *testing.T) {
	s := New()
	srv := serve(t, s, "root", "")
	db := openDB(t, srv, "root", "", "", "&multiStatements=true")
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `test`")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "USE test")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, ordersDDL)
	require.NoError(t, err)
	ts, err := s.Table("test", "orders")
	require.NoError(t, err)
	assert.Equal(t, PrimaryKey, ts.KeyType)

	// unqualified names use the session's database; several statements in one query
	_, err = conn.ExecContext(ctx, "CREATE TABLE t1 (id INT NOT NULL) DUPLICATE KEY(id); CREATE TABLE t2 (id INT NOT NULL) PRIMARY KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")
	require.NoError(t, err)
	_, err = s.Table("test", "t2")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"orders", "t1", "t2"}, queryStrings(t, db, "SHOW TABLES FROM test"))

	require.NoError(t, s.Apply([]TableChange{{DB: "test", Table: "t2", Rows: []Row{{Values: []any{int32(1)}}}}}))
	var n int
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t2").Scan(&n))
	assert.Equal(t, 1, n)
	_, err = conn.ExecContext(ctx, "TRUNCATE TABLE t2")
	require.NoError(t, err)
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t2").Scan(&n))
	assert.Equal(t, 0, n)

	_, err = conn.ExecContext(ctx, "DROP TABLE t1")
	require.NoError(t, err)
	_, err = s.Table("test", "t1")
	require.ErrorIs(t, err, ErrUnknownTable)

	_, err = conn.ExecContext(ctx, "CREATE TABLE bad (v INT NULL, id INT NOT NULL) PRIMARY KEY(id)")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Key columns should be a ordered prefix of the schema")

	_, err = conn.ExecContext(ctx, "DROP DATABASE test")
	require.NoError(t, err)
	_, ok := s.DatabaseID("test")
	assert.False(t, ok)
}

// TestMySQLAtomicVisibility: writers Apply two-table commits (the same ids into a and b)
// while readers over the MySQL port count both tables in one query, and join them.
func TestMySQLAtomicVisibility(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript(`CREATE DATABASE db;
		CREATE TABLE db.a (id BIGINT NOT NULL, v INT) PRIMARY KEY(id);
		CREATE TABLE db.b (id BIGINT NOT NULL, v INT) DUPLICATE KEY(id)`))
	srv := serve(t, s, "root", "pw")
	db := openDB(t, srv, "root", "pw", "db", "")
	db.SetMaxOpenConns(4)

	const commits, perCommit = 150, 5
	var stop atomic.Bool
	var checks atomic.Int64
	var readers atomic.Int32
	var wg sync.WaitGroup
	queries := []string{
		"SELECT (SELECT COUNT(*) FROM a), (SELECT COUNT(*) FROM b)",
		"SELECT (SELECT COUNT(*) FROM a JOIN b ON a.id = b.id), (SELECT COUNT(*) FROM b)",
		"SELECT (SELECT COALESCE(SUM(v),0) FROM a), (SELECT COALESCE(SUM(v),0) FROM b)",
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		readers.Add(1)
		go func(q string) {
			defer wg.Done()
			defer readers.Add(-1)
			for !stop.Load() {
				var x, y int64
				if !assert.NoError(t, db.QueryRow(q).Scan(&x, &y)) {
					return
				}
				if !assert.Equal(t, x, y, "%s saw half a commit", q) {
					return
				}
				checks.Add(1)
			}
		}(queries[r])
	}
	c := 0
	for ; c < commits || (checks.Load() < 30 && c < 50000); c++ {
		var ra, rb []Row
		for i := 0; i < perCommit; i++ {
			id := int64(c*perCommit + i)
			ra = append(ra, Row{Values: []any{id, int32(1)}})
			rb = append(rb, Row{Values: []any{id, int32(1)}})
		}
		require.NoError(t, s.Apply([]TableChange{{DB: "db", Table: "a", Rows: ra}, {DB: "db", Table: "b", Rows: rb}}))
		if c%10 == 0 {
			// Every tenth commit waits for a reader's next check: reads
			// interleave with the commits however the machine schedules.
			n := checks.Load()
			testkit.WaitFor(t, 30*time.Second, func() bool { return checks.Load() > n || readers.Load() == 0 }, "a reader's check after commit %d", c)
		}
	}
	stop.Store(true)
	wg.Wait()
	assert.GreaterOrEqual(t, checks.Load(), int64(30))
	var x, y int64
	require.NoError(t, db.QueryRow(queries[0]).Scan(&x, &y))
	assert.Equal(t, int64(c*perCommit), x)
	assert.Equal(t, x, y)
}

func TestMySQLWrites(t *testing.T) {
	s := convStore(t)
	srv := serve(t, s, "root", "")
	db := openDB(t, srv, "root", "", "db", "")
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := db.Exec(q, args...)
		require.NoError(t, err, q)
	}
	exec("INSERT INTO nn (id, req, opt) VALUES (1, 10, 100), (2, 20, NULL)")
	exec("INSERT INTO nn (id, req) VALUES (1, 11)") // PRIMARY KEY insert = upsert (defaults for the rest)
	assert.Equal(t, [][]any{{int64(1), int32(11), int32(7), nil}, {int64(2), int32(20), int32(7), nil}}, rowsOf(t, s, "db", "nn", "id", "req", "dflt", "opt"))

	exec("UPDATE nn SET opt = req * 2 WHERE id = 2")
	exec("UPDATE nn SET id = 3 WHERE id = 1") // key change: delete + upsert
	assert.Equal(t, [][]any{{int64(2), int32(40)}, {int64(3), nil}}, rowsOf(t, s, "db", "nn", "id", "opt"))
	exec("DELETE FROM nn WHERE id = 3")
	assert.Equal(t, [][]any{{int64(2)}}, rowsOf(t, s, "db", "nn", "id"))

	exec("INSERT INTO dup VALUES (1, 'a'), (1, 'a')")
	assert.Len(t, rowsOf(t, s, "db", "dup", "id"), 2)
	_, err := db.Exec("DELETE FROM dup WHERE id = 1")
	require.ErrorContains(t, err, "DELETE is only supported on PRIMARY KEY tables")
	_, err = db.Exec("UPDATE dup SET v = 'b'")
	require.ErrorContains(t, err, "UPDATE is only supported on PRIMARY KEY tables")
	assert.Len(t, rowsOf(t, s, "db", "dup", "id"), 2, "a failed statement changes nothing")

	exec(`INSERT INTO conv (id, bo, d, ts, j, l) VALUES (1, true, 1.239, '2024-01-02 03:04:05.5', '{"k": [1, 2]}', 5)`)
	rows, err := s.Rows("db", "conv")
	require.NoError(t, err)
	assert.Equal(t, true, rows[0]["bo"])
	assert.Equal(t, "1.24", rows[0]["d"].(decimal.Decimal).StringFixed(2))
	assert.Equal(t, time.Date(2024, 1, 2, 3, 4, 5, 500000000, time.UTC), rows[0]["ts"])
	assert.Equal(t, `{"k":[1,2]}`, rows[0]["j"])
	var j string
	require.NoError(t, db.QueryRow("SELECT j FROM conv").Scan(&j))
	assert.JSONEq(t, `{"k":[1,2]}`, j)

	_, err = db.Exec("INSERT INTO conv (id, v) VALUES (2, 'too long')")
	require.Error(t, err)
}

func TestMySQLTableModels(t *testing.T) {
	s := schemaStore(t)
	require.NoError(t, s.ExecDDL("CREATE TABLE test.u (id INT NOT NULL, v INT) UNIQUE KEY(id) DISTRIBUTED BY RANDOM BUCKETS 2 ORDER BY(id)"))
	srv := serve(t, s, "root", "")
	db := openDB(t, srv, "root", "", "test", "")
	cases := []struct{ table, model, pk, dist string }{
		{"orders", "PRIMARY_KEYS", "`order_id`", "`order_id`"},
		{"order_items", "PRIMARY_KEYS", "`order_id`, `item_id`", "`order_id`"},
		{"order_events", "DUP_KEYS", "", "`event_id`"},
		{"u", "UNIQUE_KEYS", "`id`", ""},
	}
	for _, c := range cases {
		var model, pk, dist, props string
		var buckets int
		require.NoError(t, db.QueryRow("SELECT TABLE_MODEL, PRIMARY_KEY, DISTRIBUTE_KEY, DISTRIBUTE_BUCKET, PROPERTIES FROM information_schema.tables_config WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
			"test", c.table).Scan(&model, &pk, &dist, &buckets, &props))
		assert.Equal(t, c.model, model, c.table)
		assert.Equal(t, c.pk, pk, c.table)
		assert.Equal(t, c.dist, dist, c.table)
		if c.table == "u" {
			assert.Equal(t, 2, buckets)
			assert.Equal(t, "{}", props)
		} else {
			assert.Equal(t, 4, buckets)
			assert.Equal(t, `{"replication_num":"1"}`, props)
		}

		// information_schema.columns: COLUMN_KEY PRI marks PRIMARY KEY tables only
		var pri int
		require.NoError(t, db.QueryRow("SELECT COALESCE(SUM(CASE WHEN COLUMN_KEY = 'PRI' THEN 1 ELSE 0 END), 0) FROM information_schema.columns WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
			"test", c.table).Scan(&pri))
		assert.Equal(t, c.model == "PRIMARY_KEYS", pri > 0, c.table)
	}
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.tables_config").Scan(&n))
	assert.Equal(t, 4, n)
	assert.Contains(t, queryStrings(t, db, "SHOW TABLES FROM information_schema"), "tables_config")
}
