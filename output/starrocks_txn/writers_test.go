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
		for _, r := range c.rows[writersTable(fp.table)] {
			if r["pipeline_id"] != pipelineID {
				continue
			}
			w := r["writer"].(string)
			if last[db] == nil {
				last[db] = map[string]writerRow{}
			}
			if op, _ := r["__op"].(float64); op == 1 {
				delete(last[db], w)
				continue
			}
			open, err := parseOpen(r["open_labels"].(string))
			if err != nil {
				return nil, err
			}
			top := int64(r["label_number"].(float64))
			if prev, ok := last[db][w]; ok && top < prev.top {
				continue // merge_condition: label_number
			}
			last[db][w] = writerRow{writer: w, top: top, open: open, label: r["label"].(string)}
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
	// last one repeats. Missing: UNKNOWN, and a rollback finds no
	// transaction.
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

func probeOutput(t *testing.T, sr *scriptedSR) *Output {
	t.Helper()
	o, _ := testOutput(t, eoYAML+"retry_backoff: { initial_interval: 1ms, max_interval: 5ms }\n", sr.fakeSR, nil)
	o.client = sr
	return o
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

// A failing get_load_state is retried for that label; the settle run goes
// on instead of starting over.
func TestSettleWritersRetriesAFailedQuery(t *testing.T) {
	sr := &flakySR{scriptedSR: &scriptedSR{fakeSR: newFakeSR(), states: map[string][]starrocks.LabelState{}, committing: map[string]bool{}}, k: 7}
	o := probeOutput(t, sr.scriptedSR)
	o.client = sr
	rows := map[string][]writerRow{}
	for i := 0; i < 8; i++ {
		w := fmt.Sprintf("dead%04d", i)
		rows["shop"] = append(rows["shop"], writerRow{writer: w, top: 10, label: starrocks.SeqLabel("benthos", "shop", w, 10), updated: time.Now()})
	}
	o.prog = &staticWriters{fakeProgress: fakeProgress{f: sr.fakeSR, table: defaultProgressTable}, rows: rows}
	require.NoError(t, o.settleWriters(context.Background(), o.settleTicket()))
	assert.Greater(t, sr.failed, 10, "queries failed on the way")
	assert.Len(t, sr.asked, 8*anchorGap, "every label of every row answered once")
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
	o := probeOutput(t, sr)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	o.now = func() time.Time { return now }
	o.prog = &staticWriters{fakeProgress: fakeProgress{f: sr.fakeSR, table: defaultProgressTable}, rows: map[string][]writerRow{"shop": {
		{writer: "01d01d01", top: 10, label: starrocks.StemLabel(stem, 10), updated: now.Add(-writerRowStale - time.Minute)},
		{writer: "f2e5f2e5", top: 10, label: starrocks.StemLabel(fresh, 10), updated: now.Add(-writerRowStale + time.Minute)},
	}}}
	require.NoError(t, o.settleWriters(context.Background(), o.settleTicket()))
	assert.Equal(t, []string{starrocks.StemLabel(fresh, 11)}, sr.rolledBack)
	for _, a := range sr.asked {
		assert.False(t, strings.HasPrefix(a, stem), "the stale row is not probed: %s", a)
	}

	w := newDBWorker(o, "shop")
	w.durable(5, []int64{7}, now)
	assert.True(t, w.covered(6))
	assert.True(t, w.covered(7))
	now = now.Add(writerRowStale / 2)
	assert.False(t, w.covered(6), "a row half writerRowStale old is anchored again")
	assert.False(t, w.covered(7))
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

// staticWriters is a progress store with fixed writer rows.
type staticWriters struct {
	fakeProgress
	rows map[string][]writerRow
}

func (s *staticWriters) writers(context.Context, string) (map[string][]writerRow, error) {
	return s.rows, nil
}

// assertSuccessorFinds runs the real probe, for every data commit of the
// fake server, on the writer row StarRocks held when that commit was sent,
// with the commit's label still being committed: the probe must wait for it.
func assertSuccessorFinds(t *testing.T, o *Output, f *fakeSR) {
	t.Helper()
	f.mu.Lock()
	commits := append([]fakeCommit(nil), f.commits...)
	f.mu.Unlock()
	var held *writerRow
	checked := 0
	for _, c := range commits {
		if len(c.rows["a"]) > 0 {
			require.NotNil(t, held, "commit %s: a data commit before any writer row", c.label)
			sr := &scriptedSR{fakeSR: newFakeSR(), states: map[string][]starrocks.LabelState{
				c.label: {starrocks.StatePrepare, starrocks.StatePrepare, starrocks.StateVisible},
			}, committing: map[string]bool{c.label: true}}
			_, err := probeOutput(t, sr).probeWriter(context.Background(), "test", *held)
			require.NoError(t, err)
			assert.Equal(t, []starrocks.LabelState{starrocks.StateVisible}, sr.left(c.label),
				"commit %s: a successor reading the row of label %d (open %v) would not wait for it", c.label, held.top, held.open)
			checked++
		}
		for _, r := range c.rows[writersTable(defaultProgressTable)] {
			top := int64(r["label_number"].(float64))
			if held != nil && top < held.top {
				continue // merge_condition: label_number
			}
			open, err := parseOpen(r["open_labels"].(string))
			require.NoError(t, err)
			held = &writerRow{writer: o.writer, top: top, open: open, label: r["label"].(string)}
		}
	}
	require.NotZero(t, checked)
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

	assertSuccessorFinds(t, o, f)
	anchors := 0
	f.mu.Lock()
	for i, c := range f.commits {
		if len(c.rows["a"]) == 0 {
			anchors++
		} else if i == 0 {
			t.Errorf("the first commit %s carries data: no anchor", c.label)
		}
	}
	f.mu.Unlock()
	assert.GreaterOrEqual(t, anchors, 2, "the burnt labels forced a second anchor")
}

// A clean close deletes the writer's rows; a close with a commit whose
// outcome is unknown keeps them, and the next output rolls that commit's
// transaction back (the fake FE has not started committing it) before it
// applies anything. The FE that is already committing it is
// TestPipelineCrashDuringLateCommit's case (integration, emulator).
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
				if tx.inCommit {
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

// The worker's eager begin burns more than anchorGap labels while the commit
// goroutine loads the previous cycle, so that cycle's writer row lists the
// next label far above its own number: a successor must still find it.
func TestWriterEagerBeginBurnStaysFindable(t *testing.T) {
	f := newFakeSR()
	var armed bool
	beginFails := 0
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "begin" && armed && beginFails < anchorGap+4 {
			beginFails++
			return srErr("begin", starrocks.ClassTransient, "connection refused"), true
		}
		return nil, false
	}
	f.loadDelay = func() time.Duration {
		if armed && beginFails < anchorGap+4 {
			return 300 * time.Millisecond
		}
		return 0
	}
	o, _, _ := eoOutput(t, f, nil, "retry_backoff: { initial_interval: 1ms, max_interval: 1ms }\n")
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t0", 0)))}, 5*time.Second)
	time.Sleep(50 * time.Millisecond)
	f.mu.Lock()
	armed = true
	f.mu.Unlock()
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))}, 5*time.Second)
	f.mu.Lock()
	armed = false
	f.mu.Unlock()
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t2", 2)))}, 5*time.Second)
	f.mu.Lock()
	require.Equal(t, anchorGap+4, beginFails)
	f.mu.Unlock()
	assertSuccessorFinds(t, o, f)
}

