package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// The Debezium pipeline end to end: workload Debezium traffic (per-table
// topics keyed by primary key, the transaction topic, a snapshot, large
// transactions over every topic, an unconsumed collection, re-sent copies,
// tombstones) → kfake → debezium_txn → starrocks_txn → emulator, with the
// same concurrent torn-read reader and model comparison as the envelope
// pipeline. Partitions arrive unevenly: each data partition's records are
// delayed by its own lag (up to 600 ms), so ENDs come before their events and
// some partitions are read long after others.

// dbzWorld is one Debezium test's source.
type dbzWorld struct {
	r    *rig
	src  *workload.DebeziumSource
	prod *workload.DebeziumProducer
	// model wraps the producer's model for the harness's helpers.
	model *source
}

func newDbzWorld(t *testing.T, r *rig, seed uint64, schemas bool) *dbzWorld {
	t.Helper()
	src := workload.NewDebeziumSource(workload.DebeziumOptions{
		Partitions: 3, Schemas: schemas, SnapshotOrders: 40, LargeEvery: 25, LargeSize: 12,
		ResendRatio: 0.05, Seed: seed,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, workload.CreateDebeziumTopics(ctx, r.brokers, src))
	w := &dbzWorld{r: r, src: src, model: &source{model: workload.NewModel(), abortedOrders: map[orderVersion]bool{}, abortedEvents: map[int64]bool{}}}
	rng := rand.New(rand.NewPCG(seed, 17))
	lags := map[string]time.Duration{}
	for topic := range src.AllTopics() {
		for p := int32(0); p < src.Partitions(); p++ {
			if topic != src.TransactionTopic() {
				lags[fmt.Sprintf("%s/%d", topic, p)] = time.Duration(rng.IntN(600)) * time.Millisecond
			}
		}
	}
	var err error
	w.prod, err = workload.NewDebeziumProducer(workload.DebeziumProducerOptions{
		Brokers: r.brokers,
		Lag:     func(topic string, p int32) time.Duration { return lags[fmt.Sprintf("%s/%d", topic, p)] },
	}, src, w.model.model)
	require.NoError(t, err)
	t.Cleanup(w.prod.Close)
	return w
}

// snapshot writes the initial snapshot and waits until it is loaded: rows of
// a snapshot are one-row transactions, so a reader could see an order
// without its items while it loads, and the torn-read reader starts after.
func (w *dbzWorld) snapshot(t *testing.T) {
	t.Helper()
	w.snapshotWithin(t, 30*time.Second)
}

// snapshotWithin is snapshot, the load waited for within the given time.
func (w *dbzWorld) snapshotWithin(t *testing.T, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, w.prod.Snapshot(ctx))
	w.r.waitConverged(t, w.model, false, within)
}

// lagging says which partitions of the connector's topics the group's
// committed offsets do not cover up to their end ("" when none).
func (w *dbzWorld) lagging(ctx context.Context, group string) (string, error) {
	// Every record is written by now (the producer's lag flushed):
	// the floors of every consumed partition reach its end.
	if n := w.prod.Lagging(); n > 0 {
		return fmt.Sprintf("%d records still held by the producer's lag", n), nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.r.brokers...))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	topics := append(w.src.DataTopics(), w.src.TransactionTopic())
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return "", err
	}
	want := map[string]map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if want[o.Topic] == nil {
			want[o.Topic] = map[int32]int64{}
		}
		want[o.Topic][o.Partition] = o.Offset
	})
	return groupLag(ctx, w.r.brokers, group, want)
}

// waitCaughtUp waits until the group's committed offsets reach the end of
// every partition of the connector's topics.
func (w *dbzWorld) waitCaughtUp(t *testing.T, group string, within time.Duration) {
	t.Helper()
	var lag string
	if !testkit.Poll(within, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if lag, err = w.lagging(ctx, group); err != nil {
			lag = err.Error()
			return false
		}
		return lag == ""
	}) {
		require.Failf(t, "the group's committed offsets never reached the end of the partitions", "group %s after %v: %s", group, within, lag)
	}
}

