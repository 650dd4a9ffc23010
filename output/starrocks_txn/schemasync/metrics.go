package schemasync

import (
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// metrics are the book's series (ARCHITECTURE.md §14.2).
type metrics struct {
	changes    *service.MetricCounter
	mismatches *service.MetricCounter
	ignored    *service.MetricCounter
	wait       *service.MetricTimer
}

func newMetrics(m *service.Metrics) metrics {
	if m == nil {
		m = service.MockResources().Metrics()
	}
	return metrics{
		changes:    m.NewCounter("starrocks_txn_schema_changes", "database", "table", "kind"),
		mismatches: m.NewCounter("starrocks_txn_schema_mismatches", "database", "table"),
		ignored:    m.NewCounter("starrocks_txn_ignored_fields", "database", "table", "column"),
		wait:       m.NewTimer("starrocks_txn_schema_change_wait_ns", "database", "table"),
	}
}

func (m metrics) change(k tableKey, kind string) { m.changes.Incr(1, k.db, k.table, kind) }

func (m metrics) mismatch(k tableKey) { m.mismatches.Incr(1, k.db, k.table) }

func (m metrics) ignoredField(k tableKey, column string) { m.ignored.Incr(1, k.db, k.table, column) }

func (m metrics) waited(k tableKey, d time.Duration) { m.wait.Timing(int64(d), k.db, k.table) }
