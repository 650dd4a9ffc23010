package starrocks_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The progress of many partitions is read together: the databases holding
// the progress table are listed once, and each is asked for
// ProgressReadChunk partitions per statement (an IN list the emulator
// answers as StarRocks does), with every partition's rows of every
// database, and nothing of another pipeline or of a partition not asked for.
func TestReadProgressOfManyPartitionsInChunks(t *testing.T) {
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0",
		Schema: "CREATE DATABASE shop; CREATE DATABASE crm;"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	m, err := starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	ctx := context.Background()
	const table = "batch_progress"
	cl, err := starrocks.New(starrocks.Config{LoadURLs: []string{e.FEURL()}, Username: "root", RequestTimeout: 10 * time.Second})
	require.NoError(t, err)

	// shop holds partitions 0…1199 of pipeline pl, crm every third one
	// (with other offsets); both hold one row of another pipeline.
	const n = 1200
	type row struct {
		Pipeline  string `json:"pipeline_id"`
		Partition string `json:"source_partition"`
		Through   int64  `json:"committed_offset"`
		TxnEnd    int64  `json:"txn_end_offset"`
	}
	load := func(db string, rows []row) {
		t.Helper()
		require.NoError(t, m.EnsureTables(ctx, db, starrocks.TableDef{Name: table, DDL: starrocks.ProgressDDL(db, table), Columns: starrocks.ProgressColumns}))
		body, err := json.Marshal(rows)
		require.NoError(t, err)
		txn := starrocks.Txn{DB: db, Table: table, Label: "batch-" + db}
		_, err = cl.Begin(ctx, txn)
		require.NoError(t, err)
		_, err = cl.Load(ctx, starrocks.LoadRequest{Txn: txn, Headers: map[string]string{"format": "json", "strip_outer_array": "true"}, Body: body})
		require.NoError(t, err)
		_, err = cl.Commit(ctx, txn)
		require.NoError(t, err)
	}
	var shop, crm []row
	parts := make([]string, 0, n+1)
	for i := range n {
		p := fmt.Sprintf("t/%d", i)
		parts = append(parts, p)
		shop = append(shop, row{"pl", p, int64(10 * i), int64(10*i + 1)})
		if i%3 == 0 {
			crm = append(crm, row{"pl", p, int64(10*i + 5), int64(10*i + 6)})
		}
	}
	shop = append(shop, row{"other", "t/0", 999, 999})
	crm = append(crm, row{"other", "t/1", 999, 999})
	crm = append(crm, row{"pl", "t/not-asked", 7, 7})
	load("shop", shop)
	load("crm", crm)
	parts = append(parts, "t/none") // asked for, held nowhere

	counted, counts := countingMeta(t, e.MySQLAddr())
	got, err := counted.ReadProgressOf(ctx, table, "pl", parts)
	require.NoError(t, err)
	for i := range n {
		p := fmt.Sprintf("t/%d", i)
		want := []starrocks.ProgressRow{{DB: "shop", Through: int64(10 * i), TxnEnd: int64(10*i + 1)}}
		if i%3 == 0 {
			want = append(want, starrocks.ProgressRow{DB: "crm", Through: int64(10*i + 5), TxnEnd: int64(10*i + 6)})
		}
		require.ElementsMatch(t, want, got[p], p)
	}
	assert.NotContains(t, got, "t/none", "a partition without a row is absent")
	assert.NotContains(t, got, "t/not-asked", "only the partitions asked for")
	assert.Len(t, got, n)

	chunks := (len(parts) + starrocks.ProgressReadChunk - 1) / starrocks.ProgressReadChunk
	assert.Equal(t, map[string]int{"information_schema": 1, "shop": chunks, "crm": chunks}, counts.take(),
		"the databases listed once, then ceil(%d/%d) statements per database", len(parts), starrocks.ProgressReadChunk)

	// One partition: one statement per database, as before.
	one, err := counted.ReadProgress(ctx, table, "pl", "t/3")
	require.NoError(t, err)
	assert.ElementsMatch(t, []starrocks.ProgressRow{{DB: "shop", Through: 30, TxnEnd: 31}, {DB: "crm", Through: 35, TxnEnd: 36}}, one)
	assert.Equal(t, map[string]int{"information_schema": 1, "shop": 1, "crm": 1}, counts.take())
}

// statementCounts counts the statements a Meta sent, by the database they
// read ("information_schema" for the listing of databases).
type statementCounts struct {
	mu sync.Mutex
	n  map[string]int
}

// take returns the counts so far and starts again from zero.
func (c *statementCounts) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// countingMeta is a Meta over the MySQL port at addr whose statements are
// counted.
func countingMeta(t *testing.T, addr string) (*starrocks.Meta, *statementCounts) {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.InterpolateParams = "tcp", addr, "root", true
	conn, err := mysql.NewConnector(cfg)
	require.NoError(t, err)
	c := &statementCounts{n: map[string]int{}}
	m := starrocks.NewMeta(sql.OpenDB(countingConnector{Connector: conn, counts: c}))
	t.Cleanup(func() { _ = m.Close() })
	return m, c
}

type countingConnector struct {
	driver.Connector
	counts *statementCounts
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: conn, counts: c.counts}, nil
}

