package starrocks_txn

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

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
			open, err := starrocks.ParseOpenLabels(r["open_labels"].(string))
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
	// The next cycle's transaction is begun (eagerly) before the begins
	// fail: t1 goes into it, and the begins that fail are the eager ones
	// of the cycle after it.
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return countOpen(f) > 0
	}, 5*time.Second, time.Millisecond, "the next cycle is begun")
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

// A writer measures its row's age from the row's updated_at, not from when
// the commit that carried it resolved: after a commit that took long, the
// next one anchors again before a successor could skip the row as stale.
func TestWriterRowAgeIsTheRowsTime(t *testing.T) {
	f := newFakeSR()
	var skew atomic.Int64
	o, _, _ := eoOutput(t, f, nil, "", withClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }))
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
		for _, p := range dying.core.parts {
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
		Headers: tableHeaders(starrocks.WritersNumberCol), Body: []byte(`[{"pipeline_id":"pl","writer":"0dead0de","label_number":3,"open_labels":"4","label":"` + anchor + `","updated_at":"` + time.Now().UTC().Format(starrocks.RowTimeLayout) + `"}]`)}))
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
