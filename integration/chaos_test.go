package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// TestChaos is a randomized run of the whole product: while CDC traffic
// flows, the emulator serves faults on every request the output makes (every
// outcome: refused, reset, reply lost, reply after or within the client's
// timeout, no answer, slow, redirected; on the HTTP API and the MySQL port),
// restarts its FE and evicts finished labels; the pipeline is crashed, killed
// and restarted; a second member joins the consumer group and leaves it
// again. It runs the envelope pipeline (kafka_txn → txn_assembler →
// starrocks_txn) and the Debezium one (debezium_txn → starrocks_txn), each
// with at_least_once (writer rows on) and exactly_once.
//
// Throughout, a concurrent reader must never see half a source transaction
// (a split). After the faults stop, within a deadline: the tables equal the
// model of what the source committed, events exactly once with exactly_once
// and at least once otherwise, no row of an aborted source transaction, and
// the consumer group's offsets reach the end of every partition (no stall).
// No goroutine may outlive the streams and the emulators, and the heap after
// GC is sampled over the run (asserted flat in the long form).
//
// STARROCKS_TXN_CHAOS selects the form: unset or "short" (about a minute),
// "long" (STARROCKS_TXN_CHAOS_DURATION of chaos, default 20m), "off".
// STARROCKS_TXN_SEED replays a logged seed: the same traffic and the same
// random schedule of faults and lifecycle events (their timing still varies).
func TestChaos(t *testing.T) {
	plan := chaosPlanOf(t)
	leakBaseline := goleak.IgnoreCurrent()
	totals := newChaosTotals()
	heap := startHeapSampler(plan.heapEvery, plan.long || os.Getenv("STARROCKS_TXN_CHAOS_HEAP_PROFILE") != "", totals)
	t.Run("runs", func(t *testing.T) {
		// All at once, whatever -parallel says: the runs mostly wait.
		var wg sync.WaitGroup
		for _, c := range chaosCases() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.Run(c.name, func(t *testing.T) { runChaos(t, plan, c, totals) })
			}()
		}
		wg.Wait()
	})
	samples := heap.stop()
	trend := heapTrend(samples)
	t.Logf("chaos totals (%s form, %v of chaos per run):\n%s\n%s", plan.form, plan.duration, totals.summary(), trend.String())
	if plan.long && !t.Failed() {
		assert.LessOrEqual(t, trend.pipelineSlopePerTxn, plan.maxHeapPerTxn,
			"the pipelines' heap grows %.0f bytes per source transaction over the run, above the bound %.0f: something the plugins keep grows with the traffic",
			trend.pipelineSlopePerTxn, plan.maxHeapPerTxn)
	}
	// Nothing may outlive the streams, the emulators and the Kafka
	// clusters: they are all closed by now.
	goleak.VerifyNone(t, append(chaosLeakIgnores(), leakBaseline)...)
}

// chaosPlan is the shape of the run.
type chaosPlan struct {
	form     string
	long     bool
	duration time.Duration
	// rate and dbzRate are source transactions per second.
	rate, dbzRate float64
	// settle bounds the time from the end of the faults until the tables
	// equal the model and the offsets reached the end.
	settle time.Duration
	// stallAfter fails the run when no pipeline commits anything for that
	// long while traffic flows.
	stallAfter        time.Duration
	faultGap, lifeGap [2]time.Duration
	// faultWait bounds an entry's wait for its request (it expires
	// sooner, after expireAfter requests that missed it).
	faultWait time.Duration
	heapEvery time.Duration
	// maxHeapPerTxn bounds the growth of the pipelines' heap (heapSample)
	// per committed source transaction in the long form: retaining one
	// message per source transaction would be several times more.
	maxHeapPerTxn float64
}

func chaosPlanOf(t *testing.T) chaosPlan {
	p := chaosPlan{
		form: "short", duration: 30 * time.Second, rate: 60, dbzRate: 30, settle: 90 * time.Second,
		stallAfter: 45 * time.Second,
		faultGap:   [2]time.Duration{20 * time.Millisecond, 200 * time.Millisecond},
		lifeGap:    [2]time.Duration{2 * time.Second, 5 * time.Second},
		faultWait:  6 * time.Second, heapEvery: 2 * time.Second,
		maxHeapPerTxn: 1024,
	}
	switch m := os.Getenv("STARROCKS_TXN_CHAOS"); m {
	case "", "short":
		if testing.Short() {
			t.Skip("the chaos run takes about a minute; -short skips it")
		}
	case "long":
		p.form, p.long = "long", true
		p.duration, p.stallAfter, p.heapEvery = 20*time.Minute, 90*time.Second, 10*time.Second
		if d := os.Getenv("STARROCKS_TXN_CHAOS_DURATION"); d != "" {
			var err error
			p.duration, err = time.ParseDuration(d)
			require.NoError(t, err, "STARROCKS_TXN_CHAOS_DURATION must be a duration (20m, 2h)")
		}
	case "off":
		t.Skip("STARROCKS_TXN_CHAOS=off")
	default:
		t.Fatalf("STARROCKS_TXN_CHAOS=%q: use short, long or off", m)
	}
	return p
}

