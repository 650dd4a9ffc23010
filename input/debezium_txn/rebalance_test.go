package debezium_txn

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// Two members in one group: the input's protocol gives every partition to
// one of them, the other stands by; when the first leaves, the second takes
// everything over from the committed floors, and between them nothing is
// lost.
func TestStandbyTakesOver(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 3, SnapshotOrders: 5, Seed: 4})
	w.produce(60)
	a, _ := w.newInput("g-standby", "")
	s := newSink(t)
	// a reads some of it.
	readUntil(t, a, s, 30*time.Second, func() bool { return s.rows > 50 })
	b, _ := w.newInput("g-standby", "")
	// b joins: a keeps everything (eager rebalance: a re-reads from its
	// floors), b gets nothing. franz-go hands b its assignment, empty,
	// once the rebalance's sync answered; the assignment leases b's
	// membership from that sync.
	testkit.WaitFor(t, 15*time.Second, func() bool { return !b.Lease().Until().IsZero() }, "b's assignment")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	batch, _, err := b.ReadBatch(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "the standby emits nothing (got %d messages)", len(batch))
	b.mu.Lock()
	standby := b.asm == nil
	b.mu.Unlock()
	assert.True(t, standby, "the standby holds no partitions: the owner keeps them")
	w.produce(40)
	readUntil(t, a, s, 30*time.Second, func() bool { return s.rows > 150 })
	require.NoError(t, a.Close(context.Background()))
	// b takes over and delivers the rest.
	w.produce(30)
	s2 := newSink(t)
	s2.model = s.model // one target: what both loaded
	s2.seq = map[string]int64{}
	readUntil(t, b, s2, 30*time.Second, w.converged(s2))
}

// A restart re-reads from the floors: every transaction that was not
// acknowledged before the stop arrives again, and the tables converge.
func TestRestartReReadsFromTheFloors(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 3, SnapshotOrders: 10, LargeEvery: 5, LargeSize: 5, ResendRatio: 0.2, Seed: 8})
	w.produce(80)
	a, _ := w.newInput("g-restart", "")
	s := newSink(t)
	acked := map[string]bool{}
	var held []service.AckFunc
	deadline := time.Now().Add(30 * time.Second)
	for len(acked) < 40 {
		require.True(t, time.Now().Before(deadline))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		batch, ack, err := a.ReadBatch(ctx)
		cancel()
		if err != nil {
			continue
		}
		s.take(batch)
		p, _ := batch[0].MetaGet(contract.KeyPartition)
		if len(held) < 3 && p == w.src.TransactionTopic() {
			// These batches of transactions are never acknowledged: their
			// transactions must come again.
			held = append(held, ack)
			continue
		}
		for _, m := range batch {
			if id, _ := m.MetaGet(contract.KeyTxnID); id != "" {
				acked[id] = true
			}
		}
		require.NoError(t, ack(context.Background(), nil))
	}
	awaitCommitPass(t, a)
	require.NoError(t, a.Close(context.Background()))

	b, _ := w.newInput("g-restart", "")
	s2 := newSink(t)
	s2.model = s.model
	readUntil(t, b, s2, 30*time.Second, w.converged(s2))
	for id := range s.txns {
		if !acked[id] {
			assert.Contains(t, s2.txns, id, "transaction %s was not acknowledged before the stop, so it comes again", id)
		}
	}
}

// The registry's committed-through offsets decide the floors when an output
// tracks (starrocks_txn): acknowledgements alone commit nothing, and no
// transaction is emitted before the snapshot rows are committed; the fence
// of a revoke covers the database partition and every side partition
// written.
func TestTrackingOutputDecidesTheFloors(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, SnapshotOrders: 3, Seed: 9})
	w.produce(10)
	res := service.MockResources()
	reg := registry.Get(res)
	reg.EnableTracking()
	var fenced sync.Map
	reg.AddFencer(func(_ context.Context, p string) error { fenced.Store(p, true); return nil })
	conf, err := ConfigSpec().ParseYAML(w.yaml("g-track", ""), nil)
	require.NoError(t, err)
	in, err := New(conf, res)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, in.Connect(ctx))
	s := newSink(t)
	// Phase 1: acknowledged, never published: only snapshot rows come,
	// and no floor moves past them.
	// The first rows come once the group is joined (seconds on a loaded
	// machine); then a second more gives a transaction the chance to come
	// too, which it must not.
	readUntilFn(t, in, 30*time.Second, s.take, func() bool { return s.rows > 0 })
	readFor(t, in, time.Second, s.take)
	require.Positive(t, s.rows)
	for p := range s.offsets {
		require.NotEqual(t, w.src.TransactionTopic(), p, "no transaction before the snapshot rows are committed")
	}
	awaitCommitPass(t, in)
	for p, off := range w.committedOffsets("g-track") {
		limit := int64(0)
		if p.topic == w.src.TransactionTopic() {
			limit = 1 // the first END: its BEGIN at 0 holds nothing
		}
		require.LessOrEqual(t, off, limit, "the floor of %s moved on acknowledgements alone", p)
	}
	// Phase 2: the output publishes what it committed as it goes.
	publish := func() {
		for p, off := range s.offsets {
			reg.PublishCommitted(p, off)
		}
	}
	publish()
	readUntilFn(t, in, 30*time.Second, func(b service.MessageBatch) { s.take(b); publish() }, w.converged(s))
	ends := w.endOffsets()
	require.Eventually(t, func() bool {
		got := w.committedOffsets("g-track")
		for p, e := range ends {
			if got[p] != e {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, in.Close(context.Background()))
	_, ok := fenced.Load(w.src.TransactionTopic())
	assert.True(t, ok, "the database partition was fenced")
	n := 0
	fenced.Range(func(k, _ any) bool { n++; return true })
	assert.Greater(t, n, 1, "side partitions of the snapshot rows were fenced too")
}

// readFor reads and acknowledges batches for d.
func readFor(t *testing.T, in *Input, d time.Duration, fn func(service.MessageBatch)) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		batch, ack, err := in.ReadBatch(ctx)
		cancel()
		if err != nil {
			continue
		}
		fn(batch)
		require.NoError(t, ack(context.Background(), nil))
	}
}

