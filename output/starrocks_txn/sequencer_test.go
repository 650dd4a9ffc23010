package starrocks_txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// The sequencer alone, over strings: what it admits, keeps and skips.

func TestSequencerAdmitsDenseRunsInOrder(t *testing.T) {
	s := newSequencer[string]()
	now := time.Unix(100, 0)
	ready, res := s.offer(2, "b", now)
	assert.Equal(t, offerQueued, res)
	assert.Empty(t, ready, "seq 1 is missing")
	assert.Equal(t, now, s.gapSince, "the gap started")
	ready, _ = s.offer(3, "c", now.Add(time.Second))
	assert.Empty(t, ready)
	assert.Equal(t, now, s.gapSince, "the gap is timed from its start")
	ready, _ = s.offer(1, "a", now.Add(2*time.Second))
	assert.Equal(t, []string{"a", "b", "c"}, ready)
	assert.Zero(t, s.waiting())
	assert.True(t, s.gapSince.IsZero())
	assert.Equal(t, int64(4), s.next)
}

func TestSequencerRefusesLateAndDuplicateSeqs(t *testing.T) {
	s := newSequencer[string]()
	now := time.Unix(100, 0)
	s.offer(1, "a", now)
	ready, res := s.offer(1, "a again", now)
	assert.Equal(t, offerLate, res, "admission moved past 1")
	assert.Empty(t, ready)
	s.offer(3, "c", now)
	ready, res = s.offer(3, "c again", now)
	assert.Equal(t, offerDuplicate, res)
	assert.Empty(t, ready)
	assert.Equal(t, 1, s.waiting(), "the first copy stays pending")
	assert.Equal(t, []string{"c"}, s.pendingWhere(func(string) bool { return true }))
}

func TestSequencerSkipsAGapAfterTheTimeout(t *testing.T) {
	s := newSequencer[string]()
	now := time.Unix(100, 0)
	s.offer(4, "d", now)
	s.offer(5, "e", now)
	_, _, _, skipped := s.skipGap(now.Add(time.Second-1), time.Second)
	assert.False(t, skipped, "not before the timeout")
	ready, from, to, skipped := s.skipGap(now.Add(time.Second), time.Second)
	assert.True(t, skipped)
	assert.Equal(t, []int64{1, 3}, []int64{from, to})
	assert.Equal(t, []string{"d", "e"}, ready)
	_, res := s.offer(2, "late", now)
	assert.Equal(t, offerLate, res, "a skipped seq that arrives is late")
}

// A seq held by a call that waits before admission is never skipped: the
// timer starts again while it is held.
func TestSequencerNeverSkipsAHeldSeq(t *testing.T) {
	s := newSequencer[string]()
	now := time.Unix(100, 0)
	s.hold(2, 1)
	s.offer(3, "c", now)
	later := now.Add(time.Hour)
	_, _, _, skipped := s.skipGap(later, time.Second)
	assert.False(t, skipped)
	assert.Equal(t, later, s.gapSince, "the timer started again")
	s.hold(2, -1)
	assert.Empty(t, s.held, "forgotten")
	_, _, _, skipped = s.skipGap(later.Add(time.Second-1), time.Second)
	assert.False(t, skipped, "a full timeout from the restart")
	ready, from, to, skipped := s.skipGap(later.Add(time.Second), time.Second)
	assert.True(t, skipped)
	assert.Equal(t, []int64{1, 2}, []int64{from, to})
	assert.Equal(t, []string{"c"}, ready)
	// A held seq at or above the lowest pending one does not hold the gap.
	s.hold(9, 1)
	s.offer(8, "h", later)
	_, _, _, skipped = s.skipGap(later.Add(2*time.Second), time.Second)
	assert.True(t, skipped)
}

func TestSequencerPendingWhere(t *testing.T) {
	s := newSequencer[string]()
	now := time.Unix(100, 0)
	for i, v := range []string{"p0-a", "p1-b", "p0-c"} {
		s.offer(int64(i+2), v, now)
	}
	got := s.pendingWhere(func(v string) bool { return v[:2] == "p0" })
	assert.ElementsMatch(t, []string{"p0-a", "p0-c"}, got)
	assert.Equal(t, 3, s.waiting(), "what it returns stays pending")
}

