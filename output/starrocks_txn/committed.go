// What a committed cycle changes: its transactions resolved in the core,
// the metrics of the commit, and the counts per table (ARCHITECTURE.md §4.3).

package starrocks_txn

import (
	"errors"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// committed resolves every transaction of a committed cycle.
func (w *dbWorker) committed(c *cycle, start time.Time) {
	o := w.o
	now := o.now()
	o.m.commits.Incr(1, w.metricDB())
	o.m.commitLatency.Timing(int64(now.Sub(start)), w.metricDB())
	o.mu.Lock()
	defer o.mu.Unlock()
	// A fence or a stall may have taken a transaction while the commit was
	// in flight: it is committed all the same. Its rows are counted only
	// when the move is allowed (a refusal is reported by move), and
	// before any move, which acknowledges messages: a caller whose
	// WriteBatch returned reads the metrics that count it. A move changes
	// no other transaction's state, so deciding them all first is the same
	// as deciding each before its own move. The counters take one call per
	// label set for the whole commit: a labelled call allocates.
	db := w.metricDB()
	counted := w.countedRows[:0]
	var txns int64
	for _, t := range c.txns {
		if !commitsNow(t) {
			continue
		}
		for i, tbl := range t.tables {
			counted = addTableCount(counted, tbl, int64(len(t.tableRows[i])))
		}
		txns++
		o.m.visibility.Timing(int64(now.Sub(t.t0)), db)
	}
	for _, tc := range counted {
		o.m.rows.Incr(tc.n, db, tc.table)
	}
	if txns > 0 {
		o.m.srcTxns.Incr(txns, db)
	}
	clear(counted)
	w.countedRows = counted[:0]
	o.core.committed(c.txns)
}

// commitsNow reports whether a transaction of a cycle StarRocks committed
// becomes committed now: a move the lifecycle allows (a refusal is reported
// by move), for one that is not over.
func commitsNow(t *srcTxn) bool {
	return !t.state.over() && canMove(t.state, txnCommitted, t.inCommit, t.inDeadLetter)
}

// committed resolves every transaction of a committed cycle, those a fence
// or a stall took while the commit was in flight included, and ends the
// commit's hold on them.
func (k *core) committed(txns []*srcTxn) {
	for _, t := range txns {
		if !t.state.over() {
			k.move(t, txnCommitted)
		}
		t.inCommit = false
	}
}

// tableCount is a table's rows in one commit (dbWorker.committed).
type tableCount struct {
	table string
	n     int64
}

// addTableCount adds n rows of table to counts: a commit touches a few
// tables, so a linear scan beats a map.
func addTableCount(counts []tableCount, table string, n int64) []tableCount {
	for i := range counts {
		if counts[i].table == table {
			counts[i].n += n
			return counts
		}
	}
	return append(counts, tableCount{table: table, n: n})
}

// reasonOf is the cycle_retries reason of a failure: its class, or a
// per-table cycle too old to decide (reasonPrepared).
func reasonOf(err error) string {
	if errors.Is(err, errPreparedTooOld) {
		return reasonPrepared
	}
	return starrocks.ClassOf(err).String()
}
