package starrocks_txn

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOutOfOrderBatchesAreResequenced(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	var ms []*service.Message
	for i := 0; i < 4; i++ {
		ms = append(ms, s.row("p0", fmt.Sprintf("t%d", i), "a", map[string]any{"id": "k", "v": i, "txn": fmt.Sprintf("t%d", i)}, true))
	}
	chs := []chan error{writeAsync(o, service.MessageBatch{ms[3], ms[2]}), writeAsync(o, service.MessageBatch{ms[1]})}
	waitCore(t, o, "seqs 2-4 wait in the sequencer for seq 1", func(k *core) bool { return pendingSeqs(k, "a1") == 3 })
	chs = append(chs, writeAsync(o, service.MessageBatch{ms[0]}))
	waitAll(t, chs, 5*time.Second)
	rows := f.rows("a")
	require.Len(t, rows, 4)
	for i, r := range rows {
		assert.Equal(t, float64(i), r["v"])
	}
}

func TestSequenceGapSkippedAfterTimeout(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\nsequence_gap_timeout: 300ms\n", f, nil)
	s := newSrc("a1")
	m1 := s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)
	_ = s.row("p0", "lost", "a", map[string]any{"id": 2, "txn": "lost"}, true) // dropped upstream
	m3 := s.row("p0", "t3", "a", map[string]any{"id": 3, "txn": "t3"}, true)
	// Arrives first, waits for the gap.
	start := time.Now()
	c3 := writeAsync(o, service.MessageBatch{m3})
	c1 := writeAsync(o, service.MessageBatch{m1})
	waitAll(t, []chan error{c1, c3}, 5*time.Second)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	rows := f.rows("a")
	require.Len(t, rows, 2)
	assert.Equal(t, "t1", rows[0]["txn"], "order restored across the batches")
	assert.Equal(t, "t3", rows[1]["txn"])
}

// A WriteBatch call still parsing its bodies holds its seqs: a later call
// admitted meanwhile does not start a gap that sequence_gap_timeout would
// skip, however long the parse takes (a huge batch on a starved machine).
func TestSlowParseIsNotASequenceGap(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\nsequence_gap_timeout: 200ms\n", f, dl)
	parsing, parsed := make(chan struct{}), make(chan struct{})
	var slow atomic.Bool
	slow.Store(true)
	o.parseHook = func() {
		if slow.CompareAndSwap(true, false) {
			close(parsing)
			<-parsed
		}
	}
	s := newSrc("asm")
	head := service.MessageBatch{s.row("p1", "T", "a", map[string]any{"id": 1, "txn": "T"}, false)}
	tail := service.MessageBatch{s.row("p1", "T", "a", map[string]any{"id": 2, "txn": "T"}, true)}
	chHead := writeAsync(o, head)
	<-parsing
	chTail := writeAsync(o, tail)
	waitCore(t, o, "the tail waits for the head's seq", func(k *core) bool { return pendingSeqs(k, "asm") == 1 })
	// The head is still parsing when the gap has lasted an hour, many
	// times sequence_gap_timeout: its seq is held, so the gap is not
	// skipped.
	stepCore(o, func(k *core) { k.checkGaps(o.now().Add(time.Hour)) })
	stepCore(o, func(k *core) {
		assert.Equal(t, 1, pendingSeqs(k, "asm"), "the tail still waits for the head")
		assert.Nil(t, k.parts[pkey{"asm", "p1"}], "nothing of the partition was admitted")
	})
	close(parsed)
	waitAll(t, []chan error{chHead, chTail}, 5*time.Second)
	assert.Empty(t, dl.txnIDs(), "nothing refused")
	assertAtomic(t, f, map[string]int{"T": 2})
}

