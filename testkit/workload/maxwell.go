package workload

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Maxwell renders a source transaction as Maxwell writes it to Kafka
// (docs/notes/kafka-cdc.md §4, §6): first a table-create or table-alter DDL
// event per schema change the transaction carries — with output_ddl and
// Maxwell's default partitioning by database a DDL lands in the partition
// of its database's rows, between two transactions, and carries no xid —
// then one row per change with the transaction's xid, the last with
// "commit": true (and, as Maxwell omits it there, no xoffset).
func Maxwell(t Txn, xid int64) ([][]byte, error) {
	out := make([][]byte, 0, len(t.Schema)+len(t.Changes))
	for _, c := range t.Schema {
		b, err := json.Marshal(MaxwellDDL(c))
		if err != nil {
			return nil, fmt.Errorf("encoding a maxwell DDL event: %w", err)
		}
		out = append(out, b)
	}
	for i, c := range t.Changes {
		data := map[string]any{}
		for k, v := range c.Row {
			if k != "__op" {
				data[k] = v
			}
		}
		typ := "insert"
		if c.Delete {
			typ = "delete"
		}
		ev := map[string]any{
			"database": Database, "table": c.Table, "type": typ, "ts": 1764417600,
			"xid": xid, "data": data,
		}
		if i == len(t.Changes)-1 {
			ev["commit"] = true
		} else {
			ev["xoffset"] = i
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("encoding a maxwell row: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}

// MaxwellDDL is the DDL event of a schema change: table-create for a new
// table, else table-alter with the table before (old) and after (def), its
// statement in sql, and ts in milliseconds (DDL events' unit).
func MaxwellDDL(c SchemaChange) map[string]any {
	ev := map[string]any{
		"type": "table-alter", "database": Database, "table": c.Table,
		"def": maxwellTable(c.New), "ts": int64(1764417600000), "sql": c.SQL,
	}
	if c.Old == nil {
		ev["type"] = "table-create"
	} else {
		ev["old"] = maxwellTable(c.Old)
	}
	return ev
}

// maxwellTable renders a table as Maxwell's def: each column's MySQL type
// name without its arguments (Maxwell gives no length, precision or
// nullability), signed for integers, the charset for text.
func maxwellTable(t *TableDef) map[string]any {
	cols := make([]map[string]any, 0, len(t.Columns))
	for _, c := range t.Columns {
		name, _, _ := strings.Cut(c.MySQL, "(")
		col := map[string]any{"type": name, "name": c.Name}
		switch name {
		case "tinyint", "smallint", "mediumint", "int", "bigint":
			col["signed"] = true
		case "char", "varchar", "text":
			col["charset"] = "utf8mb4"
		}
		cols = append(cols, col)
	}
	return map[string]any{"database": Database, "charset": "utf8mb4", "table": t.Name, "columns": cols, "primary-key": t.Key}
}
