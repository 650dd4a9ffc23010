package workload

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// ReadTarget reads the example tables through SQL and renders them like
// Model.Snapshot, so the two compare (Compare).
func ReadTarget(ctx context.Context, db *sql.DB, withEvents bool) (Snapshot, error) {
	return ReadTargetFor(ctx, db, Snapshot{}, withEvents)
}

// ReadTargetFor is ReadTarget for a model snapshot want whose tables a
// schema plan changed: it renders the extra columns want names (a column
// the table lacks as "<absent>") and reads shipments when want has it (a
// missing table: none, and HasShipments false).
func ReadTargetFor(ctx context.Context, db *sql.DB, want Snapshot, withEvents bool) (Snapshot, error) {
	var s Snapshot
	s.Columns = want.Columns
	var err error
	if s.Orders, err = readLines(ctx, db, TableOrders, want.Columns[TableOrders]); err != nil {
		return s, err
	}
	if s.Items, err = readLines(ctx, db, TableItems, want.Columns[TableItems]); err != nil {
		return s, err
	}
	if withEvents {
		if s.Events, err = readColumn(ctx, db, TableEvents, "event_id"); err != nil {
			return s, err
		}
	}
	if want.HasShipments {
		if s.HasShipments, err = TableExists(ctx, db, TableShipments); err != nil {
			return s, err
		}
		if s.HasShipments {
			if s.Shipments, err = readLines(ctx, db, TableShipments, want.Columns[TableShipments]); err != nil {
				return s, err
			}
		}
	}
	s.sort()
	return s, nil
}

// TableExists reports whether the database has the table.
func TableExists(ctx context.Context, db *sql.DB, table string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?", Database, table).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("looking up table %s.%s: %w", Database, table, err)
	}
	return n > 0, nil
}

// readLines reads every row of a table with all its columns and renders
// each: its fixed fields (baseColumns), then "|name=value" for each extra
// column.
func readLines(ctx context.Context, db *sql.DB, table string, extra []string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT * FROM "+Database+"."+table)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	index := map[string]int{}
	for i, n := range names {
		index[strings.ToLower(n)] = i
	}
	vals := make([]sql.NullString, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("scanning %s: %w", table, err)
		}
		out = append(out, RenderRow(table, extra, func(c string) (string, bool) {
			i, ok := index[c]
			if !ok {
				return "", false
			}
			if !vals[i].Valid {
				return nullText, true
			}
			return vals[i].String, true
		}))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	return out, nil
}

// RenderRow renders a row read from the target, given each column's text
// (NULL as "NULL"; false: no such column), as the model renders it.
func RenderRow(table string, extra []string, col func(name string) (string, bool)) string {
	var sb strings.Builder
	for i, c := range baseColumns[table] {
		if i > 0 {
			sb.WriteByte('|')
		}
		v, ok := col(c)
		if !ok {
			v = absentText
		}
		sb.WriteString(v)
	}
	for _, c := range extra {
		v, ok := col(c)
		if !ok {
			v = absentText
		}
		sb.WriteString("|" + c + "=" + v)
	}
	return sb.String()
}

// readColumn reads one column of every row.
func readColumn(ctx context.Context, db *sql.DB, table, column string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT "+column+" FROM "+Database+"."+table)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("scanning %s: %w", table, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	return out, nil
}

// ConsistencyQuery counts, in one statement and so in one snapshot, the orders
// whose total differs from the sum of their items (an order seen without all
// of its items, or with another transaction's items) and the items whose order
// is missing. Both are zero whenever no source transaction is half visible.
const ConsistencyQuery = `SELECT
 (SELECT COUNT(*) FROM test.orders o LEFT JOIN
    (SELECT order_id, SUM(quantity * price) AS s FROM test.order_items GROUP BY order_id) i
    ON o.order_id = i.order_id
  WHERE i.s IS NULL OR i.s <> o.total_amount) AS torn_orders,
 (SELECT COUNT(*) FROM test.order_items it LEFT JOIN test.orders o2 ON it.order_id = o2.order_id
  WHERE o2.order_id IS NULL) AS orphan_items`

// CheckConsistency runs ConsistencyQuery.
func CheckConsistency(ctx context.Context, db *sql.DB) (torn, orphans int64, err error) {
	if err = db.QueryRowContext(ctx, ConsistencyQuery).Scan(&torn, &orphans); err != nil {
		return 0, 0, fmt.Errorf("checking consistency: %w", err)
	}
	return torn, orphans, nil
}

// ShipmentsQuery reads, in one statement and so in one snapshot, every
// order with all its columns and the status of its shipment (NULL: none):
// under ChangeNewTable a shipment is written with every transaction of its
// order and copies the order's status, so a shipment whose status differs
// from its order's, or an order value that shipped (Model.OrderVersion)
// without its shipment, is half a source transaction. It fails while
// shipments does not exist; OrdersQuery is then the read.
const ShipmentsQuery = "SELECT o.*, s.order_status AS shipment_status FROM test.orders o LEFT JOIN test.shipments s ON s.order_id = o.order_id"

// OrdersQuery reads every order with all its columns.
const OrdersQuery = "SELECT * FROM test.orders"

// ShipmentsConsistencyQuery counts, in one statement, the shipments whose
// order is missing or shows another status: a shipment seen without its
// order's update (ChangeNewTable). Zero whenever no source transaction is
// half visible; it fails while shipments does not exist.
const ShipmentsConsistencyQuery = `SELECT COUNT(*) FROM test.shipments s LEFT JOIN test.orders o ON o.order_id = s.order_id
 WHERE o.order_id IS NULL OR o.order_status <> s.order_status`