// exactly_once: after a restart, transactions at or below the output's
// progress are skipped (their events acknowledged, the floors moving), and
// side rows at or below their partition's progress too.
func TestExactlyOnceSkipsWhatStarRocksHolds(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, SnapshotOrders: 4, Seed: 12})
	w.produce(30)
	first, _ := w.newInput("g-eo", "")
	s := newSink(t)
	readUntil(t, first, s, 30*time.Second, w.converged(s))
	// StarRocks holds everything but the last 5 transactions.
	var ids []string
	for id := range s.txns {
		ids = append(ids, id)
	}
	progress := map[string]int64{}
	for p, off := range s.offsets {
		progress[p] = off
	}
	require.NoError(t, first.Close(context.Background()))

	res := service.MockResources()
	reg := registry.Get(res)
	var reads atomic.Int64
	// The database partition's progress is the source offset of the 25th
	// transaction's last row: find it by replaying the stream in a fresh
	// group first.
	probe, _ := w.newInput("g-eo-probe", "")
	ps := newSink(t)
	var order []int64
	readUntilFn(t, probe, 30*time.Second, func(b service.MessageBatch) {
		ps.take(b)
		for _, m := range b {
			meta, _ := contract.Read(m)
			if meta.Partition == w.src.TransactionTopic() && meta.TxnEnd {
				order = append(order, meta.SourceOffset)
			}
		}
	}, func() bool { return len(order) >= 30 })
	require.NoError(t, probe.Close(context.Background()))
	cut := order[24]
	reg.SetProgress(func(_ context.Context, p string) (int64, bool, error) {
		reads.Add(1)
		if p == w.src.TransactionTopic() {
			return cut, true, nil
		}
		if off, ok := progress[p]; ok {
			return off, true, nil
		}
		return 0, false, nil
	})
	conf, err := ConfigSpec().ParseYAML(w.yaml("g-eo-2", ""), nil)
	require.NoError(t, err)
	in, err := New(conf, res)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, in.Connect(ctx))
	defer in.Close(context.Background())
	var got []int64
	sideRows := 0
	readUntilFn(t, in, 30*time.Second, func(b service.MessageBatch) {
		for _, m := range b {
			meta, _ := contract.Read(m)
			if meta.Partition != w.src.TransactionTopic() {
				sideRows++
				continue
			}
			require.Greater(t, meta.SourceOffset, cut, "nothing at or below the progress is emitted")
			if meta.TxnEnd {
				got = append(got, meta.SourceOffset)
			}
		}
	}, func() bool { return len(got) >= 5 })
	assert.Equal(t, order[25:], got)
	assert.Zero(t, sideRows, "the snapshot rows at or below their progress are skipped")
	assert.Positive(t, reads.Load())
	ends := w.endOffsets()
	require.Eventually(t, func() bool {
		got := w.committedOffsets("g-eo-2")
		for p, e := range ends {
			if got[p] != e {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "skipped transactions hold no floor")
}

// readUntilFn reads and acknowledges batches, handing each to fn.
func readUntilFn(t *testing.T, in *Input, within time.Duration, fn func(service.MessageBatch), done func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !done() {
		require.True(t, time.Now().Before(deadline), "timed out reading")
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		batch, ack, err := in.ReadBatch(ctx)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			continue
		}
		fn(batch)
		require.NoError(t, ack(context.Background(), nil))
	}
}

// A nack stops emission with an error naming the transaction, and nothing
// past it is committed.
func TestNackStopsEmission(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, Seed: 13})
	w.produce(20)
	in, logs := w.newInput("g-nack", "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	batch, ack, err := in.ReadBatch(ctx)
	require.NoError(t, err)
	id, _ := batch[0].MetaGet(contract.KeyTxnID)
	require.NoError(t, ack(ctx, errors.New("table missing")))
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	_, _, err = in.ReadBatch(short)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, logs.String(), id)
	assert.Contains(t, logs.String(), "table missing")
	awaitCommitPass(t, in)
	got := w.committedOffsets("g-nack")
	// The first transaction's BEGIN is at 0 and its END at 1: the floor
	// stays at its END, so a restart reads it again.
	assert.LessOrEqual(t, got[tp{w.src.TransactionTopic(), 0}], int64(1), "nothing past the nacked transaction is committed")
}
