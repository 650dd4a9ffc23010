package integration

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// A crash while a commit is still in flight on the FE (commit_late: the FE
// answers FAILED, keeps the transaction committing, makes it VISIBLE 2.5 s
// later). The successor re-reads the source transactions of that cycle (the
// group offset, and in exactly-once mode the progress table, do not cover
// them yet) and commits them and newer ones. Were the dead pipeline's
// transaction to become visible after those commits, it would write its
// older rows over the newer ones — for good when those orders are not
// updated again — and, with the progress table, a second copy of its events.
//
// exactly_once, and at_least_once with pipeline_id and mysql_address set:
// before the partitions' messages are applied (and, with exactly_once, the
// progress read), the successor finds the dead writer's labels through its
// writer row and waits for the one the FE is committing
// (output/starrocks_txn/takeover.go): these must pass.
//
// at_least_once without them has no way to learn the dead writer's labels:
// a known limit (the output README says so), run with
// STARROCKS_TXN_KNOWN_BUGS=1.
func TestPipelineCrashDuringLateCommit(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name        string
		exactlyOnce bool
		writerRows  bool
	}{{"at_least_once", false, false}, {"at_least_once_writer_rows", false, true}, {"exactly_once", true, true}} {
		t.Run(mode.name, func(t *testing.T) {
			if !mode.writerRows && os.Getenv("STARROCKS_TXN_KNOWN_BUGS") != "1" {
				t.Skip("known limit of at_least_once: a transaction the crashed output left committing can become visible after " +
					"its successor's newer commits and overwrite them (set pipeline_id and mysql_address, or use semantic exactly_once). Run with STARROCKS_TXN_KNOWN_BUGS=1.")
			}
			t.Parallel()
			seed := testSeed(t)
			r := newRig(t, 4)
			src := newSource(t, r, seed, 0.1)
			rd := startReader(r.db, mode.exactlyOnce)
			defer rd.stop()
			opts := pipeOpts{group: "g-late", batchCount: 3, exactlyOnce: mode.exactlyOnce, writerRows: mode.writerRows, commitPeriod: time.Second}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wait := src.background(ctx, 0, 150)
			p := r.startPipeline(t, "dying", opts)
			waitCommitted(t, p, 1)
			if mode.writerRows {
				// The fault must hit a commit of data, not the writer's anchor
				// (its first commit, the writer row alone).
				require.Eventually(t, func() bool {
					var n int
					err := r.db.QueryRow("SELECT COUNT(*) FROM test.starrocks_txn_progress_writers").Scan(&n)
					return err == nil && n > 0
				}, 10*time.Second, 20*time.Millisecond, "the dying writer anchored")
			}
			require.NoError(t, r.em.Faults().Add(emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitLate, Delay: 2500 * time.Millisecond}))
			require.Eventually(t, func() bool { return len(r.em.Faults().Pending()) == 0 }, 10*time.Second, 5*time.Millisecond)
			r.crash(p)
			next := r.startPipeline(t, "successor", opts)
			// The successor takes over (after the dying member's session
			// expires) and loads while traffic flows.
			waitCommitted(t, next, 50)
			cancel()
			require.NoError(t, wait())
			// Without the successor's wait, orders and items hold older
			// versions than the last committed ones and events are doubled.
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

// A member cut off from the group coordinator while it still reaches
// StarRocks (its heartbeats hang: a network partition, or a process or
// broker too starved to answer — seen on a loaded machine as a member that
// learned of its loss 8 s after another member got its partitions): the
// broker expires its session and gives its partitions to the other member,
// which reads the progress and loads them. The cut-off member must stop
// committing before that (its group lease ends half a session timeout
// after its last confirmed heartbeat), or its commits of the same source
// transactions land a second time: order_events (DUPLICATE KEY) would hold
// events twice.
func TestExactlyOnceMemberCutOffFromTheCoordinatorStopsCommitting(t *testing.T) {
	if testing.Short() {
		t.Skip("rebalance test")
	}
	t.Parallel()
	seed := testSeed(t)
	r := newRig(t, 4)
	src := newSource(t, r, seed, 0.1)
	rd := startReader(r.db, false)
	defer rd.stop()
	opts := pipeOpts{group: "g-cut-off", batchCount: 3, exactlyOnce: true, commitPeriod: time.Second}

	// The first member to heartbeat is a.
	cut, heartbeated := cutOffFirstMember(t, r)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := src.background(ctx, 0, 150)
	a := r.startPipeline(t, "cut-off", opts)
	require.Eventually(t, func() bool { return heartbeated() && src.committed.Load() > 50 }, 20*time.Second, 10*time.Millisecond)
	waitCommitted(t, a, 1)
	cut()
	b := r.startPipeline(t, "owner", opts)
	// a learns of its loss only when its hung heartbeat times out
	// (franz-go's request timeout overhead, 10 s); b owns everything long
	// before, and a holds its commits once its lease ends: traffic flows
	// until both happened.
	testkit.WaitFor(t, 30*time.Second, func() bool {
		return len(b.probe.partitionsSeen()) == 4 && strings.Contains(a.logs.tail(1000), "Holding the commit of label")
	}, "b reads every partition and the cut-off member holds a commit")
	waitCommitted(t, b, 50)
	cancel()
	require.NoError(t, wait())
	dups := r.waitConverged(t, src, true, 30*time.Second)
	b.stop(t, 10*time.Second)
	a.kill()
	rd.stop()
	assert.Zero(t, dups, "events committed by both the cut-off member and the partitions' new owner")
	assert.True(t, strings.Contains(a.logs.tail(1000), "Holding the commit of label"), "the cut-off member held its commits")
}

// cutOffFirstMember cuts the first member of the group to heartbeat off
// from the coordinator once cut is called: from then on the coordinator
// holds each of its heartbeats without an answer until the test ends (a
// network partition, or a process or broker too starved to answer), while
// the member still fetches and reaches StarRocks; the other members'
// heartbeats go through. heartbeated reports whether that member has
// heartbeated yet.
func cutOffFirstMember(t *testing.T, r *rig) (cut func(), heartbeated func() bool) {
	var member atomic.Pointer[string]
	var isCut atomic.Bool
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r.kafka.ControlKey(int16(kmsg.Heartbeat), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		r.kafka.KeepControl()
		id := kreq.(*kmsg.HeartbeatRequest).MemberID
		member.CompareAndSwap(nil, &id)
		if isCut.Load() && id == *member.Load() {
			r.kafka.SleepControl(func() { <-release })
			return nil, errors.New("cut off from the coordinator"), true
		}
		return nil, nil, false
	})
	return func() { isCut.Store(true) }, func() bool { return member.Load() != nil }
}
