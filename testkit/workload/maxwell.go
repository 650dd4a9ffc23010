package workload

import (
	"encoding/json"
	"fmt"
)

// Maxwell renders a source transaction as Maxwell's JSON rows (one per
// change, `xid` the transaction, `commit: true` on the last), as Maxwell
// writes a MySQL transaction with its default output_commit_info.
func Maxwell(t Txn, xid int64) ([][]byte, error) {
	out := make([][]byte, 0, len(t.Changes))
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
			"xid": xid, "xoffset": i, "data": data,
		}
		if i == len(t.Changes)-1 {
			ev["commit"] = true
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("encoding a maxwell row: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}
