package starrocks_txn

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Columns of the progress table (exactly-once mode, DESIGN §7). The table
// is a PRIMARY KEY table in every target database:
//
//	CREATE TABLE benthos_progress (
//	  source_partition VARCHAR(255) NOT NULL,
//	  committed_offset BIGINT NOT NULL,
//	  label VARCHAR(128) NULL
//	) PRIMARY KEY (source_partition)
//	DISTRIBUTED BY HASH (source_partition);
const (
	progressPartitionCol = "source_partition"
	progressOffsetCol    = "committed_offset"
	progressLabelCol     = "label"
)

// progressDDL is the statement the README and the error messages show.
func progressDDL(db, table string) string {
	return fmt.Sprintf("CREATE TABLE `%s`.`%s` (`%s` VARCHAR(255) NOT NULL, `%s` BIGINT NOT NULL, `%s` VARCHAR(128) NULL) PRIMARY KEY (`%s`) DISTRIBUTED BY HASH (`%s`)",
		db, table, progressPartitionCol, progressOffsetCol, progressLabelCol, progressPartitionCol, progressPartitionCol)
}

// progressRows returns, for every partition with a transaction in c, the
// partition's committed-through offset as it will be once c commits: the END
// offset of the last transaction of the partition's prefix in which every
// transaction is resolved or in c. Written in the same StarRocks transaction
// as the rows, it tells a restarted input where the partition's committed
// source transactions end.
func (w *dbWorker) progressRows(c *cycle) []byte {
	o := w.o
	in := make(map[*srcTxn]bool, len(c.txns))
	parts := map[*partition]bool{}
	for _, t := range c.txns {
		in[t] = true
		parts[t.p] = true
	}
	type row struct {
		Partition string `json:"source_partition"`
		Offset    int64  `json:"committed_offset"`
		Label     string `json:"label"`
	}
	var rows []row
	o.mu.Lock()
	for p := range parts {
		if p.fenced || p.key.partition == noContractPartition {
			continue
		}
		var through int64
		found := false
		for _, t := range p.order {
			if !t.resolved && !in[t] {
				break
			}
			if t.hasEnd {
				through, found = t.endOffset, true
			}
		}
		if found {
			rows = append(rows, row{Partition: p.key.partition, Offset: through, Label: c.label})
		}
	}
	o.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	// Two seq sources may share a partition: keep the highest offset, since
	// StarRocks applies one load's rows of a key in order.
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Partition != rows[j].Partition {
			return rows[i].Partition < rows[j].Partition
		}
		return rows[i].Offset < rows[j].Offset
	})
	b, _ := json.Marshal(rows)
	return b
}

// readProgress reads a partition's committed-through offset back from the
// progress table of every database that has one: the highest is where the
// partition's resolved source transactions end.
func readProgress(ctx context.Context, db *sql.DB, table, partition string) (int64, bool, error) {
	rows, err := db.QueryContext(ctx, "SELECT TABLE_SCHEMA FROM information_schema.tables WHERE TABLE_NAME = ?", table)
	if err != nil {
		return 0, false, fmt.Errorf("finding the progress tables %q: %w", table, err)
	}
	var dbs []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			_ = rows.Close()
			return 0, false, fmt.Errorf("finding the progress tables %q: %w", table, err)
		}
		if !strings.EqualFold(name, "information_schema") {
			dbs = append(dbs, name)
		}
	}
	if err := rows.Close(); err != nil {
		return 0, false, fmt.Errorf("finding the progress tables %q: %w", table, err)
	}
	var best int64
	found := false
	for _, d := range dbs {
		var off int64
		q := fmt.Sprintf("SELECT `%s` FROM `%s`.`%s` WHERE `%s` = ?", progressOffsetCol, d, table, progressPartitionCol)
		err := db.QueryRowContext(ctx, q, partition).Scan(&off)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return 0, false, fmt.Errorf("reading the progress of %s from %s.%s: %w", partition, d, table, err)
		}
		if !found || off > best {
			best, found = off, true
		}
	}
	return best, found, nil
}
