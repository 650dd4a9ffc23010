package starrocks_txn

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// assertAtomic checks that every source transaction's rows became visible in
// exactly one commit, all of them together, and that no row was committed
// twice.
func assertAtomic(t *testing.T, f *fakeSR, wantRows map[string]int) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	commitsOf := map[string]map[string]bool{}
	rowsOf := map[string]int{}
	for _, c := range f.commits {
		for _, rows := range c.rows {
			for _, r := range rows {
				txn := fmt.Sprint(r["txn"])
				if commitsOf[txn] == nil {
					commitsOf[txn] = map[string]bool{}
				}
				commitsOf[txn][c.label] = true
				rowsOf[txn]++
			}
		}
	}
	for txn, n := range wantRows {
		assert.Len(t, commitsOf[txn], 1, "source transaction %s must be in exactly one commit", txn)
		assert.Equal(t, n, rowsOf[txn], "rows of source transaction %s", txn)
	}
}

func TestSwitchNeverSplitsTransaction(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")

	// p0/t1 writes table a first; while it is open, p1 commits several
	// transactions (cuts, idle switches and commits happen meanwhile); then
	// t1 writes table b, whose region is created only now, and ends there.
	t1a := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false)})
	var others []chan error
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("o%d", i)
		others = append(others, writeAsync(o, service.MessageBatch{s.row("p1", id, "a", map[string]any{"id": 100 + i, "txn": id}, true)}))
		time.Sleep(60 * time.Millisecond)
	}
	waitAll(t, others, 5*time.Second)
	require.GreaterOrEqual(t, f.commitCount(), 2, "commits happened while t1 was open")
	select {
	case <-t1a:
		t.Fatal("the first batch of an open source transaction was acknowledged")
	default:
	}
	t1b := writeAsync(o, service.MessageBatch{
		s.row("p0", "t1", "b", map[string]any{"id": 2, "txn": "t1"}, false),
		s.row("p0", "t1", "a", map[string]any{"id": 3, "txn": "t1"}, false),
	})
	time.Sleep(250 * time.Millisecond)
	t1c := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "b", map[string]any{"id": 4, "txn": "t1"}, true)})
	waitAll(t, []chan error{t1a, t1b, t1c}, 5*time.Second)

	want := map[string]int{"t1": 4}
	for i := 0; i < 5; i++ {
		want[fmt.Sprintf("o%d", i)] = 1
	}
	assertAtomic(t, f, want)
}

func TestNToOneMapping(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 1s\n", f, nil)
	s := newSrc("a1")
	const (
		perSecond = 100
		seconds   = 3
	)
	var chs []chan error
	start := time.Now()
	for i := 0; i < perSecond*seconds; i++ {
		id := fmt.Sprintf("t%d", i)
		chs = append(chs, writeAsync(o, service.MessageBatch{
			s.row("p0", id, "orders", map[string]any{"id": i, "txn": id}, false),
			s.row("p0", id, "items", map[string]any{"id": i, "txn": id}, true),
		}))
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * time.Second / perSecond)))
	}
	waitAll(t, chs, 10*time.Second)
	elapsed := time.Since(start).Seconds()

	f.mu.Lock()
	loadsPer := map[string]int{}
	for _, l := range f.loads {
		loadsPer[l.table]++
	}
	commits := len(f.commits)
	f.mu.Unlock()
	t.Logf("%.1fs: %d commits, loads per table %v", elapsed, commits, loadsPer)
	// ≈ 1 commit per commit_interval, ≈ 1/miniInterval (10) loads per table
	// per second; one load per source transaction would be 300.
	assert.LessOrEqual(t, commits, int(elapsed)+3)
	assert.GreaterOrEqual(t, commits, seconds-1)
	for tbl, n := range loadsPer {
		assert.LessOrEqual(t, float64(n)/elapsed, 16.0, "loads/s of %s", tbl)
		assert.GreaterOrEqual(t, float64(n)/elapsed, 3.0, "loads of %s stream between commits", tbl)
	}
	want := map[string]int{}
	for i := 0; i < perSecond*seconds; i++ {
		want[fmt.Sprintf("t%d", i)] = 2
	}
	assertAtomic(t, f, want)
}