// A WriteBatch call blocked at twice buffer_size holds seqs that later
// messages wait for: that gap is not a dropped message and must not be
// skipped after sequence_gap_timeout, or the rest of the source transaction
// commits without the blocked row and the row itself is then refused.
func TestCapacityWaitIsNotASequenceGap(t *testing.T) {
	f := newFakeSR()
	gate := make(chan struct{})
	f.commitGate = gate
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\nbuffer_size: 100\nsequence_gap_timeout: 200ms\n", f, dl)
	s := newSrc("asm")
	pad := strings.Repeat("x", 70)
	// seqs 1-3: complete transactions of p0 that fill the buffer past twice
	// buffer_size and cannot commit yet.
	fill := service.MessageBatch{
		s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1", "pad": pad}, true),
		s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2", "pad": pad}, true),
		s.row("p0", "t3", "a", map[string]any{"id": 3, "txn": "t3", "pad": pad}, true),
	}
	// seqs 4-5: one source transaction T of p1, in two batches.
	head := service.MessageBatch{s.row("p1", "T", "a", map[string]any{"id": 4, "txn": "T"}, false)}
	tail := service.MessageBatch{s.row("p1", "T", "a", map[string]any{"id": 5, "txn": "T"}, true)}

	chTail := writeAsync(o, tail) // waits in the sequencer for seq 4
	waitCore(t, o, "the tail waits for seq 4", func(k *core) bool { return pendingSeqs(k, "asm") == 1 })
	chFill := writeAsync(o, fill)
	require.Eventually(t, func() bool {
		_, b := accounting(o)
		return b >= 200
	}, 2*time.Second, 5*time.Millisecond)
	chHead := writeAsync(o, head) // blocked at the hard cap
	waitCore(t, o, "the head's call holds seq 4", func(k *core) bool { return k.seqs["asm"].heldBelow(5) })
	// An hour later, the head still held at the cap: its seq is no gap.
	stepCore(o, func(k *core) {
		assert.True(t, k.full(o.now()), "twice buffer_size is buffered and committable: admission waits")
		k.checkGaps(o.now().Add(time.Hour))
		_, admitted := k.parts[pkey{"asm", "p1"}]
		assert.False(t, admitted, "the seq held by the blocked call was not skipped")
	})

	close(gate)
	waitAll(t, []chan error{chFill, chHead, chTail}, 5*time.Second)
	assert.Empty(t, dl.txnIDs(), "nothing was refused as a replay")
	assertAtomic(t, f, map[string]int{"t1": 1, "t2": 1, "t3": 1, "T": 2})
}

func TestPoisonedAtAdmission(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	errored := s.row("p0", "errored", "a", map[string]any{"id": 1, "txn": "errored"}, false)
	errored.SetError(errors.New("mapping failed"))
	twoDB := s.row("p1", "twodb", "a", map[string]any{"id": 3, "txn": "twodb"}, false)
	twoDB2 := s.row("p1", "twodb", "b", map[string]any{"id": 4, "txn": "twodb"}, true)
	twoDB2.MetaSetMut("starrocks_database", "other")
	chs := []chan error{
		writeAsync(o, service.MessageBatch{errored, s.row("p0", "errored", "b", map[string]any{"id": 2, "txn": "errored"}, true)}),
		writeAsync(o, service.MessageBatch{twoDB, twoDB2}),
		writeAsync(o, service.MessageBatch{s.row("p0", "good", "a", map[string]any{"id": 5, "txn": "good"}, true)}),
	}
	waitAll(t, chs, 5*time.Second)
	ids := dl.txnIDs()
	sort.Strings(ids)
	assert.Equal(t, []string{"errored", "twodb"}, ids)
	assertAtomic(t, f, map[string]int{"good": 1})
	assert.Len(t, f.rows("a"), 1)
	assert.Empty(t, f.rows("b"))
}

func TestNoContractMessagesAreOwnTransactions(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\ndatabase: test\ntable: plain\nmax_in_flight: 1\n", f, nil)
	var b service.MessageBatch
	for i := 0; i < 3; i++ {
		b = append(b, service.NewMessage([]byte(fmt.Sprintf(`{"id":%d,"txn":"n%d"}`, i, i))))
	}
	waitAll(t, []chan error{writeAsync(o, b)}, 5*time.Second)
	assert.Len(t, f.rows("plain"), 3)
}

