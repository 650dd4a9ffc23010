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

// fetchMaxBytes is the response bound of a client whose partition bound is
// partitionMaxBytes: FetchMaxBytes, or the partition bound when larger.
func fetchMaxBytes(partitionMaxBytes int32) int32 {
	return max(FetchMaxBytes, partitionMaxBytes)
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

// readAheadFull sums the queues of the partitions being fetched. A
// partition that is paused (at checkpoint_limit, stopped by a nack) or
// being revoked does not count: its queue cannot move until it resumes,
// and must not hold up the others.
func (in *Input) readAheadFull() bool {
	recs, bytes := 0, 0
	for _, ps := range in.parts {
		if ps.paused || ps.failed != nil || ps.revoking {
			continue
		}
		recs += len(ps.queue)
		bytes += ps.queueBytes
	}
	return recs >= in.readAhead.records || bytes >= in.readAhead.bytes
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