func TestOrderingUnderMaxInFlight64(t *testing.T) {
	f := newFakeSR()
	rng := rand.New(rand.NewSource(7))
	var rngMu sync.Mutex
	f.loadDelay = func() time.Duration {
		rngMu.Lock()
		defer rngMu.Unlock()
		return time.Duration(rng.Intn(15)) * time.Millisecond
	}
	o, _ := testOutput(t, "commit_interval: 100ms\nmax_in_flight: 64\n", f, nil)
	s := newSrc("a1")

	// One assembler's dense stream over 4 partitions; every row carries a
	// per-key version, keys shared across source transactions.
	type key struct{ table, id string }
	version := map[key]int{}
	var msgs service.MessageBatch
	want := map[string]int{}
	for i := 0; i < 300; i++ {
		p := fmt.Sprintf("p%d", i%4)
		id := fmt.Sprintf("t%d", i)
		n := 1 + rng.Intn(3)
		for j := 0; j < n; j++ {
			tbl := []string{"a", "b"}[rng.Intn(2)]
			k := key{tbl, fmt.Sprintf("%s-%d", p, rng.Intn(5))}
			version[k]++
			msgs = append(msgs, s.row(p, id, tbl, map[string]any{"id": k.id, "v": version[k], "txn": id}, j == n-1))
		}
		want[id] = n
	}
	// Cut into batches and dispatch them through 64 concurrent writers in
	// a shuffled order, as Benthos does with max_in_flight 64.
	var batches []service.MessageBatch
	for len(msgs) > 0 {
		n := 1 + rng.Intn(6)
		if n > len(msgs) {
			n = len(msgs)
		}
		batches = append(batches, msgs[:n])
		msgs = msgs[n:]
	}
	for i := 0; i+8 <= len(batches); i += 8 {
		w := batches[i : i+8]
		rng.Shuffle(len(w), func(a, b int) { w[a], w[b] = w[b], w[a] })
	}
	work := make(chan service.MessageBatch)
	var wg sync.WaitGroup
	errs := make(chan error, len(batches))
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				rngMu.Lock()
				d := time.Duration(rng.Intn(3)) * time.Millisecond
				rngMu.Unlock()
				time.Sleep(d)
				errs <- o.WriteBatch(context.Background(), b)
			}
		}()
	}
	for _, b := range batches {
		work <- b
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assertAtomic(t, f, want)
	for _, tbl := range []string{"a", "b"} {
		last := map[string]int{}
		for _, r := range f.rows(tbl) {
			v := int(r["v"].(float64))
			id := idOf(r)
			require.Equal(t, last[id]+1, v, "table %s key %s applied out of order", tbl, id)
			last[id] = v
		}
	}
	f.mu.Lock()
	assert.Zero(t, f.overlap, "two loads of one (label, table) were in flight at once")
	f.mu.Unlock()
}

func TestAcksHeldUntilCommit(t *testing.T) {
	f := newFakeSR()
	gate := make(chan struct{})
	f.commitGate = gate
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	time.Sleep(400 * time.Millisecond)
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
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-ch:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Second):
		t.Fatal("WriteBatch did not return on cancellation")
	}
	assert.Empty(t, f.rows("a"))
}

func TestTransientCommitFailureReplays(t *testing.T) {
	f := newFakeSR()
	fails := 2
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "commit" && fails > 0 {
			fails--
			ft.state = starrocks.StateAborted
			return srErr("commit", starrocks.ClassTransient, "INTERNAL_ERROR"), true
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\nretry_backoff: {initial_interval: 10ms, max_interval: 50ms}\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{
		s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false),
		s.row("p0", "t1", "b", map[string]any{"id": 2, "txn": "t1"}, true),
	})
	waitAll(t, []chan error{ch}, 5*time.Second)
	assertAtomic(t, f, map[string]int{"t1": 2})
	f.mu.Lock()
	assert.GreaterOrEqual(t, len(f.txns), 3, "replayed under new labels")
	f.mu.Unlock()
}

