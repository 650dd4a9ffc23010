package starrocks_txn

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// withEpoch stamps msgs with a partition assignment epoch, as the kafka_txn
// input does.
func withEpoch(epoch uint64, msgs ...*service.Message) service.MessageBatch {
	for _, m := range msgs {
		m.MetaSetMut(contract.KeyPartitionEpoch, strconv.FormatUint(epoch, 10))
	}
	return service.MessageBatch(msgs)
}

// accounting returns what the output still counts as committable and
// buffered.
func accounting(o *Output) (committable int, buffered int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.committable, o.buffered
}

func waitCommitting(t *testing.T, o *Output) {
	t.Helper()
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, p := range o.parts {
			for _, tx := range p.order {
				if tx.inCommit {
					return true
				}
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "a commit is in flight")
}

// A fence that gives up waiting for an in-flight commit, followed by that
// commit aborting: every WriteBatch call of the fenced partition returns and
// nothing stays counted as committable (which would block admission at the
// hard cap for every partition).
func TestFenceThatGivesUpReleasesWhenTheCommitAborts(t *testing.T) {
	f := newFakeSR()
	gate := make(chan struct{})
	f.commitGate = gate
	var commits atomic.Int32
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "commit" && commits.Add(1) == 1 {
			ft.state = starrocks.StateAborted
			return srErr("commit", starrocks.ClassTransient, "transaction aborted by the test"), true
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("asm")
	inCommit := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitCommitting(t, o)
	// Later transactions of p0: a complete one (queued or in the next
	// cycle) and an open one.
	later := writeAsync(o, service.MessageBatch{
		s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true),
		s.row("p0", "t3", "a", map[string]any{"id": 3, "txn": "t3"}, false),
	})
	time.Sleep(150 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	require.Error(t, o.fence(ctx, "p0"), "the fence gives up: the commit does not resolve in time")
	waitAll(t, []chan error{later}, 2*time.Second)

	close(gate) // the commit now aborts
	waitAll(t, []chan error{inCommit}, 5*time.Second)
	require.Eventually(t, func() bool {
		c, b := accounting(o)
		return c == 0 && b == 0
	}, 3*time.Second, 10*time.Millisecond, "nothing of the fenced partition stays committable or buffered")
	assert.Empty(t, f.rows("a"), "nothing of the fenced partition was committed")

	// The output goes on for other partitions.
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p1", "u1", "a", map[string]any{"id": 9, "txn": "u1"}, true)})}, 5*time.Second)
	assert.Len(t, f.rows("a"), 1)
}

// The same give-up, but the in-flight commit then succeeds: its calls
// return, nothing stays committable, and the fenced partition's boundary is
// not published after the fence ended (the input has released it).
func TestFenceThatGivesUpReleasesWhenTheCommitSucceeds(t *testing.T) {
	f := newFakeSR()
	gate := make(chan struct{})
	f.commitGate = gate
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("asm")
	inCommit := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitCommitting(t, o)
	open := writeAsync(o, service.MessageBatch{s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, false)})
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	require.Error(t, registry.Get(res).Fence(ctx, "p0"))
	waitAll(t, []chan error{open}, 2*time.Second)
	close(gate)
	waitAll(t, []chan error{inCommit}, 5*time.Second)
	require.Eventually(t, func() bool {
		c, b := accounting(o)
		return c == 0 && b == 0
	}, 3*time.Second, 10*time.Millisecond)
	assert.Len(t, f.rows("a"), 1, "the commit in flight completed")
	_, published := registry.Get(res).Committed("p0")
	assert.False(t, published, "nothing is published for a partition whose fence ended")
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
	time.Sleep(50 * time.Millisecond)
	chFill := writeAsync(o, fill)
	require.Eventually(t, func() bool {
		_, b := accounting(o)
		return b >= 200
	}, 2*time.Second, 5*time.Millisecond)
	chHead := writeAsync(o, head) // blocked at the hard cap
	time.Sleep(600 * time.Millisecond)
	o.mu.Lock()
	_, admitted := o.parts[pkey{"asm", "p1"}]
	o.mu.Unlock()
	assert.False(t, admitted, "the seq held by the blocked call was not skipped")

	close(gate)
	waitAll(t, []chan error{chFill, chHead, chTail}, 5*time.Second)
	assert.Empty(t, dl.txnIDs(), "nothing was refused as a replay")
	assertAtomic(t, f, map[string]int{"t1": 1, "t2": 1, "t3": 1, "T": 2})
}

// The review's scenario: the head of source transaction T is admitted, the
// partition is revoked and fenced, and the tail of T (of the old assignment)
// reaches the output afterwards. It must not commit: the new owner commits
// the whole of T.
func TestStaleEpochTailAfterFenceIsNeverCommitted(t *testing.T) {
	f := newFakeSR()
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	reg := registry.Get(res)
	e1 := reg.Assign("p0")
	s := newSrc("asm")
	rows := []*service.Message{
		s.row("p0", "T", "a", map[string]any{"id": 1, "txn": "T"}, false),
		s.row("p0", "T", "a", map[string]any{"id": 2, "txn": "T"}, false),
		s.row("p0", "T", "a", map[string]any{"id": 3, "txn": "T"}, true),
	}
	again := replay(rows, "asm2") // the new owner reads T again
	headCh := writeAsync(o, withEpoch(e1, rows[0], rows[1]))
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, reg.Fence(context.Background(), "p0"))
	waitAll(t, []chan error{headCh}, time.Second)

	// The tail arrives after the fence, before and after the partition is
	// assigned again.
	waitAll(t, []chan error{writeAsync(o, withEpoch(e1, rows[2]))}, time.Second)
	o.mu.Lock()
	assert.Empty(t, o.parts, "a stale message never recreates the fenced partition")
	o.mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	assert.Empty(t, f.rows("a"), "the tail of T alone was never committed")

	e2 := reg.Assign("p0")
	require.Greater(t, e2, e1)
	waitAll(t, []chan error{writeAsync(o, withEpoch(e2, again...))}, 5*time.Second)
	assertAtomic(t, f, map[string]int{"T": 3})
	off, ok := reg.Committed("p0")
	require.True(t, ok)
	assert.Equal(t, int64(3), off)
}

