package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// The Debezium form of TestExactlyOnceMemberCutOffFromTheCoordinatorStopsCommitting:
// the owner of the connector is cut off from the group coordinator (its
// heartbeats hang) while it still reads Kafka and reaches StarRocks. The
// broker expires its session and gives every partition to the standby,
// which reads the progress and loads from there. The cut-off owner must
// stop committing before that (the lease of the connector's partition ends
// half a session timeout after its last confirmed heartbeat), or its
// commits of the same transactions land a second time: order_events
// (DUPLICATE KEY) would hold events twice.
func TestDebeziumMemberCutOffFromTheCoordinatorStopsCommitting(t *testing.T) {
	t.Parallel()
	seed := testSeed(t)
	r := newRig(t, 1)
	// The first member to heartbeat is the owner.
	cut, heartbeated := cutOffFirstMember(t, r)
	w := newDbzWorld(t, r, seed, false)
	opts := dbzPipeOpts{group: "g-dbz-cut-off", exactlyOnce: true, commitPeriod: time.Second}
	a := w.start(t, "cut-off", opts)
	w.snapshot(t)
	rd := startReader(r.db, true)
	defer rd.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := w.produce(ctx, 0, 120)
	require.Eventually(t, func() bool { return heartbeated() && a.metrics.Counter("debezium_txn_transactions") > 50 },
		30*time.Second, 10*time.Millisecond)
	waitCommitted(t, a, 1)
	cut()
	b := w.start(t, "standby", opts)
	// The owner learns of its loss only when its hung heartbeat times out
	// (franz-go's request timeout overhead, 10 s); the standby owns
	// everything long before.
	require.Eventually(t, func() bool { return b.metrics.Counter("debezium_txn_transactions") > 0 }, 30*time.Second, 10*time.Millisecond,
		"the standby takes over")
	// Traffic flows until the cut-off owner held a commit (its lease
	// ended) and the standby loads.
	testkit.WaitFor(t, 30*time.Second, func() bool { return strings.Contains(a.logs.tail(1000), "Holding the commit of label") },
		"the cut-off owner holds a commit")
	waitCommitted(t, b, 50)
	cancel()
	require.NoError(t, wait())
	dups := r.waitConverged(t, w.model, true, 30*time.Second)
	b.stop(t, 10*time.Second)
	a.kill()
	rd.stop()
	checkReader(t, rd, w.model)
	assert.Zero(t, dups, "events committed by both the cut-off owner and the standby")
	assert.True(t, strings.Contains(a.logs.tail(1000), "Holding the commit of label"), "the cut-off owner held its commits")
}
