package starrocks

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The two PRIMARY KEY tables a pipeline keeps in every database it writes
// (ARCHITECTURE.md §7): the progress table, one row per source partition,
// and the writers table, one row per run of the output. Their rows are
// loaded under the pipeline's own labels (JSON, merge_condition on
// ProgressOffsetCol and WritersNumberCol) and read back here.

// PipelineIDWidth is the width of the pipeline_id column.
const PipelineIDWidth = 128

// Columns of the progress table; see ProgressDDL.
const (
	ProgressPipelineCol  = "pipeline_id"
	ProgressPartitionCol = "source_partition"
	ProgressOffsetCol    = "committed_offset"
	ProgressTxnEndCol    = "txn_end_offset"
	ProgressTxnIDCol     = "source_txn_id"
	ProgressLabelCol     = "label"
	ProgressUpdatedCol   = "updated_at"
)

// ProgressColumns are the columns of the progress table; a table of that
// name without one of them is refused.
var ProgressColumns = []string{ProgressPipelineCol, ProgressPartitionCol, ProgressOffsetCol,
	ProgressTxnEndCol, ProgressTxnIDCol, ProgressLabelCol, ProgressUpdatedCol}

// ProgressDDL creates the progress table db.table when it is missing.
func ProgressDDL(db, table string) string {
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS `%s`.`%s` (\n"+
		"  `pipeline_id` VARCHAR(%d) NOT NULL COMMENT \"the output's pipeline_id\",\n"+
		"  `source_partition` VARCHAR(255) NOT NULL COMMENT \"starrocks_partition, e.g. topic/3\",\n"+
		"  `committed_offset` BIGINT NOT NULL COMMENT \"every source transaction of the partition ending at or below it is resolved (committed, dead-lettered or abandoned); -1 for none\",\n"+
		"  `txn_end_offset` BIGINT NOT NULL COMMENT \"END offset of the partition's last source transaction committed into this database\",\n"+
		"  `source_txn_id` VARCHAR(255) NULL COMMENT \"that source transaction's id\",\n"+
		"  `label` VARCHAR(128) NULL COMMENT \"the StarRocks transaction that wrote this row\",\n"+
		"  `updated_at` DATETIME NULL COMMENT \"when the output wrote it (UTC)\"\n"+
		") PRIMARY KEY (`pipeline_id`, `source_partition`)\n"+
		"DISTRIBUTED BY HASH (`pipeline_id`, `source_partition`)", db, table, PipelineIDWidth)
}

// WritersNumberCol is the writers table's merge_condition column.
const WritersNumberCol = "label_number"

// WritersColumns are the columns of the writers table.
var WritersColumns = []string{"pipeline_id", "writer", WritersNumberCol, "open_labels", "label", "updated_at"}

// WritersDDL creates the writers table db.table when it is missing.
func WritersDDL(db, table string) string {
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS `%s`.`%s` (\n"+
		"  `pipeline_id` VARCHAR(%d) NOT NULL COMMENT \"the output's pipeline_id\",\n"+
		"  `writer` VARCHAR(32) NOT NULL COMMENT \"one run of the output (in its labels)\",\n"+
		"  `label_number` BIGINT NOT NULL COMMENT \"number of the label that wrote this row\",\n"+
		"  `open_labels` VARCHAR(1024) NULL COMMENT \"numbers of the writer's other labels open then\",\n"+
		"  `label` VARCHAR(128) NULL COMMENT \"the label that wrote this row\",\n"+
		"  `updated_at` DATETIME NULL COMMENT \"when the output wrote it (UTC)\"\n"+
		") PRIMARY KEY (`pipeline_id`, `writer`)\n"+
		"DISTRIBUTED BY HASH (`pipeline_id`, `writer`)", db, table, PipelineIDWidth)
}

// RowTimeLayout is how updated_at is written and read back (UTC).
const RowTimeLayout = "2006-01-02 15:04:05"

// ParseRowTime reads an updated_at; zero when it is not a time.
func ParseRowTime(s string) time.Time {
	t, err := time.ParseInLocation(RowTimeLayout, strings.TrimSpace(s), time.UTC)
	if err != nil {
		return time.Time{}
	}
	return t
}

// FormatOpenLabels and ParseOpenLabels write and read open_labels ("12,15").
func FormatOpenLabels(ns []int64) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, ",")
}

func ParseOpenLabels(s string) ([]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int64
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("open label list %q: %w", s, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// ProgressRow is one database's progress row of a partition.
type ProgressRow struct {
	DB string
	// Through is committed_offset, TxnEnd txn_end_offset.
	Through, TxnEnd int64
}

// ReadProgress returns the row of pipeline's partition in the progress table
// of every database that has one.
func (m *Meta) ReadProgress(ctx context.Context, table, pipeline, partition string) ([]ProgressRow, error) {
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	defer m.lock()()
	dbs, err := m.databasesWith(ctx, table)
	if err != nil {
		return nil, err
	}
	var out []ProgressRow
	for _, d := range dbs {
		r := ProgressRow{DB: d}
		q := fmt.Sprintf("SELECT `%s`, `%s` FROM `%s`.`%s` WHERE `%s` = ? AND `%s` = ?",
			ProgressOffsetCol, ProgressTxnEndCol, d, table, ProgressPipelineCol, ProgressPartitionCol)
		err := m.db.QueryRowContext(ctx, q, pipeline, partition).Scan(&r.Through, &r.TxnEnd)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the progress of %s from %s.%s: %w", partition, d, table, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// WriterRow is one row of a writers table.
type WriterRow struct {
	Writer string
	// Number is label_number, Open the numbers in open_labels.
	Number  int64
	Open    []int64
	Label   string
	Updated time.Time
}

// ReadWriterRows returns pipeline's rows of the writers table, by database,
// of every database that has one.
func (m *Meta) ReadWriterRows(ctx context.Context, table, pipeline string) (map[string][]WriterRow, error) {
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	defer m.lock()()
	dbs, err := m.databasesWith(ctx, table)
	if err != nil {
		return nil, err
	}
	out := map[string][]WriterRow{}
	for _, d := range dbs {
		q := fmt.Sprintf("SELECT `writer`, `label_number`, `open_labels`, `label`, `updated_at` FROM `%s`.`%s` WHERE `pipeline_id` = ?", d, table)
		rows, err := m.db.QueryContext(ctx, q, pipeline)
		if err != nil {
			return nil, fmt.Errorf("reading the writer rows of %s.%s: %w", d, table, err)
		}
		for rows.Next() {
			var r WriterRow
			var open, lbl, updated sql.NullString
			if err := rows.Scan(&r.Writer, &r.Number, &open, &lbl, &updated); err != nil {
				_ = rows.Close()
				return nil, fmt.Errorf("reading the writer rows of %s.%s: %w", d, table, err)
			}
			if r.Open, err = ParseOpenLabels(open.String); err != nil {
				_ = rows.Close()
				return nil, fmt.Errorf("reading the row of writer %s in %s.%s: %w", r.Writer, d, table, err)
			}
			r.Label, r.Updated = lbl.String, ParseRowTime(updated.String)
			out[d] = append(out[d], r)
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("reading the writer rows of %s.%s: %w", d, table, err)
		}
	}
	return out, nil
}