func TestAcksHeldUntilCommit(t *testing.T) {
	f := newFakeSR()
	gate := make(chan struct{})
	f.commitGate = gate
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitCommitting(t, o)
	select {
	case <-ch:
		t.Fatal("WriteBatch returned before StarRocks committed its rows")
	default:
	}
	assert.Empty(t, f.rows("a"))
	close(gate)
	waitAll(t, []chan error{ch}, 3*time.Second)
	assert.Len(t, f.rows("a"), 1)
}

func TestWriteBatchReturnsOnCancel(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	// An open source transaction never commits.
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() {
		ch <- o.WriteBatch(ctx, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1}, false)})
	}()
	waitCore(t, o, "the message is admitted", func(k *core) bool { return openTxn(k, "a1", "p0", "t1") })
	cancel()
	select {
	case err := <-ch:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Second):
		t.Fatal("WriteBatch did not return on cancellation")
	}
	assert.Empty(t, f.rows("a"))
}

func TestHardCapBlocksOnlyWhileSomethingIsCommittable(t *testing.T) {
	f := newFakeSR()
	f.commitGate = make(chan struct{})
	o, _ := testOutput(t, "commit_interval: 100ms\nbuffer_size: 100\n", f, nil)
	s := newSrc("a1")
	pad := "0123456789012345678901234567890123456789012345678901234567890123456789"
	// Complete transactions whose commit cannot finish fill the buffer past
	// twice buffer_size.
	first := writeAsync(o, service.MessageBatch{
		s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1", "pad": pad}, true),
		s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2", "pad": pad}, true),
		s.row("p0", "t3", "a", map[string]any{"id": 3, "txn": "t3", "pad": pad}, true),
	})
	waitCore(t, o, "the first call fills the buffer", func(k *core) bool { return k.buffered >= 200 })
	second := writeAsync(o, service.MessageBatch{s.row("p1", "t4", "a", map[string]any{"id": 4, "txn": "t4"}, true)})
	waitCore(t, o, "the second call holds its seq", func(k *core) bool { return k.seqs["a1"].heldBelow(5) })
	stepCore(o, func(k *core) {
		assert.True(t, k.full(o.now()), "admission blocks at twice buffer_size while something buffered is committable")
		_, admitted := k.parts[pkey{"a1", "p1"}]
		assert.False(t, admitted, "the blocked call's message is not admitted")
	})
	close(f.commitGate)
	waitAll(t, []chan error{first, second}, 5*time.Second)

	// Only open transactions buffered: admission goes on past the cap.
	open := writeAsync(o, service.MessageBatch{s.row("p2", "big", "a", map[string]any{"id": 5, "txn": "big", "pad": pad + pad + pad}, false)})
	waitCore(t, o, "the big transaction is open", func(k *core) bool { return openTxn(k, "a1", "p2", "big") })
	more := writeAsync(o, service.MessageBatch{s.row("p2", "big", "a", map[string]any{"id": 6, "txn": "big"}, true)})
	waitAll(t, []chan error{open, more}, 5*time.Second)
	o.mu.Lock()
	assert.False(t, o.core.lastCapErr.IsZero(), "an error named buffer_size")
	o.mu.Unlock()
}

func TestSoftCapCommitsEarly(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 5s\nbuffer_size: 200\n", f, nil)
	s := newSrc("a1")
	// The first commit happens at once (no previous commit); then fill the
	// buffer past the soft cap and expect a commit long before 5 s.
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p0", "t0", "a", map[string]any{"id": 0, "txn": "t0"}, true)})}, 3*time.Second)
	start := time.Now()
	var b service.MessageBatch
	for i := 1; i < 10; i++ {
		b = append(b, s.row("p0", fmt.Sprintf("t%d", i), "a", map[string]any{"id": i, "txn": fmt.Sprintf("t%d", i), "pad": "xxxxxxxxxxxxxxxxxxxxxxxx"}, true))
	}
	waitAll(t, []chan error{writeAsync(o, b)}, 3*time.Second)
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestMaxInFlightStarvationIsReported(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\nmax_in_flight: 2\n", f, nil)
	s := newSrc("a1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	for i := 0; i < 2; i++ {
		m := s.row("p0", "open", "a", map[string]any{"id": i}, false)
		go func() { _ = o.WriteBatch(ctx, service.MessageBatch{m}) }()
	}
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return !o.core.lastMIFErr.IsZero()
	}, 3*time.Second, 20*time.Millisecond, "every WriteBatch slot waits on an open source transaction: an error names max_in_flight")
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.GreaterOrEqual(t, o.core.lastMIFErr.Sub(start), o.core.starveHold(), "reported once the state lasted starveHold, not at its first sight")
}

