package starrocks_txn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// scriptedSR answers get_load_state from a script and records rollbacks: the
// labels of a dead writer as a successor finds them.
type scriptedSR struct {
	*fakeSR
	smu sync.Mutex
	// states[label] is the sequence of states get_load_state reports; the
	// last one repeats. Missing: UNKNOWN, and a rollback finds no
	// transaction.
	states map[string][]starrocks.LabelState
	// committing labels refuse a rollback.
	committing map[string]bool
	asked      []string
	rolledBack []string
}

func (s *scriptedSR) WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (starrocks.LabelState, error) {
	if s.fakeSR.knows(label) {
		// This output's own transaction (a take-over marker), begun
		// through the fake.
		return s.fakeSR.WaitFinal(ctx, db, label, maxWait)
	}
	s.smu.Lock()
	defer s.smu.Unlock()
	s.asked = append(s.asked, label)
	seq := s.states[label]
	if len(seq) == 0 {
		return starrocks.StateUnknown, nil
	}
	st := seq[0]
	if len(seq) > 1 {
		s.states[label] = seq[1:]
	}
	return st, nil
}

func (s *scriptedSR) Rollback(ctx context.Context, t starrocks.Txn) error {
	if s.fakeSR.knows(t.Label) {
		return s.fakeSR.Rollback(ctx, t)
	}
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.committing[t.Label] {
		return srErr("rollback", starrocks.ClassTransient, fmt.Sprintf("Can not abort transaction 7 during committing, label is %s", t.Label))
	}
	if _, ok := s.states[t.Label]; !ok {
		return srErr("rollback", starrocks.ClassPerTxn, "stream load task"+t.Label+"does not exist")
	}
	s.rolledBack = append(s.rolledBack, t.Label)
	s.states[t.Label] = []starrocks.LabelState{starrocks.StateAborted}
	return nil
}

func (s *scriptedSR) left(label string) []starrocks.LabelState {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.states[label]
}

// takeOverOf is the take-over check of an output that keeps writer rows.
func takeOverOf(t *testing.T, o *Output) *takeOver {
	t.Helper()
	switch tr := o.track.(type) {
	case *writerTracking:
		return tr.takeover
	case *exactlyOnceTracking:
		return tr.takeover
	}
	t.Fatalf("the output keeps no writer rows (%T)", o.track)
	return nil
}

// probeOutput returns the take-over check of an output that talks to sr
// (and has no store: set one to run it whole).
func probeOutput(t *testing.T, sr *scriptedSR, opts ...func(*Output)) *takeOver {
	t.Helper()
	o, _ := testOutput(t, eoYAML+"retry_backoff: { initial_interval: 1ms, max_interval: 5ms }\n", sr.fakeSR, nil, append([]func(*Output){withClient(sr)}, opts...)...)
	return newTakeOver(o, nil)
}

// A successor rolls back what a dead writer left open, waits for what the FE
// is committing until it is visible, and checks exactly the labels the row
// lists and the anchorGap above it.
func TestProbeWriterFinishesWhatADeadWriterLeft(t *testing.T) {
	stem := "benthos-shop-deadbeef"
	l := func(n int64) string { return starrocks.StemLabel(stem, n) }
	committingN := int64(2 + anchorGap)
	sr := &scriptedSR{fakeSR: newFakeSR(), states: map[string][]starrocks.LabelState{
		l(1):               {starrocks.StatePrepare},
		l(3):               {starrocks.StateAborted},
		l(5):               {starrocks.StatePrepare},
		l(committingN):     {starrocks.StatePrepare, starrocks.StateCommitted, starrocks.StateCommitted, starrocks.StateVisible},
		l(committingN + 1): {starrocks.StatePrepare},
	}, committing: map[string]bool{l(committingN): true}}
	o := probeOutput(t, sr)
	advanced, err := o.probeWriter(context.Background(), "shop", writerRow{writer: "deadbeef", top: 2, open: []int64{1}, label: l(2)})
	require.NoError(t, err)
	assert.True(t, advanced, "a label above the row's committed: read the rows again")
	assert.ElementsMatch(t, []string{l(1), l(5)}, sr.rolledBack, "the open transactions are rolled back, the committing one is not")
	assert.Equal(t, []starrocks.LabelState{starrocks.StateVisible}, sr.left(l(committingN)), "waited until visible, not only committed")
	assert.NotContains(t, sr.asked, l(committingN+1), "beyond the window")
	assert.NotContains(t, sr.asked, l(2), "the row's own label is committed")
}