// produce writes source transactions at about rate per second until ctx
// ends or n are written.
func (w *dbzWorld) produce(ctx context.Context, n int, rate float64) (wait func() error) {
	done := make(chan error, 1)
	go func() {
		interval := time.Duration(float64(time.Second) / rate)
		next := time.Now()
		for n <= 0 || int(w.prod.Stats.Txns.Load()) < n {
			next = next.Add(interval)
			select {
			case <-ctx.Done():
				done <- nil
				return
			case <-time.After(time.Until(next)):
			}
			if err := w.prod.Produce(context.WithoutCancel(ctx), int(w.prod.Stats.Txns.Load())+1); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return func() error { return <-done }
}

// dbzPipeOpts shape a Debezium pipeline.
type dbzPipeOpts struct {
	group       string
	exactlyOnce bool
	// writerRows sets pipeline_id and mysql_address with at_least_once.
	writerRows   bool
	commitPeriod time.Duration
	// processors are put before the probe (YAML list items indented for
	// input.processors).
	processors string
}

func (w *dbzWorld) yaml(o dbzPipeOpts) string {
	if o.commitPeriod == 0 {
		o.commitPeriod = 100 * time.Millisecond
	}
	// Every pipeline checks its rows' schemas (schema_evolution's
	// default, evolve, reads the columns over mysql_address).
	eo := fmt.Sprintf("    mysql_address: %s\n", w.r.em.MySQLAddr())
	if o.exactlyOnce {
		eo += "    semantic: exactly_once\n    pipeline_id: integration-dbz\n"
	} else if o.writerRows {
		eo += "    pipeline_id: integration-dbz\n"
	}
	return fmt.Sprintf(`
input:
  debezium_txn:
    seed_brokers: [ %q ]
    topics: [ %s ]
    transaction_topic: %s
    consumer_group: %s
    checkpoint_limit: 20000
    commit_period: %s
    revoke_timeout: 3s
    session_timeout: 1500ms
    rebalance_timeout: 8s
    heartbeat_interval: 300ms
    fetch_max_wait: 50ms
    missing_events_timeout: 5s
    batching:
      count: 40
      period: 20ms
  processors:
%s    - integration_probe: {}
output:
  starrocks_txn:
    load_urls: [ %q ]
    commit_interval: 200ms
    txn_timeout: 10s
    max_in_flight: 512
    request_timeout: 3s
    label_state_wait: 500ms
    sequence_gap_timeout: 2s
    retry_backoff: { initial_interval: 20ms, max_interval: 300ms }
%s
shutdown_timeout: 5s
`, strings.Join(w.r.brokers, ","), strings.Join(w.src.DataTopics(), ", "), w.src.TransactionTopic(), o.group, o.commitPeriod, o.processors, w.r.em.FEURL(), eo)
}

func (w *dbzWorld) start(t *testing.T, name string, o dbzPipeOpts) *pipeline {
	t.Helper()
	p, err := launch(name, w.yaml(o))
	require.NoError(t, err)
	p.cleanupOnEnd(t)
	return p
}

// Nothing going wrong, with and without the JsonConverter's schemas: the
// tables equal the source, every order_events row exactly once, no reader
// ever sees half a source transaction nor an order going back, large
// transactions arrive whole, and many source transactions share one
// StarRocks transaction.
func TestDebeziumPipelineLoadsWholeTransactions(t *testing.T) {
	t.Parallel()
	for _, schemas := range []bool{false, true} {
		t.Run(map[bool]string{false: "schemaless", true: "schemas"}[schemas], func(t *testing.T) {
			t.Parallel()
			seed := testSeed(t)
			r := newRig(t, 1)
			w := newDbzWorld(t, r, seed, schemas)
			p := w.start(t, "main", dbzPipeOpts{group: "g-dbz"})
			w.snapshot(t)
			rd := startReader(r.db, true)
			defer rd.stop()
			started := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			n := scale(300, 3000)
			require.NoError(t, w.produce(ctx, n, scale(150.0, 400.0))())
			dups := r.waitConverged(t, w.model, false, 40*time.Second)
			require.Zero(t, dups)
			p.stop(t, 10*time.Second)
			elapsed := time.Since(started)
			rd.stop()
			checkReader(t, rd, w.model)

			st := &w.prod.Stats
			assert.Equal(t, int64(n), p.metrics.Counter("debezium_txn_transactions"), "every source transaction emitted once")
			assert.Equal(t, st.SnapshotRows.Load(), p.metrics.Counter("debezium_txn_snapshot_rows"))
			assert.Positive(t, p.metrics.Counter("debezium_txn_duplicates"), "re-sent events were dropped")
			assert.Positive(t, p.metrics.Counter("debezium_txn_resent_transactions"), "re-sent transactions were skipped")
			assert.Positive(t, p.metrics.Counter("debezium_txn_tombstones"))
			assert.GreaterOrEqual(t, p.metrics.Counter("starrocks_txn_source_txns_committed"), int64(n))
			c := r.em.Counters()
			assert.Less(t, c.Committed*2, int64(n), "many source transactions share one StarRocks transaction")
			t.Logf("%d source transactions (%d events, largest %d, %d snapshot rows, %d records with %d re-sent) over %d data partitions + the transaction topic in %v: %d StarRocks commits, %d loads; %d reader rounds",
				n, st.Events.Load(), st.Largest.Load(), st.SnapshotRows.Load(), st.Records.Load(), st.Resent.Load(),
				3*int(w.src.Partitions()), elapsed.Round(time.Millisecond), c.Committed, c.Loads, rd.rounds.Load())
		})
	}
}

// The stream is killed hard at random moments and a new one started, several
// times, while traffic flows unevenly. At-least-once: orders and items equal
// the source (replays absorbed by the PRIMARY KEY), every event at least
// once, never a torn read. Exactly-once: also every event exactly once and
// no order ever going back.
func TestDebeziumPipelineSurvivesKills(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name        string
		exactlyOnce bool
	}{{"at_least_once", false}, {"exactly_once", true}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			seed := testSeed(t)
			r := newRig(t, 1)
			w := newDbzWorld(t, r, seed, seed%2 == 0)
			opts := dbzPipeOpts{group: "g-dbz-kill", exactlyOnce: mode.exactlyOnce, commitPeriod: time.Second}
			first := w.start(t, "snapshot", opts)
			w.snapshot(t)
			w.waitCaughtUp(t, opts.group, 30*time.Second) // the snapshot's offsets reach Kafka
			rd := startReader(r.db, mode.exactlyOnce)
			defer rd.stop()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wait := w.produce(ctx, 0, 120)
			rng := rand.New(rand.NewPCG(seed, 5))
			p := first
			var killedTxns int64
			restarts := scale(4, 12)
			for i := 0; i < restarts; i++ {
				require.Eventually(t, func() bool { return p.metrics.Counter("starrocks_txn_source_txns_committed") > 0 },
					30*time.Second, 10*time.Millisecond, "run %d committed", i)
				// The crash comes at a random moment (real time).
				randomMoment(rng, 300*time.Millisecond, 1800*time.Millisecond)
				r.crash(p)
				killedTxns += p.metrics.Counter("debezium_txn_transactions")
				p = w.start(t, fmt.Sprintf("run-%d", i), opts)
			}
			// The last run loads while traffic still flows.
			testkit.WaitFor(t, 30*time.Second, func() bool { return p.metrics.Counter("starrocks_txn_source_txns_committed") > 0 }, "the last run commits")
			cancel()
			require.NoError(t, wait())
			dups := r.waitConverged(t, w.model, !mode.exactlyOnce, 60*time.Second)
			p.stop(t, 10*time.Second)
			rd.stop()
			checkReader(t, rd, w.model)
			if mode.exactlyOnce {
				assert.Zero(t, dups, "exactly-once: no event twice")
			}
			t.Logf("%d kills; %d source transactions (%d events, largest %d); the killed pipelines emitted %d, the last %d (%d skipped at the progress); %d duplicated events; %d reader rounds",
				restarts, w.prod.Stats.Txns.Load(), w.prod.Stats.Events.Load(), w.prod.Stats.Largest.Load(), killedTxns,
				p.metrics.Counter("debezium_txn_transactions"), p.metrics.Counter("debezium_txn_progress_skipped"), dups, rd.rounds.Load())
		})
	}
}

