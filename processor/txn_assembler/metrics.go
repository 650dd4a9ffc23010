// This file holds the processor's metrics: counters whose increments are
// summed over one ProcessBatch call and reported once per counter and label.

package txnassembler

import "github.com/redpanda-data/benthos/v4/public/service"

// metrics are the processor's counters. Each increment of a call is added
// up under the processor's mutex and reported by flush at the end of the
// call: Benthos's MetricCounter.Incr resolves the labelled counter and
// allocates on every call (about ten objects per transaction at two calls
// each), and its public API offers no counter resolved once for fixed
// label values. The totals are the same; they are only reported per batch.
type metrics struct {
	ended      tally
	aborted    tally
	dropped    tally
	errored    tally
	violations tally
}

// The label values of txn_assembler_errors (reason) and
// txn_assembler_dropped (kind).
const (
	reasonPartition      = "partition"
	reasonOffset         = "offset"
	reasonEpoch          = "epoch"
	reasonBadInput       = "bad_input"
	reasonViolation      = "violation"
	reasonIncomplete     = "incomplete"
	reasonReplay         = "replay"
	reasonConcurrentCall = "concurrent_call"

	dropBegin      = "begin"
	dropEnd        = "end"
	dropAbort      = "abort"
	dropSkip       = "skip"
	dropStaleEpoch = "stale_epoch"
	dropDDL        = "ddl"
)

var (
	errorReasons = [...]string{reasonPartition, reasonOffset, reasonEpoch, reasonBadInput, reasonViolation,
		reasonIncomplete, reasonReplay, reasonConcurrentCall}
	dropKinds = [...]string{dropBegin, dropEnd, dropAbort, dropSkip, dropStaleEpoch, dropDDL}
)

// newMetrics makes the counters and reports each series at zero, every
// label value included: a series that appears only when it first moves
// is missed by a dashboard's rate() (which needs two samples), so the
// first error, violation or abort would never show.
func newMetrics(met *service.Metrics) metrics {
	m := metrics{
		ended:      tally{c: met.NewCounter("txn_assembler_transactions_ended")},
		aborted:    tally{c: met.NewCounter("txn_assembler_transactions_aborted")},
		dropped:    tally{c: met.NewCounter("txn_assembler_dropped", "kind")},
		errored:    tally{c: met.NewCounter("txn_assembler_errors", "reason")},
		violations: tally{c: met.NewCounter("txn_assembler_contract_violations")},
	}
	for _, t := range [...]*tally{&m.ended, &m.aborted, &m.violations} {
		t.c.Incr(0)
	}
	for _, r := range errorReasons {
		m.errored.c.Incr(0, r)
	}
	for _, k := range dropKinds {
		m.dropped.c.Incr(0, k)
	}
	return m
}

// flush reports the increments counted since the last flush.
func (m *metrics) flush() {
	for _, t := range [...]*tally{&m.ended, &m.aborted, &m.dropped, &m.errored, &m.violations} {
		t.flush()
	}
}

// tally sums the increments of one counter: plain for a counter without
// labels, per label value for one with a single label. The label values
// seen are kept between calls (there are a handful), so that counting
// allocates nothing once each has been seen.
type tally struct {
	c      *service.MetricCounter
	plain  int64
	labels []string
	n      []int64
}

// incr counts one increment of a counter without labels.
func (t *tally) incr() { t.plain++ }

// incrLabel counts one increment of a counter with the label value l.
func (t *tally) incrLabel(l string) {
	for i, have := range t.labels {
		if have == l {
			t.n[i]++
			return
		}
	}
	t.labels = append(t.labels, l)
	t.n = append(t.n, 1)
}

func (t *tally) flush() {
	if t.plain > 0 {
		t.c.Incr(t.plain)
		t.plain = 0
	}
	for i, n := range t.n {
		if n > 0 {
			t.c.Incr(n, t.labels[i])
			t.n[i] = 0
		}
	}
}
