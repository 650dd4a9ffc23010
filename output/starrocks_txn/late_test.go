package starrocks_txn

import (
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A message of a transaction that is still open, late after
// sequence_gap_timeout skipped its seq (a slow processor, not a drop),
// joins its transaction at its place: the transaction is not poisoned, and
// its rows stay in source order, so the later change of the same row wins.
func TestCoreLateMessageJoinsItsOpenTransaction(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\nsequence_gap_timeout: 300ms\n", false)
	s := newSrc("a1")
	m1 := s.row("p0", "T", "a", map[string]any{"id": 1, "v": 1, "txn": "T"}, false)
	m2 := s.row("p0", "T", "a", map[string]any{"id": 1, "v": 2, "txn": "T"}, false) // late
	m3 := s.row("p0", "T", "a", map[string]any{"id": 1, "v": 3, "txn": "T"}, false)
	m4 := s.row("p0", "T", "a", map[string]any{"id": 2, "v": 4, "txn": "T"}, true)
	st.write(m1)
	st.write(m3)
	st.k.tick(st.now.Add(300 * time.Millisecond))
	require.Equal(t, []string{"T:open"}, st.states("a1", "p0"), "the gap at seq 2 is skipped, seq 3 joins T")

	st.write(m2)
	assert.Equal(t, []string{"T:open"}, st.states("a1", "p0"), "the late message joins its open transaction, unpoisoned")
	assert.Nil(t, st.part("a1", "p0").open.poison)
	assert.Len(t, st.fx.logged(logWarn, `"T"`, "arrived after sequence_gap_timeout", "joins it at its place"), 1)

	st.write(m4)
	require.Equal(t, []string{"T:queued"}, st.states("a1", "p0"), "T commits whole")
	tx := st.part("a1", "p0").order[0]
	var vs []string
	for _, r := range tx.rowsOf("a") {
		vs = append(vs, string(r))
	}
	assert.Equal(t, []string{
		`{"id":1,"txn":"T","v":1}`, `{"id":1,"txn":"T","v":2}`, `{"id":1,"txn":"T","v":3}`, `{"id":2,"txn":"T","v":4}`,
	}, vs, "rows in source order")
	var offs []int64
	for _, it := range tx.items {
		offs = append(offs, it.meta.SourceOffset)
	}
	assert.Equal(t, []int64{1, 2, 3, 4}, offs, "messages in source order")
	st.commitAll("test")
	assert.Equal(t, txnCommitted, tx.state)
	assert.Empty(t, st.fx.logged(logError, "poisoned"))
}

// A message late after sequence_gap_timeout whose transaction already
// ended without it cannot be applied in order: it alone is poisoned (to
// dead_letter here), with an error saying it was late and what to raise;
// the transaction open meanwhile, which it does not belong to, is not
// poisoned and commits.
func TestCoreLateMessageOfAnEndedTransactionIsPoisonedAlone(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\nsequence_gap_timeout: 300ms\n", true)
	s := newSrc("a1")
	m1 := s.row("p0", "T1", "a", map[string]any{"id": 1, "txn": "T1"}, false)
	m2 := s.row("p0", "T1", "a", map[string]any{"id": 2, "txn": "T1"}, false)  // late
	m2b := s.row("p0", "T1", "a", map[string]any{"id": 6, "txn": "T1"}, false) // late, in the same batch
	m3 := s.row("p0", "T1", "a", map[string]any{"id": 3, "txn": "T1"}, true)
	m4 := s.row("p0", "T2", "a", map[string]any{"id": 4, "txn": "T2"}, false)
	m5 := s.row("p0", "T2", "a", map[string]any{"id": 5, "txn": "T2"}, true)
	st.write(m1)
	st.write(m3)
	st.k.tick(st.now.Add(300 * time.Millisecond))
	require.Equal(t, []string{"T1:queued"}, st.states("a1", "p0"), "the gap is skipped; T1 ended without seqs 2 and 3")
	st.write(m4)

	st.write(m2, m2b)
	assert.Equal(t, []string{"T1:queued", "T1:poisoned", "T2:open"}, st.states("a1", "p0"), "the late messages alone are poisoned, together; T2 is not")
	pt := st.part("a1", "p0")
	lone := pt.order[1]
	require.Len(t, lone.items, 2)
	assert.Equal(t, int64(2), lone.items[0].meta.SourceOffset)
	assert.Equal(t, int64(3), lone.items[1].meta.SourceOffset)
	require.Error(t, lone.poison)
	for _, want := range []string{"starrocks_source_offset 2", `"T1"`, "arrived after sequence_gap_timeout (300ms)", "raise sequence_gap_timeout"} {
		assert.Contains(t, lone.poison.Error(), want)
	}
	assert.Nil(t, pt.open.poison, "T2 is not poisoned by a message of T1")

	st.write(m5)
	st.advance(time.Second)
	st.k.tick(st.now)
	assert.Equal(t, []string{"T1:queued", "T1:poisoned", "T2:queued"}, st.states("a1", "p0"))
	txns := st.commitAll("test")
	var ids []string
	for _, tx := range txns {
		ids = append(ids, tx.id)
	}
	assert.Equal(t, []string{"T1", "T2"}, ids, "T1 (without the late row) and T2 commit, in order")
}

// A late message after a skip whose partition admitted nothing after it
// (the gap's other messages were another partition's) is applied in order,
// as any message.
func TestCoreLateMessageOfAnotherPartitionIsAppliedInOrder(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\nsequence_gap_timeout: 300ms\n", false)
	s := newSrc("a1")
	m1 := s.row("p0", "A", "a", map[string]any{"id": 1, "txn": "A"}, true)
	m2 := s.row("p1", "B", "a", map[string]any{"id": 2, "txn": "B"}, true) // late
	m3 := s.row("p0", "C", "a", map[string]any{"id": 3, "txn": "C"}, true)
	st.write(m1)
	st.write(m3)
	st.k.tick(st.now.Add(300 * time.Millisecond))
	st.write(m2)
	assert.Equal(t, []string{"B:queued"}, st.states("a1", "p1"))
	assert.Nil(t, st.part("a1", "p1").order[0].poison)
}

// A copy of a seq that was admitted (not skipped) is not late: the offset
// check takes it for a replay, as before.
func TestCoreCopyOfAnAdmittedSeqIsNotLate(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\nsequence_gap_timeout: 300ms\n", true)
	s := newSrc("a1")
	m1 := s.row("p0", "T1", "a", map[string]any{"id": 1, "txn": "T1"}, false)
	m2 := s.row("p0", "T1", "a", map[string]any{"id": 2, "txn": "T1"}, false)
	st.write(m1, m2)
	st.write(service.MessageBatch{m1.Copy()}...)
	pt := st.part("a1", "p0")
	require.NotNil(t, pt.open)
	require.Error(t, pt.open.poison, "a copy below the high-water mark poisons its transaction")
	assert.True(t, strings.Contains(pt.open.poison.Error(), "high-water mark"), pt.open.poison.Error())
}

// Through the output: a message held upstream past sequence_gap_timeout
// (a slow processor) arrives after its gap was skipped, while its
// transaction is open; it joins it, and the transaction commits whole and
// in order, nothing dead-lettered.
func TestLateMessageAfterAGapSkipCommitsWithItsTransaction(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\nsequence_gap_timeout: 200ms\n", f, dl)
	s := newSrc("asm")
	m1 := s.row("p0", "T", "a", map[string]any{"id": 1, "v": 1, "txn": "T"}, false)
	m2 := s.row("p0", "T", "a", map[string]any{"id": 1, "v": 2, "txn": "T"}, false) // held upstream
	m3 := s.row("p0", "T", "a", map[string]any{"id": 1, "v": 3, "txn": "T"}, false)
	m4 := s.row("p0", "T", "a", map[string]any{"id": 2, "v": 4, "txn": "T"}, true)
	c1 := writeAsync(o, service.MessageBatch{m1})
	c3 := writeAsync(o, service.MessageBatch{m3})
	waitCore(t, o, "the gap at seq 2 is skipped", func(k *core) bool {
		return pendingSeqs(k, "asm") == 0 && openTxn(k, "asm", "p0", "T") && len(k.parts[pkey{"asm", "p0"}].open.items) == 2
	})
	c2 := writeAsync(o, service.MessageBatch{m2})
	// The END comes after the late message (else T ended without it).
	waitCore(t, o, "the late message joined T", func(k *core) bool {
		return openTxn(k, "asm", "p0", "T") && len(k.parts[pkey{"asm", "p0"}].open.items) == 3
	})
	c4 := writeAsync(o, service.MessageBatch{m4})
	waitAll(t, []chan error{c1, c2, c3, c4}, 10*time.Second)
	assert.Empty(t, dl.txnIDs(), "nothing dead-lettered")
	var vs []any
	for _, r := range f.rows("a") {
		vs = append(vs, r["v"])
	}
	assert.Equal(t, []any{float64(1), float64(2), float64(3), float64(4)}, vs, "every row, in source order")
	assertAtomic(t, f, map[string]int{"T": 4})
}

// A resolved prefix of a partition's order leaves it (advance clears it
// from the order's array) even when it resolves out of line: the committed
// transaction behind a late message's lone transaction waits for that
// one's dead letter, then both leave together, the committed-through
// offset jumps to the later one's END, and the partition's next
// transactions take their place in order, late messages included.
func TestCoreResolvedPrefixLeavesTheOrderInPlace(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\nsequence_gap_timeout: 300ms\n", true)
	s := newSrc("a1")
	m1 := s.row("p0", "T1", "a", map[string]any{"id": 1, "txn": "T1"}, false)
	m2 := s.row("p0", "T1", "a", map[string]any{"id": 2, "txn": "T1"}, false) // late
	m3 := s.row("p0", "T1", "a", map[string]any{"id": 3, "txn": "T1"}, true)
	m4 := s.row("p0", "T2", "a", map[string]any{"id": 4, "txn": "T2"}, true)
	m5 := s.row("p0", "T3", "a", map[string]any{"id": 5, "v": 1, "txn": "T3"}, false)
	m6 := s.row("p0", "T3", "a", map[string]any{"id": 5, "v": 2, "txn": "T3"}, false) // late
	m7 := s.row("p0", "T3", "a", map[string]any{"id": 5, "v": 3, "txn": "T3"}, false)
	m8 := s.row("p0", "T3", "a", map[string]any{"id": 6, "txn": "T3"}, true)
	st.write(m1)
	st.write(m3)
	st.k.tick(st.now.Add(300 * time.Millisecond))
	st.write(m2)
	st.write(m4)
	st.advance(time.Second)
	st.k.tick(st.now)
	require.Equal(t, []string{"T1:queued", "T1:poisoned", "T2:queued"}, st.states("a1", "p0"))
	st.commitAll("test")
	require.Equal(t, []string{"T1:poisoned", "T2:committed"}, st.states("a1", "p0"), "T1 left the order; T2 waits behind the late message's dead letter")
	assert.Equal(t, []int64{3}, st.fx.published["p0"])

	lone := st.k.nextDeadLetter()
	require.NotNil(t, lone)
	require.True(t, lone.late)
	st.k.deadLetterEnded(lone, true)
	st.check()
	assert.Empty(t, st.states("a1", "p0"), "the dead-lettered message and T2 left the order together")
	assert.Equal(t, []int64{3, 4}, st.fx.published["p0"], "committed-through moved to T2's END")

	// The partition goes on: a gap skipped in T3, its late message joins
	// it at its place, and T3 commits whole, first in the order.
	st.write(m5)
	st.write(m7)
	st.advance(time.Second)
	st.k.tick(st.now)
	st.write(m6)
	require.Equal(t, []string{"T3:open"}, st.states("a1", "p0"), "the late message joined T3")
	st.write(m8)
	st.advance(time.Second)
	st.k.tick(st.now)
	require.Equal(t, []string{"T3:queued"}, st.states("a1", "p0"))
	tx := st.part("a1", "p0").order[0]
	var vs []string
	for _, r := range tx.rowsOf("a") {
		vs = append(vs, string(r))
	}
	assert.Equal(t, []string{`{"id":5,"txn":"T3","v":1}`, `{"id":5,"txn":"T3","v":2}`, `{"id":5,"txn":"T3","v":3}`, `{"id":6,"txn":"T3"}`}, vs, "rows in source order")
	st.commitAll("test")
	assert.Equal(t, txnCommitted, tx.state)
	assert.Empty(t, st.states("a1", "p0"))
	assert.Equal(t, []int64{3, 4, 8}, st.fx.published["p0"])
}
