package starrocks_txn

import "github.com/redpanda-data/benthos/v4/public/service"

// metrics are the output's own metrics, through the Benthos metrics API.
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
		stalled:           m.NewGauge("starrocks_txn_stalled_partition", "partition", "txn_id"),
		stalledCount:      m.NewCounter("starrocks_txn_partition_stalls"),
		stalledPartitions: m.NewGauge("starrocks_txn_stalled_partitions"),
		seqGaps:           m.NewCounter("starrocks_txn_sequence_gaps", "seq_source"),
		buffered:          m.NewGauge("starrocks_txn_buffered_bytes"),
		openRegions:       m.NewGauge("starrocks_txn_open_regions"),
		waiting:           m.NewGauge("starrocks_txn_waiting_write_batches"),
		mifStarved:        m.NewCounter("starrocks_txn_max_in_flight_starved"),
		replaysDropped:    m.NewCounter("starrocks_txn_replays_dropped", "partition"),
		staleEpoch:        m.NewCounter("starrocks_txn_stale_epoch_messages", "partition"),
		lifecycleErrors:   m.NewCounter("starrocks_txn_lifecycle_errors"),
	}
}
