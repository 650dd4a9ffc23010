package starrocks_txn

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

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
	waitCore(t, o, "p0 stalls at bad", func(k *core) bool { return stalledAt(k, "a1", "p0") == "bad" })
	after := writeAsync(o, service.MessageBatch{s.row("p0", "later", "a", map[string]any{"id": 2, "txn": "later"}, true)})
	var good []chan error
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("g%d", i)
		good = append(good, writeAsync(o, service.MessageBatch{s.row("p1", id, "a", map[string]any{"id": 10 + i, "txn": id}, true)}))
	}
	waitAll(t, good, 5*time.Second)
	waitCore(t, o, "later is held behind the stall", func(k *core) bool { return len(k.parts[pkey{"a1", "p0"}].held) == 1 })
	quiesce(t, o)
	for _, ch := range []chan error{bad, after} {
		select {
		case <-ch:
			t.Fatal("a stalled partition's batch was acknowledged")
		default:
		}
	}
	o.mu.Lock()
	p := o.core.parts[pkey{"a1", "p0"}]
	require.NotNil(t, p)
	require.Error(t, p.stalled)
	assert.Contains(t, p.stalled.Error(), "missing")
	o.mu.Unlock()
	for _, r := range f.rows("a") {
		assert.NotEqual(t, "later", r["txn"], "nothing after the poisoned transaction commits")
	}
}

// Calls held on a stalled partition (poisoned without dead_letter) are not
// max_in_flight starvation: the stall is reported on its own, and raising
// max_in_flight, which the starvation error tells the user to do, would not
// help.
func TestStalledPartitionIsNotMaxInFlightStarvation(t *testing.T) {
	f := newFakeSR()
	f.unknownTables["missing"] = true
	o, _ := testOutput(t, "commit_interval: 100ms\nmax_in_flight: 2\n", f, nil)
	s := newSrc("a1")
	bad := writeAsync(o, service.MessageBatch{s.row("p0", "bad", "missing", map[string]any{"id": 1, "txn": "bad"}, true)})
	later := writeAsync(o, service.MessageBatch{s.row("p0", "later", "a", map[string]any{"id": 2, "txn": "later"}, true)})
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		p := o.core.parts[pkey{"a1", "p0"}]
		return p != nil && p.stalled != nil && o.core.held == 2
	}, 5*time.Second, 10*time.Millisecond, "both calls held on the stalled partition")
	// Held for longer than the starvation hold.
	stepCore(o, func(k *core) {
		now := o.now()
		k.checkInFlight(now)
		k.checkInFlight(now.Add(k.starveHold() + time.Second))
	})
	for _, ch := range []chan error{bad, later} {
		select {
		case <-ch:
			t.Fatal("a stalled partition's batch was acknowledged")
		default:
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.True(t, o.core.lastMIFErr.IsZero(), "a stall is not reported as max_in_flight starvation")
}

// StarRocks refuses to begin a transaction in a database that does not
// exist (a per-transaction error): the source transactions to it are
// poisoned, not retried forever holding their calls and the buffer.
func TestMissingDatabaseIsPoisoned(t *testing.T) {
	missingDB := func(f *fakeSR) {
		f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
			if op == "begin" && ft.db == "nodb" {
				return srErr("begin", starrocks.ClassPerTxn, "Database[nodb] does not exist"), true
			}
			return nil, false
		}
	}
	toDB := func(m *service.Message, db string) *service.Message {
		m.MetaSetMut(contract.KeyDatabase, db)
		return m
	}

	t.Run("dead_letter", func(t *testing.T) {
		f := newFakeSR()
		missingDB(f)
		dl := &fakeDL{}
		o, _ := testOutput(t, "commit_interval: 100ms\nretry_backoff: {initial_interval: 20ms, max_interval: 100ms}\n", f, dl)
		s := newSrc("asm")
		chs := []chan error{
			writeAsync(o, service.MessageBatch{toDB(s.row("p0", "x1", "a", map[string]any{"id": 1, "txn": "x1"}, true), "nodb")}),
			writeAsync(o, service.MessageBatch{s.row("p1", "ok1", "a", map[string]any{"id": 2, "txn": "ok1"}, true)}),
		}
		waitAll(t, chs, 5*time.Second)
		// Later traffic to the missing database is poisoned too.
		waitAll(t, []chan error{writeAsync(o, service.MessageBatch{toDB(s.row("p2", "x2", "a", map[string]any{"id": 3, "txn": "x2"}, true), "nodb")})}, 5*time.Second)
		assert.Equal(t, []string{"x1", "x2"}, dl.txnIDs())
		dl.mu.Lock()
		reason, _ := dl.batches[0][0].MetaGet(deadLetterReasonKey)
		dl.mu.Unlock()
		assert.Contains(t, reason, "database nodb")
		assert.Contains(t, reason, "Database[nodb] does not exist")
		assertAtomic(t, f, map[string]int{"ok1": 1})
		c, b := accounting(o)
		assert.Zero(t, c)
		assert.Zero(t, b)
	})

	t.Run("stall", func(t *testing.T) {
		f := newFakeSR()
		missingDB(f)
		o, _ := testOutput(t, "commit_interval: 100ms\nretry_backoff: {initial_interval: 20ms, max_interval: 100ms}\n", f, nil)
		s := newSrc("asm")
		stalled := writeAsync(o, service.MessageBatch{toDB(s.row("p0", "x1", "a", map[string]any{"id": 1, "txn": "x1"}, true), "nodb")})
		require.Eventually(t, func() bool {
			o.mu.Lock()
			defer o.mu.Unlock()
			p := o.core.parts[pkey{"asm", "p0"}]
			return p != nil && p.stalled != nil && strings.Contains(p.stalled.Error(), "database nodb")
		}, 5*time.Second, 10*time.Millisecond, "the partition stalls with an error naming the database")
		c, _ := accounting(o)
		assert.Zero(t, c, "a stalled transaction is not committable: the hard cap does not wait for it")
		// Other partitions go on.
		waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p1", "ok1", "a", map[string]any{"id": 2, "txn": "ok1"}, true)})}, 5*time.Second)
		select {
		case <-stalled:
			t.Fatal("a stalled partition's batch returned")
		default:
		}
	})
}

