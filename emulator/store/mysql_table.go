package store

import (
	"io"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// A table as go-mysql-server sees it: the columns mapped to MySQL types and the rows of one
// snapshot (INSERT, UPDATE and DELETE are in mysql_write.go).

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