// catalogue is the faults of the run: every one, or those whose kind
// matches STARROCKS_TXN_CHAOS_FAULTS and not STARROCKS_TXN_CHAOS_SKIP_FAULTS
// (regular expressions, e.g. "load reply_lost" to chase one finding).
func (p chaosPlan) catalogue(t *testing.T) []chaosFault {
	cat := chaosCatalogue(true)
	only, skip := os.Getenv("STARROCKS_TXN_CHAOS_FAULTS"), os.Getenv("STARROCKS_TXN_CHAOS_SKIP_FAULTS")
	if only == "" && skip == "" {
		return cat
	}
	onlyRe, err := regexp.Compile(only)
	require.NoError(t, err, "STARROCKS_TXN_CHAOS_FAULTS")
	skipRe, err := regexp.Compile(skip)
	require.NoError(t, err, "STARROCKS_TXN_CHAOS_SKIP_FAULTS")
	var out []chaosFault
	for _, f := range cat {
		if onlyRe.MatchString(f.kind) && (skip == "" || !skipRe.MatchString(f.kind)) {
			out = append(out, f)
		}
	}
	require.NotEmpty(t, out, "STARROCKS_TXN_CHAOS_FAULTS=%q and STARROCKS_TXN_CHAOS_SKIP_FAULTS=%q leave no fault kind", only, skip)
	return out
}

// chaosCase is one pipeline kind and semantic.
type chaosCase struct {
	name        string
	debezium    bool
	exactlyOnce bool
	// perTable runs the envelope pipeline in transaction_mode per_table
	// against the emulator as StarRocks 3.3 (TestChaosPerTable).
	perTable bool
}

func chaosCases() []chaosCase {
	return []chaosCase{
		{name: "envelope/at_least_once"},
		{name: "envelope/exactly_once", exactlyOnce: true},
		{name: "debezium/at_least_once", debezium: true},
		{name: "debezium/exactly_once", debezium: true, exactlyOnce: true},
	}
}

// chaosWorld is what a run needs of its pipeline kind.
type chaosWorld struct {
	r   *rig
	src *source // the model (and, envelope only, what aborted transactions wrote)
	// yaml is the pipeline every member runs.
	yaml func() string
	// ready runs once the first member started (Debezium: its snapshot).
	ready func(t *testing.T)
	// produce starts the traffic; wait ends with its error.
	produce func(ctx context.Context) (wait func() error)
	// produced counts the source transactions written (committed ones only).
	produced func() int64
	// lagging says which consumed partitions' committed group offsets are
	// not yet at the end of what was produced ("" when none).
	lagging func(ctx context.Context) (string, error)
	aborts  bool
}

func envelopeWorld(t *testing.T, seed uint64, exactlyOnce, perTable bool) *chaosWorld {
	version, mode := "", ""
	if perTable {
		version, mode = perTableVersion, "per_table"
	}
	r := newRigAs(t, 4, version)
	src := newSource(t, r, seed, 0.2)
	// Updates and deletes outweigh creates, so the set of live orders (and
	// what the emulator holds of them) stays about flat over a long run.
	src.gen = workload.NewGenerator(workload.Options{Partitions: r.partitions, Seed: seed, Events: true, UpdateRatio: 0.5, DeleteRatio: 0.3})
	const group = "g-chaos"
	return &chaosWorld{
		r: r, src: src, aborts: true,
		yaml: func() string {
			return chaosSessions(r.pipelineYAML(pipeOpts{group: group, batchCount: 3, exactlyOnce: exactlyOnce, writerRows: !exactlyOnce, commitPeriod: 500 * time.Millisecond, transactionMode: mode}))
		},
		ready: func(*testing.T) {},
		produce: func(ctx context.Context) func() error {
			return src.background(ctx, 0, chaosRateOf(ctx))
		},
		produced: src.committed.Load,
		lagging: func(ctx context.Context) (string, error) {
			src.mu.Lock()
			want := map[int32]int64{}
			for p, o := range src.ends {
				want[p] = o + 1
			}
			src.mu.Unlock()
			return groupLag(ctx, r.brokers, group, map[string]map[int32]int64{topic: want})
		},
	}
}

