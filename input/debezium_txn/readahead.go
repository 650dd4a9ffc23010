// This file holds the read-ahead: the poll loop stops polling while the
// transactions ready to be emitted hold enough to keep the pipeline busy
// (ARCHITECTURE.md §13.8).

package debezium_txn

// The read-ahead of ready transactions: complete, held by nothing, at the
// front of END order. While they hold as many events, or bytes of their
// records, the poll loop waits (consumer.ReadAheadLimiter) and franz-go
// keeps at most one more fetch per broker. Without it a pipeline slower
// than Kafka filled max_buffered_bytes with transactions it could not take
// yet, then paused the partitions, and franz-go threw their fetched data
// away to fetch it again on resume (docs/benchmark.md).
const (
	// readAheadEvents is a few batches, and a third of a second of the
	// pipeline at 60 000 rows/s.
	readAheadEvents = 20000
	// readAheadBytes bounds the records of the ready transactions, for
	// large rows (max_buffered_bytes still bounds all that is buffered).
	readAheadBytes = 32 << 20
)

// readAheadLimit is the bound on the ready transactions.
type readAheadLimit struct {
	events int
	bytes  int64
}

var defaultReadAhead = readAheadLimit{events: readAheadEvents, bytes: readAheadBytes}

// ReadAheadFullLocked reports whether the ready transactions hold the
// read-ahead; the poll loop then waits until emitting or an
// acknowledgement wakes it (readAheadTakenLocked, SignalLocked).
func (in *Input) ReadAheadFullLocked() bool {
	full := in.readAheadFull()
	if full && !in.pollWaiting {
		in.m.readAheadWaits.Incr(1)
	}
	in.pollWaiting = full
	return full
}

// readAheadFull reports whether the poll loop may wait: only while what is
// ready can be emitted without reading anything more, so that ReadBatch
// (or the acknowledgements checkpoint_limit waits for) always makes room.
// A revoke, a stop or a partial read-back reads on.
func (in *Input) readAheadFull() bool {
	a := in.asm
	if a == nil || in.revoking || in.stopped != nil || in.partial != nil || in.readAhead.events <= 0 {
		return false
	}
	return a.readyAtLeast(in.readAhead)
}

// readAheadTakenLocked wakes the poll loop when it waits and the ready
// transactions fell below the read-ahead (emitted, or the head held).
func (in *Input) readAheadTakenLocked() {
	if in.pollWaiting && !in.readAheadFull() {
		in.pollWaiting = false
		in.SignalLocked()
	}
}

// readyAtLeast reports whether the transactions at the front of END order
// that are complete hold at least limit's events or bytes, the first of
// them held by nothing (holdReason): emitting it needs nothing more read.
// It walks only as far as the limit: at most limit.events transactions.
func (a *assembler) readyAtLeast(limit readAheadLimit) bool {
	if a.stopErr != nil {
		return false
	}
	events, bytes, head := 0, int64(0), true
	for _, t := range a.ends {
		if t.status != txnOpen {
			continue
		}
		if t.err != nil || !t.complete() {
			return false
		}
		if head {
			if a.holdReason(t) != "" {
				return false
			}
			head = false
		}
		// Each transaction counts at least one record, its END: a run of
		// transactions with no event here (of collections not consumed,
		// most of a connector's traffic when one table of many is
		// loaded) then ends the walk at the limit, not after 32 MiB of
		// ENDs — 330 000 of them, walked under the lock in ~4.5 ms at
		// every recheck of a waiting poll loop.
		events += max(len(t.events), 1)
		bytes += t.bytes
		if events >= limit.events || bytes >= limit.bytes {
			return true
		}
	}
	return false
}
