package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
)

// A crash while a commit is still in flight on the FE (commit_late: the FE
// answers FAILED, keeps the transaction committing, makes it VISIBLE 2.5 s
// later). The successor pipeline knows nothing of the dead one's label: it
// re-reads the source transactions of that cycle (the group offset, and in
// exactly-once mode the progress table, do not cover them yet) and commits
// them and newer ones. Then the dead pipeline's transaction becomes visible
// and writes its older rows over the newer ones — for good when those orders
// are not updated again — and, with the progress table, its older progress
// and a second copy of its events.
//
// Known bug (output/starrocks_txn, DESIGN §4.4 holds only within one
// process): nothing makes a new output wait for, or roll back, the
// unresolved transactions a previous incarnation left. Set
// STARROCKS_TXN_KNOWN_BUGS=1 to run it.
func TestPipelineCrashDuringLateCommit(t *testing.T) {
	if os.Getenv("STARROCKS_TXN_KNOWN_BUGS") != "1" {
		t.Skip("known bug: a transaction the crashed output left committing becomes visible after its successor's newer commits " +
			"and overwrites them (lost updates; duplicate events and a progress row that goes back with semantic exactly_once). " +
			"Run with STARROCKS_TXN_KNOWN_BUGS=1.")
	}
	t.Parallel()
	for _, mode := range []struct {
		name        string
		exactlyOnce bool
	}{{"at_least_once", false}, {"exactly_once", true}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			seed := testSeed(t)
			r := newRig(t, 4)
			src := newSource(t, r, seed, 0.1)
			rd := startReader(r.db, mode.exactlyOnce)
			defer rd.stop()
			opts := pipeOpts{group: "g-late", batchCount: 3, exactlyOnce: mode.exactlyOnce, commitPeriod: time.Second}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wait := src.background(ctx, 0, 150)
			p := r.startPipeline(t, "dying", opts)
			time.Sleep(time.Second)
			require.NoError(t, r.em.Faults().Add(emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitLate, Delay: 2500 * time.Millisecond}))
			require.Eventually(t, func() bool { return len(r.em.Faults().Pending()) == 0 }, 10*time.Second, 5*time.Millisecond)
			r.crash(p)
			next := r.startPipeline(t, "successor", opts)
			time.Sleep(4 * time.Second)
			cancel()
			require.NoError(t, wait())
			// Fails here: orders and items hold older versions than the last
			// committed ones (both modes), events are duplicated (exactly-once).
			dups := r.waitConverged(t, src, !mode.exactlyOnce, 20*time.Second)
			next.stop(t, 10*time.Second)
			rd.stop()
			checkReader(t, rd, src)
			if mode.exactlyOnce {
				assert.Zero(t, dups)
			}
		})
	}
}