// Calls still parsing their bodies fill every max_in_flight slot for a while
// on a busy machine, with nothing in their partitions yet: that is not
// starvation and is not reported (it was, at 1024 partitions under -race).
func TestSlowParseIsNotMaxInFlightStarvation(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\nmax_in_flight: 2\n", f, nil)
	parsed := make(chan struct{})
	o.parseHook = func() { <-parsed }
	s := newSrc("a1")
	var chs []chan error
	for i := 0; i < 2; i++ {
		txn := fmt.Sprintf("t%d", i)
		chs = append(chs, writeAsync(o, service.MessageBatch{s.row("p0", txn, "a", map[string]any{"id": i, "txn": txn}, true)}))
	}
	waitCore(t, o, "both calls are parsing", func(k *core) bool { return k.waiting == 2 })
	// Both slots parse for longer than the starvation hold.
	stepCore(o, func(k *core) {
		now := o.now()
		k.checkInFlight(now)
		k.checkInFlight(now.Add(k.starveHold() + time.Second))
		assert.True(t, k.starvedSince.IsZero(), "calls still parsing are not held on open transactions")
	})
	close(parsed)
	waitAll(t, chs, 10*time.Second)
	assertAtomic(t, f, map[string]int{"t0": 1, "t1": 1})
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.True(t, o.core.lastMIFErr.IsZero(), "no max_in_flight starvation reported while the calls parsed")
}

// A call that gives up (its context ends) frees its max_in_flight slot even
// though its messages stay in their open transaction: the output, idle after
// it, must not count it as a slot held and report starvation.
func TestCancelledCallsFreeTheirMaxInFlightSlots(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\nmax_in_flight: 2\n", f, nil)
	s := newSrc("a1")
	var chs []chan error
	for i := 0; i < 2; i++ {
		m := s.row("p0", "open", "a", map[string]any{"id": i}, false)
		ch := make(chan error, 1)
		go func() {
			// Shorter than the starvation hold: no report while they wait.
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			ch <- o.WriteBatch(ctx, service.MessageBatch{m})
		}()
		chs = append(chs, ch)
	}
	for _, ch := range chs {
		select {
		case err := <-ch:
			require.ErrorIs(t, err, context.DeadlineExceeded)
		case <-time.After(5 * time.Second):
			t.Fatal("a call whose context ended did not return")
		}
	}
	// Idle for longer than the starvation hold (starveHold).
	stepCore(o, func(k *core) {
		now := o.now()
		k.checkInFlight(now)
		k.checkInFlight(now.Add(k.starveHold() + time.Second))
		assert.Zero(t, k.held, "no call is in flight")
		assert.True(t, k.lastMIFErr.IsZero(), "no max_in_flight starvation reported once the calls returned")
	})
}