func TestAmbiguousCommitThatCompletes(t *testing.T) {
	f := newFakeSR()
	once := true
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "commit" && once {
			once = false
			f.apply(ft) // committed, but the reply is lost
			return srErr("commit", starrocks.ClassAmbiguous, "read: connection reset by peer"), true
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitAll(t, []chan error{ch}, 5*time.Second)
	time.Sleep(200 * time.Millisecond)
	assert.Len(t, f.rows("a"), 1, "a commit that completed is never replayed")
	assertAtomic(t, f, map[string]int{"t1": 1})
}

func TestAmbiguousCommitNeverReplayedWhilePrepare(t *testing.T) {
	f := newFakeSR()
	var (
		failed    string
		polls     int
		abortedAt time.Time
	)
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		switch op {
		case "commit":
			if failed == "" {
				failed = ft.label
				return srErr("commit", starrocks.ClassAmbiguous, "commit timed out"), true
			}
			if ft.label == failed && abortedAt.IsZero() {
				return srErr("commit", starrocks.ClassAmbiguous, "Transaction 1 is already committing, label is "+ft.label), true
			}
		case "state":
			if ft.label == failed {
				polls++
				if polls < 4 {
					ft.state = starrocks.StatePrepare
					return nil, true
				}
				if abortedAt.IsZero() {
					abortedAt = time.Now()
				}
				ft.state = starrocks.StateAborted
				return nil, true
			}
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\nretry_backoff: {initial_interval: 20ms, max_interval: 40ms}\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	// A later cycle waits for the unresolved one: it may load, never commit.
	time.Sleep(50 * time.Millisecond)
	ch2 := writeAsync(o, service.MessageBatch{s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true)})
	waitAll(t, []chan error{ch, ch2}, 5*time.Second)
	assertAtomic(t, f, map[string]int{"t1": 1, "t2": 1})
	rows := f.rows("a")
	require.Len(t, rows, 2)
	assert.Equal(t, "t1", rows[0]["txn"], "the later cycle became visible after the earlier one")
	f.mu.Lock()
	defer f.mu.Unlock()
	require.GreaterOrEqual(t, polls, 4)
	// t1's rows were loaded again (the replay) only after ABORTED was proven.
	replays := 0
	for _, l := range f.loads {
		if l.label == failed {
			continue
		}
		for _, txn := range l.txns {
			if txn == "t1" {
				replays++
				assert.False(t, l.at.Before(abortedAt), "t1 replayed under %s at %v, before ABORTED was proven at %v", l.label, l.at, abortedAt)
			}
		}
	}
	assert.Positive(t, replays)
	for _, c := range f.commits {
		assert.False(t, c.at.Before(abortedAt), "commit %s before the unresolved one was resolved", c.label)
	}
}

func TestTxnInProcessingResendsLoad(t *testing.T) {
	f := newFakeSR()
	busy := 2
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "load" && busy > 0 {
			busy--
			return srErr("load", starrocks.ClassRetrySafe, "Transaction is in processing"), true
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitAll(t, []chan error{ch}, 5*time.Second)
	assertAtomic(t, f, map[string]int{"t1": 1})
	f.mu.Lock()
	assert.Len(t, f.txns, 1+countOpen(f), "no replay under a new label")
	f.mu.Unlock()
}

// countOpen counts labels begun but never loaded (the eager next cycle).
func countOpen(f *fakeSR) int {
	n := 0
	for _, ft := range f.txns {
		if !ft.loaded {
			n++
		}
	}
	return n
}

func TestUnknownTableDeadLettersOnlyItsTransactions(t *testing.T) {
	f := newFakeSR()
	f.unknownTables["missing"] = true
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	var chs []chan error
	chs = append(chs, writeAsync(o, service.MessageBatch{
		s.row("p0", "bad", "a", map[string]any{"id": 1, "txn": "bad"}, false),
		s.row("p0", "bad", "missing", map[string]any{"id": 2, "txn": "bad"}, true),
	}))
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("g%d", i)
		chs = append(chs, writeAsync(o, service.MessageBatch{s.row(fmt.Sprintf("p%d", i%2), id, "a", map[string]any{"id": 10 + i, "txn": id}, true)}))
	}
	waitAll(t, chs, 5*time.Second)
	assert.Equal(t, []string{"bad"}, dl.txnIDs())
	dl.mu.Lock()
	require.Len(t, dl.batches[0], 2, "the poisoned transaction goes whole")
	reason, _ := dl.batches[0][0].MetaGet(deadLetterReasonKey)
	dl.mu.Unlock()
	assert.Contains(t, reason, "missing")
	want := map[string]int{}
	for i := 0; i < 5; i++ {
		want[fmt.Sprintf("g%d", i)] = 1
	}
	assertAtomic(t, f, want)
	for _, r := range f.rows("a") {
		assert.NotEqual(t, "bad", r["txn"])
	}
}

func TestMissingTableStallsOnlyItsPartition(t *testing.T) {
	f := newFakeSR()
	f.unknownTables["missing"] = true
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	bad := writeAsync(o, service.MessageBatch{s.row("p0", "bad", "missing", map[string]any{"id": 1, "txn": "bad"}, true)})
	time.Sleep(300 * time.Millisecond)
	after := writeAsync(o, service.MessageBatch{s.row("p0", "later", "a", map[string]any{"id": 2, "txn": "later"}, true)})
	var good []chan error
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("g%d", i)
		good = append(good, writeAsync(o, service.MessageBatch{s.row("p1", id, "a", map[string]any{"id": 10 + i, "txn": id}, true)}))
	}
	waitAll(t, good, 5*time.Second)
	time.Sleep(200 * time.Millisecond)
	for _, ch := range []chan error{bad, after} {
		select {
		case <-ch:
			t.Fatal("a stalled partition's batch was acknowledged")
		default:
		}
	}
	o.mu.Lock()
	p := o.parts[pkey{"a1", "p0"}]
	require.NotNil(t, p)
	require.Error(t, p.stalled)
	assert.Contains(t, p.stalled.Error(), "missing")
	o.mu.Unlock()
	for _, r := range f.rows("a") {
		assert.NotEqual(t, "later", r["txn"], "nothing after the poisoned transaction commits")
	}
}

