package debezium_txn

import "github.com/redpanda-data/benthos/v4/public/service"

// inputMetrics are the input's metrics; every one exists (at 0) from the
// start, so dashboards and alerts see them before the first event.
type inputMetrics struct {
	transactions      *service.MetricCounter
	events            *service.MetricCounter
	snapshotRows      *service.MetricCounter
	untransactedRows  *service.MetricCounter
	duplicates        *service.MetricCounter
	resent            *service.MetricCounter
	progressSkipped   *service.MetricCounter
	emptyTxns         *service.MetricCounter
	operatorSkipped   *service.MetricCounter
	tombstones        *service.MetricCounter
	truncatesSkipped  *service.MetricCounter
	incompleteReports *service.MetricCounter
	commits           *service.MetricCounter
	commitErrors      *service.MetricCounter
	fences            *service.MetricCounter
	readAheadWaits    *service.MetricCounter

	bufferedBytes   *service.MetricGauge
	bufferedTxns    *service.MetricGauge
	bufferFull      *service.MetricGauge
	inFlight        *service.MetricGauge
	stopped         *service.MetricGauge
	standby         *service.MetricGauge
	committedOffset *service.MetricGauge
}

func newInputMetrics(m *service.Metrics) inputMetrics {
	im := inputMetrics{
		transactions:      m.NewCounter("debezium_txn_transactions"),
		events:            m.NewCounter("debezium_txn_events"),
		snapshotRows:      m.NewCounter("debezium_txn_snapshot_rows"),
		untransactedRows:  m.NewCounter("debezium_txn_untransacted_rows"),
		duplicates:        m.NewCounter("debezium_txn_duplicates"),
		resent:            m.NewCounter("debezium_txn_resent_transactions"),
		progressSkipped:   m.NewCounter("debezium_txn_progress_skipped"),
		emptyTxns:         m.NewCounter("debezium_txn_empty_transactions"),
		operatorSkipped:   m.NewCounter("debezium_txn_transactions_skipped"),
		tombstones:        m.NewCounter("debezium_txn_tombstones"),
		truncatesSkipped:  m.NewCounter("debezium_txn_truncates_skipped"),
		incompleteReports: m.NewCounter("debezium_txn_incomplete_reports"),
		commits:           m.NewCounter("debezium_txn_commits"),
		commitErrors:      m.NewCounter("debezium_txn_commit_errors"),
		fences:            m.NewCounter("debezium_txn_fences"),
		readAheadWaits:    m.NewCounter("debezium_txn_read_ahead_waits"),
		bufferedBytes:     m.NewGauge("debezium_txn_buffered_bytes"),
		bufferedTxns:      m.NewGauge("debezium_txn_buffered_transactions"),
		bufferFull:        m.NewGauge("debezium_txn_buffer_full"),
		inFlight:          m.NewGauge("debezium_txn_in_flight"),
		stopped:           m.NewGauge("debezium_txn_stopped"),
		standby:           m.NewGauge("debezium_txn_standby"),
		committedOffset:   m.NewGauge("debezium_txn_committed_offset", "topic", "partition"),
	}
	for _, c := range []*service.MetricCounter{im.transactions, im.events, im.snapshotRows, im.untransactedRows,
		im.duplicates, im.resent, im.progressSkipped, im.emptyTxns, im.operatorSkipped, im.tombstones, im.truncatesSkipped,
		im.incompleteReports, im.commits, im.commitErrors, im.fences, im.readAheadWaits} {
		c.Incr(0)
	}
	for _, g := range []*service.MetricGauge{im.bufferedBytes, im.bufferedTxns, im.bufferFull, im.inFlight, im.stopped, im.standby} {
		g.Set(0)
	}
	return im
}

// addStats turns the growth of the assembler's counters into metric
// increments.
func (m inputMetrics) addStats(now, before assemblerStats) {
	for _, d := range []struct {
		c    *service.MetricCounter
		a, b int64
	}{
		{m.transactions, now.txnsEmitted, before.txnsEmitted},
		{m.events, now.eventsEmitted, before.eventsEmitted},
		{m.snapshotRows, now.snapshotRows, before.snapshotRows},
		{m.untransactedRows, now.untransactedRows, before.untransactedRows},
		{m.duplicates, now.duplicates, before.duplicates},
		{m.resent, now.resentSkipped, before.resentSkipped},
		{m.progressSkipped, now.progressSkipped, before.progressSkipped},
		{m.emptyTxns, now.emptyTxns, before.emptyTxns},
		{m.operatorSkipped, now.operatorSkipped, before.operatorSkipped},
		{m.tombstones, now.tombstone, before.tombstone},
		{m.truncatesSkipped, now.truncatesSkipped, before.truncatesSkipped},
	} {
		if d.a > d.b {
			d.c.Incr(d.a - d.b)
		}
	}
}
