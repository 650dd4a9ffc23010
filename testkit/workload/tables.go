package workload

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
)

// The wide workload: Options.Tables PRIMARY KEY tables (wide_000, wide_001,
// …) instead of the orders schema, for measuring how the load count grows
// with the number of tables. Every source transaction writes RowsPerWideTxn
// rows, each to a table drawn at random, so a commit cycle carries rows for
// every table once traffic is steady; about one row in five updates an
// earlier row of the same partition, so per-key order matters.

// RowsPerWideTxn is the number of rows of one wide source transaction.
const RowsPerWideTxn = 5

// WideTable names the i-th table of the wide workload.
func WideTable(i int) string { return fmt.Sprintf("wide_%03d", i) }

// WideSchema is the DDL of the wide workload's n tables in Database.
func WideSchema(n int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "CREATE DATABASE IF NOT EXISTS `%s`;\n", Database)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "CREATE TABLE IF NOT EXISTS `%s`.`%s` (\n"+
			"  `id` BIGINT NOT NULL,\n  `txn` VARCHAR(64) NOT NULL,\n  `v` BIGINT NOT NULL\n"+
			") ENGINE=OLAP PRIMARY KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 1 PROPERTIES(\"replication_num\" = \"1\");\n",
			Database, WideTable(i))
	}
	return sb.String()
}

// nextWide returns a wide source transaction of partition p (Next does when
// Options.Tables is set).
func (g *Generator) nextWide(t Txn) Txn {
	p := t.Partition
	for i := 0; i < RowsPerWideTxn; i++ {
		table := WideTable(g.rng.IntN(g.opts.Tables))
		var id int64
		if live := g.wideLive[p]; len(live) > 0 && g.rng.IntN(5) == 0 {
			k := live[g.rng.IntN(len(live))]
			table, id = k.table, k.id
		} else {
			id = g.nextID[p]*int64(g.opts.Partitions) + int64(p) + 1
			g.nextID[p]++
			g.wideLive[p] = append(g.wideLive[p], wideKey{table, id})
		}
		g.event++
		t.Changes = append(t.Changes, Change{Table: table, Row: Row{"id": id, "txn": t.ID, "v": g.event}})
	}
	return t
}

type wideKey struct {
	table string
	id    int64
}

// applyWide records a change to a wide table.
func (m *Model) applyWide(c Change) {
	rows := m.wide[c.Table]
	if rows == nil {
		rows = map[int64]string{}
		m.wide[c.Table] = rows
	}
	id := asInt(c.Row["id"])
	rows[id] = WideLine(id, fmt.Sprint(c.Row["txn"]), asInt(c.Row["v"]))
}

// WideLine renders a wide row the same way for the model and for a query.
func WideLine(id int64, txn string, v int64) string {
	return fmt.Sprintf("%d|%s|%d", id, txn, v)
}

// WideSnapshot renders the model's wide tables: per table, one line per row,
// sorted (a table with no row is absent).
func (m *Model) WideSnapshot() map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]string{}
	for table, rows := range m.wide {
		for _, line := range rows {
			out[table] = append(out[table], line)
		}
		sort.Strings(out[table])
	}
	return out
}

// ReadWide reads the n wide tables through SQL and renders them like
// WideSnapshot.
func ReadWide(ctx context.Context, db *sql.DB, n int) (map[string][]string, error) {
	out := map[string][]string{}
	for i := 0; i < n; i++ {
		table := WideTable(i)
		rows, err := db.QueryContext(ctx, "SELECT id, txn, v FROM "+Database+"."+table)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", table, err)
		}
		for rows.Next() {
			var id, v int64
			var txn string
			if err := rows.Scan(&id, &txn, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("scanning %s: %w", table, err)
			}
			out[table] = append(out[table], WideLine(id, txn, v))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", table, err)
		}
		sort.Strings(out[table])
	}
	return out, nil
}
