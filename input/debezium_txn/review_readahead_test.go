package debezium_txn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// Property: whatever the interleaving, once next() returns nil nothing is
// ready to go (readyAtLeast with a limit of one event or byte): the poll
// loop never waits on transactions that cannot be emitted without reading.
func TestReviewReadAheadReadyImpliesEmittable(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := genStream(rt)
		cfg := testConfig()
		cfg.untransacted = untransactedSingleRow
		// A buffer bound, tiny (events are ~200 bytes): only what the
		// bound leaves read (atBound, mustRead, as updatePausesLocked) is
		// fed; the half slack must never leave the stream stuck.
		cfg.maxBufferedBytes = int64(rapid.SampledFrom([]int{0, 1, 300, 700, 1500, 4000}).Draw(rt, "bound"))
		a := newAssembler(cfg)
		g := newGenFeed(w, a)
		now, fed := g.now, g.fed
		emitted := 0
		tracking := rapid.Bool().Draw(rt, "tracking")
		var unacked []*emission
		lasts := map[*emission][2]any{}
		tiny := readAheadLimit{events: 1, bytes: 1}
		drain := func() {
			for {
				em := a.next(rapid.IntRange(1, 3).Draw(rt, "maxSide"))
				if em == nil {
					break
				}
				if em.txn != nil {
					emitted++
				}
				last := em.msgs[len(em.msgs)-1]
				lasts[em] = [2]any{last.partition, last.sourceOffset}
				a.recycleMsgs(em)
				unacked = append(unacked, em)
			}
		}
		for steps := 0; ; steps++ {
			var read *readSet
			if a.atBound() {
				rs := a.mustRead()
				read = &rs
			}
			choices := g.steps(len(unacked), read)
			if len(choices) == 0 {
				// What the input does when a read batch changed the buffer
				// (nextBatchLocked: updatePausesLocked).
				n, b, h := len(unacked), a.buffered, len(a.ends)
				drain()
				if len(unacked) > n || a.buffered != b || len(a.ends) != h {
					continue
				}
				break
			}
			switch c := rapid.SampledFrom(choices).Draw(rt, "step"); c {
			case "commit":
				i := 0
				if !tracking {
					i = rapid.IntRange(0, len(unacked)-1).Draw(rt, "which")
				}
				em := unacked[i]
				unacked = append(unacked[:i], unacked[i+1:]...)
				if tracking {
					m := lasts[em]
					a.committed(m[0].(string), m[1].(int64))
				} else {
					a.acked(em)
				}
			default:
				g.apply(rt, c)
			}
			// Sometimes the pipeline takes nothing (checkpoint_limit):
			// then only check that readiness is consistent later.
			if rapid.IntRange(0, 3).Draw(rt, "take") == 0 {
				continue
			}
			drain()
			if a.readyAtLeast(tiny) {
				rt.Fatalf("next() gives nothing, yet readyAtLeast says a transaction is ready: the poll loop would wait for nothing (head %q)", a.ends[0].id)
			}
			if steps > 10000 {
				rt.Fatal("no progress")
			}
		}
		want := 0
		for _, id := range w.order {
			if w.events[id] > 0 {
				want++
			}
		}
		if emitted != want || g.metaFed < len(w.metas) {
			var heads []string
			for _, t := range a.ends {
				heads = append(heads, fmt.Sprintf("%s open=%v complete=%v err=%v hold=%q bytes=%d", t.id, t.status == txnOpen, t.complete(), t.err, a.holdReason(t), t.bytes))
			}
			rt.Logf("buffered %d full %v mustRead %+v recs %v ends %v", a.buffered, a.full, a.mustRead(), map[tp]int{orders0: len(w.recs[orders0]), orders1: len(w.recs[orders1]), items0: len(w.recs[items0])}, heads)
			rt.Fatalf("stuck at the bound %d: %d of %d transactions emitted, %d of %d ENDs read, fed %v; problems: %v", cfg.maxBufferedBytes, emitted, want, g.metaFed, len(w.metas), fed, a.problems(now.Add(time.Hour)))
		}
		for _, p := range w.parts {
			if fed[p] < len(w.recs[p]) {
				rt.Fatalf("stuck at the bound %d: %s fed %d of %d", cfg.maxBufferedBytes, p, fed[p], len(w.recs[p]))
			}
		}
	})
}

// The ENDs of transactions with no event here (of collections not
// consumed: most of a connector's traffic when one table of many is
// loaded) pile up at the front while checkpoint_limit holds emission.
// Counted by their bytes alone, 32 MiB of them took 330 000 transactions
// to fill the read-ahead, walked under the input's lock at every recheck
// (every 10 ms) in ~4.5 ms: half the time the lock was held by the walk.
// Each counts as one record read ahead: the walk stops at 20 000.
func TestReviewReadAheadCountsTransactionsWithoutEvents(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0)
	f.a.markEmpty(orders0)
	for i := 0; i < readAheadEvents; i++ {
		f.meta(dbzEnd("e"+itoa(int64(i)), "test.audit", 1))
	}
	require.Less(t, f.a.buffered, int64(readAheadBytes))
	assert.True(t, f.a.readyAtLeast(defaultReadAhead), "%d ready transactions hold the read-ahead", readAheadEvents)
	for i := 0; i < readAheadEvents; i++ {
		f.meta(dbzEnd("f"+itoa(int64(i)), "test.audit", 1))
	}
	start := time.Now()
	const calls = 20
	for i := 0; i < calls; i++ {
		require.True(t, f.a.readyAtLeast(defaultReadAhead))
	}
	t.Logf("%d ENDs buffered (%d bytes); one readyAtLeast walk: %s", len(f.a.ends), f.a.buffered, time.Since(start)/calls)
}

// End to end with a tiny read-ahead, a checkpoint_limit below a large
// transaction, a batching policy with a period, a snapshot, large
// transactions spanning every topic and re-sends, acknowledgements held
// back: the stream converges (the poll loop never waits for good).
func TestReviewReadAheadEndToEndConverges(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, SnapshotOrders: 20, LargeEvery: 7, LargeSize: 5, ResendRatio: 0.05, Seed: 7})
	w.produce(120)
	in, _ := w.newInput("g-review-ra", "fetch_max_partition_bytes: 4KiB\ncheckpoint_limit: 6\nbatching:\n  count: 4\n  period: 30ms\n")
	in.mu.Lock()
	in.readAhead = readAheadLimit{events: 2, bytes: 1 << 30}
	in.mu.Unlock()
	s := newSink(t)
	done := w.converged(s)
	var held []service.AckFunc
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; !done(); i++ {
		require.True(t, time.Now().Before(deadline), "timed out reading")
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		batch, ack, err := in.ReadBatch(ctx)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
		} else {
			s.take(batch)
			held = append(held, ack)
		}
		// Acknowledge late: only every third read, or when nothing came.
		if err != nil || i%3 == 0 {
			for _, a := range held {
				require.NoError(t, a(context.Background(), nil))
			}
			held = nil
		}
	}
}
