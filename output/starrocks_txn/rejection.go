package starrocks_txn

// Home of G19 (ARCHITECTURE.md §11.1): the dead-letter reason of rows StarRocks rejects names
// the table, column and value. Main test: TestRejectionNamesTheTable.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// Rows StarRocks rejected: when a commit fails because of a source
// transaction's rows (filtered over max_filter_ratio, a table left with no
// rows), the dead-letter reason names the table, and the column and value
// when StarRocks's error log gives them (the tracking_url of the failure,
// read through the client), so that an operator sees what to fix without
// fetching the log.

// errorLogLines is how many lines of the error log a reason quotes.
const errorLogLines = 3

// rejection is the reason a source transaction isolated as the cause of a
// per-transaction commit failure is poisoned with.
func (w *dbWorker) rejection(ctx context.Context, t *srcTxn, err error) error {
	var lines []string
	if u := starrocks.TrackingURL(err); u != "" {
		got, lerr := w.o.client.ErrorLog(ctx, u, errorLogLines)
		if lerr != nil {
			w.log.Debugf("Reading the error log of source transaction %q: %v", t.id, lerr)
		}
		lines = got
	}
	table := rejectedTable(t, err, lines)
	where := "table " + w.db + "." + table
	if table == "" {
		names := make([]string, len(t.tables))
		for i, tbl := range t.tables {
			names[i] = w.db + "." + tbl
		}
		where = "one of the tables " + strings.Join(names, ", ")
	}
	if len(lines) == 0 {
		return fmt.Errorf("StarRocks rejected rows of source transaction %q in %s: %w", t.id, where, err)
	}
	if col := starrocks.ErrorLogColumn(lines[0]); col != "" {
		where += ", column " + col
	}
	return fmt.Errorf("StarRocks rejected rows of source transaction %q in %s: %s: %w", t.id, where, strings.Join(lines, " | "), err)
}

// rejectedTable names the table of t whose rows StarRocks rejected: the
// one the failure names, the only one t writes, or the one holding the row
// the error log quotes; "" when none of these tells.
func rejectedTable(t *srcTxn, err error, lines []string) string {
	tbl := starrocks.RejectedTable(err)
	if le := (*loadError)(nil); errors.As(err, &le) {
		// A per-table prepare names its table (pertable.go).
		tbl = le.table
	}
	if tbl != "" {
		for _, x := range t.tables {
			if strings.EqualFold(x, tbl) {
				return x
			}
		}
	}
	if len(t.tables) == 1 {
		return t.tables[0]
	}
	for _, line := range lines {
		_, row, ok := strings.Cut(line, "Row: ")
		if !ok {
			continue
		}
		row = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(row), "..."), "…")
		if row == "" {
			continue
		}
		found := ""
		for _, tbl := range t.tables {
			for _, r := range t.rowsOf(tbl) {
				if bytes.HasPrefix(r, []byte(row)) {
					if found != "" && found != tbl {
						return "" // the same row text in two tables
					}
					found = tbl
				}
			}
		}
		if found != "" {
			return found
		}
	}
	return ""
}
