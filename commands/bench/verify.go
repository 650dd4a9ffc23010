package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// verify checks that row c delivered exactly the committed workload: for
// the drop rows every message was acknowledged and none nacked; for the
// loaders the tables equal the model; for starrocks_txn also every source
// transaction was counted committed once; for exactly_once also the
// progress table holds, for every partition, lastEnds (the partition's last
// END offset) as its committed_offset.
func verify(ctx context.Context, c Config, res Result, m *meter, capture *metricscap.Capture, tp *loadedTopic, db *sql.DB, lastEnds map[string]int64) (bool, string, error) {
	if n := m.nacked.Load(); n > 0 {
		return false, fmt.Sprintf("FAILED: %d messages nacked", n), nil
	}
	if got := m.acked.Load(); got != m.want {
		return false, fmt.Sprintf("FAILED: %d of %d messages acknowledged", got, m.want), nil
	}
	if got := int64(tp.model.Txns()); got != res.SourceTxns {
		return false, fmt.Sprintf("FAILED: the model holds %d source transactions, the producer committed %d", got, res.SourceTxns), nil
	}
	if !c.Loader() {
		return true, fmt.Sprintf("OK: all %d messages delivered", m.want), nil
	}
	good, ok, err := verifyTables(ctx, tp, db)
	if err != nil || !good {
		return false, ok, err
	}
	if c.StarRocksTxn() {
		if n := capture.Counter("starrocks_txn_source_txns_committed"); n != res.SourceTxns {
			return false, fmt.Sprintf("FAILED: starrocks_txn committed %d source transactions, the producer %d", n, res.SourceTxns), nil
		}
	}
	if c.Semantic != SemanticExactlyOnce {
		return true, ok, nil
	}
	bad, err := CheckProgress(ctx, db, workload.Database, lastEnds)
	if err != nil {
		return false, "", err
	}
	if bad != "" {
		return false, "FAILED: " + bad, nil
	}
	return true, fmt.Sprintf("%s; %s.%s: %d partitions at their last END offset (%d replays dropped)",
		ok, workload.Database, ProgressTable, len(lastEnds), capture.Counter("starrocks_txn_replays_dropped")), nil
}

// verifyTables compares the target tables with what the producer committed
// (the orders workload's tables, or the wide workload's): ok names what
// matched, or what differs.
func verifyTables(ctx context.Context, tp *loadedTopic, db *sql.DB) (bool, string, error) {
	if tp.Tables > 0 {
		want := tp.model.WideSnapshot()
		got, err := workload.ReadWide(ctx, db, tp.Tables)
		if err != nil {
			return false, "", fmt.Errorf("reading the target tables: %w", err)
		}
		if diffs := workload.CompareWide(want, got, tp.Tables); len(diffs) > 0 {
			return false, "FAILED: " + workload.Describe(diffs), nil
		}
		rows := 0
		for i := 0; i < tp.Tables; i++ {
			rows += len(want[workload.WideTable(i)])
		}
		return true, fmt.Sprintf("OK: %d tables = model (%d rows)", tp.Tables, rows), nil
	}
	want := tp.model.Snapshot()
	got, err := workload.ReadTarget(ctx, db, true)
	if err != nil {
		return false, "", fmt.Errorf("reading the target tables: %w", err)
	}
	if diffs := workload.Compare(want, got); len(diffs) > 0 {
		return false, "FAILED: " + workload.Describe(diffs), nil
	}
	return true, fmt.Sprintf("OK: tables = model (%d orders, %d items, %d events)", len(want.Orders), len(want.Items), len(want.Events)), nil
}

// erNoSuchTable is the MySQL error number of a missing table.
const erNoSuchTable = 1146

// CheckProgress compares the progress table of database with want
// (starrocks_partition → the END offset of its last source transaction):
// every partition of want must have a row of PipelineID whose
// committed_offset equals it, and there must be no row of another
// partition. It returns "" when the table matches, else what differs.
func CheckProgress(ctx context.Context, db *sql.DB, database string, want map[string]int64) (string, error) {
	if len(want) == 0 {
		return "no partition to check: the workload has no committed source transaction", nil
	}
	q := fmt.Sprintf("SELECT source_partition, committed_offset FROM `%s`.`%s` WHERE pipeline_id = ?", database, ProgressTable)
	rows, err := db.QueryContext(ctx, q, PipelineID)
	if myErr := (*mysql.MySQLError)(nil); errors.As(err, &myErr) && myErr.Number == erNoSuchTable {
		return fmt.Sprintf("%s.%s does not exist: the output wrote no progress (was it run with semantic exactly_once?)", database, ProgressTable), nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the progress table %s.%s: %w", database, ProgressTable, err)
	}
	got := map[string]int64{}
	for rows.Next() {
		var part string
		var off int64
		if err := rows.Scan(&part, &off); err != nil {
			_ = rows.Close()
			return "", fmt.Errorf("reading the progress table %s.%s: %w", database, ProgressTable, err)
		}
		got[part] = off
	}
	if err := rows.Close(); err != nil {
		return "", fmt.Errorf("reading the progress table %s.%s: %w", database, ProgressTable, err)
	}
	if len(got) == 0 {
		return fmt.Sprintf("%s.%s holds no progress row of pipeline %q (want %d partitions)", database, ProgressTable, PipelineID, len(want)), nil
	}
	var diffs []string
	for _, part := range slices.Sorted(maps.Keys(want)) {
		off, ok := got[part]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: no row (want committed_offset %d)", part, want[part]))
		case off != want[part]:
			diffs = append(diffs, fmt.Sprintf("%s: committed_offset %d, want %d (the last END offset)", part, off, want[part]))
		}
	}
	for _, part := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[part]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: unexpected row (committed_offset %d) of a partition with no source transaction", part, got[part]))
		}
	}
	if len(diffs) > 0 {
		return fmt.Sprintf("%s.%s: %s", database, ProgressTable, strings.Join(diffs, "; ")), nil
	}
	return "", nil
}