// Every label the row lists as open is checked, however far above the row's
// own label it is (the worker's next cycle, begun after failed begins burnt
// numbers).
func TestProbeWriterChecksListedLabelsAboveTheWindow(t *testing.T) {
	stem := "benthos-shop-deadbee2"
	l := func(n int64) string { return starrocks.StemLabel(stem, n) }
	far := int64(5 + anchorGap + 4)
	sr := &scriptedSR{fakeSR: newFakeSR(), states: map[string][]starrocks.LabelState{
		l(far): {starrocks.StatePrepare, starrocks.StateVisible},
	}, committing: map[string]bool{l(far): true}}
	o := probeOutput(t, sr)
	advanced, err := o.probeWriter(context.Background(), "shop", writerRow{writer: "deadbee2", top: 5, open: []int64{far}, label: l(5)})
	require.NoError(t, err)
	assert.True(t, advanced)
	assert.Equal(t, []starrocks.LabelState{starrocks.StateVisible}, sr.left(l(far)))
}

// An FE that registers a multi-table transaction only at its commit reports
// UNKNOWN for one it is committing; the rollback it refuses tells.
func TestProbeWriterWaitsForAnUnknownLabelTheFEIsCommitting(t *testing.T) {
	stem := "benthos-shop-deadbee3"
	l := func(n int64) string { return starrocks.StemLabel(stem, n) }
	sr := &scriptedSR{fakeSR: newFakeSR(), states: map[string][]starrocks.LabelState{
		l(4): {starrocks.StateUnknown, starrocks.StateUnknown, starrocks.StatePrepare, starrocks.StateVisible},
		l(6): {starrocks.StateUnknown},
	}, committing: map[string]bool{l(4): true}}
	o := probeOutput(t, sr)
	_, err := o.probeWriter(context.Background(), "shop", writerRow{writer: "deadbee3", top: 3, label: l(3)})
	require.NoError(t, err)
	assert.Equal(t, []starrocks.LabelState{starrocks.StateVisible}, sr.left(l(4)), "not left before the committing label is final")
	assert.Equal(t, []string{l(6)}, sr.rolledBack, "an UNKNOWN label the FE holds (loaded, not registered) is rolled back")
}

// A failing get_load_state is retried for that label; the take-over run
// goes on instead of starting over.
func TestTakeOverRetriesAFailedQuery(t *testing.T) {
	sr := &flakySR{scriptedSR: &scriptedSR{fakeSR: newFakeSR(), states: map[string][]starrocks.LabelState{}, committing: map[string]bool{}}, k: 7}
	k := probeOutput(t, sr.scriptedSR, withClient(sr))
	rows := map[string][]writerRow{}
	for i := 0; i < 8; i++ {
		w := fmt.Sprintf("dead%04d", i)
		rows["shop"] = append(rows["shop"], writerRow{writer: w, top: 10, label: starrocks.SeqLabel("benthos", "shop", w, 10), updated: time.Now()})
	}
	k.store = &staticWriters{fakeProgress: fakeProgress{f: sr.fakeSR, table: defaultProgressTable}, rows: rows}
	require.NoError(t, k.run(context.Background(), k.ticket()))
	assert.Greater(t, sr.failed, 10, "queries failed on the way")
	assert.Len(t, sr.asked, 8*anchorGap, "every label of every row answered once")
}

// flakySR fails every k-th get_load_state with a transient error.
type flakySR struct {
	*scriptedSR
	mu            sync.Mutex
	calls, failed int
	k             int
}

func (s *flakySR) WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (starrocks.LabelState, error) {
	s.mu.Lock()
	s.calls++
	fail := s.calls%s.k == 0
	if fail {
		s.failed++
	}
	s.mu.Unlock()
	if fail {
		return "", srErr("get_load_state", starrocks.ClassTransient, "connection reset by peer")
	}
	return s.scriptedSR.WaitFinal(ctx, db, label, maxWait)
}

