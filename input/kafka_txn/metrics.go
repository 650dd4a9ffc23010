package kafka_txn

import "github.com/redpanda-data/benthos/v4/public/service"

// inputMetrics are the input's metrics, through the Benthos metrics API. The
// per-partition series are labelled topic and partition (the partition
// number).
type inputMetrics struct {
	lag             *service.MetricGauge
	inFlight        *service.MetricGauge
	paused          *service.MetricGauge
	committedOffset *service.MetricGauge
	committedLag    *service.MetricGauge
	commits         *service.MetricCounter
	commitErrors    *service.MetricCounter
	stalls          *service.MetricCounter
	nacks           *service.MetricCounter
	fences          *service.MetricCounter
	unmatchedKeys   *service.MetricCounter
}

// newInputMetrics creates the input's metrics. The counters without labels
// exist at 0 from the start (a dashboard shows 0, not "no data"); the
// per-partition ones from the partition's assignment (initPartitionLocked).
func newInputMetrics(met *service.Metrics) inputMetrics {
	m := inputMetrics{
		lag:             met.NewGauge("kafka_txn_lag", "topic", "partition"),
		inFlight:        met.NewGauge("kafka_txn_in_flight", "topic", "partition"),
		paused:          met.NewGauge("kafka_txn_paused", "topic", "partition"),
		committedOffset: met.NewGauge("kafka_txn_committed_offset", "topic", "partition"),
		committedLag:    met.NewGauge("kafka_txn_committed_lag", "topic", "partition"),
		commits:         met.NewCounter("kafka_txn_commits"),
		commitErrors:    met.NewCounter("kafka_txn_commit_errors"),
		stalls:          met.NewCounter("kafka_txn_checkpoint_stalls", "topic", "partition"),
		nacks:           met.NewCounter("kafka_txn_nacks", "topic", "partition"),
		fences:          met.NewCounter("kafka_txn_fences", "topic", "partition"),
		unmatchedKeys:   met.NewCounter("kafka_txn_unmatched_partition_keys"),
	}
	m.commits.Incr(0)
	m.commitErrors.Incr(0)
	m.unmatchedKeys.Incr(0)
	return m
}

// initPartition creates the series of a newly assigned partition at 0.
func (m inputMetrics) initPartition(ps *partState) {
	m.stalls.Incr(0, ps.topic, ps.label)
	m.nacks.Incr(0, ps.topic, ps.label)
	m.fences.Incr(0, ps.topic, ps.label)
	m.inFlight.Set(0, ps.topic, ps.label)
	m.paused.Set(0, ps.topic, ps.label)
}

// gaugeValue is the value last set on one of a partition's gauges, so that
// an unchanged value is not set again: Benthos resolves a labelled series at
// every Set.
type gaugeValue struct {
	v   int64
	set bool
}

// changed records v as the gauge's value and reports whether it differs
// from the last one recorded (always, the first time).
func (g *gaugeValue) changed(v int64) bool {
	if g.set && g.v == v {
		return false
	}
	g.v, g.set = v, true
	return true
}
