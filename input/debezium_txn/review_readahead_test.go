package debezium_txn

import (
	"context"
	"sort"
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
		a := newAssembler(cfg)
		for _, p := range w.parts {
			a.assign(p)
			if len(w.recs[p]) == 0 {
				a.markEmpty(p)
			}
		}
		a.txnStart(0)
		now := time.Unix(0, 0)
		fed := map[tp]int{}
		metaFed := 0
		tracking := rapid.Bool().Draw(rt, "tracking")
		var unacked []*emission
		lasts := map[*emission][2]any{}
		tiny := readAheadLimit{events: 1, bytes: 1}
		var pendingList *struct {
			after int64
			last  bool
		}
		for steps := 0; ; steps++ {
			var choices []string
			for _, p := range w.parts {
				if fed[p] < len(w.recs[p]) {
					choices = append(choices, p.String())
				}
			}
			if metaFed < len(w.metas) {
				choices = append(choices, "meta")
			}
			if len(unacked) > 0 {
				choices = append(choices, "commit")
			}
			if listAfter, listLast, ok := a.wantEnds(); ok {
				pendingList = &struct {
					after int64
					last  bool
				}{listAfter, listLast}
			}
			if pendingList != nil {
				choices = append(choices, "ends")
			}
			if len(choices) == 0 {
				break
			}
			sort.Strings(choices)
			switch c := rapid.SampledFrom(choices).Draw(rt, "step"); c {
			case "meta":
				if err := a.addTxnMeta(int64(metaFed), w.metas[metaFed], now); err != nil {
					rt.Fatal(err)
				}
				metaFed++
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
			case "ends":
				ends := map[tp]int64{}
				for _, p := range w.parts {
					ends[p] = int64(len(w.recs[p]))
				}
				a.endsListed(pendingList.after, pendingList.last, ends)
				pendingList = nil
			default:
				for _, p := range w.parts {
					if p.String() == c {
						off := fed[p]
						if err := a.addData(recMeta{tp: p, offset: int64(off)}, w.recs[p][off].value, now); err != nil {
							rt.Fatal(err)
						}
						fed[p]++
					}
				}
			}
			// Sometimes the pipeline takes nothing (checkpoint_limit):
			// then only check that readiness is consistent later.
			if rapid.IntRange(0, 3).Draw(rt, "take") == 0 {
				continue
			}
			for {
				em := a.next(rapid.IntRange(1, 3).Draw(rt, "maxSide"))
				if em == nil {
					break
				}
				last := em.msgs[len(em.msgs)-1]
				lasts[em] = [2]any{last.partition, last.sourceOffset}
				a.recycleMsgs(em)
				unacked = append(unacked, em)
			}
			if a.readyAtLeast(tiny) {
				rt.Fatalf("next() gives nothing, yet readyAtLeast says a transaction is ready: the poll loop would wait for nothing (head %q)", a.ends[0].id)
			}
			if steps > 10000 {
				rt.Fatal("no progress")
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
	w.produce(300)
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
