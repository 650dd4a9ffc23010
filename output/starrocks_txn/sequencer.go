package starrocks_txn

// Home of G4 (ARCHITECTURE.md §11.1): admission in starrocks_seq order; a gap is skipped after
// sequence_gap_timeout, a held seq never. Main test: TestOutOfOrderBatchesAreResequenced.
//
// Home of G5 (ARCHITECTURE.md §11.1): a message late after its gap was skipped joins its
// still-open transaction, else is poisoned alone. Main test:
// TestCoreLateMessageJoinsItsOpenTransaction.

import (
	"slices"
	"time"
)

// sequencer restores the emission order of one assembler instance: its
// messages carry a dense starrocks_seq (1, 2, 3 …) and reach the output in
// any order across concurrent WriteBatch calls (ARCHITECTURE.md §4.1). It is
// a pure type — no lock, no logging, no I/O: the output keeps one per seq
// source under Output.mu, applies what it hands back, and reports what it
// refuses or skips.
type sequencer[T any] struct {
	// next is the seq admitted next.
	next    int64
	pending map[int64]T
	// gapSince is when the seqs below the lowest pending one started to be
	// missing (zero: nothing pending).
	gapSince time.Time
	// held counts the seqs carried by WriteBatch calls that wait before
	// admission (for buffer space, or while their bodies are parsed): a gap
	// they fill is a call on its way, not a dropped message, and is never
	// skipped. They are kept as runs of consecutive seqs, as a call brings
	// them: one entry per run, not per message.
	held map[seqRun]int
	// touched is when a value was last offered.
	touched time.Time
	// skipped are the runs of seqs skipGap skipped, the latest
	// maxSkippedRuns of them: a seq of them that arrives after all is late,
	// not a copy of an admitted message (takeSkipped).
	skipped []seqRun
}

// maxSkippedRuns bounds the skipped runs a sequencer remembers: each is a
// gap reported as an error, so a source that has this many has a cause to
// fix; a late seq of a run forgotten is taken as a copy.
const maxSkippedRuns = 64

func newSequencer[T any]() *sequencer[T] {
	return &sequencer[T]{next: 1, pending: map[int64]T{}, held: map[seqRun]int{}}
}

// idle reports whether nothing waits or is held and nothing was offered
// for d: the source can be forgotten (its next seq kept elsewhere).
func (s *sequencer[T]) idle(now time.Time, d time.Duration) bool {
	return len(s.pending) == 0 && len(s.held) == 0 && now.Sub(s.touched) >= d
}

// offerResult says what offer did with a value.
type offerResult int

const (
	// offerQueued: the value waits for its turn or was admitted with the
	// values offer returned.
	offerQueued offerResult = iota
	// offerLate: admission moved past the seq already (a skipped gap, or a
	// copy of an admitted message); the value was not kept.
	offerLate
	// offerDuplicate: a value with the same seq is pending; the second one
	// was not kept.
	offerDuplicate
)

// offer adds v under seq and returns, in seq order, the values that are now
// admitted (v among them when the run up to it is complete).
func (s *sequencer[T]) offer(seq int64, v T, now time.Time) ([]T, offerResult) {
	s.touched = now
	if seq < s.next {
		return nil, offerLate
	}
	if _, dup := s.pending[seq]; dup {
		return nil, offerDuplicate
	}
	s.pending[seq] = v
	return s.drain(now), offerQueued
}

// admitNext admits seq at once when it is next and nothing waits: what
// offer does then, without keeping the value or returning a slice (the
// usual case, each message of an in-order stream). It reports whether it
// did; otherwise nothing changed and the value goes through offer.
func (s *sequencer[T]) admitNext(seq int64, now time.Time) bool {
	if seq != s.next || len(s.pending) > 0 {
		return false
	}
	s.touched = now
	s.next++
	s.gapSince = time.Time{}
	return true
}

// drain admits the pending run that starts at next.
func (s *sequencer[T]) drain(now time.Time) []T {
	var ready []T
	for {
		v, ok := s.pending[s.next]
		if !ok {
			break
		}
		delete(s.pending, s.next)
		s.next++
		ready = append(ready, v)
	}
	if len(s.pending) == 0 {
		s.gapSince = time.Time{}
	} else if s.gapSince.IsZero() {
		s.gapSince = now
	}
	return ready
}

// seqRun is the seqs from … to, both included.
type seqRun struct{ from, to int64 }

// hold records (delta 1) or forgets (delta -1) a seq carried by a WriteBatch
// call that waits before admission.
func (s *sequencer[T]) hold(seq int64, delta int) { s.holdRun(seqRun{seq, seq}, delta) }

// holdRun is hold for every seq of r: forgetting takes the same runs that
// recording gave.
func (s *sequencer[T]) holdRun(r seqRun, delta int) {
	if s.held[r] += delta; s.held[r] <= 0 {
		delete(s.held, r)
	}
}

// heldBelow reports whether a seq in [next, below) is held by a WriteBatch
// call that waits before admission.
func (s *sequencer[T]) heldBelow(below int64) bool {
	for r := range s.held {
		if r.to >= s.next && r.from < below {
			return true
		}
	}
	return false
}

// skipGap skips the missing seqs below the lowest pending one once they
// have been missing for timeout, unless a waiting call holds one of them
// (then the timer starts again). It returns the values admitted by the skip
// and the skipped seqs from … to; skipped is false when nothing was skipped.
func (s *sequencer[T]) skipGap(now time.Time, timeout time.Duration) (ready []T, from, to int64, skipped bool) {
	if len(s.pending) == 0 || s.gapSince.IsZero() || now.Sub(s.gapSince) < timeout {
		return nil, 0, 0, false
	}
	lowest := int64(-1)
	for k := range s.pending {
		if lowest < 0 || k < lowest {
			lowest = k
		}
	}
	if s.heldBelow(lowest) {
		s.gapSince = now
		return nil, 0, 0, false
	}
	from, to = s.next, lowest-1
	s.next = lowest
	if len(s.skipped) == maxSkippedRuns {
		s.skipped = append(s.skipped[:0], s.skipped[1:]...)
	}
	s.skipped = append(s.skipped, seqRun{from, to})
	s.gapSince = time.Time{}
	return s.drain(now), from, to, true
}

// takeSkipped reports whether seq is one skipGap skipped (and not taken
// since): it arrives late. It is taken, so a second copy of it is not.
func (s *sequencer[T]) takeSkipped(seq int64) bool {
	for i, r := range s.skipped {
		if seq < r.from || seq > r.to {
			continue
		}
		var keep []seqRun
		if r.from < seq {
			keep = append(keep, seqRun{r.from, seq - 1})
		}
		if seq < r.to {
			keep = append(keep, seqRun{seq + 1, r.to})
		}
		s.skipped = slices.Concat(s.skipped[:i], keep, s.skipped[i+1:])
		return true
	}
	return false
}

// waiting is the number of values waiting for a missing seq.
func (s *sequencer[T]) waiting() int { return len(s.pending) }

// pendingWhere returns the waiting values for which keep is true; they stay
// pending.
func (s *sequencer[T]) pendingWhere(keep func(T) bool) []T {
	var out []T
	for _, v := range s.pending {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}
