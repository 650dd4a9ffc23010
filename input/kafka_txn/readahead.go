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