// Rows not written for writerRowStale are skipped (their writers had no
// commit in flight); a writer anchors again before its row gets that old.
func TestStaleWriterRowsAreSkippedAndWritersReanchor(t *testing.T) {
	stem := "benthos-shop-01d01d01"
	fresh := "benthos-shop-f2e5f2e5"
	sr := &scriptedSR{fakeSR: newFakeSR(), states: map[string][]starrocks.LabelState{
		starrocks.StemLabel(stem, 11):  {starrocks.StatePrepare},
		starrocks.StemLabel(fresh, 11): {starrocks.StatePrepare},
	}, committing: map[string]bool{}}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := now
	k := probeOutput(t, sr, withClock(func() time.Time { return clock }))
	k.store = &staticWriters{fakeProgress: fakeProgress{f: sr.fakeSR, table: defaultProgressTable}, rows: map[string][]writerRow{"shop": {
		{writer: "01d01d01", top: 10, label: starrocks.StemLabel(stem, 10), updated: now.Add(-writerRowStale - time.Minute)},
		{writer: "f2e5f2e5", top: 10, label: starrocks.StemLabel(fresh, 10), updated: now.Add(-writerRowStale + time.Minute)},
	}}}
	require.NoError(t, k.run(context.Background(), k.ticket()))
	assert.Equal(t, []string{starrocks.StemLabel(fresh, 11)}, sr.rolledBack)
	for _, a := range sr.asked {
		assert.False(t, strings.HasPrefix(a, stem), "the stale row is not probed: %s", a)
	}

	var l labelLedger
	l.durable(5, []int64{7}, now)
	assert.True(t, l.covered(6, now))
	assert.True(t, l.covered(7, now))
	now = now.Add(writerRowStale / 2)
	assert.False(t, l.covered(6, now), "a row half writerRowStale old is anchored again")
	assert.False(t, l.covered(7, now))
}

func TestTakeOverCoalesces(t *testing.T) {
	f := newFakeSR()
	o, _, _ := eoOutput(t, f, nil, "")
	k := takeOverOf(t, o)
	ticket := k.ticket()
	require.NoError(t, k.run(context.Background(), ticket))
	k.mu.Lock()
	runs := k.started
	k.mu.Unlock()
	require.NoError(t, k.run(context.Background(), ticket), "a run that started after the ticket covers it")
	k.mu.Lock()
	assert.Equal(t, runs, k.started)
	k.mu.Unlock()
	require.NoError(t, k.run(context.Background(), k.ticket()))
	k.mu.Lock()
	assert.Equal(t, runs+1, k.started, "a later ticket needs a new run")
	k.mu.Unlock()
}

// refusingSR answers every get_load_state with state (or err) and every
// rollback with refusal; cancels are recorded.
type refusingSR struct {
	*fakeSR
	state    starrocks.LabelState
	stateErr error
	refusal  error
	mu       sync.Mutex
	cancels  []string
	queries  int
}

func (s *refusingSR) WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (starrocks.LabelState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries++
	if len(s.cancels) > 0 {
		return starrocks.StateAborted, nil
	}
	return s.state, s.stateErr
}

func (s *refusingSR) Rollback(ctx context.Context, t starrocks.Txn) error { return s.refusal }

func (s *refusingSR) Cancel(ctx context.Context, db, label string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancels = append(s.cancels, label)
	return nil
}

