package starrocks_txn

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// writers reads the writer rows the fake server committed, in commit order:
// a later row of a writer replaces the earlier one, a delete (__op 1)
// removes it.
func (fp *fakeProgress) writers(ctx context.Context, pipelineID string) (map[string][]writerRow, error) {
	fp.f.mu.Lock()
	defer fp.f.mu.Unlock()
	last := map[string]map[string]writerRow{}
	for _, c := range fp.f.commits {
		db := fp.f.txns[c.label].db
		for _, r := range c.rows[fp.table] {
			part, _ := r["source_partition"].(string)
			if r["pipeline_id"] != pipelineID || !isWriterRow(part) {
				continue
			}
			if last[db] == nil {
				last[db] = map[string]writerRow{}
			}
			if op, _ := r["__op"].(float64); op == 1 {
				delete(last[db], part)
				continue
			}
			open, err := parseOpen(r["source_txn_id"].(string))
			if err != nil {
				return nil, err
			}
			top := int64(r["committed_offset"].(float64))
			if prev, ok := last[db][part]; ok && top < prev.top {
				continue // merge_condition: committed_offset
			}
			last[db][part] = writerRow{writer: part[len(writerRowPrefix):], top: top, open: open, label: r["label"].(string)}
		}
	}
	out := map[string][]writerRow{}
	for db, m := range last {
		for _, k := range sortedKeys(m) {
			out[db] = append(out[db], m[k])
		}
	}
	return out, nil
}

// scriptedSR answers get_load_state from a script and records rollbacks: the
// labels of a dead writer as a successor finds them.
type scriptedSR struct {
	*fakeSR
	smu sync.Mutex
	// states[label] is the sequence of states get_load_state reports; the
	// last one repeats. Missing: UNKNOWN.
	states map[string][]starrocks.LabelState
	// committing labels refuse a rollback.
	committing map[string]bool
	asked      []string
	rolledBack []string
}

func (s *scriptedSR) WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (starrocks.LabelState, error) {
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
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.committing[t.Label] {
		return srErr("rollback", starrocks.ClassTransient, fmt.Sprintf("Can not abort transaction 7 during committing, label is %s", t.Label))
	}
	s.rolledBack = append(s.rolledBack, t.Label)
	s.states[t.Label] = []starrocks.LabelState{starrocks.StateAborted}
	return nil
}

func probeOutput(t *testing.T, sr *scriptedSR) *Output {
	t.Helper()
	o, _ := testOutput(t, eoYAML+"retry_backoff: { initial_interval: 1ms, max_interval: 5ms }\n", sr.fakeSR, nil)
	o.client = sr
	return o
}

// A successor rolls back what a dead writer left open, waits for what the FE
// is committing, and stops at the writer's one commit in flight.
func TestProbeWriterFinishesWhatADeadWriterLeft(t *testing.T) {
	stem := "benthos-shop-deadbeef"
	l := func(n int64) string { return starrocks.StemLabel(stem, n) }
	committingN := int64(6 + anchorGap - 1)
	sr := &scriptedSR{fakeSR: newFakeSR(), states: map[string][]starrocks.LabelState{
		l(1):               {starrocks.StatePrepare},
		l(3):               {starrocks.StateAborted},
		l(4):               {starrocks.StateVisible},
		l(5):               {starrocks.StatePrepare},
		l(committingN):     {starrocks.StatePrepare, starrocks.StatePrepare, starrocks.StateVisible},
		l(committingN + 1): {starrocks.StatePrepare},
	}, committing: map[string]bool{l(committingN): true}}
	o := probeOutput(t, sr)
	require.NoError(t, o.probeWriter(context.Background(), "shop", writerRow{writer: "deadbeef", top: 2, open: []int64{1}, label: l(2)}))
	assert.Equal(t, []string{l(1), l(5)}, sr.rolledBack, "the open transactions are rolled back, the committing one is not")
	assert.NotContains(t, sr.asked, l(committingN+1), "after the commit in flight landed, no later label can commit")
	assert.Contains(t, sr.asked, l(committingN))
	assert.NotContains(t, sr.asked, l(2), "the row's own label is committed")
}

// Probing ends after anchorGap consecutive UNKNOWN labels; one fewer does not
// end it.
func TestProbeWriterStopsAfterAGapOfUnknownLabels(t *testing.T) {
	stem := "p-db-cafecafe"
	l := func(n int64) string { return starrocks.StemLabel(stem, n) }
	sr := &scriptedSR{fakeSR: newFakeSR(), states: map[string][]starrocks.LabelState{
		l(10 + anchorGap - 1):         {starrocks.StatePrepare},
		l(10 + anchorGap + anchorGap): {starrocks.StatePrepare},
	}, committing: map[string]bool{}}
	o := probeOutput(t, sr)
	require.NoError(t, o.probeWriter(context.Background(), "db", writerRow{writer: "cafecafe", top: 9, label: l(9)}))
	assert.Equal(t, []string{l(10 + anchorGap - 1)}, sr.rolledBack, "found behind anchorGap-1 unknown labels")
	assert.NotContains(t, sr.asked, l(10+anchorGap+anchorGap), "not behind anchorGap of them")
	assert.Len(t, sr.asked, anchorGap+anchorGap, "floor … the PREPARE one, then anchorGap unknown")
}

