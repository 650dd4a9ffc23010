package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// The whole pipeline with nothing going wrong: every committed source
// transaction arrives whole and once, aborted ones never, a concurrent reader
// never sees half a transaction nor an order going back, and many source
// transactions share one StarRocks transaction.
// The input delivers whole source transactions by default; with a batching
// policy that hands batches to Benthos's batcher they span several batches,
// and the output still loads each whole.
func TestPipelineLoadsWholeSourceTransactions(t *testing.T) {
	for _, span := range []bool{false, true} {
		name := "whole transactions per batch"
		if span {
			name = "transactions spanning batches"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testPipelineLoadsWholeSourceTransactions(t, span)
		})
	}
}

func testPipelineLoadsWholeSourceTransactions(t *testing.T, span bool) {
	seed := testSeed(t)
	r := newRig(t, 4)
	src := newSource(t, r, seed, 0.2)
	rd := startReader(r.db, true)
	defer rd.stop()
	p := r.startPipeline(t, "main", pipeOpts{group: "g-main", batchCount: 3, spanBatches: span})
	started := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, src.background(ctx, scale(400, 5000), scale(200.0, 500.0))())
	dups := r.waitConverged(t, src, false, 30*time.Second)
	require.Zero(t, dups)
	p.stop(t, 10*time.Second)
	elapsed := time.Since(started)
	rd.stop()

	checkReader(t, rd, src)
	checkNoAbortedEvents(t, r, src)
	committed := src.committed.Load()
	assert.Equal(t, committed, p.metrics.Counter("starrocks_txn_source_txns_committed"),
		"the output committed every committed source transaction once")
	c := r.em.Counters()
	// N:1: StarRocks commits follow commit_interval (200 ms), not the
	// source transactions.
	assert.LessOrEqual(t, c.Committed, int64(elapsed/(200*time.Millisecond))+3, "at most one commit per commit_interval")
	assert.Less(t, c.Committed*2, committed, "many source transactions share one StarRocks transaction")
	if span {
		assert.Positive(t, p.probe.spanning(), "some source transactions span several input batches")
	} else {
		assert.Zero(t, p.probe.spanning(), "the input delivered every source transaction in one batch")
	}
	t.Logf("%d source txns committed, %d aborted, %d records in %v; %d StarRocks commits, %d loads; %d spanned batches; %d reader rounds",
		committed, src.aborted.Load(), src.records.Load(), elapsed.Round(time.Millisecond), c.Committed, c.Loads, p.probe.spanning(), rd.rounds.Load())
}

// faultStep is one fault the emulator serves during the run; restart means
// an FE Restart() instead.
type faultStep struct {
	name    string
	fault   emulator.Fault
	restart bool
}

// The same with every kind of emulator fault injected one after another
// while traffic flows: nothing lost, nothing torn, nothing twice.
func TestPipelineSurvivesEmulatorFaults(t *testing.T) {
	t.Parallel()
	steps := []faultStep{
		{name: "load txn_in_processing", fault: emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActTxnInProcessing, Count: 2}},
		{name: "load internal_error", fault: emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActInternalError}},
		{name: "commit commit_report_failure", fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitReportFailure}},
		{name: "commit commit_late", fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitLate, Delay: 800 * time.Millisecond}},
		{name: "commit commit_abort", fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitAbort}},
		{name: "commit commit_reset", fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitReset}},
		{name: "load http_error 503", fault: emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActHTTPError, HTTPCode: 503}},
		{name: "commit http_error 503", fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActHTTPError, HTTPCode: 503}},
		{name: "begin running_txn_limit", fault: emulator.Fault{Op: emulator.OpBegin, Action: emulator.ActRunningTxnLimit}},
		{name: "load running_txn_limit", fault: emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActRunningTxnLimit}},
		{name: "FE restart", restart: true},
	}
	if longRun {
		steps = append(steps, steps...)
	}
	for _, mode := range []struct {
		name        string
		exactlyOnce bool
	}{{"at_least_once", false}, {"exactly_once", true}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			runFaults(t, steps, mode.exactlyOnce)
		})
	}
}

