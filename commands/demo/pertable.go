package demo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// StarRocks 3.x (--starrocks-version below 4.0): no multi-table transactions,
// so the output commits each cycle per table, all of its tables prepared
// first (transaction_mode auto decides it; ARCHITECTURE.md §15). Between the
// first and the last commit of a cycle a reader may see part of a source
// transaction: the demo's reader then lets a partial read pass while it
// heals, fails one that outlives perTableHealBound or is still there once
// the pipeline drained, and the summary prints the commit windows.

// perTableHealBound bounds a partial read of the demo: a cycle's tables
// are committed within milliseconds of each other.
const perTableHealBound = 10 * time.Second

// perTableVersion reports whether an emulator answering as version (x.y.z)
// has no multi-table transactions.
func perTableVersion(v string) bool {
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return err == nil && major < 4
}

// partialOrdersSQL lists, in one statement (one snapshot), the orders whose
// source transaction is partly visible (workload.ConsistencyQuery, by key).
const partialOrdersSQL = `SELECT o.order_id FROM test.orders o LEFT JOIN
    (SELECT order_id, SUM(quantity * price) AS s FROM test.order_items GROUP BY order_id) i
    ON o.order_id = i.order_id
  WHERE i.s IS NULL OR i.s <> o.total_amount
UNION SELECT it.order_id FROM test.order_items it LEFT JOIN test.orders o2 ON it.order_id = o2.order_id
  WHERE o2.order_id IS NULL`

// healRound reads the partial orders once and hands the round to r.heal.
func (r *Running) healRound(ctx context.Context) error {
	start := time.Now()
	rows, err := r.db.QueryContext(ctx, partialOrdersSQL)
	if err != nil {
		return fmt.Errorf("reading partial orders: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	r.heal.Round(start, time.Now(), ids)
	return nil
}

// healLoop is checkLoop in per-table mode: a partial read that outlives
// perTableHealBound is counted as torn.
func (r *Running) healLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if err := r.healRound(ctx); err != nil {
			if ctx.Err() == nil {
				r.consErr.Store(err.Error())
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		r.checks.Add(1)
		if err := r.heal.Check(false); err != nil && r.torn.Load() == 0 {
			r.torn.Add(1)
			r.consErr.Store(err.Error())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
