package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// Column mapping expressions of the `columns` header ("target = expr") that are neither a
// constant nor a bare source field are evaluated with go-mysql-server: the expression is
// analysed once per (source fields, text) as the select list of a query over a table whose
// columns are the header's source fields (as text), and evaluated on each row's fields. The
// result converts to the target column like a loaded value. CAST follows StarRocks (see
// load_cast.go: a cast of 'abc' or '1.5' to an integer is NULL); other functions follow
// go-mysql-server's (MySQL's) semantics where they differ from StarRocks's.

// exprFunc evaluates a mapping expression on the source fields (nil: NULL) in the load's
// time zone (the `timezone` header, which from_unixtime and the like follow) and returns
// its text (ok false: NULL).
type exprFunc func(src []any, tz string) (text string, ok bool, err error)

type exprKey struct {
	fields string
	expr   string
}

var exprCache sync.Map // exprKey -> exprFunc

// compileExpr analyses expr over source fields named fields.
func compileExpr(fields []string, expr string) (exprFunc, error) {
	key := exprKey{strings.Join(fields, "\x00"), expr}
	if f, ok := exprCache.Load(key); ok {
		return f.(exprFunc), nil
	}
	schema := make(sql.Schema, len(fields))
	for i, n := range fields {
		schema[i] = &sql.Column{Name: n, Type: types.LongText, Nullable: true, Source: "src"}
	}
	rewritten, err := rewriteCasts(expr)
	if err != nil {
		return nil, err
	}
	engine := newEngine(srcProvider{srcDB{srcTable{schema}}})
	ctx := sql.NewContext(context.Background())
	ctx.SetCurrentDatabase("load_source")
	engine.Analyzer.Catalog.RegisterFunction(ctx, sql.Function2{Name: srCastName, Fn: newSRCast})
	node, err := engine.AnalyzeQuery(ctx, "SELECT "+rewritten+" FROM src")
	if err != nil {
		return nil, fmt.Errorf("columns header: the expression %s cannot be evaluated: %w", expr, err)
	}
	var proj sql.Expression
	transform.Inspect(node, func(n sql.Node) bool {
		if p, ok := n.(*plan.Project); ok && proj == nil && len(p.Projections) == 1 {
			proj = p.Projections[0]
		}
		return true
	})
	if proj == nil {
		return nil, fmt.Errorf("columns header: the expression %s cannot be evaluated by the emulator", expr)
	}
	f := exprFunc(func(src []any, tz string) (string, bool, error) {
		row := make(sql.Row, len(src))
		copy(row, src)
		ectx := sql.NewEmptyContext()
		if err := ectx.SetSessionVariable(ectx, "time_zone", tz); err != nil {
			return "", false, fmt.Errorf("the time zone %s: %w", tz, err)
		}
		v, err := proj.Eval(ectx, row)
		if err != nil {
			return "", false, err
		}
		return sqlText(v)
	})
	exprCache.Store(key, f)
	return f, nil
}

// sqlText renders a go-mysql-server value as the text a load would carry.
func sqlText(v any) (string, bool, error) {
	switch x := v.(type) {
	case nil:
		return "", false, nil
	case string:
		return x, true, nil
	case []byte:
		return string(x), true, nil
	case bool:
		if x {
			return "1", true, nil
		}
		return "0", true, nil
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, uint:
		return fmt.Sprint(x), true, nil
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), true, nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true, nil
	case decimal.Decimal:
		return x.String(), true, nil
	case time.Time:
		return x.Format("2006-01-02 15:04:05.999999"), true, nil
	case sql.JSONWrapper:
		s, err := types.JsonToMySqlString(x)
		return s, err == nil, err
	}
	return fmt.Sprint(v), true, nil
}

// srcProvider is the catalog mapping expressions are analysed against: one database,
// load_source, with one empty table, src, whose columns are the load's source fields.
type srcProvider struct{ db srcDB }

func (p srcProvider) Database(_ *sql.Context, name string) (sql.Database, error) {
	if strings.EqualFold(name, "load_source") {
		return p.db, nil
	}
	return nil, sql.ErrDatabaseNotFound.New(name)
}

func (p srcProvider) HasDatabase(_ *sql.Context, name string) bool {
	return strings.EqualFold(name, "load_source")
}

func (p srcProvider) AllDatabases(*sql.Context) []sql.Database { return []sql.Database{p.db} }

type srcDB struct{ t srcTable }

func (d srcDB) Name() string { return "load_source" }

func (d srcDB) GetTableInsensitive(_ *sql.Context, name string) (sql.Table, bool, error) {
	if strings.EqualFold(name, "src") {
		return d.t, true, nil
	}
	return nil, false, nil
}

func (d srcDB) GetTableNames(*sql.Context) ([]string, error) { return []string{"src"}, nil }

type srcTable struct{ schema sql.Schema }

func (t srcTable) Name() string               { return "src" }
func (t srcTable) String() string             { return "src" }
func (t srcTable) Schema() sql.Schema         { return t.schema }
func (t srcTable) Collation() sql.CollationID { return sql.Collation_Default }
func (t srcTable) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return sql.PartitionsToPartitionIter(onePartition{}), nil
}
func (t srcTable) PartitionRows(*sql.Context, sql.Partition) (sql.RowIter, error) {
	return &sliceRowIter{}, nil
}