// A held run holds a gap only where one of its seqs falls in it.
func TestSequencerHeldRunOverlapsExactly(t *testing.T) {
	s := newSequencer[string]()
	now := time.Unix(100, 0)
	s.holdRun(seqRun{4, 6}, 1)
	s.offer(8, "h", now)
	later := now.Add(time.Hour)
	_, _, _, skipped := s.skipGap(later, time.Second)
	assert.False(t, skipped, "4..6 fall in the gap 1..7")
	s.holdRun(seqRun{4, 6}, -1)
	assert.Empty(t, s.held)
	s.holdRun(seqRun{8, 12}, 1)
	_, _, _, skipped = s.skipGap(later.Add(time.Hour), time.Second)
	assert.True(t, skipped, "a run from the lowest pending seq on holds nothing below it")
}

// holdSeqs holds a call's seqs as runs of consecutive seqs of one
// source, and exactly those seqs: a gap between two runs of the same call is
// not held, and forgetting the call leaves nothing held.
func TestHoldSeqsAsRuns(t *testing.T) {
	k := newCore(&config{}, newRecFx(), false)
	mk := func(src string, seq int64) *item {
		return &item{pk: pkey{source: src, partition: "p0"}, meta: contract.Meta{Seq: seq}}
	}
	items := []*item{mk("a", 1), mk("a", 2), mk("a", 3), mk("b", 4), mk("a", 7), mk("a", 8), {pk: pkey{partition: noContractPartition}}, mk("a", 9)}
	k.holdSeqs(items, 1, time.Now())
	assert.Equal(t, map[seqRun]int{{1, 3}: 1, {7, 9}: 1}, k.seqs["a"].held)
	assert.Equal(t, map[seqRun]int{{4, 4}: 1}, k.seqs["b"].held)
	a := k.seqs["a"]
	a.next = 4
	assert.False(t, a.heldBelow(7), "4..6 of a are not held")
	assert.True(t, a.heldBelow(8))
	k.holdSeqs(items, -1, time.Now())
	assert.Empty(t, k.seqs["a"].held)
	assert.Empty(t, k.seqs["b"].held)
}

// admitNext does what offer does for the next seq while nothing waits, and
// nothing otherwise.
func TestSequencerAdmitNextIsOfferInOrder(t *testing.T) {
	now := time.Unix(100, 0)
	a, b := newSequencer[string](), newSequencer[string]()
	for seq := int64(1); seq <= 3; seq++ {
		require.True(t, a.admitNext(seq, now.Add(time.Duration(seq))))
		ready, res := b.offer(seq, "v", now.Add(time.Duration(seq)))
		require.Equal(t, offerQueued, res)
		require.Equal(t, []string{"v"}, ready)
		assert.Equal(t, *b, *a)
	}
	assert.False(t, a.admitNext(3, now), "late")
	assert.False(t, a.admitNext(5, now), "a gap")
	a.offer(5, "e", now)
	assert.False(t, a.admitNext(4, now), "something waits: offer admits both")
	ready, _ := a.offer(4, "d", now)
	assert.Equal(t, []string{"d", "e"}, ready)
}

// A skipped seq is remembered: it is late once, when it comes; a second
// copy of it, or a seq never skipped, is not.
func TestSequencerRemembersSkippedSeqs(t *testing.T) {
	s := newSequencer[int]()
	now := time.Unix(0, 0)
	_, _ = s.offer(5, 5, now)
	_, from, to, skipped := s.skipGap(now.Add(time.Second), time.Second)
	require.True(t, skipped)
	require.Equal(t, [2]int64{1, 4}, [2]int64{from, to})
	assert.True(t, s.takeSkipped(3))
	assert.False(t, s.takeSkipped(3), "taken once")
	assert.True(t, s.takeSkipped(1))
	assert.True(t, s.takeSkipped(4))
	assert.True(t, s.takeSkipped(2))
	assert.False(t, s.takeSkipped(5), "admitted, never skipped")
	assert.Empty(t, s.skipped)
}