// The writer keeps every label it commits less than anchorGap above a floor
// StarRocks already holds, even when failures burn labels: its first commit
// in a database is an anchor, and an anchor comes again when the gap grows.
func TestWriterAnchorsWhenLabelsBurn(t *testing.T) {
	f := newFakeSR()
	fails, burning := 0, false
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "load" && table == "a" && burning && fails < 3*anchorGap {
			fails++
			return srErr("load", starrocks.ClassTransient, "connection refused"), true
		}
		return nil, false
	}
	o, _, _ := eoOutput(t, f, nil, "retry_backoff: { initial_interval: 1ms, max_interval: 2ms }\n")
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t0", 0)))}, 5*time.Second)
	f.mu.Lock()
	burning = true
	f.mu.Unlock()
	var chs []chan error
	for i := 1; i < 4; i++ {
		chs = append(chs, writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", fmt.Sprintf("t%d", i), i))))
	}
	waitAll(t, chs, 10*time.Second)
	require.Equal(t, 3*anchorGap, fails)

	f.mu.Lock()
	defer f.mu.Unlock()
	top, open := int64(-1), map[int64]bool{}
	anchors := 0
	for i, c := range f.commits {
		_, n, ok := starrocks.SplitSeqLabel(c.label)
		require.True(t, ok)
		data := len(c.rows["a"]) > 0
		if i == 0 {
			assert.False(t, data, "the first commit is an anchor")
		}
		if data {
			require.GreaterOrEqual(t, top, int64(1), "a data commit after an anchor")
			assert.True(t, open[n] || n-top <= anchorGap, "commit %s: a successor reading the row of label %d (open %v) would not check it", c.label, top, open)
		} else {
			anchors++
		}
		for _, r := range c.rows[defaultProgressTable] {
			if isWriterRow(r["source_partition"].(string)) {
				top = int64(r["committed_offset"].(float64))
				ns, err := parseOpen(r["source_txn_id"].(string))
				require.NoError(t, err)
				open = map[int64]bool{}
				for _, x := range ns {
					open[x] = true
				}
			}
		}
	}
	assert.GreaterOrEqual(t, anchors, 2, "the burnt labels forced a second anchor")
}

// A clean close deletes the writer's rows; a close with a commit whose
// outcome is unknown keeps them, and the next output makes that commit's
// transaction final before it reads the progress.
func TestWriterRowForgottenOnCleanCloseKeptWhenInDoubt(t *testing.T) {
	f := newFakeSR()
	o, _, fp := eoOutput(t, f, nil, "")
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))}, 5*time.Second)
	ws, err := fp.writers(context.Background(), "pl")
	require.NoError(t, err)
	require.Len(t, ws["test"], 1)
	require.NoError(t, o.Close(context.Background()))
	ws, err = fp.writers(context.Background(), "pl")
	require.NoError(t, err)
	assert.Empty(t, ws["test"], "clean close: nothing of the writer can commit")

	// A writer whose commit hangs is closed (its process dies).
	dying, _, _ := eoOutput(t, f, nil, "")
	gate := make(chan struct{})
	f.mu.Lock()
	f.commitGate = gate
	f.mu.Unlock()
	t2 := txnMsgs(s, "p0", "t2", 2)
	ch := writeAsync(dying, service.MessageBatch(replay(t2, "asm-dying")))
	var hung string
	defer func() {
		if t.Failed() {
			f.mu.Lock()
			for l, ft := range f.txns {
				t.Logf("%s %s %v", l, ft.state, ft.pending)
			}
			f.mu.Unlock()
		}
	}()
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for l, ft := range f.txns {
			if ft.state == starrocks.StatePrepare && len(ft.pending["a"]) > 0 && ft.pending[defaultProgressTable] != nil {
				hung = l
			}
		}
		dying.mu.Lock()
		defer dying.mu.Unlock()
		for _, p := range dying.parts {
			for _, tx := range p.order {
				if tx.committing {
					return hung != ""
				}
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_ = dying.Close(ctx)
	cancel()
	<-ch
	ws, err = fp.writers(context.Background(), "pl")
	require.NoError(t, err)
	require.Len(t, ws["test"], 1, "the row stays: the hung commit may still land")

	f.mu.Lock()
	f.commitGate = nil
	f.mu.Unlock()
	next, _, _ := eoOutput(t, f, nil, "")
	waitAll(t, []chan error{writeAsync(next, service.MessageBatch(replay(append(t2, txnMsgs(s, "p0", "t3", 3)...), "asm-2")))}, 5*time.Second)
	close(gate)
	f.mu.Lock()
	state := f.txns[hung].state
	f.mu.Unlock()
	assert.Equal(t, starrocks.StateAborted, state, "the successor rolled back the dead writer's open transaction before reading the progress")
	assert.Equal(t, map[string]int{"t1": 1, "t2": 1, "t3": 1}, countIDs(f.rows("a")))
}

func TestSettleWritersCoalesces(t *testing.T) {
	f := newFakeSR()
	o, _, _ := eoOutput(t, f, nil, "")
	ticket := o.settleTicket()
	require.NoError(t, o.settleWriters(context.Background(), ticket))
	o.settleMu.Lock()
	runs := o.settleStarted
	o.settleMu.Unlock()
	require.NoError(t, o.settleWriters(context.Background(), ticket), "a run that started after the ticket covers it")
	o.settleMu.Lock()
	assert.Equal(t, runs, o.settleStarted)
	o.settleMu.Unlock()
	require.NoError(t, o.settleWriters(context.Background(), o.settleTicket()))
	o.settleMu.Lock()
	assert.Equal(t, runs+1, o.settleStarted, "a later ticket needs a new run")
	o.settleMu.Unlock()
}
