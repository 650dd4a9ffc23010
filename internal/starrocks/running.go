package starrocks

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// RunningTxn is one transaction the FE lists as running (begun, loading,
// PREPARED or committing): SHOW PROC '/transactions/<db>/running'.
type RunningTxn struct {
	ID     string
	Label  string
	Status string
}

// Prepared reports whether the transaction is PREPARED: its data is written
// and only a COMMIT or a ROLLBACK by label ends it (ARCHITECTURE.md §15).
func (t RunningTxn) Prepared() bool { return strings.EqualFold(t.Status, "PREPARED") }

// RunningTransactions lists db's running transactions whose label starts
// with prefix (every one when prefix is empty). It needs a privilege to
// see the database's transactions; a refusal is returned as it is.
func (m *Meta) RunningTransactions(ctx context.Context, db, prefix string) (txns []RunningTxn, err error) {
	if err := checkIdents(db); err != nil {
		return nil, err
	}
	ctx, end := m.bound(ctx, "running_transactions", db)
	defer func() { end(err == nil) }()
	rows, err := m.db.QueryContext(ctx, fmt.Sprintf("SHOW PROC '/transactions/%s/running'", db))
	if err != nil {
		return nil, fmt.Errorf("listing the running transactions of %s: %w", db, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("listing the running transactions of %s: %w", db, err)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("listing the running transactions of %s: %w", db, err)
		}
		var t RunningTxn
		for i, c := range cols {
			switch strings.ToLower(c) {
			case "transactionid":
				t.ID = vals[i].String
			case "label":
				t.Label = vals[i].String
			case "transactionstatus":
				t.Status = vals[i].String
			}
		}
		if strings.HasPrefix(t.Label, prefix) {
			txns = append(txns, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the running transactions of %s: %w", db, err)
	}
	return txns, nil
}
