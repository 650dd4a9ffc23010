package starrocks

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// FEConfig returns the value of one FE configuration item (ADMIN SHOW
// FRONTEND CONFIG LIKE '<key>'); found is false when the FE lists none.
// StarRocks allows the statement to accounts with the OPERATE privilege
// only; a refusal is returned as it is, for the caller to fall back on the
// documented default.
func (m *Meta) FEConfig(ctx context.Context, key string) (value string, found bool, err error) {
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return "", false, fmt.Errorf("FE config key %q: only lower-case letters, digits and '_'", key)
		}
	}
	ctx, end := m.bound(ctx, "fe_config", "")
	defer func() { end(err == nil) }()
	rows, err := m.db.QueryContext(ctx, "ADMIN SHOW FRONTEND CONFIG LIKE '"+key+"'")
	if err != nil {
		return "", false, fmt.Errorf("reading the FE config %s: %w", key, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", false, fmt.Errorf("reading the FE config %s: %w", key, err)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", false, fmt.Errorf("reading the FE config %s: %w", key, err)
		}
		var k, v string
		for i, c := range cols {
			switch strings.ToLower(c) {
			case "key":
				k = vals[i].String
			case "value":
				v = vals[i].String
			}
		}
		if k == key {
			value, found = v, true
		}
	}
	if err := rows.Err(); err != nil {
		return "", false, fmt.Errorf("reading the FE config %s: %w", key, err)
	}
	return value, found, nil
}
