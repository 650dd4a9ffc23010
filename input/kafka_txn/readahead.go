package kafka_txn

// Read-ahead: the records the input has fetched and not yet made into
// messages (each partition's queue). Without a bound the poll loop takes
// every fetch franz-go makes, and a partition's queue grows to what
// checkpoint_limit leaves (100 000 records by default) while the pipeline
// is slower than Kafka: each queued record keeps its decompressed fetch
// and franz-go's record in memory, about 400 bytes, for nothing the
// pipeline can use yet (docs/benchmark.md, "Memory in flight"). The bound
// is what the input needs to keep batches coming, over every partition
// being fetched, with the one poll that may pass it: the poll loop stops
// polling at it (consumer.ReadAheadLimiter), so franz-go holds at most one
// more fetch per broker and drops nothing.
const (
	// readAheadRecords is a few batches of batching.count, and a fifth of
	// a second of the pipeline at 100 000 records/s.
	readAheadRecords = 20000
	// readAheadBytes bounds the values of the records read ahead, for
	// large records.
	readAheadBytes = 32 << 20
)

// FetchMaxBytes bounds one fetch response (franz-go's FetchMaxBytes; its
// default is 50 MiB). A response carries up to fetch_max_partition_bytes
// (1 MiB by default) of each partition it names, so with a few partitions
// it stays a few MiB, but with hundreds of them one response reaches the
// response-wide bound: at 50 MiB, a response held hundreds of thousands of
// records at once, far past what the input reads ahead (readAheadRecords),
// which franz-go buffered whole while the poll loop waited for room, and
// which the broker built and the client read and decoded as one buffer
// (at 1 024 partitions, the in-process Kafka's growing of those buffers
// was the largest cost the partition count added; docs/benchmark.md,
// "1 024 partitions"). A quarter of readAheadBytes keeps a response within
// the read-ahead and leaves a topic of up to 8 partitions fetched as
// before; franz-go rotates the partitions a response starts with, so
// none is starved. A fetch_max_partition_bytes above it raises it
// (fetchMaxBytes), or franz-go would lower the partition bound to it.
const FetchMaxBytes = readAheadBytes / 4

// brokerMaxReadBytes is franz-go's BrokerMaxReadBytes default: the largest
// response it reads, and a response bound above it is an invalid option.
const brokerMaxReadBytes = 100 << 20

// fetchMaxBytes is the response bound of a client whose partition bound is
// partitionMaxBytes: FetchMaxBytes, or the partition bound when larger, at
// most brokerMaxReadBytes (franz-go lowers a partition bound above the
// response bound to it, as it did to its own 50 MiB default before).
func fetchMaxBytes(partitionMaxBytes int32) int32 {
	return min(max(FetchMaxBytes, partitionMaxBytes), brokerMaxReadBytes)
}

// readAheadLimit is the bound on what the input reads ahead.
type readAheadLimit struct {
	records int
	bytes   int
}

var defaultReadAhead = readAheadLimit{records: readAheadRecords, bytes: readAheadBytes}

// ReadAheadFullLocked reports whether the partitions being fetched hold as
// many fetched records, or bytes of them, as the input reads ahead; the
// poll loop then waits until readAheadTakenLocked wakes it.
func (in *Input) ReadAheadFullLocked() bool {
	full := in.readAheadFull()
	if full {
		in.readAheadWaits++
	}
	in.pollWaiting = full
	return full
}

// readAheadFull reports whether the queues of the partitions being fetched
// hold the bound. A partition that is paused (at checkpoint_limit, stopped
// by a nack) or being revoked does not count: its queue cannot move until
// it resumes, and must not hold up the others. Asked at every poll and, while
// the poll loop waits, at every batch taken, it answers from the sum of every
// partition's queue (queuedCount) while that is below the bound — the
// partitions being fetched are then below it too — and sums the partitions
// only at the bound, so that it costs the partitions' number only there.
func (in *Input) readAheadFull() bool {
	if in.queued.records < in.readAhead.records && in.queued.bytes < in.readAhead.bytes {
		return false
	}
	recs, bytes := 0, 0
	var all queuedCount
	for _, ps := range in.parts {
		all.add(len(ps.queue), ps.queueBytes)
		if ps.paused || ps.failed != nil || ps.revoking {
			continue
		}
		recs += len(ps.queue)
		bytes += ps.queueBytes
	}
	// The sum made afresh: nothing a partition left behind outlives it.
	in.queued = all
	return recs >= in.readAhead.records || bytes >= in.readAhead.bytes
}

// queuedCount is the sum of the queues of every assigned partition
// (records and bytes of their values), kept by the partitions as their
// queues change (addFetched, popQueue, dropPending). It may only be above
// the true sum (a partition forgotten with records queued), never below:
// readAheadFull trusts it only to say that there is room.
type queuedCount struct{ records, bytes int }

// add counts records more queued records of bytes bytes (negative: taken);
// a partition state without a count (a test's) counts nothing.
func (q *queuedCount) add(records, bytes int) {
	if q == nil {
		return
	}
	q.records += records
	q.bytes += bytes
}

// readAheadTakenLocked wakes the poll loop when it waits for room and there
// is room now (the input took records from its queues, or paused a
// partition).
func (in *Input) readAheadTakenLocked() {
	if in.pollWaiting && !in.readAheadFull() {
		in.pollWaiting = false
		in.SignalLocked()
	}
}
