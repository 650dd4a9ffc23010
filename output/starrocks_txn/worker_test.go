package starrocks_txn

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

func TestNToOneMapping(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 1s\n", f, nil)
	s := newSrc("a1")
	const (
		perSecond = 100
		seconds   = 3
	)
	var chs []chan error
	start := paced(perSecond*seconds, seconds*time.Second, func(i int) {
		id := fmt.Sprintf("t%d", i)
		chs = append(chs, writeAsync(o, service.MessageBatch{
			s.row("p0", id, "orders", map[string]any{"id": i, "txn": id}, false),
			s.row("p0", id, "items", map[string]any{"id": i, "txn": id}, true),
		}))
	})
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

// TestNToOneMappingManyPartitions: sixteen partitions, each switching
// once per miniInterval but each at its own time, so that some partition
// switches every few milliseconds. Each switch wakes the database worker;
// the worker still streams at most once per miniInterval, every partition's
// frozen chunks of a table in one request, so loads per table stay about
// 1/miniInterval (10/s) however many partitions there are, not one per
// partition switch (about 160/s here).
func TestNToOneMappingManyPartitions(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 1s\n", f, nil)
	s := newSrc("a1")
	const (
		parts     = 16
		perSecond = 160 // ten per partition per second
		seconds   = 3
	)
	var chs []chan error
	start := paced(perSecond*seconds, seconds*time.Second, func(i int) {
		id := fmt.Sprintf("t%d", i)
		p := fmt.Sprintf("p%d", i%parts)
		chs = append(chs, writeAsync(o, service.MessageBatch{
			s.row(p, id, "orders", map[string]any{"id": i, "txn": id}, false),
			s.row(p, id, "items", map[string]any{"id": i, "txn": id}, true),
		}))
	})
	waitAll(t, chs, 10*time.Second)
	elapsed := time.Since(start).Seconds()

	f.mu.Lock()
	loadsPer := map[string]int{}
	for _, l := range f.loads {
		loadsPer[l.table]++
	}
	f.mu.Unlock()
	t.Logf("%.1fs, %d partitions: loads per table %v", elapsed, parts, loadsPer)
	require.Len(t, loadsPer, 2, "both tables loaded")
	for tbl, n := range loadsPer {
		assert.LessOrEqual(t, float64(n)/elapsed, 16.0, "loads/s of %s: one per miniInterval, not one per partition switch", tbl)
	}
	want := map[string]int{}
	for i := 0; i < perSecond*seconds; i++ {
		want[fmt.Sprintf("t%d", i)] = 2
	}
	assertAtomic(t, f, want)
}

func TestIdleTransactionIsRecycled(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 200ms\ntxn_timeout: 1s\n", f, nil)
	s := newSrc("a1")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})}, 3*time.Second)
	// The next shared transaction is begun eagerly; unused, it is rolled
	// back at 80% of txn_timeout instead of expiring on the server.
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, ft := range f.txns {
			if !ft.loaded && ft.state == starrocks.StateAborted {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "an idle, empty shared transaction was rolled back before its timeout")
	// Traffic after the idle period begins a new one and commits.
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true)})}, 3*time.Second)
	assertAtomic(t, f, map[string]int{"t1": 1, "t2": 1})
}

// A shared transaction is never loaded into once it is older than the
// recycle age, even when the previous commit keeps the next cycle waiting
// past it: the first commit is held 1.5 s (txn_timeout 1 s) while source
// transactions keep coming; the cycle they froze into is rolled back and
// committed under a new transaction, and no load goes to a transaction
// begun more than the recycle age (0.8 s) before it.
func TestCycleAgedByACommitWaitIsNeverLoaded(t *testing.T) {
	f := newFakeSR()
	var mu sync.Mutex
	begunAt := map[string]time.Time{}
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "begin" {
			mu.Lock()
			begunAt[ft.label] = time.Now()
			mu.Unlock()
		}
		return nil, false
	}
	gate := make(chan struct{})
	f.commitGate = gate
	o, _ := testOutput(t, "commit_interval: 200ms\ntxn_timeout: 1s\n", f, nil)
	s := newSrc("a1")
	var chs []chan error
	// One source transaction every 100 ms for 2 s; the first commit is
	// held for the first 1.5 s.
	paced(20, 2*time.Second, func(i int) {
		if i == 15 {
			close(gate)
		}
		id := fmt.Sprintf("t%d", i)
		chs = append(chs, writeAsync(o, service.MessageBatch{s.row("p0", id, "a", map[string]any{"id": i, "txn": id}, true)}))
	})
	waitAll(t, chs, 10*time.Second)
	recycle := time.Duration(recycleFraction * float64(time.Second))
	f.mu.Lock()
	loads := append([]fakeLoad{}, f.loads...)
	f.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	for _, l := range loads {
		b, ok := begunAt[l.label]
		require.True(t, ok, "label %s was begun", l.label)
		// A few ticks of slack: the worker checks at every step.
		assert.Less(t, l.at.Sub(b), recycle+150*time.Millisecond, "a load into %s, begun %v before it", l.label, l.at.Sub(b))
	}
	want := map[string]int{}
	for i := range chs {
		want[fmt.Sprintf("t%d", i)] = 1
	}
	assertAtomic(t, f, want)
}

