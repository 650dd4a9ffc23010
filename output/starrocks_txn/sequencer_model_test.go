package starrocks_txn

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// refSequencer is the sequencer as it was before held runs and the in-order
// fast path: one held count per seq, every value through the pending map.
type refSequencer struct {
	next     int64
	pending  map[int64]int
	gapSince time.Time
	held     map[int64]int
}

func (s *refSequencer) offer(seq int64, v int, now time.Time) ([]int, offerResult) {
	if seq < s.next {
		return nil, offerLate
	}
	if _, dup := s.pending[seq]; dup {
		return nil, offerDuplicate
	}
	s.pending[seq] = v
	return s.drain(now), offerQueued
}

func (s *refSequencer) drain(now time.Time) []int {
	var ready []int
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

func (s *refSequencer) skipGap(now time.Time, timeout time.Duration) ([]int, int64, int64, bool) {
	if len(s.pending) == 0 || s.gapSince.IsZero() || now.Sub(s.gapSince) < timeout {
		return nil, 0, 0, false
	}
	lowest := int64(-1)
	for k := range s.pending {
		if lowest < 0 || k < lowest {
			lowest = k
		}
	}
	for k := range s.held {
		if k >= s.next && k < lowest {
			s.gapSince = now
			return nil, 0, 0, false
		}
	}
	from, to := s.next, lowest-1
	s.next = lowest
	s.gapSince = time.Time{}
	return s.drain(now), from, to, true
}

// The sequencer with held runs and admitNext (used as sequence uses
// them) admits, refuses and skips exactly what the per-seq sequencer did,
// for any interleaving of out-of-order, duplicate and late seqs, calls that
// hold their seqs while they wait, and gap timeouts.
func TestSequencerMatchesPerSeqModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := newSequencer[int]()
		ref := &refSequencer{next: 1, pending: map[int64]int{}, held: map[int64]int{}}
		now := time.Unix(1000, 0)
		const timeout = time.Second
		var calls [][]int64 // seqs of calls that hold them
		v := 0
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0, 1: // a value arrives
				seq := rapid.Int64Range(1, 25).Draw(t, "seq")
				v++
				var got []int
				gotRes := offerQueued
				if s.admitNext(seq, now) {
					got = []int{v}
				} else {
					got, gotRes = s.offer(seq, v, now)
				}
				want, wantRes := ref.offer(seq, v, now)
				require.Equal(t, wantRes, gotRes, "offer %d", seq)
				require.Equal(t, want, got, "admitted by offer %d", seq)
			case 2: // a call holds its seqs (as holdSeqs makes runs)
				seqs := rapid.SliceOfN(rapid.Int64Range(1, 25), 1, 6).Draw(t, "call")
				calls = append(calls, seqs)
				for _, r := range runsOf(seqs) {
					s.holdRun(r, 1)
				}
				for _, q := range seqs {
					ref.held[q]++
				}
			case 3: // a held call goes on
				if len(calls) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(calls)-1).Draw(t, "done")
				seqs := calls[i]
				calls = slices.Delete(calls, i, i+1)
				for _, r := range runsOf(seqs) {
					s.holdRun(r, -1)
				}
				for _, q := range seqs {
					if ref.held[q]--; ref.held[q] <= 0 {
						delete(ref.held, q)
					}
				}
			case 4: // time passes; the manager checks gaps
				now = now.Add(time.Duration(rapid.IntRange(0, 1500).Draw(t, "ms")) * time.Millisecond)
				got, gf, gt, gs := s.skipGap(now, timeout)
				want, wf, wt, ws := ref.skipGap(now, timeout)
				require.Equal(t, ws, gs, "skipped")
				require.Equal(t, [2]int64{wf, wt}, [2]int64{gf, gt}, "skipped seqs")
				require.Equal(t, want, got, "admitted by the skip")
			}
			require.Equal(t, ref.next, s.next)
			require.Equal(t, len(ref.pending), s.waiting())
			require.Equal(t, ref.gapSince, s.gapSince)
			require.Equal(t, len(ref.held) == 0, len(s.held) == 0, "something held")
		}
	})
}

// runsOf groups seqs as holdSeqs does: consecutive ascending seqs
// form one run.
func runsOf(seqs []int64) []seqRun {
	var out []seqRun
	for _, q := range seqs {
		if n := len(out); n > 0 && q == out[n-1].to+1 {
			out[n-1].to = q
			continue
		}
		out = append(out, seqRun{q, q})
	}
	return out
}