// poisonedMsgs is a source transaction of two messages whose first one
// carries a processing error.
func poisonedMsgs(s *src, p, id string) service.MessageBatch {
	first := s.row(p, id, "a", map[string]any{"id": id, "txn": id}, false)
	first.SetError(fmt.Errorf("a processor failed on %s", id))
	return service.MessageBatch{first, s.row(p, id, "a", map[string]any{"id": id + "-2", "txn": id}, true)}
}

// A fence that comes while a poisoned transaction of its partition is
// being written to dead_letter waits for the write, as for a commit in
// flight: the transaction ends dead-lettered, its resolution is published
// before the fence returns (the input commits past it, so the partition's
// new owner does not write it again), and a poisoned transaction still
// queued behind it is not written at all (the new owner reads it again and
// dead-letters it itself).
func TestFenceWaitsForADeadLetterWriteAndDropsTheQueue(t *testing.T) {
	f := newFakeSR()
	dl := &gatedDL{gate: make(chan struct{})}
	o, res := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	first := writeAsync(o, poisonedMsgs(s, "p0", "bad1"))
	second := writeAsync(o, poisonedMsgs(s, "p0", "bad2"))
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		lane := o.core.dlLanes[o.core.parts[pkey{"a1", "p0"}]]
		return lane != nil && lane.writing != nil && lane.writing.id == "bad1" && len(lane.queue) == 1
	}, 5*time.Second, time.Millisecond, "bad1 is being written, bad2 queued")
	fenced := make(chan error, 1)
	go func() { fenced <- o.fence(context.Background(), "p0") }()
	waitCore(t, o, "the fence took the partition", func(k *core) bool { return k.parts[pkey{"a1", "p0"}] == nil })
	select {
	case <-fenced:
		t.Fatal("the fence returned while the dead-letter write of its partition was in flight")
	default:
	}
	close(dl.gate)
	select {
	case err := <-fenced:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the fence did not return once the write ended")
	}
	off, ok := registry.Get(res).Committed("p0")
	assert.True(t, ok, "the dead-lettered transaction's END offset is published before the fence returns")
	assert.Equal(t, int64(2), off)
	waitAll(t, []chan error{first, second}, 5*time.Second)
	quiesce(t, o)
	assert.Equal(t, []string{"bad1"}, dl.txnIDs(), "the queued poisoned transaction of the fenced partition is left to its new owner")
}

