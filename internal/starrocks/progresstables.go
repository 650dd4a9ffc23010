package starrocks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
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

// ProgressReadChunk bounds the partitions one statement of ReadProgressOf
// asks for (its IN list): a statement's text and its answer stay small
// however many partitions are read together.
const ProgressReadChunk = 500

// ReadProgressOf returns, by partition, the rows of pipeline's partitions in
// the progress table of every database that has one (a partition without a
// row in any database is absent). It lists those databases once and asks
// each for up to ProgressReadChunk partitions per statement, so that the
// partitions of an assignment are read in a few statements per database,
// not one each (ARCHITECTURE.md §7).
//
// The listing and each statement are bounded one by one (Meta.bound; the
// statements per database): the read's statements grow with the partitions
// asked for, and one bound for them all would time out a read of many
// partitions at every attempt on an FE that answers each statement within
// its own bound.
func (m *Meta) ReadProgressOf(ctx context.Context, table, pipeline string, partitions []string) (map[string][]ProgressRow, error) {
	if err := checkIdents("information_schema", table); err != nil {
		return nil, err
	}
	out := map[string][]ProgressRow{}
	if len(partitions) == 0 {
		return out, nil
	}
	dbs, err := m.DatabasesWith(ctx, table)
	if err != nil {
		return nil, err
	}
	for _, d := range dbs {
		if checkIdents(d) != nil {
			// The output never writes to a database of such a name
			// (admission refuses it), so it holds none of its rows.
			continue
		}
		for chunk := range slices.Chunk(partitions, ProgressReadChunk) {
			if err := m.readProgressChunk(ctx, d, table, pipeline, chunk, out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// readProgressChunk adds db's rows of pipeline's partitions in chunk to out:
// one statement, one row per partition at most (the primary key), under
// its own bound.
func (m *Meta) readProgressChunk(ctx context.Context, db, table, pipeline string, chunk []string, out map[string][]ProgressRow) (err error) {
	ctx, end := m.bound(ctx, "progress "+table, db)
	defer func() { end(err == nil) }()
	q := fmt.Sprintf("SELECT `%s`, `%s`, `%s` FROM `%s`.`%s` WHERE `%s` = ? AND `%s` IN (?%s)",
		ProgressPartitionCol, ProgressOffsetCol, ProgressTxnEndCol, db, table, ProgressPipelineCol, ProgressPartitionCol,
		strings.Repeat(", ?", len(chunk)-1))
	args := make([]any, 0, len(chunk)+1)
	args = append(args, pipeline)
	for _, p := range chunk {
		args = append(args, p)
	}
	what := func() string {
		if len(chunk) == 1 {
			return chunk[0]
		}
		return fmt.Sprintf("%d partitions (%s … %s)", len(chunk), chunk[0], chunk[len(chunk)-1])
	}
	rows, err := m.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("reading the progress of %s from %s.%s: %w", what(), db, table, err)
	}
	for rows.Next() {
		var part string
		r := ProgressRow{DB: db}
		if err := rows.Scan(&part, &r.Through, &r.TxnEnd); err != nil {
			_ = rows.Close()
			return fmt.Errorf("reading the progress of %s from %s.%s: %w", what(), db, table, err)
		}
		out[part] = append(out[part], r)
	}
	// A result cut short (a connection reset, the bound) ends Next
	// without an error of Close: missing rows would be taken for
	// partitions without progress.
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("reading the progress of %s from %s.%s: %w", what(), db, table, err)
	}
	return nil
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
func (m *Meta) ReadWriterRows(ctx context.Context, table, pipeline string) (_ map[string][]WriterRow, err error) {
	if err := checkIdents("information_schema", table); err != nil {
		return nil, err
	}
	ctx, end := m.bound(ctx, "writer_rows "+table, "")
	defer func() { end(err == nil) }()
	dbs, err := m.databasesWith(ctx, table)
	if err != nil {
		return nil, err
	}
	out := map[string][]WriterRow{}
	for _, d := range dbs {
		if checkIdents(d) != nil {
			continue // as in ReadProgress
		}
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
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("reading the writer rows of %s.%s: %w", d, table, err)
		}
	}
	return out, nil
}

// LabeledProgress is one partition's row of the progress table of one
// database, with the label that wrote it.
type LabeledProgress struct {
	Through, TxnEnd int64
	Label           string
}

// ReadProgressRow returns pipeline's row of partition in db's progress
// table; found is false when there is none. A caller settles by it whether
// a label that carried the row committed: StarRocks forgets the states of
// finished labels by count (label_keep_max_num), the row stays.
func (m *Meta) ReadProgressRow(ctx context.Context, db, table, pipeline, partition string) (r LabeledProgress, found bool, err error) {
	if err := checkIdents(db, table); err != nil {
		return r, false, err
	}
	ctx, end := m.bound(ctx, "progress_row "+table, db)
	defer func() { end(err == nil) }()
	q := fmt.Sprintf("SELECT `%s`, `%s`, `%s` FROM `%s`.`%s` WHERE `%s` = ? AND `%s` = ?",
		ProgressOffsetCol, ProgressTxnEndCol, ProgressLabelCol, db, table, ProgressPipelineCol, ProgressPartitionCol)
	var lbl sql.NullString
	err = m.db.QueryRowContext(ctx, q, pipeline, partition).Scan(&r.Through, &r.TxnEnd, &lbl)
	switch {
	case err == sql.ErrNoRows:
		return r, false, nil
	case err != nil:
		return r, false, fmt.Errorf("reading the progress of %s from %s.%s: %w", partition, db, table, err)
	}
	r.Label = lbl.String
	return r, true, nil
}

// ReadWriterRow returns the row of one writer of pipeline in db's writers
// table; found is false when there is none.
func (m *Meta) ReadWriterRow(ctx context.Context, db, table, pipeline, writer string) (r WriterRow, found bool, err error) {
	if err := checkIdents(db, table); err != nil {
		return r, false, err
	}
	ctx, end := m.bound(ctx, "writer_row "+table, db)
	defer func() { end(err == nil) }()
	q := fmt.Sprintf("SELECT `writer`, `label_number`, `open_labels`, `label`, `updated_at` FROM `%s`.`%s` WHERE `pipeline_id` = ? AND `writer` = ?", db, table)
	var open, lbl, updated sql.NullString
	err = m.db.QueryRowContext(ctx, q, pipeline, writer).Scan(&r.Writer, &r.Number, &open, &lbl, &updated)
	switch {
	case err == sql.ErrNoRows:
		return r, false, nil
	case err != nil:
		return r, false, fmt.Errorf("reading the row of writer %s from %s.%s: %w", writer, db, table, err)
	}
	if r.Open, err = ParseOpenLabels(open.String); err != nil {
		return r, false, fmt.Errorf("reading the row of writer %s in %s.%s: %w", writer, db, table, err)
	}
	r.Label, r.Updated = lbl.String, ParseRowTime(updated.String)
	return r, true, nil
}

// DefaultProgressTable is the progress table's name when none is
// configured; WritersTable names the writers table beside a progress table.
const DefaultProgressTable = "starrocks_txn_progress"

// WritersTable is the writers table of the progress table progress.
func WritersTable(progress string) string { return progress + "_writers" }

// ProgressDetail is a progress row with every column: what an operator
// reads about one partition in one database.
type ProgressDetail struct {
	DB        string
	Partition string
	// Through is committed_offset, TxnEnd txn_end_offset.
	Through, TxnEnd int64
	TxnID, Label    string
	// Updated is updated_at, zero when unknown.
	Updated time.Time
}

// ReadPipelineProgress returns every progress row of pipeline, in every
// database holding the progress table, by database then partition.
func (m *Meta) ReadPipelineProgress(ctx context.Context, table, pipeline string) (_ []ProgressDetail, err error) {
	if err := checkIdents("information_schema", table); err != nil {
		return nil, err
	}
	ctx, end := m.bound(ctx, "pipeline_progress "+table, "")
	defer func() { end(err == nil) }()
	dbs, err := m.databasesWith(ctx, table)
	if err != nil {
		return nil, err
	}
	var out []ProgressDetail
	for _, d := range dbs {
		if checkIdents(d) != nil {
			continue // as in ReadProgress
		}
		q := fmt.Sprintf("SELECT `%s`, `%s`, `%s`, `%s`, `%s`, `%s` FROM `%s`.`%s` WHERE `%s` = ?",
			ProgressPartitionCol, ProgressOffsetCol, ProgressTxnEndCol, ProgressTxnIDCol, ProgressLabelCol, ProgressUpdatedCol,
			d, table, ProgressPipelineCol)
		rows, err := m.db.QueryContext(ctx, q, pipeline)
		if err != nil {
			return nil, fmt.Errorf("reading the progress rows of %s.%s: %w", d, table, err)
		}
		for rows.Next() {
			r := ProgressDetail{DB: d}
			var txn, lbl, updated sql.NullString
			if err := rows.Scan(&r.Partition, &r.Through, &r.TxnEnd, &txn, &lbl, &updated); err != nil {
				_ = rows.Close()
				return nil, fmt.Errorf("reading the progress rows of %s.%s: %w", d, table, err)
			}
			r.TxnID, r.Label, r.Updated = txn.String, lbl.String, ParseRowTime(updated.String)
			out = append(out, r)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("reading the progress rows of %s.%s: %w", d, table, err)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DB != out[j].DB {
			return out[i].DB < out[j].DB
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}