// The snapshot is loaded within the run's stall bound: the same liveness the
// run then holds the pipelines to (under a starved machine the first member's
// start and the snapshot's thousands of one-row transactions took more than
// the 30 s of the other tests).
func debeziumWorld(t *testing.T, seed uint64, exactlyOnce bool, stallAfter time.Duration) *chaosWorld {
	r := newRig(t, 1)
	w := newDbzWorld(t, r, seed, seed%2 == 0)
	const group = "g-chaos-dbz"
	return &chaosWorld{
		r: r, src: w.model,
		yaml: func() string {
			return chaosSessions(w.yaml(dbzPipeOpts{group: group, exactlyOnce: exactlyOnce, writerRows: !exactlyOnce, commitPeriod: 500 * time.Millisecond}))
		},
		ready: func(t *testing.T) { w.snapshotWithin(t, max(stallAfter, 30*time.Second)) },
		produce: func(ctx context.Context) func() error {
			return w.produce(ctx, 0, chaosRateOf(ctx))
		},
		produced: w.prod.Stats.Txns.Load,
		lagging:  func(ctx context.Context) (string, error) { return w.lagging(ctx, group) },
	}
}

// chaosSessionTimeout is the chaos pipelines' session_timeout. The other
// tests' 1500ms lets a live member's session expire when the machine is
// starved (four worlds under -race on a loaded machine: kfake and the
// heartbeats stall for over a second), and a live member that lost its
// session keeps committing until it learns of it: the zombie window the
// output's guide documents as beyond a client's reach, which this test would
// then report as duplicates. The crashed members' sessions still expire
// within the run.
const chaosSessionTimeout = "4s"

// chaosSequenceGapTimeout is the chaos pipelines' sequence_gap_timeout, the
// output's default. The other tests' 2s took a starved WriteBatch call, late
// by more than that, for a message dropped upstream: its seqs were skipped,
// and when it arrived its messages, now below what was admitted, poisoned
// their source transaction (a stall without dead_letter; seen at load 36).
const chaosSequenceGapTimeout = "10s"

// chaosSessions sets chaosSessionTimeout and chaosSequenceGapTimeout in a
// pipeline's YAML.
func chaosSessions(yaml string) string {
	for from, to := range map[string]string{
		"session_timeout: 1500ms":  "session_timeout: " + chaosSessionTimeout,
		"sequence_gap_timeout: 2s": "sequence_gap_timeout: " + chaosSequenceGapTimeout,
	} {
		if !strings.Contains(yaml, from) {
			panic("the chaos pipelines' YAML has no " + from)
		}
		yaml = strings.Replace(yaml, from, to, 1)
	}
	return yaml
}

type rateKey struct{}

// chaosRateOf is the source rate the run put in ctx.
func chaosRateOf(ctx context.Context) float64 { return ctx.Value(rateKey{}).(float64) }

// groupLag compares the group's committed offsets with want (topic →
// partition → offset): "" when each is reached.
func groupLag(ctx context.Context, brokers []string, group string, want map[string]map[int32]int64) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	got, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		return "", fmt.Errorf("fetching the group's offsets: %w", err)
	}
	var behind []string
	for tp, parts := range want {
		for p, w := range parts {
			o, ok := got.Lookup(tp, p)
			if !ok || o.At < w {
				at := int64(-1)
				if ok {
					at = o.At
				}
				behind = append(behind, fmt.Sprintf("%s/%d at %d of %d", tp, p, at, w))
			}
		}
	}
	return strings.Join(behind, ", "), nil
}

