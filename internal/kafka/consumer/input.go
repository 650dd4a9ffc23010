package consumer

import (
	"context"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// Input is what an input built on the shell implements: what it makes of
// fetched records, what it delivers, what it commits, and what an
// assignment and a release mean to its state. Methods whose name ends in
// Locked are called with the input's lock (the one given to New) held;
// the others without it.
type Input interface {
	// StartLocked is called by Connect with the input's client; it returns
	// the input's background work (reports, gauges), run until Close, or
	// nil.
	StartLocked(cl *kgo.Client) func(context.Context)

	// Fetched is given each poll's records; the function it returns runs
	// with the lock held (the work that needs no lock, such as decoding,
	// is done before).
	Fetched(fetches kgo.Fetches) func()
	// NextBatchLocked returns the next batch to deliver and its
	// acknowledgement, or else how long to wait at most (0: until
	// signalled, SignalLocked).
	NextBatchLocked(ctx context.Context) (service.MessageBatch, service.AckFunc, time.Duration)

	// Assign is franz-go's OnPartitionsAssigned: the input takes the
	// partitions and claims the output partitions it will write
	// (ClaimLocked).
	Assign(ctx context.Context, assigned map[string][]int32)
	// AdjustOffsets is franz-go's AdjustFetchOffsetsFn: where newly
	// assigned partitions start.
	AdjustOffsets(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error)

	// StopLocked begins a release (a revoke, or a loss when lost): nothing
	// more of the partitions is delivered and their acknowledgements mark
	// nothing. It returns the output partitions to fence (claimed ones) and
	// when a batch of them was last delivered.
	StopLocked(partitions map[string][]int32, lost bool) (ids []string, lastDelivery time.Time)
	// DropLocked ends a release after the fence (and the commit of a
	// revoke): the input forgets the released partitions. The function it
	// returns, if any, runs after the lock is released.
	DropLocked(ids []string, lost bool) func()

	// CommitLocked returns the offsets to commit for the given output
	// partitions (nil: everything not being released) and what to do,
	// with the lock held, with the offsets the coordinator took.
	CommitLocked(ids []string) (map[kafka.TopicPartition]int64, func(committed map[kafka.TopicPartition]int64))
	// CommittedLocked is told that the output committed a claimed output
	// partition through offset (ARCHITECTURE.md §4.6), a forward move.
	CommittedLocked(id string, offset int64)

	// Closed runs once Close left the group and closed the client.
	Closed(ctx context.Context)
}

// ReadAheadLimiter is implemented by an input that bounds the fetched
// records it holds and has not delivered yet: the poll loop polls only
// while ReadAheadFullLocked reports false, and otherwise waits for the
// input's signal (SignalLocked) or readAheadRecheck. franz-go meanwhile
// holds at most one fetch per broker, so what was read ahead stays about
// the input's bound plus one poll, rather than everything the input would
// take (kafka_txn: checkpoint_limit per partition). Not polling, unlike
// pausing partitions, drops no fetched data and leaves every partition in
// the next fetch.
type ReadAheadLimiter interface {
	ReadAheadFullLocked() bool
}

// UnclaimedReporter is implemented by an input that reports a partition
// key used downstream that no input assigned (registry.Unclaimed), each
// once, called without the input's lock.
type UnclaimedReporter interface {
	Unclaimed(key string, claimed []string)
}
