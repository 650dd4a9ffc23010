package starrocks_txn

import (
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"

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