func runFaults(t *testing.T, steps []faultStep, exactlyOnce bool) {
	seed := testSeed(t)
	r := newRig(t, 4)
	src := newSource(t, r, seed, 0.15)
	rd := startReader(r.db, true)
	defer rd.stop()
	p := r.startPipeline(t, "faults", pipeOpts{group: "g-faults", batchCount: 3, exactlyOnce: exactlyOnce})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := src.background(ctx, 0, 150)

	rng := rand.New(rand.NewPCG(seed, 3))
	fired := int64(0)
	for _, st := range steps {
		// A random gap in real time: a fault may land while the output
		// still recovers from the previous one.
		randomMoment(rng, 150*time.Millisecond, 450*time.Millisecond)
		before := r.em.Counters()
		if st.restart {
			r.em.Restart()
			continue
		}
		require.NoError(t, r.em.Faults().Add(st.fault), st.name)
		count := int64(max(st.fault.Count, 1))
		fired += count
		require.Eventually(t, func() bool { return len(r.em.Faults().Pending()) == 0 },
			15*time.Second, 10*time.Millisecond, "fault %q never fired (the pipeline stopped sending %s requests)", st.name, st.fault.Op)
		require.Equal(t, before.FaultsFired+count, r.em.Counters().FaultsFired, st.name)
	}
	// Traffic goes on until the output commits again after the last fault.
	commits := r.em.Counters().Committed
	testkit.WaitFor(t, 30*time.Second, func() bool { return r.em.Counters().Committed > commits }, "a commit after the last fault")
	cancel()
	require.NoError(t, wait())

	dups := r.waitConverged(t, src, false, 30*time.Second)
	require.Zero(t, dups)
	p.stop(t, 10*time.Second)
	rd.stop()

	checkReader(t, rd, src)
	checkNoAbortedEvents(t, r, src)
	c := r.em.Counters()
	assert.Equal(t, fired, c.FaultsFired)
	assert.Positive(t, p.metrics.Counter("starrocks_txn_cycle_retries"), "faults made the output replay cycles")
	assert.Equal(t, src.committed.Load(), p.metrics.Counter("starrocks_txn_source_txns_committed"),
		"every committed source transaction committed once")
	t.Logf("%d source txns committed, %d aborted; %d faults fired; %d StarRocks commits, %d aborted, %d rollbacks, %d label-state polls; %d cycle retries; %d reader rounds",
		src.committed.Load(), src.aborted.Load(), c.FaultsFired, c.Committed, c.Aborted, c.Rollbacks, c.LabelStates,
		p.metrics.Counter("starrocks_txn_cycle_retries"), rd.rounds.Load())
}

// crashFaults are the faults a crash may follow. commit_late (the FE keeps
// committing after the crash) only with exactly_once: at_least_once without
// writer rows cannot wait for it (TestPipelineCrashDuringLateCommit).
var crashFaults = []emulator.Fault{
	{Op: emulator.OpLoad, Action: emulator.ActInternalError},
	{Op: emulator.OpLoad, Action: emulator.ActTxnInProcessing},
	{Op: emulator.OpCommit, Action: emulator.ActCommitReportFailure},
	{Op: emulator.OpCommit, Action: emulator.ActCommitReset},
	{Op: emulator.OpCommit, Action: emulator.ActCommitAbort},
	{Op: emulator.OpCommit, Action: emulator.ActHTTPError, HTTPCode: 503},
}