// A message that names its partition and source transaction but carries a
// malformed contract value poisons that transaction whole — it goes to
// dead_letter with all its messages — and never becomes a transaction of
// its own, whichever key is malformed. A malformed starrocks_txn_end on
// the real END leaves the transaction to be closed by the next one's first
// message, which is not poisoned with it.
func TestMalformedContractValuePoisonsTheTransactionItNames(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		// last: the malformed value is on the transaction's last message.
		last bool
	}{
		{"starrocks_txn_end", "yes", false},
		{"starrocks_txn_end", "yes", true},
		{"starrocks_source_offset", "12a", false},
		{"starrocks_seq", "x7", false},
		{"starrocks_partition_epoch", "-3", false},
		{"starrocks_txn_abort", "maybe", false},
		{"starrocks_marker", "2", false},
	} {
		t.Run(fmt.Sprintf("%s=%s last=%v", tc.key, tc.value, tc.last), func(t *testing.T) {
			f := newFakeSR()
			dl := &fakeDL{}
			o, _ := testOutput(t, "commit_interval: 100ms\nsequence_gap_timeout: 200ms\n", f, dl)
			s := newSrc("a1")
			before := s.row("p0", "t0", "a", map[string]any{"id": 0, "txn": "t0"}, true)
			m1 := s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false)
			m2 := s.row("p0", "t1", "b", map[string]any{"id": 2, "txn": "t1"}, false)
			m3 := s.row("p0", "t1", "b", map[string]any{"id": 3, "txn": "t1"}, true)
			bad := m2
			if tc.last {
				bad = m3
			}
			bad.MetaSetMut(tc.key, tc.value)
			after := s.row("p0", "t2", "a", map[string]any{"id": 4, "txn": "t2"}, true)
			other := s.row("p1", "u1", "a", map[string]any{"id": 5, "txn": "u1"}, true)
			waitAll(t, []chan error{
				writeAsync(o, service.MessageBatch{before, m1, m2, m3}),
				writeAsync(o, service.MessageBatch{after, other}),
			}, 5*time.Second)
			require.Equal(t, []string{"t1"}, dl.txnIDs(), "only the transaction the message names is poisoned")
			dl.mu.Lock()
			assert.Len(t, dl.batches[0], 3, "it goes whole to dead_letter")
			reason, _ := dl.batches[0][0].MetaGet(deadLetterReasonKey)
			dl.mu.Unlock()
			assert.Contains(t, reason, tc.key)
			assertAtomic(t, f, map[string]int{"t0": 1, "t2": 1, "u1": 1})
			for _, tbl := range []string{"a", "b"} {
				for _, r := range f.rows(tbl) {
					assert.NotEqual(t, "t1", r["txn"], "no row of the poisoned transaction commits")
				}
			}
		})
	}
}

// A message with a malformed starrocks_seq that comes before its
// transaction opens waits for it and poisons it when it opens; a fence
// releases it like the partition's other messages.
func TestMalformedSeqBeforeItsTransactionOpens(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\nsequence_gap_timeout: 200ms\n", f, dl)
	s := newSrc("a1")
	m1 := s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false)
	m2 := s.row("p0", "t1", "a", map[string]any{"id": 2, "txn": "t1"}, true)
	early := s.row("p0", "t1", "b", map[string]any{"id": 3, "txn": "t1"}, false)
	early.MetaSetMut("starrocks_seq", "three")
	first := writeAsync(o, service.MessageBatch{early})
	waitCore(t, o, "the early message is parked", func(k *core) bool {
		p := k.parts[pkey{"a1", "p0"}]
		return p != nil && len(p.parked["t1"]) == 1
	})
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{m1, m2}), first}, 5*time.Second)
	require.Equal(t, []string{"t1"}, dl.txnIDs())
	dl.mu.Lock()
	assert.Len(t, dl.batches[0], 3, "the early message joined its transaction")
	dl.mu.Unlock()
	assert.Empty(t, f.rows("a"))

	stray := s.row("p1", "gone", "a", map[string]any{"id": 4, "txn": "gone"}, false)
	stray.MetaSetMut("starrocks_seq", "?")
	ch := writeAsync(o, service.MessageBatch{stray})
	waitCore(t, o, "the stray message is parked", func(k *core) bool {
		p := k.parts[pkey{"a1", "p1"}]
		return p != nil && len(p.parked["gone"]) == 1
	})
	require.NoError(t, o.fence(context.Background(), "p1"))
	waitAll(t, []chan error{ch}, time.Second)
}