// A whole source transaction of a revoked assignment that reaches the output
// after the fence (calls wait for a free max_in_flight slot for about a
// commit cycle) must not commit, whether or not the partition was assigned
// again: the new owner commits it, and an older value must not overwrite a
// newer one.
func TestStaleEpochWholeTransactionAfterFenceIsNeverCommitted(t *testing.T) {
	f := newFakeSR()
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	reg := registry.Get(res)
	e1 := reg.Assign("p0")
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(o, withEpoch(e1, s.row("p0", "t1", "a", map[string]any{"id": "k", "v": 1, "txn": "t1"}, true)))}, 5*time.Second)
	late := withEpoch(e1,
		s.row("p0", "t2", "a", map[string]any{"id": "k", "v": 2, "txn": "t2"}, false),
		s.row("p0", "t2", "b", map[string]any{"id": "k", "v": 2, "txn": "t2"}, true))
	require.NoError(t, reg.Fence(context.Background(), "p0"))
	waitAll(t, []chan error{writeAsync(o, late)}, time.Second)

	// Re-assigned: an even later old-epoch transaction is refused too, and
	// the new assignment's messages commit.
	e2 := reg.Assign("p0")
	late2 := withEpoch(e1, s.row("p0", "t3", "a", map[string]any{"id": "k", "v": 3, "txn": "t3"}, true))
	fresh := withEpoch(e2, s.row("p0", "t4", "a", map[string]any{"id": "k", "v": 4, "txn": "t4"}, true))
	waitAll(t, []chan error{writeAsync(o, late2), writeAsync(o, fresh)}, 5*time.Second)
	time.Sleep(200 * time.Millisecond)
	var txns []string
	for _, r := range f.rows("a") {
		txns = append(txns, r["txn"].(string))
	}
	assert.Equal(t, []string{"t1", "t4"}, txns, "no old-epoch transaction committed after the fence")
	assert.Empty(t, f.rows("b"))
	c, b := accounting(o)
	assert.Zero(t, c)
	assert.Zero(t, b)
}

// Without the epoch key nothing is checked: hand-written mappings and
// non-Kafka sources work as before, even on a fenced partition.
func TestNoEpochMeansNoEpochChecking(t *testing.T) {
	f := newFakeSR()
	o, res := testOutput(t, "commit_interval: 100ms\n", f, nil)
	reg := registry.Get(res)
	reg.Assign("p0")
	require.NoError(t, reg.Fence(context.Background(), "p0"))
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})}, 5*time.Second)
	assert.Len(t, f.rows("a"), 1)
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
			p := o.parts[pkey{"asm", "p0"}]
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

// registries are the partition registries of the integration streams, by
// the name of the starrocks_txn_test_registry processor that captured them.
var registries sync.Map

func init() {
	spec := service.NewConfigSpec().Field(service.NewStringField("name"))
	service.MustRegisterBatchProcessor("starrocks_txn_test_registry", spec,
		func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchProcessor, error) {
			name, err := conf.FieldString("name")
			if err != nil {
				return nil, err
			}
			registries.Store(name, registry.Get(mgr))
			return passThrough{}, nil
		})
}

type passThrough struct{}

func (passThrough) ProcessBatch(_ context.Context, b service.MessageBatch) ([]service.MessageBatch, error) {
	return []service.MessageBatch{b}, nil
}

func (passThrough) Close(context.Context) error { return nil }