// The checks can fail: a mapping behind the input that makes every row its
// own transaction (what a per-row CDC loader does), with the rows of one
// batch spread over single-message batches so that commit cycles cut
// between them, must be caught by the torn-read reader.
func TestDebeziumHarnessCatchesSplitTransactions(t *testing.T) {
	t.Parallel()
	seed := testSeed(t)
	r := newRig(t, 1)
	w := newDbzWorld(t, r, seed, false)
	p := w.start(t, "split", dbzPipeOpts{group: "g-dbz-split", processors: `    - mapping: |
        meta starrocks_txn_id = @starrocks_source_offset
        meta starrocks_txn_end = "true"
        root = this
    - split: { size: 1 }
    - sleep: { duration: 15ms }
`})
	w.snapshot(t)
	rd := startReader(r.db, true)
	ctx, cancel := context.WithCancel(context.Background())
	wait := w.produce(ctx, 0, 150)
	// The rows of one source transaction reach the output 15 ms apart, so
	// most 200 ms commit cycles cut one: the reader sees the cut for the
	// next cycle. The deadline is for a loaded machine.
	testkit.Poll(45*time.Second, func() bool { return rd.torn.Load() > 0 })
	cancel()
	require.NoError(t, wait())
	p.stop(t, 10*time.Second)
	rd.stop()
	assert.Positive(t, rd.torn.Load(), "the reader saw orders without all their items")
}