// at_least_once keeps writer rows (and no partition progress) when
// pipeline_id and mysql_address are set, and makes another writer's open
// transaction final before it applies a partition's messages.
func TestAtLeastOnceWithPipelineIDKeepsWriterRows(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want bool
	}{
		{"", false},
		{"mysql_address: 127.0.0.1:1\n", false},
		{"pipeline_id: pl\n", false},
		{"pipeline_id: pl\nmysql_address: 127.0.0.1:1\n", true},
		{"semantic: exactly_once\npipeline_id: pl\nmysql_address: 127.0.0.1:1\n", true},
	} {
		o, _ := testOutput(t, tc.yaml, newFakeSR(), nil)
		assert.Equal(t, tc.want, o.conf.trackWriters(), tc.yaml)
	}

	f := newFakeSR()
	// A dead writer's row and its open transaction.
	dead := starrocks.SeqLabel("benthos", "test", "0dead0de", 4)
	require.NoError(t, f.Begin(context.Background(), starrocks.Txn{DB: "test", Label: dead, Multi: true}))
	require.NoError(t, f.Load(context.Background(), starrocks.LoadRequest{Txn: starrocks.Txn{DB: "test", Label: dead, Table: "a", Multi: true},
		Headers: map[string]string{"format": "json", "strip_outer_array": "true"}, Body: []byte(`[{"id":"old","txn":"old"}]`)}))
	anchor := starrocks.SeqLabel("benthos", "test", "0dead0de", 3)
	require.NoError(t, f.Begin(context.Background(), starrocks.Txn{DB: "test", Label: anchor, Multi: true}))
	require.NoError(t, f.Load(context.Background(), starrocks.LoadRequest{Txn: starrocks.Txn{DB: "test", Label: anchor, Table: writersTable(defaultProgressTable), Multi: true},
		Headers: tableHeaders(writersNumberCol), Body: []byte(`[{"pipeline_id":"pl","writer":"0dead0de","label_number":3,"open_labels":"4","label":"` + anchor + `","updated_at":"` + time.Now().UTC().Format(progressTimeLayout) + `"}]`)}))
	require.NoError(t, f.Commit(context.Background(), starrocks.Txn{DB: "test", Label: anchor, Multi: true}))

	o, _ := testOutput(t, "commit_interval: 100ms\npipeline_id: pl\nmysql_address: 127.0.0.1:1\n", f, nil)
	o.setProgressStore(&fakeProgress{f: f, table: defaultProgressTable})
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))}, 5*time.Second)
	f.mu.Lock()
	state := f.txns[dead].state
	var partitionRows, writerRows int
	for _, c := range f.commits {
		partitionRows += len(c.rows[defaultProgressTable])
		writerRows += len(c.rows[writersTable(defaultProgressTable)])
	}
	f.mu.Unlock()
	assert.Equal(t, starrocks.StateAborted, state, "the dead writer's open transaction was rolled back first")
	assert.Zero(t, partitionRows, "at_least_once writes no partition progress")
	assert.GreaterOrEqual(t, writerRows, 3, "the dead writer's anchor, this writer's anchor and its commit")
	assert.Equal(t, map[string]int{"t1": 1}, countIDs(f.rows("a")))
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
func TestSettleLabelAnswers(t *testing.T) {
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
			o, _ := testOutput(t, eoYAML+"retry_backoff: { initial_interval: 1ms, max_interval: 1ms }\n", tc.sr.fakeSR, nil)
			o.client = tc.sr
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			committed, err := o.settleLabel(ctx, "shop", label, "deadbeef")
			require.NoError(t, ctx.Err(), "settleLabel returned in time")
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

// A writer measures its row's age from the row's updated_at, not from when
// the commit that carried it resolved: after a commit that took long, the
// next one anchors again before a successor could skip the row as stale.
func TestWriterRowAgeIsTheRowsTime(t *testing.T) {
	f := newFakeSR()
	o, _, _ := eoOutput(t, f, nil, "")
	var skew atomic.Int64
	o.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t0", 0)))}, 5*time.Second)

	gate := make(chan struct{})
	f.mu.Lock()
	f.commitGate = gate
	f.mu.Unlock()
	ch := writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))
	waitCommitting(t, o)
	skew.Store(int64(13 * time.Hour)) // the commit resolves 13 h after its row was written
	f.mu.Lock()
	f.commitGate = nil
	f.mu.Unlock()
	close(gate)
	waitAll(t, []chan error{ch}, 5*time.Second)
	before := f.commitCount()
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t2", 2)))}, 5*time.Second)
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.commits, before+2, "an anchor, then t2")
	assert.Empty(t, f.commits[before].rows["a"], "the anchor comes first")
	assert.NotEmpty(t, f.commits[before+1].rows["a"])
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