// A message without the metadata contract under the default database and
// table (`${! @starrocks_database }`) is dead-lettered with a reason naming
// the missing key and the processor that stamps it, rather than sent to a
// database called "null"; a message with the contract next to it commits.
func TestMissingContractMetadataNamesTheKeyAndTheAssembler(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	bare := service.NewMessage([]byte(`{"id": 1}`))
	chs := []chan error{
		writeAsync(o, service.MessageBatch{bare}),
		writeAsync(o, service.MessageBatch{s.row("p0", "good", "a", map[string]any{"id": 2, "txn": "good"}, true)}),
	}
	waitAll(t, chs, 5*time.Second)
	dl.mu.Lock()
	require.Len(t, dl.batches, 1)
	reason, _ := dl.batches[0][0].MetaGet(deadLetterReasonKey)
	dl.mu.Unlock()
	assert.Contains(t, reason, "database reads metadata starrocks_database, which the message does not have: add the txn_assembler processor under input.processors (it stamps the metadata contract), or set database")
	assert.NotContains(t, reason, "null")
	assertAtomic(t, f, map[string]int{"good": 1})
}

// A WriteBatch whose context ends while its poisoned source transaction is
// being written to dead_letter says so, not that it waited for a StarRocks
// commit; one cancelled while its transaction is still open names that.
func TestCancelledWriteSaysWhatItWaitedFor(t *testing.T) {
	f := newFakeSR()
	f.unknownTables["missing"] = true
	dl := &gatedDL{gate: make(chan struct{})}
	o, _ := testOutput(t, "commit_interval: 50ms\n", f, dl)
	t.Cleanup(func() { close(dl.gate) })
	s := newSrc("a1")

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := o.WriteBatch(ctx, service.MessageBatch{s.row("p0", "bad", "missing", map[string]any{"id": 1, "txn": "bad"}, true)})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), `waiting for the dead_letter write of source transaction "bad" of partition`)
	assert.NotContains(t, err.Error(), "StarRocks commit")

	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	err = o.WriteBatch(ctx2, service.MessageBatch{s.row("p1", "half", "a", map[string]any{"id": 2, "txn": "half"}, false)})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), `waiting for the end of source transaction "half" of partition`)
}

// A stream whose dead_letter never received a transaction stops cleanly:
// the dead letter is an owned Benthos output that starts only at its first
// write, and closing one that never started waited forever (its Close waits
// for a loop that never ran), so the stream hung at every stop until its
// shutdown timeout.
func TestUnusedDeadLetterDoesNotHoldTheStop(t *testing.T) {
	e := startEmulator(t)
	dlName := "dl-unused"
	captures.Delete(dlName)
	t.Cleanup(func() { captures.Delete(dlName) })
	sb := service.GlobalEnvironment().Clone().NewStreamBuilder()
	require.NoError(t, sb.SetLoggerYAML(streamLogYAML()))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf("starrocks_txn:\n  schema_evolution: ignore\n  load_urls: [ %s ]\n  commit_interval: 100ms\n  dead_letter:\n    starrocks_txn_test_capture: { name: %s }\n", e.FEURL(), dlName)))
	stream, err := sb.Build()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- stream.Run(context.Background()) }()

	s := newSrc("unused-dl")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, produce(ctx, service.MessageBatch{s.row("p0", "t1", "orders", map[string]any{"order_id": 1, "customer_id": 1, "total_amount": 1}, true)}))

	require.NoError(t, stream.StopWithin(20*time.Second), "the stream stops within its timeout")
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream's Run did not return after its stop")
	}
	if d, ok := captures.Load(dlName); ok {
		assert.Empty(t, d.(*fakeDL).txnIDs(), "nothing was dead-lettered")
	}
}