// Two pipelines of one connector in one group: the first owns every
// partition, the second stands by. The first crashes (no offset commit, no
// leave); when its session expires the standby takes everything over from
// the committed floors and, with exactly_once, skips what StarRocks already
// holds: nothing lost, nothing twice, no order going back, never torn.
func TestDebeziumStandbyTakesOverAfterACrash(t *testing.T) {
	t.Parallel()
	seed := testSeed(t)
	r := newRig(t, 1)
	w := newDbzWorld(t, r, seed, true)
	opts := dbzPipeOpts{group: "g-dbz-standby", exactlyOnce: true, commitPeriod: time.Second}
	a := w.start(t, "owner", opts)
	w.snapshot(t)
	b := w.start(t, "standby", opts)
	rd := startReader(r.db, true)
	defer rd.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := w.produce(ctx, 0, 120)
	require.Eventually(t, func() bool { return a.metrics.Counter("debezium_txn_transactions") > 50 }, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, int64(1), b.metrics.Gauge("debezium_txn_standby"), "the second pipeline stands by")
	assert.Zero(t, b.metrics.Counter("debezium_txn_transactions"))
	r.crash(a)
	require.Eventually(t, func() bool { return b.metrics.Counter("debezium_txn_transactions") > 0 }, 30*time.Second, 10*time.Millisecond,
		"the standby takes over")
	// The standby loads while traffic still flows.
	testkit.WaitFor(t, 30*time.Second, func() bool { return b.metrics.Counter("starrocks_txn_source_txns_committed") > 0 }, "the standby commits")
	cancel()
	require.NoError(t, wait())
	dups := r.waitConverged(t, w.model, false, 60*time.Second)
	b.stop(t, 10*time.Second)
	rd.stop()
	checkReader(t, rd, w.model)
	assert.Zero(t, dups, "exactly-once: no event twice across the take-over")
	t.Logf("owner emitted %d transactions, the standby %d (%d skipped at the progress); %d reader rounds",
		a.metrics.Counter("debezium_txn_transactions"), b.metrics.Counter("debezium_txn_transactions"),
		b.metrics.Counter("debezium_txn_progress_skipped"), rd.rounds.Load())
}