// The FE refuses "Can not abort VISIBLE" for a COMMITED task too (§5.6): a
// label UNKNOWN a moment ago that refuses may be committed and not
// published yet. Only a second refusal with the label still UNKNOWN means
// its state was evicted long after it was published.
func TestSettleLabelVisibleRefusalOfAnUnknownLabelAsksAgain(t *testing.T) {
	label := starrocks.SeqLabel("benthos", "shop", "deadbeef", 3)
	sr := &seqSR{fakeSR: newFakeSR(), script: []starrocks.LabelState{starrocks.StateUnknown, starrocks.StateCommitted, starrocks.StateVisible}}
	o, _ := testOutput(t, eoYAML+"retry_backoff: { initial_interval: 1ms, max_interval: 1ms }\n", sr.fakeSR, nil)
	o.client = sr
	committed, err := o.settleLabel(context.Background(), "shop", label, "deadbeef")
	require.NoError(t, err)
	assert.True(t, committed)
	sr.mu.Lock()
	defer sr.mu.Unlock()
	assert.Equal(t, []starrocks.LabelState{starrocks.StateUnknown, starrocks.StateCommitted, starrocks.StateVisible}, sr.seen, "waited until visible")
}

// Right after a commit that followed its anchor, StarRocks holds the
// anchor's row (merge_condition) or, should the FE ignore merge_condition,
// the commit's: a label is covered only if a successor finds it from both.
func TestCoveredHoldsForEitherRowAfterAnAnchor(t *testing.T) {
	o, _ := testOutput(t, eoYAML, newFakeSR(), nil)
	w := newDBWorker(o, "shop")
	now := o.now()
	w.durable(20, []int64{10}, now) // the anchor: top 20, lists the data cycle 10
	w.durable(10, nil, now)         // then the data cycle 10 itself
	assert.True(t, w.covered(21), "found from both rows")
	assert.False(t, w.covered(20+anchorGap), "only from the anchor's row: anchor again")
	assert.True(t, w.covered(10+anchorGap))
	w.durable(30, nil, now) // a later commit: one row again
	assert.True(t, w.covered(30+anchorGap))
}

// pipeline_id is only checked where it is used.
func TestPipelineIDLengthCheckedWhenUsed(t *testing.T) {
	long := strings.Repeat("p", maxPipelineID+1)
	pc, err := outputSpec().ParseYAML("load_urls: [ http://fake:8030 ]\npipeline_id: "+long+"\n", nil)
	require.NoError(t, err)
	_, err = configFromParsed(pc)
	assert.NoError(t, err, "at_least_once without mysql_address does not use it")
	pc, err = outputSpec().ParseYAML("load_urls: [ http://fake:8030 ]\nmysql_address: 127.0.0.1:9030\npipeline_id: "+long+"\n", nil)
	require.NoError(t, err)
	_, err = configFromParsed(pc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "longer than 128")
}

func TestAnyOf(t *testing.T) {
	var running, peak atomic.Int64
	got, err := anyOf(context.Background(), 20, 3, func(ctx context.Context, i int) (bool, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		running.Add(-1)
		return i == 7, nil
	})
	require.NoError(t, err)
	assert.True(t, got, "one returned true")
	assert.LessOrEqual(t, peak.Load(), int64(3), "at most limit at once")

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