// What each answer about another writer's label means (docs/notes/starrocks-protocol.md §5.6,
// §6.1): none of them may hold the check forever.
func TestFinalizeLabelAnswers(t *testing.T) {
	label := starrocks.SeqLabel("benthos", "shop", "deadbeef", 3)
	for _, tc := range []struct {
		name          string
		sr            *refusingSR
		committed     bool
		wantErr       string
		wantCancelled bool
	}{
		{name: "evicted label, committed long ago", sr: &refusingSR{state: starrocks.StateUnknown,
			refusal: srErr("rollback", starrocks.ClassTransient, "Can not abort VISIBLE transaction 7, label is "+label)}, committed: true},
		{name: "never begun", sr: &refusingSR{state: starrocks.StateUnknown,
			refusal: srErr("rollback", starrocks.ClassPerTxn, "stream load task"+label+"does not exist")}},
		{name: "database dropped", sr: &refusingSR{stateErr: srErr("get_load_state", starrocks.ClassTransient, "unknown database, database=shop")}},
		{name: "PREPARE without a task: cancelled", sr: &refusingSR{state: starrocks.StatePrepare,
			refusal: srErr("rollback", starrocks.ClassPerTxn, "stream load task"+label+"does not exist")}, wantCancelled: true},
		{name: "a refusal nobody understands", sr: &refusingSR{state: starrocks.StatePrepare,
			refusal: srErr("rollback", starrocks.ClassTransient, "something else")}, wantErr: "20 attempts failed"},
		{name: "get_load_state keeps failing", sr: &refusingSR{stateErr: srErr("get_load_state", starrocks.ClassTransient, "connection refused")}, wantErr: "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.sr.fakeSR = newFakeSR()
			o, _ := testOutput(t, eoYAML+"retry_backoff: { initial_interval: 1ms, max_interval: 1ms }\n", tc.sr.fakeSR, nil, withClient(tc.sr))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			committed, err := newTakeOver(o, nil).finalizeLabel(ctx, "shop", label, "deadbeef")
			require.NoError(t, ctx.Err(), "finalizeLabel returned in time")
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.committed, committed)
			assert.Equal(t, tc.wantCancelled, len(tc.sr.cancels) == 1)
		})
	}
}

// seqSR answers get_load_state from a script (the last state repeats) and
// refuses every rollback because the transaction is VISIBLE.
type seqSR struct {
	*fakeSR
	mu           sync.Mutex
	script, seen []starrocks.LabelState
}

func (s *seqSR) WaitFinal(ctx context.Context, db, label string, _ time.Duration) (starrocks.LabelState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.script[0]
	if len(s.script) > 1 {
		s.script = s.script[1:]
	}
	s.seen = append(s.seen, st)
	return st, nil
}

func (s *seqSR) Rollback(ctx context.Context, t starrocks.Txn) error {
	return srErr("rollback", starrocks.ClassTransient, "Can not abort VISIBLE transaction 7, label is "+t.Label)
}

// The FE refuses "Can not abort VISIBLE" for a COMMITED task too
// (docs/notes/starrocks-protocol.md §5.6): a label UNKNOWN a moment ago that
// refuses may be committed and not published yet. Only a second refusal
// with the label still UNKNOWN means its state was evicted long after it was
// published.
func TestFinalizeLabelVisibleRefusalOfAnUnknownLabelAsksAgain(t *testing.T) {
	label := starrocks.SeqLabel("benthos", "shop", "deadbeef", 3)
	sr := &seqSR{fakeSR: newFakeSR(), script: []starrocks.LabelState{starrocks.StateUnknown, starrocks.StateCommitted, starrocks.StateVisible}}
	o, _ := testOutput(t, eoYAML+"retry_backoff: { initial_interval: 1ms, max_interval: 1ms }\n", sr.fakeSR, nil, withClient(sr))
	committed, err := newTakeOver(o, nil).finalizeLabel(context.Background(), "shop", label, "deadbeef")
	require.NoError(t, err)
	assert.True(t, committed)
	sr.mu.Lock()
	defer sr.mu.Unlock()
	assert.Equal(t, []starrocks.LabelState{starrocks.StateUnknown, starrocks.StateCommitted, starrocks.StateVisible}, sr.seen, "waited until visible")
}

func TestAnyOf(t *testing.T) {
	var running, peak atomic.Int64
	// The first three calls wait for each other, so the limit is reached;
	// a fourth that ran beside them would raise the peak above it.
	full := make(chan struct{})
	var fullOnce sync.Once
	got, err := anyOf(context.Background(), 20, 3, func(ctx context.Context, i int) (bool, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 3 {
			fullOnce.Do(func() { close(full) })
		}
		if i < 3 {
			select {
			case <-full:
			case <-time.After(5 * time.Second):
			}
		}
		running.Add(-1)
		return i == 7, nil
	})
	require.NoError(t, err)
	assert.True(t, got, "one returned true")
	assert.Equal(t, int64(3), peak.Load(), "limit at once, never more")

	boom := errors.New("boom")
	got, err = anyOf(context.Background(), 10, 2, func(ctx context.Context, i int) (bool, error) {
		if i == 0 {
			return false, boom
		}
		<-ctx.Done() // the others wait until the error cancels them
		return false, ctx.Err()
	})
	assert.ErrorIs(t, err, boom, "the first error, not a cancellation")
	assert.False(t, got)
}
