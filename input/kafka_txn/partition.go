package kafka_txn

// Home of G52 (ARCHITECTURE.md §11.2): offsets are committed only at committed boundaries, never
// at or past a nacked batch. Main test: TestCommitTarget.

import (
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pendingBatch is a delivered batch of one partition, not yet acknowledged.
type pendingBatch struct {
	first, last int64
	n           int
	acked       bool
	nacked      bool
}

// partState is the state of one assigned partition. A new assignment gets a
// new partState, so an acknowledgement of an older assignment finds its
// partState gone from the map and marks nothing.
type partState struct {
	topic string
	part  int32
	id    string
	label string
	// epoch is the partition's assignment epoch in the registry, stamped
	// on every message of the assignment (contract.KeyPartitionEpoch).
	epoch uint64

	// builder makes the assignment's messages (message.go).
	builder *recordBuilder
	queue   []*kgo.Record // fetched, not yet handed to a batch
	// queueBytes is the size of the queued records' values.
	queueBytes int
	// queued is the input's sum of every partition's queue (readahead.go),
	// which the queue's changes keep.
	queued *queuedCount
	// batcher applies a policy with processors (batchRule.benthos).
	batcher *service.Batcher
	// batching are the records taken from the queue, not yet delivered
	// (added to the batcher with one; else pending here with their
	// messages, batchMsgs); batchBytes is the size of their values.
	batching   []*kgo.Record
	batchMsgs  service.MessageBatch
	batchBytes int
	// endIdx is how many pending records go up to the last one known to
	// end a source transaction; endChecked how many were asked about
	// (lastEnd). lastFlush is when a part of the partition was last
	// delivered (the batching period runs from it).
	endIdx, endChecked int
	lastFlush          time.Time
	pending            []*pendingBatch // delivered, in offset order

	unacked       int   // delivered and not acknowledged
	firstOffset   int64 // first offset fetched in this assignment
	nextFetch     int64 // offset after the last fetched record
	deliveredNext int64 // offset after the last delivered record
	ackedNext     int64 // offset after the contiguous acknowledged prefix
	committedThru int64 // END offset the output published as committed
	lastCommitted int64 // last offset committed to the group by this assignment
	groupOffset   int64 // the group's committed offset when it was assigned
	hwm           int64
	// lagSet and committedLagSet are the values last set on the
	// partition's lag gauges (updateLagLocked).
	lagSet, committedLagSet gaugeValue

	failed   error // set by a nack: the partition is stopped
	failedAt int64 // first offset of the nacked batch

	revoking        bool
	paused          bool
	lastDelivery    time.Time
	lastAck         time.Time
	limitSince      time.Time
	lastStallReport time.Time
}

// commitTarget returns the offset to commit for the partition, or -1. With a
// tracking output it is the committed-through END offset plus one (the next
// position after the END; it may be a transaction marker), never past what
// was delivered in this assignment. Otherwise it is the end of the
// contiguous acknowledged prefix. Nothing at or past a nacked batch is ever
// committed.
func (ps *partState) commitTarget(tracking bool) int64 {
	t := int64(-1)
	if tracking {
		if ps.firstOffset >= 0 && ps.committedThru >= ps.firstOffset && ps.deliveredNext >= 0 {
			t = min(ps.committedThru+1, ps.deliveredNext)
		}
	} else {
		t = ps.ackedNext
	}
	if ps.failed != nil && t > ps.failedAt {
		t = ps.failedAt
	}
	return t
}

// committedLag is the high watermark minus the offset committed to the group
// (by this assignment, else the group's offset at assignment, else, with
// neither, the first offset fetched): what a restart would read again.
// Transaction markers count. It rises while a partition is stalled, however
// it stalls. ok is false until both ends are known.
func (ps *partState) committedLag() (int64, bool) {
	base := ps.lastCommitted
	if base < 0 {
		base = ps.groupOffset
	}
	if base < 0 {
		base = ps.firstOffset
	}
	if ps.hwm < 0 || base < 0 {
		return 0, false
	}
	return max(ps.hwm-base, 0), true
}