// countingConn passes queries through the driver's own QueryContext (the
// parameters interpolated, no prepared statement), counting them.
type countingConn struct {
	driver.Conn
	counts *statementCounts
}

func (c countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	db := "other"
	if strings.Contains(q, "information_schema") {
		db = "information_schema"
	} else if _, rest, ok := strings.Cut(q, "FROM `"); ok {
		db, _, _ = strings.Cut(rest, "`")
	}
	c.counts.mu.Lock()
	c.counts.n[db]++
	c.counts.mu.Unlock()
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

// A result cut short (the connection reset while its rows arrive) is an
// error, never fewer rows: a database missing from the listing, or a
// partition's row missing from a read, would be taken for no progress and
// its source transactions applied twice; a missing writer row would skip
// that writer's take-over check.
func TestCutResultsAreErrorsNotFewerRows(t *testing.T) {
	ctx := context.Background()
	cut := errors.New("connection reset by peer")
	for _, tc := range []struct {
		name string
		// cutIn names the statement whose result is cut after its first row.
		cutIn string
		read  func(m *starrocks.Meta) error
	}{
		{"databases listing", "information_schema", func(m *starrocks.Meta) error {
			_, err := m.ReadProgressOf(ctx, "p", "pl", []string{"t/0", "t/1"})
			return err
		}},
		{"progress rows", "`shop`.`p`", func(m *starrocks.Meta) error {
			_, err := m.ReadProgressOf(ctx, "p", "pl", []string{"t/0", "t/1"})
			return err
		}},
		{"writer rows", "`shop`.`p_writers`", func(m *starrocks.Meta) error {
			_, err := m.ReadWriterRows(ctx, "p_writers", "pl")
			return err
		}},
		{"inspect's progress rows", "`shop`.`p`", func(m *starrocks.Meta) error {
			_, err := m.ReadPipelineProgress(ctx, "p", "pl")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := starrocks.NewMeta(sql.OpenDB(scriptedConnector{cutIn: tc.cutIn, err: cut}))
			defer m.Close()
			err := tc.read(m)
			require.Error(t, err, "a cut result is not a shorter one")
			assert.ErrorIs(t, err, cut)
		})
	}
	// The same statements, whole: no error.
	m := starrocks.NewMeta(sql.OpenDB(scriptedConnector{}))
	defer m.Close()
	got, err := m.ReadProgressOf(ctx, "p", "pl", []string{"t/0", "t/1"})
	require.NoError(t, err)
	assert.Len(t, got["t/0"], 2, "both databases' rows")
	assert.Len(t, got["t/1"], 2)
}

// scriptedConnector answers the listing of databases with shop and crm, a
// progress read with two rows (t/0, t/1), a writers read with two rows; the
// result of the statement containing cutIn ends with err after its first
// row.
type scriptedConnector struct {
	cutIn string
	err   error
}

func (c scriptedConnector) Connect(context.Context) (driver.Conn, error) { return scriptedConn{c}, nil }

func (c scriptedConnector) Driver() driver.Driver { return nil }

type scriptedConn struct{ c scriptedConnector }

func (scriptedConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("no prepared statements")
}
func (scriptedConn) Close() error              { return nil }
func (scriptedConn) Begin() (driver.Tx, error) { return nil, errors.New("no transactions") }

func (s scriptedConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	r := &scriptedRows{}
	switch {
	case strings.Contains(q, "information_schema"):
		r.cols, r.rows = []string{"TABLE_SCHEMA"}, [][]driver.Value{{"shop"}, {"crm"}}
	case strings.Contains(q, "_writers`"):
		r.cols = []string{"writer", "label_number", "open_labels", "label", "updated_at"}
		r.rows = [][]driver.Value{{"w1", int64(3), "", "l3", nil}, {"w2", int64(4), "", "l4", nil}}
	case strings.Contains(q, "`source_partition`, `committed_offset`, `txn_end_offset`, `source_txn_id`"):
		r.cols = []string{"source_partition", "committed_offset", "txn_end_offset", "source_txn_id", "label", "updated_at"}
		r.rows = [][]driver.Value{{"t/0", int64(1), int64(1), nil, nil, nil}, {"t/1", int64(2), int64(2), nil, nil, nil}}
	default:
		r.cols = []string{"source_partition", "committed_offset", "txn_end_offset"}
		r.rows = [][]driver.Value{{"t/0", int64(1), int64(1)}, {"t/1", int64(2), int64(2)}}
	}
	if s.c.cutIn != "" && strings.Contains(q, s.c.cutIn) {
		r.rows, r.err = r.rows[:1], s.c.err
	}
	return r, nil
}

type scriptedRows struct {
	cols []string
	rows [][]driver.Value
	err  error
}

func (r *scriptedRows) Columns() []string { return r.cols }
func (r *scriptedRows) Close() error      { return nil }

func (r *scriptedRows) Next(dest []driver.Value) error {
	if len(r.rows) == 0 {
		if r.err != nil {
			return r.err
		}
		return io.EOF
	}
	copy(dest, r.rows[0])
	r.rows = r.rows[1:]
	return nil
}
