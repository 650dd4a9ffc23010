package starrocks_txn

import (
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// Reasons of starrocks_txn_cycle_retries besides the reply classes
// (reasonOf): a begin that failed, loaded rows of a dropped transaction, and
// the progress rows.
const (
	reasonBegin    = "begin"
	reasonFenced   = "fenced"
	reasonProgress = "progress"
	// reasonPrepared: a per-table cycle whose prepares aged past half the
	// prepared timeout before its decision (ARCHITECTURE.md §15.1).
	reasonPrepared = "prepared_too_old"
	// reasonOutlived: a cycle whose label failed once it was older than
	// the recycle age (80 % of txn_timeout); it is replayed in smaller
	// parts (commit.go: deliver).
	reasonOutlived = "txn_timeout"
)

// retryReasons is every reason label starrocks_txn_cycle_retries takes: a
// fixed set, so each database's series all exist from its first sight.
var retryReasons = []string{
	starrocks.ClassRetrySafe.String(), starrocks.ClassAmbiguous.String(), starrocks.ClassTransient.String(),
	starrocks.ClassPerTxn.String(), starrocks.ClassFatal.String(), reasonBegin, reasonFenced, reasonProgress,
	reasonPrepared, reasonOutlived,
}

// metrics are the output's own metrics, through the Benthos metrics API.
// The Benthos API cannot delete a series, so no label takes a value without
// bound: databases only once StarRocks began a transaction in them
// (dbWorker.metricDB), partitions as the source names them
// (partitionLabel), never a transaction id (a stalled partition's
// transaction is in the log line that reports the stall) nor an assembler
// instance (starrocks_seq_source is random per start: the sequence-gap log
// line names it, the counter has no label).
type metrics struct {
	commits           *service.MetricCounter
	rollbacks         *service.MetricCounter
	retries           *service.MetricCounter
	loads             *service.MetricCounter
	loadBytes         *service.MetricCounter
	commitLatency     *service.MetricTimer
	visibility        *service.MetricTimer
	rows              *service.MetricCounter
	srcTxns           *service.MetricCounter
	deadLettered      *service.MetricCounter
	stalled           *service.MetricGauge
	stalledCount      *service.MetricCounter
	stalledPartitions *service.MetricGauge
	seqGaps           *service.MetricCounter
	buffered          *service.MetricGauge
	openRegions       *service.MetricGauge
	waiting           *service.MetricGauge
	mifStarved        *service.MetricCounter
	replaysDropped    *service.MetricCounter
	staleEpoch        *service.MetricCounter
	lifecycleErrors   *service.MetricCounter
	unknownCommits    *service.MetricCounter
	unresolved        *service.MetricGauge
	leaseWaits        *service.MetricCounter
	// connected is 1 while StarRocks answers (connect.go).
	connected *service.MetricGauge
	// commitWindow is, per per-table cycle, the time from its first COMMIT
	// sent to its last data COMMIT answered: while it lasts a reader may
	// see part of a source transaction (ARCHITECTURE.md §15); brokenCycles
	// counts decided per-table cycles a part of which expired before its
	// commit (pertable.go).
	commitWindow *service.MetricTimer
	brokenCycles *service.MetricCounter
}

func newMetrics(m *service.Metrics) *metrics {
	return &metrics{
		commits:           m.NewCounter("starrocks_txn_commits", "database"),
		rollbacks:         m.NewCounter("starrocks_txn_rollbacks", "database"),
		retries:           m.NewCounter("starrocks_txn_cycle_retries", "database", "reason"),
		loads:             m.NewCounter("starrocks_txn_loads", "database", "table"),
		loadBytes:         m.NewCounter("starrocks_txn_load_bytes", "database", "table"),
		commitLatency:     m.NewTimer("starrocks_txn_commit_latency_ns", "database"),
		visibility:        m.NewTimer("starrocks_txn_visibility_latency_ns", "database"),
		rows:              m.NewCounter("starrocks_txn_rows_committed", "database", "table"),
		srcTxns:           m.NewCounter("starrocks_txn_source_txns_committed", "database"),
		deadLettered:      m.NewCounter("starrocks_txn_dead_lettered", "partition"),
		stalled:           m.NewGauge("starrocks_txn_stalled_partition", "partition"),
		stalledCount:      m.NewCounter("starrocks_txn_partition_stalls"),
		stalledPartitions: m.NewGauge("starrocks_txn_stalled_partitions"),
		seqGaps:           m.NewCounter("starrocks_txn_sequence_gaps"),
		buffered:          m.NewGauge("starrocks_txn_buffered_bytes"),
		openRegions:       m.NewGauge("starrocks_txn_open_regions"),
		waiting:           m.NewGauge("starrocks_txn_waiting_write_batches"),
		mifStarved:        m.NewCounter("starrocks_txn_max_in_flight_starved"),
		replaysDropped:    m.NewCounter("starrocks_txn_replays_dropped", "partition"),
		staleEpoch:        m.NewCounter("starrocks_txn_stale_epoch_messages", "partition"),
		lifecycleErrors:   m.NewCounter("starrocks_txn_lifecycle_errors"),
		unknownCommits:    m.NewCounter("starrocks_txn_unknown_commits", "database"),
		unresolved:        m.NewGauge("starrocks_txn_unresolved_commits"),
		leaseWaits:        m.NewCounter("starrocks_txn_lease_waits", "partition"),
		connected:         m.NewGauge("starrocks_txn_connected"),
		commitWindow:      m.NewTimer("starrocks_txn_commit_window_ns", "database"),
		brokenCycles:      m.NewCounter("starrocks_txn_broken_cycles", "database"),
	}
}

// startAtZero makes every series the output can name at start exist at 0, so
// that a dashboard or an alert rule sees 0 rather than "no data" before the
// first event: the counters and gauges without labels, the retries of a
// database not begun yet, and, per target the configuration names (a literal
// database and table, the table_properties entries, the progress and writers
// tables), the per-database and load counters. Databases named by the data
// get theirs when StarRocks first begins a transaction there (seedDatabase),
// partitions when first seen (seedPartition):
// an alert on increase() then sees the step from 0 of the first event.
// Timers have no value before their first sample.
func (m *metrics) startAtZero(c config) {
	for _, r := range retryReasons {
		m.retries.Incr(0, notBegunDB, r)
	}
	for _, ctr := range []*service.MetricCounter{m.stalledCount, m.mifStarved, m.lifecycleErrors, m.seqGaps} {
		ctr.Incr(0)
	}
	for _, g := range []*service.MetricGauge{m.stalledPartitions, m.buffered, m.openRegions, m.waiting, m.connected, m.unresolved} {
		g.Set(0)
	}
	tables := map[string]map[string]bool{}
	add := func(db, table string) {
		if db == "" {
			return
		}
		if tables[db] == nil {
			tables[db] = map[string]bool{}
		}
		if table != "" {
			tables[db][table] = true
		}
	}
	add(c.conn.database, c.conn.table)
	for _, tp := range c.tableProperties {
		add(tp.database, tp.table)
	}
	for _, db := range sortedKeys(tables) {
		m.seedDatabase(db)
		for _, table := range sortedKeys(tables[db]) {
			m.loads.Incr(0, db, table)
			m.loadBytes.Incr(0, db, table)
			m.rows.Incr(0, db, table)
		}
		var own []string
		if c.exactlyOnce {
			own = append(own, c.progressTable)
		}
		if c.trackWriters() {
			own = append(own, writersTable(c.progressTable))
		}
		for _, table := range own {
			m.loads.Incr(0, db, table)
			m.loadBytes.Incr(0, db, table)
		}
	}
}

// seedDatabase makes the per-database counters of db exist at 0 (adding 0 to
// a series that exists changes nothing).
func (m *metrics) seedDatabase(db string) {
	m.commits.Incr(0, db)
	m.rollbacks.Incr(0, db)
	m.srcTxns.Incr(0, db)
	m.unknownCommits.Incr(0, db)
	m.brokenCycles.Incr(0, db)
	for _, r := range retryReasons {
		m.retries.Incr(0, db, r)
	}
}

// seedPartition makes the dead-letter counter of a partition label exist at
// 0 once the partition is first seen.
func (m *metrics) seedPartition(label string) { m.deadLettered.Incr(0, label) }

// partitionLabel is the partition label value of the per-partition metrics:
// the source partition alone, without the seq source (an assembler
// instance), so that their series are bounded by the source's partitions.
func partitionLabel(p *partition) string { return p.key.partition }