func TestFilteredRowsAtCommitAreIsolated(t *testing.T) {
	f := newFakeSR()
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op != "commit" {
			return nil, false
		}
		for _, rows := range ft.pending {
			for _, r := range rows {
				if r["bad"] == true {
					ft.state = starrocks.StateAborted
					return srErr("commit", starrocks.ClassPerTxn, "abnormal data more than max filter rate"), true
				}
			}
		}
		return nil, false
	}
	dl := &fakeDL{}
	f.commitGate = make(chan struct{})
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	var chs []chan error
	want := map[string]int{}
	for i := 0; i < 12; i++ {
		id := fmt.Sprintf("t%d", i)
		body := map[string]any{"id": fmt.Sprintf("p%d-k%d", i%2, i%3), "v": i, "txn": id}
		if i == 7 {
			body["bad"] = true
		} else {
			want[id] = 1
		}
		chs = append(chs, writeAsync(o, service.MessageBatch{s.row(fmt.Sprintf("p%d", i%2), id, "a", body, true)}))
	}
	// All twelve land in one cycle.
	time.Sleep(300 * time.Millisecond)
	close(f.commitGate)
	waitAll(t, chs, 10*time.Second)
	assert.Equal(t, []string{"t7"}, dl.txnIDs())
	assertAtomic(t, f, want)
	// Per key order kept.
	last := map[string]int{}
	for _, r := range f.rows("a") {
		v := int(r["v"].(float64))
		assert.Greater(t, v, last[idOf(r)]-1)
		last[idOf(r)] = v
	}
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

func TestAbortMarkerDiscardsOpenTransaction(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	chs := []chan error{
		writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false)}),
		writeAsync(o, service.MessageBatch{s.marker("p0", "t1", true)}),
		writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 2, "txn": "t1b"}, false), s.marker("p0", "t1", false)}),
	}
	waitAll(t, chs, 5*time.Second)
	rows := f.rows("a")
	require.Len(t, rows, 1)
	assert.Equal(t, "t1b", rows[0]["txn"])
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

func TestOutOfOrderBatchesAreResequenced(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	var ms []*service.Message
	for i := 0; i < 4; i++ {
		ms = append(ms, s.row("p0", fmt.Sprintf("t%d", i), "a", map[string]any{"id": "k", "v": i, "txn": fmt.Sprintf("t%d", i)}, true))
	}
	chs := []chan error{writeAsync(o, service.MessageBatch{ms[3], ms[2]}), writeAsync(o, service.MessageBatch{ms[1]})}
	time.Sleep(50 * time.Millisecond)
	chs = append(chs, writeAsync(o, service.MessageBatch{ms[0]}))
	waitAll(t, chs, 5*time.Second)
	rows := f.rows("a")
	require.Len(t, rows, 4)
	for i, r := range rows {
		assert.Equal(t, float64(i), r["v"])
	}
}

func TestOffsetRegressionIsNeverApplied(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	m1 := s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)
	m2 := s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true)
	m2.MetaSetMut("starrocks_source_offset", "1") // a replay of offset 1
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{m1, m2})}, 5*time.Second)
	assert.Equal(t, []string{"t2"}, dl.txnIDs())
	assert.Len(t, f.rows("a"), 1)
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

