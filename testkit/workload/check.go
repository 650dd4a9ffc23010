package workload

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
)

// ReadTarget reads the example tables through SQL and renders them like
// Model.Snapshot, so the two compare with ==.
func ReadTarget(ctx context.Context, db *sql.DB, withEvents bool) (Snapshot, error) {
	var s Snapshot
	rows, err := db.QueryContext(ctx, "SELECT order_id, customer_id, total_amount, order_status FROM "+Database+"."+TableOrders)
	if err != nil {
		return s, fmt.Errorf("reading orders: %w", err)
	}
	for rows.Next() {
		var id, customer int64
		var total, status string
		if err := rows.Scan(&id, &customer, &total, &status); err != nil {
			rows.Close()
			return s, fmt.Errorf("scanning orders: %w", err)
		}
		s.Orders = append(s.Orders, OrderLine(id, customer, total, status))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("reading orders: %w", err)
	}

	rows, err = db.QueryContext(ctx, "SELECT order_id, item_id, product, quantity, price FROM "+Database+"."+TableItems)
	if err != nil {
		return s, fmt.Errorf("reading order_items: %w", err)
	}
	for rows.Next() {
		var id, item, qty int64
		var product, price string
		if err := rows.Scan(&id, &item, &product, &qty, &price); err != nil {
			rows.Close()
			return s, fmt.Errorf("scanning order_items: %w", err)
		}
		s.Items = append(s.Items, ItemLine(id, item, product, qty, price))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("reading order_items: %w", err)
	}

	if withEvents {
		rows, err = db.QueryContext(ctx, "SELECT event_id FROM "+Database+"."+TableEvents)
		if err != nil {
			return s, fmt.Errorf("reading order_events: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return s, fmt.Errorf("scanning order_events: %w", err)
			}
			s.Events = append(s.Events, strconv.FormatInt(id, 10))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s, fmt.Errorf("reading order_events: %w", err)
		}
	}
	s.sort()
	return s, nil
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