// Through a real stream and the emulator: the tail of a source transaction
// of a fenced assignment is acknowledged without being applied and counted
// in starrocks_txn_stale_epoch_messages; the next assignment commits.
func TestIntegrationStaleEpochIsReleasedUnapplied(t *testing.T) {
	e := startEmulator(t)
	sb := service.NewStreamBuilder()
	require.NoError(t, sb.SetLoggerYAML("level: none"))
	require.NoError(t, sb.SetMetricsYAML("starrocks_txn_test_metrics: {}"))
	captured.reset()
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	name := t.Name()
	// A fresh capture per run: -count=N runs the same name again.
	registries.Delete(name)
	t.Cleanup(func() { registries.Delete(name) })
	require.NoError(t, sb.AddProcessorYAML("starrocks_txn_test_registry: { name: "+name+" }"))
	require.NoError(t, sb.AddOutputYAML(`
starrocks_txn:
  load_urls: [ `+e.FEURL()+` ]
  commit_interval: 200ms
  max_in_flight: 16
`))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()
	t.Cleanup(func() { _ = stream.StopWithin(time.Second) })
	var reg *registry.Registry
	require.Eventually(t, func() bool {
		v, ok := registries.Load(name)
		if ok {
			reg = v.(*registry.Registry)
		}
		return ok
	}, 5*time.Second, 5*time.Millisecond, "the stream built its processors")

	order := func(s *src, txn string, id int, end bool) *service.Message {
		return s.row("p0", txn, "orders", map[string]any{"order_id": id, "customer_id": 1, "total_amount": 1}, end)
	}
	s := newSrc("asm")
	e1 := reg.Assign("p0")
	head := withEpoch(e1, order(s, "T", 1, false))
	tail := withEpoch(e1, order(s, "T", 2, true))
	headDone := make(chan error, 1)
	go func() { headDone <- produce(context.Background(), head) }()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, reg.Fence(context.Background(), "p0"))
	select {
	case err := <-headDone:
		require.NoError(t, err, "the fence releases the head with success")
	case <-time.After(2 * time.Second):
		t.Fatal("the fence did not release the head")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.NoError(t, produce(ctx, tail), "the stale tail is acknowledged at once")
	assert.Equal(t, int64(1), captured.counter("starrocks_txn_stale_epoch_messages"))

	// The new assignment re-reads T whole and commits it.
	e2 := reg.Assign("p0")
	s2 := newSrc("asm-2")
	require.NoError(t, produce(ctx, withEpoch(e2, order(s2, "T", 1, false), order(s2, "T", 2, true))))
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Len(t, rows, 2)
	assert.Equal(t, int64(1), captured.counter("starrocks_txn_source_txns_committed"), "only the new assignment's T committed")
}

// Through the emulator: a source transaction to a database that does not
// exist goes to dead_letter (StarRocks refuses the begin with
// "Database[...] does not exist"), and the rest goes on.
func TestIntegrationMissingDatabaseGoesToDeadLetter(t *testing.T) {
	e := startEmulator(t)
	s := newSrc("asm")
	bad := s.row("p0", "nodb-txn", "orders", map[string]any{"order_id": 1, "customer_id": 1, "total_amount": 0}, true)
	bad.MetaSetMut(contract.KeyDatabase, "nodb")
	batches := []service.MessageBatch{
		{bad},
		{s.row("p1", "good", "orders", map[string]any{"order_id": 2, "customer_id": 1, "total_amount": 0}, true)},
	}
	errs := poisonStream(t, e, "dl-nodb", batches, 10*time.Second,
		"  retry_backoff: { initial_interval: 20ms, max_interval: 200ms }\n")
	require.NoError(t, errs[0], "dead-lettered, then acknowledged")
	require.NoError(t, errs[1])
	d, _ := captures.Load("dl-nodb")
	assert.Equal(t, []string{"nodb-txn"}, d.(*fakeDL).txnIDs())
	reason, _ := d.(*fakeDL).batches[0][0].MetaGet(deadLetterReasonKey)
	assert.Contains(t, reason, "nodb")
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Len(t, rows, 1)
}

// A WriteBatch call still parsing its bodies holds its seqs: a later call
// admitted meanwhile does not start a gap that sequence_gap_timeout would
// skip, however long the parse takes (a huge batch on a starved machine).
func TestSlowParseIsNotASequenceGap(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\nsequence_gap_timeout: 200ms\n", f, dl)
	parsing := make(chan struct{})
	var slow atomic.Bool
	slow.Store(true)
	o.parseHook = func() {
		if slow.CompareAndSwap(true, false) {
			close(parsing)
			time.Sleep(700 * time.Millisecond)
		}
	}
	s := newSrc("asm")
	head := service.MessageBatch{s.row("p1", "T", "a", map[string]any{"id": 1, "txn": "T"}, false)}
	tail := service.MessageBatch{s.row("p1", "T", "a", map[string]any{"id": 2, "txn": "T"}, true)}
	chHead := writeAsync(o, head)
	<-parsing
	chTail := writeAsync(o, tail)
	waitAll(t, []chan error{chHead, chTail}, 5*time.Second)
	assert.Empty(t, dl.txnIDs(), "nothing refused")
	assertAtomic(t, f, map[string]int{"T": 2})
}