func TestCommittedThroughAndFence(t *testing.T) {
	f := newFakeSR()
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	reg := registry.Get(res)
	require.True(t, reg.Tracking())
	s := newSrc("a1")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{
		s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false),
		s.row("p0", "t1", "a", map[string]any{"id": 2, "txn": "t1"}, true),
	})}, 5*time.Second)
	off, ok := reg.Committed("p0")
	require.True(t, ok)
	assert.Equal(t, int64(2), off, "the END offset of the last committed source transaction")

	// An open transaction of p0 is held; a fence releases it with success
	// and its rows are never committed.
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t2", "a", map[string]any{"id": 3, "txn": "t2"}, false)})
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, reg.Fence(context.Background(), "p0"))
	waitAll(t, []chan error{ch}, time.Second)
	time.Sleep(200 * time.Millisecond)
	assert.Len(t, f.rows("a"), 2)
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

func TestLintRules(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterBatchOutput("starrocks_txn", outputSpec(),
		func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			return nil, service.BatchPolicy{}, 1, errors.New("not built in this test")
		}))
	linter := env.NewComponentConfigLinter()
	cases := map[string]string{
		"load_urls: []": "load_urls must list at least one",
		"load_urls: [x]\nload_properties: {enable_merge_commit: 'true'}":                          "enable_merge_commit is incompatible with multi-table transactions",
		"load_urls: [x]\nload_properties: {WHERE: 'a > 1'}":                                       "where header",
		"load_urls: [x]\ntable_properties: [{database: d, table: t, properties: {where: 'a>1'}}]": "where header",
		"load_urls: [x]\nsemantic: exactly_once\nmysql_address: fe:9030\n":                        "semantic exactly_once needs pipeline_id",
		"load_urls: [x]\nsemantic: exactly_once\npipeline_id: p\n":                                "semantic exactly_once needs mysql_address",
		"load_urls: [x]\ncommit_interval: 1500ms\ntxn_timeout: 2s\n":                              "commit_interval must be well below 80% of txn_timeout",
		"load_urls: [x]\ncommit_interval: 500s\n":                                                 "commit_interval must be well below 80% of txn_timeout",
	}
	for yaml, want := range cases {
		lints, err := linter.LintOutputYAML([]byte("starrocks_txn:\n" + indent(yaml)))
		require.NoError(t, err)
		var texts []string
		for _, l := range lints {
			texts = append(texts, l.What)
		}
		found := false
		for _, txt := range texts {
			if strings.Contains(txt, want) {
				found = true
			}
		}
		assert.True(t, found, "config %q: want a lint containing %q, got %v", yaml, want, texts)
	}
	for _, ok := range []string{"load_urls: [http://fe:8030]", "load_urls: [http://x]\ncommit_interval: 1s\ntxn_timeout: 2s",
		"load_urls: [http://x]\nsemantic: exactly_once\npipeline_id: p\nmysql_address: fe:9030"} {
		lints, err := linter.LintOutputYAML([]byte("starrocks_txn:\n" + indent(ok)))
		require.NoError(t, err)
		assert.Empty(t, lints, ok)
	}
}

func TestHeadersPerTable(t *testing.T) {
	pc, err := outputSpec().ParseYAML(`
load_urls: [x]
load_properties: {max_filter_ratio: "0.1", FORMAT: json}
table_properties:
  - {database: d, table: t, properties: {max_filter_ratio: "0", partial_update: "true"}}
`, nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"FORMAT": "json", "strip_outer_array": "true", "ignore_json_size": "true", "max_filter_ratio": "0.1"}, c.headersFor("d", "u"))
	assert.Equal(t, map[string]string{"FORMAT": "json", "strip_outer_array": "true", "ignore_json_size": "true", "max_filter_ratio": "0", "partial_update": "true"}, c.headersFor("d", "t"))
	assert.Equal(t, 100*time.Millisecond, c.miniInterval())
}

func indent(s string) string {
	out := "  "
	for _, r := range s {
		out += string(r)
		if r == '\n' {
			out += "  "
		}
	}
	return out
}