// A database StarRocks says does not exist: once the source transactions
// that wanted it are dead-lettered, its begin is not retried, and its
// worker retires.
func TestMissingDatabaseStopsBeginningAndItsWorkerRetires(t *testing.T) {
	f := newFakeSR()
	var mu sync.Mutex
	begins := 0
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "begin" && ft.db == "nodb" {
			mu.Lock()
			begins++
			mu.Unlock()
			return srErr("begin", starrocks.ClassPerTxn, "Database[nodb] does not exist"), true
		}
		return nil, false
	}
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\nretry_backoff: {initial_interval: 10ms, max_interval: 20ms}\n", f, dl)
	s := newSrc("asm")
	bad := s.row("p0", "x1", "a", map[string]any{"id": 1, "txn": "x1"}, true)
	bad.MetaSetMut(contract.KeyDatabase, "nodb")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{bad})}, 5*time.Second)
	assert.Equal(t, []string{"x1"}, dl.txnIDs())
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		_, alive := o.workers["nodb"]
		_, kept := o.retired["nodb"]
		return !alive && !kept
	}, 5*time.Second, 5*time.Millisecond, "the worker of a database that never began a transaction retires, keeping nothing")
	mu.Lock()
	n := begins
	mu.Unlock()
	quiesce(t, o)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, n, begins, "no begin is retried for a database StarRocks refused, once nothing waits for it")
}

// At most max_databases workers run: a source transaction to one database
// more is poisoned with an error naming the limit; once workers retire
// (idle for 80% of txn_timeout) the next one gets a worker, and a database
// that comes back continues its label numbers.
func TestMaxDatabasesBoundsTheWorkers(t *testing.T) {
	f := newFakeSR()
	var mu sync.Mutex
	labels := map[string]int{}
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "begin" {
			mu.Lock()
			labels[ft.label]++
			mu.Unlock()
		}
		return nil, false
	}
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\ntxn_timeout: 1s\nmax_databases: 2\n", f, dl)
	s := newSrc("asm")
	to := func(db, id string) service.MessageBatch {
		m := s.row("p-"+db, id, "a", map[string]any{"id": id, "txn": id}, true)
		m.MetaSetMut(contract.KeyDatabase, db)
		return service.MessageBatch{m}
	}
	waitAll(t, []chan error{writeAsync(o, to("d1", "t1")), writeAsync(o, to("d2", "t2"))}, 5*time.Second)
	waitAll(t, []chan error{writeAsync(o, to("d3", "t3"))}, 5*time.Second)
	require.Equal(t, []string{"t3"}, dl.txnIDs())
	dl.mu.Lock()
	reason, _ := dl.batches[0][0].MetaGet(deadLetterReasonKey)
	dl.mu.Unlock()
	assert.Contains(t, reason, "max_databases (2 running)")
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.workers) == 0 && len(o.retired) == 2
	}, 5*time.Second, 10*time.Millisecond, "idle workers retire; the ledgers of databases that exist are kept")
	waitAll(t, []chan error{writeAsync(o, to("d3", "t4")), writeAsync(o, to("d1", "t5"))}, 5*time.Second)
	assertAtomic(t, f, map[string]int{"t1": 1, "t2": 1, "t4": 1, "t5": 1})
	mu.Lock()
	defer mu.Unlock()
	for l, n := range labels {
		assert.Equal(t, 1, n, "label %s begun once: a database's next worker continues its numbers", l)
	}
}

// A cycle whose loads take longer than txn_timeout (StarRocks starved: each
// row costs 20 ms of the fake's clock, and 60 source transactions of a row
// each take 1.2 s against a txn_timeout of 1 s) is replayed in parts of
// whole source transactions, halved at each replay that outlived the
// transaction, and commits: replayed at its full size it outlived its
// transaction forever. Every source transaction commits once and whole,
// in source order.
func TestCycleOutlivingTxnTimeoutIsReplayedInParts(t *testing.T) {
	for _, exactly := range []bool{false, true} {
		t.Run(map[bool]string{false: "at_least_once", true: "exactly_once"}[exactly], func(t *testing.T) {
			testCycleOutlivingTxnTimeout(t, exactly)
		})
	}
}

func testCycleOutlivingTxnTimeout(t *testing.T, exactly bool) {
	f := newFakeSR()
	f.clock, f.rowCost = &offsetClock{}, 20*time.Millisecond
	const conf = "txn_timeout: 1s\nretry_backoff: { initial_interval: 10ms, max_interval: 100ms }\n"
	var o *Output
	if exactly {
		o, _, _ = eoOutput(t, f, nil, conf, withClock(f.clock.now))
	} else {
		o, _ = testOutput(t, "commit_interval: 200ms\n"+conf, f, nil, withClock(f.clock.now))
	}
	s := newSrc("a1")
	const n = 60
	var batch service.MessageBatch
	want := map[string]int{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("t%02d", i)
		batch = append(batch, s.row("p0", id, "a", map[string]any{"id": i, "txn": id}, true))
		want[id] = 1
	}
	waitAll(t, []chan error{writeAsync(o, batch)}, 20*time.Second)
	assertAtomic(t, f, want)

	f.mu.Lock()
	defer f.mu.Unlock()
	var got []string
	for _, r := range f.committed["a"] {
		got = append(got, fmt.Sprint(r["txn"]))
	}
	var order []string
	for i := 0; i < n; i++ {
		order = append(order, fmt.Sprintf("t%02d", i))
	}
	assert.Equal(t, order, got, "committed in source order")
	largest := 0
	for _, c := range f.commits {
		largest = max(largest, len(c.rows["a"]))
	}
	assert.LessOrEqual(t, largest, n/2, "no commit of the full cycle: it cannot fit in txn_timeout")
	t.Logf("%d commits, the largest of %d source transactions; %d loads", len(f.commits), largest, len(f.loads))
}