// The stream is stopped hard at random moments and a new one started with
// the same consumer group, emulator and Kafka, several times, while traffic
// flows. At-least-once: orders and items equal the model (the PRIMARY KEY
// absorbs replays), every committed event is there at least once and no
// aborted one. Exactly-once (the output's progress table): events exactly
// once and orders never go back, even across the restarts. Every second
// crash comes right after an emulator fault fired.
func TestPipelineSurvivesHardRestarts(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name        string
		exactlyOnce bool
	}{{"at_least_once", false}, {"exactly_once", true}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			seed := testSeed(t)
			r := newRig(t, 4)
			src := newSource(t, r, seed, 0.2)
			rd := startReader(r.db, mode.exactlyOnce)
			defer rd.stop()
			// Offsets reach Kafka only every second while StarRocks commits
			// every 200 ms, so a crash almost always leaves committed
			// cycles the group offset does not cover: they are re-read.
			// Offsets go to Kafka every 3 s, longer than a run lives after
			// its first commit (0.2–1.8 s): each crash leaves committed
			// cycles above the group offset, which the next run re-reads.
			opts := pipeOpts{group: "g-restarts", batchCount: 3, exactlyOnce: mode.exactlyOnce, commitPeriod: 3 * time.Second}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wait := src.background(ctx, 0, 150)
			rng := rand.New(rand.NewPCG(seed, 5))
			var committedByKilled int64
			restarts := scale(4, 15)
			faults := crashFaults
			if mode.exactlyOnce {
				faults = append(faults[:len(faults):len(faults)], emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitLate, Delay: time.Second})
			}
			for i := 0; i < restarts; i++ {
				p := r.startPipeline(t, fmt.Sprintf("run-%d", i), opts)
				// Each run commits something before it dies (a slow start,
				// e.g. waiting for a predecessor's commit, must not leave
				// nothing to re-read).
				require.Eventually(t, func() bool { return p.metrics.Counter("starrocks_txn_source_txns_committed") > 0 },
					30*time.Second, 10*time.Millisecond, "run %d committed", i)
				// The crash comes at a random moment (real time).
				randomMoment(rng, 200*time.Millisecond, 1800*time.Millisecond)
				if i%2 == 1 {
					// Crash right after a fault fired, while the output
					// retries a cycle or resolves an ambiguous commit.
					f := faults[rng.IntN(len(faults))]
					require.NoError(t, r.em.Faults().Add(f))
					require.Eventually(t, func() bool { return len(r.em.Faults().Pending()) == 0 },
						15*time.Second, 2*time.Millisecond, "fault %s on %s fired", f.Action, f.Op)
				}
				start := time.Now()
				r.crash(p)
				t.Logf("crash %d took %v", i, time.Since(start))
				committedByKilled += p.metrics.Counter("starrocks_txn_source_txns_committed")
			}
			final := r.startPipeline(t, "final", opts)
			// The final run loads while traffic still flows.
			testkit.WaitFor(t, 30*time.Second, func() bool { return final.metrics.Counter("starrocks_txn_source_txns_committed") > 0 },
				"the final run commits")
			cancel()
			require.NoError(t, wait())

			dups := r.waitConverged(t, src, !mode.exactlyOnce, 40*time.Second)
			final.stop(t, 10*time.Second)
			rd.stop()

			checkReader(t, rd, src)
			checkNoAbortedEvents(t, r, src)
			if mode.exactlyOnce {
				assert.Zero(t, dups, "exactly-once: no event twice")
				// A pipeline that died between its commit and the answer
				// never counted that commit, and its successor skipped it.
				assert.LessOrEqual(t, committedByKilled+final.metrics.Counter("starrocks_txn_source_txns_committed"), src.committed.Load(),
					"exactly-once: no source transaction committed twice")
			} else {
				assert.Positive(t, dups, "the crashes left committed cycles to re-read (else this test proves nothing about replays)")
			}
			assert.Positive(t, committedByKilled, "the killed pipelines committed work before they died")
			t.Logf("%d restarts; %d source txns committed, %d aborted; killed pipelines committed %d, the final one %d; %d duplicated events; %d reader rounds",
				restarts, src.committed.Load(), src.aborted.Load(), committedByKilled,
				final.metrics.Counter("starrocks_txn_source_txns_committed"), dups, rd.rounds.Load())
		})
	}
}

// Two pipelines in one consumer group; the first is stopped mid-stream and
// the second takes its partitions over: nothing lost, and no older value of an
// order ever overwrites a newer one.
//   - leave: the first stops gracefully (revoke, fence, offset commit at the
//     committed boundary): nothing is re-read, nothing committed twice.
//   - crash_exactly_once: the first crashes (no offset commit, no leave; the
//     second gets its partitions when its session expires) and the second
//     starts them after the output's progress table: still nothing twice.
//   - crash_at_least_once: the same without the progress table: committed
//     cycles are re-read, so only the tables' final state and every event at
//     least once are checked (orders may go back while the replay runs).
//   - leave_during_late_commit: the first leaves while its last commit is
//     still committing on the FE (commit_late): the revoke's fence waits for
//     that commit to resolve before the offset commit, so the second neither
//     loses nor re-reads it.
func TestPipelineRebalanceTakeover(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name                           string
		crash, exactlyOnce, lateCommit bool
	}{
		{name: "leave"},
		{name: "crash_exactly_once", crash: true, exactlyOnce: true},
		{name: "crash_at_least_once", crash: true},
		{name: "leave_during_late_commit", lateCommit: true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			runTakeover(t, mode.crash, mode.exactlyOnce, mode.lateCommit)
		})
	}
}