func TestIdleTransactionIsRecycled(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 200ms\ntxn_timeout: 1s\n", f, nil)
	s := newSrc("a1")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})}, 3*time.Second)
	// The next shared transaction is begun eagerly; unused, it is rolled
	// back at 80% of txn_timeout instead of expiring on the server.
	time.Sleep(2 * time.Second)
	f.mu.Lock()
	recycled := 0
	for _, ft := range f.txns {
		if !ft.loaded && ft.state == starrocks.StateAborted {
			recycled++
		}
	}
	f.mu.Unlock()
	assert.Positive(t, recycled, "an idle, empty shared transaction was rolled back before its timeout")
	// Traffic after the idle period begins a new one and commits.
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true)})}, 3*time.Second)
	assertAtomic(t, f, map[string]int{"t1": 1, "t2": 1})
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
	time.Sleep(100 * time.Millisecond)
	second := writeAsync(o, service.MessageBatch{s.row("p1", "t4", "a", map[string]any{"id": 4, "txn": "t4"}, true)})
	time.Sleep(200 * time.Millisecond)
	o.mu.Lock()
	_, admitted := o.parts[pkey{"a1", "p1"}]
	o.mu.Unlock()
	assert.False(t, admitted, "admission blocks at twice buffer_size while something buffered is committable")
	close(f.commitGate)
	waitAll(t, []chan error{first, second}, 5*time.Second)

	// Only open transactions buffered: admission goes on past the cap.
	open := writeAsync(o, service.MessageBatch{s.row("p2", "big", "a", map[string]any{"id": 5, "txn": "big", "pad": pad + pad + pad}, false)})
	time.Sleep(100 * time.Millisecond)
	more := writeAsync(o, service.MessageBatch{s.row("p2", "big", "a", map[string]any{"id": 6, "txn": "big"}, true)})
	waitAll(t, []chan error{open, more}, 5*time.Second)
	o.mu.Lock()
	assert.False(t, o.lastCapErr.IsZero(), "an error named buffer_size")
	o.mu.Unlock()
}

func TestMaxInFlightStarvationIsReported(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\nmax_in_flight: 2\n", f, nil)
	s := newSrc("a1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 2; i++ {
		m := s.row("p0", "open", "a", map[string]any{"id": i}, false)
		go func() { _ = o.WriteBatch(ctx, service.MessageBatch{m}) }()
	}
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return !o.lastMIFErr.IsZero()
	}, 3*time.Second, 20*time.Millisecond, "every WriteBatch slot waits on an open source transaction: an error names max_in_flight")
}

func TestRowSpecificLoadFailureIsIsolated(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	// The load of a body holding the bad row fails for its data only.
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "load" && f.lastBodyHasBad {
			return srErr("load", starrocks.ClassPerTxn, "primary key size exceed the limit"), true
		}
		return nil, false
	}
	f.commitGate = make(chan struct{})
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	var chs []chan error
	want := map[string]int{}
	for i := 0; i < 8; i++ {
		id := fmt.Sprintf("t%d", i)
		body := map[string]any{"id": i, "txn": id}
		if i == 5 {
			body["bad"] = true
		} else {
			want[id] = 1
		}
		chs = append(chs, writeAsync(o, service.MessageBatch{s.row("p0", id, "a", body, true)}))
	}
	time.Sleep(300 * time.Millisecond)
	close(f.commitGate)
	waitAll(t, chs, 10*time.Second)
	assert.Equal(t, []string{"t5"}, dl.txnIDs())
	assertAtomic(t, f, want)
}

func TestFenceReleasesAStalledPartition(t *testing.T) {
	f := newFakeSR()
	f.unknownTables["missing"] = true
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	chs := []chan error{
		writeAsync(o, service.MessageBatch{s.row("p0", "bad", "missing", map[string]any{"id": 1}, true)}),
	}
	time.Sleep(300 * time.Millisecond)
	// Admitted after the stall: held with it.
	chs = append(chs, writeAsync(o, service.MessageBatch{s.row("p0", "later", "a", map[string]any{"id": 2}, true)}))
	time.Sleep(100 * time.Millisecond)
	for _, ch := range chs {
		select {
		case <-ch:
			t.Fatal("a stalled partition's batch returned before the fence")
		default:
		}
	}
	require.NoError(t, registry.Get(res).Fence(context.Background(), "p0"))
	waitAll(t, chs, time.Second)
	assert.Empty(t, f.rows("a"), "nothing of the fenced partition was committed")
	o.mu.Lock()
	assert.Empty(t, o.parts, "the partition's state is gone; a new owner starts fresh")
	o.mu.Unlock()
}

func TestLoadPropertiesValidated(t *testing.T) {
	for yaml, want := range map[string]string{
		"load_properties: {label: x}":                            "set by the output itself",
		"load_properties: {Timeout: '10'}":                       "set by the output itself",
		"load_properties: {format: csv}":                         "format csv is not supported",
		"compression: gzip\nload_properties: {compression: lz4}": "conflicts with compression gzip",
	} {
		pc, err := outputSpec().ParseYAML("load_urls: [x]\n"+yaml, nil)
		require.NoError(t, err)
		_, err = configFromParsed(pc)
		require.ErrorContains(t, err, want, yaml)
	}
}