// runChaos is one run: traffic, faults and lifecycle events for
// plan.duration, then the checks.
func runChaos(t *testing.T, plan chaosPlan, c chaosCase, totals *chaosTotals) {
	seed := testSeed(t)
	var w *chaosWorld
	rate := plan.rate
	if c.debezium {
		w, rate = debeziumWorld(t, seed, c.exactlyOnce, plan.stallAfter), plan.dbzRate
	} else {
		w = envelopeWorld(t, seed, c.exactlyOnce, c.perTable)
	}
	totals.track(w.produced)
	run := &chaosRun{name: c.name, faults: newFaultCounts(), life: &lifeCounts{}}
	var failMu sync.Mutex
	var failures []string
	fails := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	fl := &fleet{t: t, r: w.r, yaml: w.yaml, ctr: run.life, fails: fails}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (STARROCKS_TXN_SEED=%d replays it); last log lines:\n%s", seed, seed, fl.logTails())
			path := filepath.Join(os.TempDir(), fmt.Sprintf("chaos-%d-%s.log", seed, strings.ReplaceAll(c.name, "/", "-")))
			if err := os.WriteFile(path, []byte(fl.fullLogs()), 0o600); err == nil {
				t.Logf("the live pipelines' whole logs: %s", path)
			}
		}
		fl.killAll()
	})
	// The figures are reported whether the run passes or not.
	var rd *reader
	defer func() {
		run.sourceTxns, run.aborted = w.produced(), w.src.aborted.Load()
		if rd != nil {
			run.splits, run.rounds = rd.torn.Load(), rd.rounds.Load()
		}
		run.emulator = w.r.em.Counters()
		run.failed = t.Failed()
		totals.add(run)
		t.Logf("%s", run.summary())
	}()
	require.NoError(t, fl.startMain())
	w.ready(t)
	// Exactly-once: no order may ever go back, not even across a crash.
	// Per-table: a partial read passes while it heals.
	if c.perTable {
		rd = startHealReader(w.r.db, c.exactlyOnce)
	} else {
		rd = startReader(w.r.db, c.exactlyOnce)
	}
	defer rd.stop()

	ctx, stopTraffic := context.WithCancel(context.WithValue(context.Background(), rateKey{}, rate))
	defer stopTraffic()
	waitTraffic := w.produce(ctx)
	// The chaos lasts plan.duration and, on a machine so starved that no
	// fault fired by then, until one has (at most three times as long): a
	// run without a fault would check nothing the test is for.
	chaosCtx, stopChaos := context.WithTimeout(context.Background(), 3*plan.duration)
	defer stopChaos()
	go func() {
		if sleepCtx(chaosCtx, plan.duration) {
			for run.faults.total() == 0 && sleepCtx(chaosCtx, time.Second) {
			}
			stopChaos()
		}
	}()
	var wg sync.WaitGroup
	wg.Add(3)
	cat := plan.catalogue(t)
	if c.perTable {
		cat = perTableChaos(cat)
	}
	inj := &injector{em: w.r.em, cat: cat, rng: rand.New(rand.NewPCG(seed, 21)),
		gap: plan.faultGap, wait: plan.faultWait, counts: run.faults}
	totals.inChaos.Add(1)
	go func() { defer wg.Done(); inj.run(chaosCtx) }()
	go func() {
		defer wg.Done()
		fl.run(chaosCtx, rand.New(rand.NewPCG(seed, 22)), plan.lifeGap)
	}()
	go func() {
		defer wg.Done()
		// The stall watchdog: something commits while traffic flows.
		last, since := fl.committed(), time.Now()
		for sleepCtx(chaosCtx, time.Second) {
			if n := fl.committed(); n != last {
				last, since = n, time.Now()
			} else if time.Since(since) > plan.stallAfter {
				fails("stall during the chaos: no source transaction committed for %v (%d so far)", plan.stallAfter, n)
				stopChaos()
			}
		}
	}()
	wg.Wait()
	totals.inChaos.Add(-1)
	faultsStopped := time.Now()
	stopTraffic()
	require.NoError(t, waitTraffic(), "the source")
	failMu.Lock()
	require.Empty(t, failures, "during the chaos")
	failMu.Unlock()

	// No stall: within plan.settle of the end of the faults the tables
	// equal the model and every partition's group offset reached the end.
	dups := w.r.waitConverged(t, w.src, !c.exactlyOnce, plan.settle)
	converged := time.Since(faultsStopped)
	var lag string
	if !testkit.Poll(max(plan.settle-time.Since(faultsStopped), 0), func() bool {
		lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if lag, err = w.lagging(lctx); err != nil {
			lag = err.Error()
			return false
		}
		return lag == ""
	}) {
		require.Failf(t, "the group's committed offsets never reached the end of the partitions",
			"within %v of the end of the faults: %s", plan.settle, lag)
	}
	caughtUp := time.Since(faultsStopped)
	committedByPipelines := fl.committed()
	fl.stopAll()
	rd.stop()
	failMu.Lock()
	require.Empty(t, failures, "stopping the pipelines")
	failMu.Unlock()

	checkReader(t, rd, w.src)
	if c.perTable {
		checkPerTableCycles(t, w.r.db)
		t.Logf("per-table partial reads: %s", rd.heal)
	}
	if w.aborts {
		checkNoAbortedEvents(t, w.r, w.src)
	}
	produced := w.produced()
	if c.exactlyOnce {
		assert.Zero(t, dups, "exactly_once: no event twice")
		if !c.debezium {
			// A pipeline that died between a commit and its answer never
			// counted it, and its successor skipped it.
			assert.LessOrEqual(t, committedByPipelines, produced, "exactly_once: no source transaction committed twice")
		}
	}
	assert.Positive(t, run.faults.total(), "faults fired")
	assert.Positive(t, run.life.crashes.Load()+run.life.kills.Load(), "pipelines were killed")

	run.dups, run.converged, run.caughtUp = int64(dups), converged, caughtUp
}
