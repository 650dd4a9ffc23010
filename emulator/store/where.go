package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// The `where` load header is evaluated with go-mysql-server: the condition is analysed once
// per (table, text) as the WHERE clause of a SELECT over the table, and the resulting filter
// expression is evaluated on each converted row. Rows it rejects count as unselected.

type whereKey struct {
	tableID int64
	version int
	where   string
}

type whereFunc func(vals []any) (bool, error)

var whereCache sync.Map // whereKey -> whereFunc

func (s *Store) compileWhere(sc *TableSchema, where string) (whereFunc, error) {
	key := whereKey{sc.ID, sc.version, where}
	if f, ok := whereCache.Load(key); ok {
		return f.(whereFunc), nil
	}
	engine := newEngine(&sqlBridge{store: s})
	ctx := sql.NewContext(context.Background())
	ctx.SetCurrentDatabase(sc.DB)
	node, err := engine.AnalyzeQuery(ctx, fmt.Sprintf("SELECT * FROM `%s`.`%s` WHERE %s", sc.DB, sc.Name, where))
	if err != nil {
		return nil, fmt.Errorf("invalid where header %q: %w", where, err)
	}
	var filter sql.Expression
	empty := false
	transform.Inspect(node, func(n sql.Node) bool {
		switch n := n.(type) {
		case *plan.Filter:
			if filter == nil {
				filter = n.Expression
			}
		case *plan.EmptyTable:
			empty = true
		}
		return true
	})
	cols := sc.Columns
	var f whereFunc
	switch {
	case filter != nil:
		f = func(vals []any) (bool, error) {
			row := make(sql.Row, len(vals))
			for i, v := range vals {
				row[i] = toSQLValue(&cols[i], v)
			}
			ectx := sql.NewEmptyContext()
			v, err := filter.Eval(ectx, row)
			if err != nil || v == nil {
				return false, err
			}
			return sql.ConvertToBool(ectx, v)
		}
	case empty:
		f = func([]any) (bool, error) { return false, nil }
	default: // the analyser folded the condition to TRUE
		f = func([]any) (bool, error) { return true, nil }
	}
	whereCache.Store(key, f)
	return f, nil
}