func runTakeover(t *testing.T, crash, exactlyOnce, lateCommit bool) {
	seed := testSeed(t)
	r := newRig(t, 4)
	src := newSource(t, r, seed, 0.2)
	noReplays := !crash || exactlyOnce
	rd := startReader(r.db, noReplays)
	defer rd.stop()
	opts := pipeOpts{group: "g-rebalance", batchCount: 3, exactlyOnce: exactlyOnce}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := src.background(ctx, 0, 150)
	a := r.startPipeline(t, "a", opts)
	// a loads alone for a while (about 0.8 s of traffic, 3 s long).
	waitCommitted(t, a, scale(100, 400))
	b := r.startPipeline(t, "b", opts)
	// Both members share the partitions before a goes.
	testkit.WaitFor(t, 20*time.Second, func() bool {
		return b.metrics.Counter("starrocks_txn_source_txns_committed") > 0
	}, "the second pipeline gets partitions")
	// and both load for a while.
	waitCommitted(t, a, scale(1, 100))
	waitCommitted(t, b, scale(50, 200))
	if lateCommit {
		// The next two commits — one cycle of each pipeline, as a pipeline
		// does not commit again before its last commit is resolved — are
		// answered FAILED and become visible 1.5 s later.
		require.NoError(t, r.em.Faults().Add(emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitLate, Count: 2, Delay: 1500 * time.Millisecond}))
		require.Eventually(t, func() bool { return len(r.em.Faults().Pending()) == 0 }, 10*time.Second, 5*time.Millisecond)
	}
	stopping := time.Now()
	if crash {
		r.crash(a)
	} else {
		a.stop(t, 15*time.Second)
	}
	t.Logf("the first pipeline went in %v", time.Since(stopping))
	// b takes every partition over (after a's session expires, when it
	// crashed) and loads them for a while.
	testkit.WaitFor(t, 30*time.Second, func() bool { return len(b.probe.partitionsSeen()) == 4 }, "the second pipeline reads every partition")
	waitCommitted(t, b, scale(50, 400))
	cancel()
	require.NoError(t, wait())

	dups := r.waitConverged(t, src, !noReplays, 30*time.Second)
	b.stop(t, 10*time.Second)
	rd.stop()

	checkReader(t, rd, src)
	checkNoAbortedEvents(t, r, src)
	aTxns, bTxns := a.metrics.Counter("starrocks_txn_source_txns_committed"), b.metrics.Counter("starrocks_txn_source_txns_committed")
	assert.Positive(t, aTxns, "the first pipeline loaded before it went")
	assert.Len(t, b.probe.partitionsSeen(), 4, "the second pipeline took over every partition")
	if noReplays {
		assert.Zero(t, dups, "a takeover replays nothing that was committed")
		if crash {
			// A crash between a commit and its answer leaves that commit
			// uncounted by the dead pipeline and skipped by the other.
			assert.LessOrEqual(t, aTxns+bTxns, src.committed.Load(), "no source transaction committed twice")
		} else {
			assert.Equal(t, src.committed.Load(), aTxns+bTxns, "every committed source transaction committed once, by one of the two")
		}
	}
	t.Logf("%d source txns committed, %d aborted; a committed %d (partitions %v), b %d (partitions %v); %d duplicated events; %d reader rounds",
		src.committed.Load(), src.aborted.Load(), aTxns, a.probe.partitionsSeen(), bTxns, b.probe.partitionsSeen(), dups, rd.rounds.Load())
}

// waitCommitted waits until p has committed n more source transactions.
func waitCommitted(t *testing.T, p *pipeline, n int) {
	t.Helper()
	from := p.metrics.Counter("starrocks_txn_source_txns_committed")
	testkit.WaitFor(t, 60*time.Second, func() bool { return p.metrics.Counter("starrocks_txn_source_txns_committed") >= from+int64(n) },
		"pipeline %s commits %d more source transactions (from %d)", p.name, n, from)
}
