package starrocks_txn

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSwitchNeverSplitsTransaction(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")

	// p0/t1 writes table a first; while it is open, p1 commits several
	// transactions (cuts, idle switches and commits happen meanwhile); then
	// t1 writes table b, whose region is created only now, and ends there.
	t1a := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false)})
	waitCore(t, o, "t1 is open", func(k *core) bool { return openTxn(k, "a1", "p0", "t1") })
	// Each of p1's transactions commits before the next comes: a cut, a
	// switch and a commit each, while t1 is open.
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("o%d", i)
		waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p1", id, "a", map[string]any{"id": 100 + i, "txn": id}, true)})}, 5*time.Second)
	}
	require.GreaterOrEqual(t, f.commitCount(), 5, "commits happened while t1 was open")
	select {
	case <-t1a:
		t.Fatal("the first batch of an open source transaction was acknowledged")
	default:
	}
	t1b := writeAsync(o, service.MessageBatch{
		s.row("p0", "t1", "b", map[string]any{"id": 2, "txn": "t1"}, false),
		s.row("p0", "t1", "a", map[string]any{"id": 3, "txn": "t1"}, false),
	})
	waitCore(t, o, "t1 holds rows of both tables", func(k *core) bool {
		return openTxn(k, "a1", "p0", "t1") && len(k.parts[pkey{"a1", "p0"}].open.tables) == 2
	})
	// One more commit cycle cuts while t1 has rows in both tables.
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p1", "o5", "a", map[string]any{"id": 105, "txn": "o5"}, true)})}, 5*time.Second)
	t1c := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "b", map[string]any{"id": 4, "txn": "t1"}, true)})
	waitAll(t, []chan error{t1a, t1b, t1c}, 5*time.Second)

	want := map[string]int{"t1": 4}
	for i := 0; i < 6; i++ {
		want[fmt.Sprintf("o%d", i)] = 1
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
				// Let other writers go first now and then: arrival
				// order is the shuffled dispatch order, stirred.
				rngMu.Lock()
				n := rng.Intn(3)
				rngMu.Unlock()
				for range n {
					runtime.Gosched()
				}
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

// A message whose starrocks_source_offset is not above what the partition
// admitted, in the middle of an open source transaction, poisons that
// transaction whole: it goes to dead_letter with all its messages, or
// stalls its partition, and none of its rows commits.
func TestOffsetRegressionInsideATransactionPoisonsItWhole(t *testing.T) {
	for _, withDL := range []bool{true, false} {
		t.Run(fmt.Sprintf("dead_letter=%v", withDL), func(t *testing.T) {
			f := newFakeSR()
			var dl *fakeDL
			var o *Output
			if withDL {
				dl = &fakeDL{}
				o, _ = testOutput(t, "commit_interval: 100ms\n", f, dl)
			} else {
				o, _ = testOutput(t, "commit_interval: 100ms\n", f, nil)
			}
			s := newSrc("a1")
			before := s.row("p0", "t0", "a", map[string]any{"id": 0, "txn": "t0"}, true)
			m1 := s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false)
			m2 := s.row("p0", "t1", "b", map[string]any{"id": 2, "txn": "t1"}, false)
			m2.MetaSetMut("starrocks_source_offset", "1") // at or below the high-water mark
			m3 := s.row("p0", "t1", "b", map[string]any{"id": 3, "txn": "t1"}, true)
			other := s.row("p1", "u1", "a", map[string]any{"id": 5, "txn": "u1"}, true)
			after := s.row("p0", "t2", "a", map[string]any{"id": 4, "txn": "t2"}, true)
			chs := []chan error{writeAsync(o, service.MessageBatch{before, m1, m2, m3})}
			if withDL {
				chs = append(chs, writeAsync(o, service.MessageBatch{other, after}))
				waitAll(t, chs, 5*time.Second)
				assert.Equal(t, []string{"t1"}, dl.txnIDs())
				dl.mu.Lock()
				assert.Len(t, dl.batches[0], 3, "the whole transaction goes to dead_letter")
				reason, _ := dl.batches[0][0].MetaGet(deadLetterReasonKey)
				dl.mu.Unlock()
				assert.Contains(t, reason, "starrocks_source_offset 1")
				assertAtomic(t, f, map[string]int{"t0": 1, "t2": 1, "u1": 1})
			} else {
				ok := writeAsync(o, service.MessageBatch{other})
				waitAll(t, []chan error{ok}, 5*time.Second)
				waitCore(t, o, "p0 stalls at t1", func(k *core) bool { return stalledAt(k, "a1", "p0") == "t1" })
				quiesce(t, o)
				select {
				case err := <-chs[0]:
					t.Fatalf("the batch of the poisoned transaction was acknowledged (%v) without dead_letter", err)
				default:
				}
				o.mu.Lock()
				stalled := o.core.parts[pkey{source: "a1", partition: "p0"}].stalledTxn
				o.mu.Unlock()
				assert.Equal(t, "t1", stalled, "the partition stalls at the poisoned transaction")
			}
			for _, tbl := range []string{"a", "b"} {
				for _, r := range f.rows(tbl) {
					assert.NotEqual(t, "t1", r["txn"], "no row of the poisoned transaction commits")
				}
			}
		})
	}
}
