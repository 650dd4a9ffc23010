package consumer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// leased is the registry's lease of an output partition now.
func (w *world) leased(id string) (bool, time.Time) {
	return w.reg.Leased(id, time.Now())
}

// loaded is a world whose input read and acknowledged one record of
// partition 0, so the assignment and its lease exist.
func loaded(t *testing.T, group string, opts ...kgo.Opt) (*world, *leaseEvents, string) {
	t.Helper()
	c := newCluster(t, 1)
	ev := &leaseEvents{}
	w := newWorld(t, testYAML(c, group, ""), func(sc *Config) { sc.Opts = append(opts, kgo.WithHooks(ev)) })
	// The shell's lease, its renewals recorded on their way to the
	// registry.
	w.c.lease = kafka.NewGroupLease(w.c.conf.SessionTimeout, func(until time.Time) {
		ev.add(leaseEvent{until: until})
		w.c.renewLease(until)
	})
	w.connect()
	produce(t, c, testTopic, 0, "a")
	_, ack := w.read(10 * time.Second)
	require.NoError(t, ack(t.Context(), nil))
	id := testTopic + "/0"
	require.Eventually(t, func() bool {
		ok, until := w.leased(id)
		return ok && !until.IsZero()
	}, 5*time.Second, 10*time.Millisecond, "the assignment is leased")
	w.cluster = c
	return w, ev, id
}

// leaseEvents are, in order, the renewals of a member's membership lease
// and its JoinGroup writes (a kgo.HookBrokerWrite).
type leaseEvents struct {
	mu     sync.Mutex
	events []leaseEvent
}

// leaseEvent is a renewal of the lease to until, or a JoinGroup written at
// joined.
type leaseEvent struct {
	until, joined time.Time
}

func (e *leaseEvents) add(ev leaseEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
}

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (e *leaseEvents) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && kmsg.Key(key) == kmsg.JoinGroup {
		e.add(leaseEvent{joined: time.Now()})
	}
}

// renewedBeforeJoin returns the ends of the renewals made before the first
// JoinGroup written after since — every renewal of the membership that
// was current at since — and whether that join came.
func (e *leaseEvents) renewedBeforeJoin(since time.Time) (ends []time.Time, joined bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.events {
		if ev.joined.After(since) {
			return ends, true
		}
		if !ev.until.IsZero() {
			ends = append(ends, ev.until)
		}
	}
	return ends, false
}

// While heartbeats get through, the claimed partitions' lease runs half a
// session timeout ahead; once they stop getting through (the member is cut
// off from the coordinator), the lease ends before franz-go reports the
// partitions lost — the time the broker may already have given them to
// another member.
func TestGroupLeaseFollowsHeartbeats(t *testing.T) {
	w, _, id := loaded(t, "g-lease")
	ok, first := w.leased(id)
	require.True(t, ok)
	assert.LessOrEqual(t, time.Until(first), 500*time.Millisecond, "at most half the session timeout ahead")
	require.Eventually(t, func() bool {
		ok, until := w.leased(id)
		return ok && until.After(first)
	}, 5*time.Second, 10*time.Millisecond, "heartbeats renew the lease")

	// From now on the coordinator holds every heartbeat without an answer
	// (a member cut off, or a coordinator too slow to answer): franz-go
	// waits for the reply and reports nothing meanwhile.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	w.cluster.ControlKey(int16(kmsg.Heartbeat), func(kmsg.Request) (kmsg.Response, error, bool) {
		w.cluster.KeepControl()
		w.cluster.SleepControl(func() { <-release })
		return nil, errors.New("cut off"), true
	})
	require.Eventually(t, func() bool {
		ok, _ := w.leased(id)
		return !ok
	}, 5*time.Second, 5*time.Millisecond, "the lease ends while no heartbeat gets through")
	assert.Equal(t, []string{id}, w.in.held(), "franz-go has not reported the partition lost yet: only the lease tells the output")
}

// A coordinator that answers a heartbeat with an error (the member's
// session expired meanwhile: UNKNOWN_MEMBER_ID) must not extend the lease:
// franz-go reports the partitions lost only after it handled that reply,
// and a commit started in between would race the partitions' new owner.
// Every renewal of the old assignment after the coordinator started
// refusing counts from a request sent before it did; once the assignment
// is released its lease is dropped.
func TestGroupLeaseIsNotRenewedByARefusedHeartbeat(t *testing.T) {
	w, ev, id := loaded(t, "g-lease-refused")
	g0 := w.in.generation()
	refusing := time.Now()
	w.cluster.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		w.cluster.KeepControl()
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	span := w.c.Lease().Span()
	var after leaseState
	var released bool
	testkit.WaitFor(t, 5*time.Second, func() bool {
		after, released = w.in.leaseAfter(id)
		return released || w.in.generation() != g0
	}, "franz-go reports the partition lost after the coordinator refused its heartbeats")
	if released {
		assert.True(t, after.ok && after.until.IsZero(), "a released assignment's lease is dropped (until %v)", after.until)
	}
	// Every renewal of the membership that was current when the
	// coordinator began refusing (a new one begins with a join).
	ends, _ := ev.renewedBeforeJoin(refusing)
	for _, until := range ends {
		require.False(t, until.Add(-span).After(refusing),
			"the lease of the old assignment was renewed from a heartbeat sent after the coordinator began refusing (until %v, refusing since %v)", until, refusing)
	}
}

// A coordinator that answers every heartbeat with a retriable coordinator
// error (NOT_COORDINATOR: the group moved, or this broker no longer leads
// __consumer_offsets) processed none of them: nothing confirms the
// membership, and the session the real coordinator keeps runs out
// session_timeout after the last heartbeat it took. franz-go retries such a
// heartbeat inside the request, and every retry is a new write of a
// Heartbeat, which GroupLease takes as the confirmation of the write
// before it. The lease must not be renewed from a heartbeat sent after the
// refusals began.
func TestGroupLeaseIsNotRenewedByRetriedHeartbeats(t *testing.T) {
	w, ev, _ := loaded(t, "g-lease-retried")
	refusing := time.Now()
	w.cluster.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		w.cluster.KeepControl()
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp, nil, true
	})
	span := w.c.Lease().Span()
	session := w.c.conf.SessionTimeout
	// Only this membership's renewals count: once franz-go gives up on the
	// heartbeat and rejoins, a new sync confirms the membership again. It
	// is given three session timeouts to give up; past them, what it
	// renewed meanwhile is checked all the same.
	testkit.Poll(3*session, func() bool {
		_, joined := ev.renewedBeforeJoin(refusing)
		return joined
	})
	ends, _ := ev.renewedBeforeJoin(refusing)
	var latest time.Time
	for _, until := range ends {
		if until.After(latest) {
			latest = until
		}
	}
	// The coordinator may expire the session session_timeout after the
	// last heartbeat it took (sent before refusing); the lease keeps half
	// of it as the margin for a commit started at its end to land.
	t.Logf("span %v, session %v: the lease reached refusing + %v", span, session, latest.Sub(refusing))
	require.False(t, latest.Add(-span).After(refusing),
		"the lease was renewed from heartbeats sent after the coordinator began refusing them: it reached refusing + %v (span %v; session_timeout %v, past which another member may own the partitions)", latest.Sub(refusing), span, session)
}

// Closing the input (a revoke) drops the lease of everything it claimed.
func TestGroupLeaseIsDroppedOnRevoke(t *testing.T) {
	w, _, id := loaded(t, "g-lease-revoke")
	require.NoError(t, w.c.Close(context.Background()))
	ok, until := w.leased(id)
	assert.True(t, ok && until.IsZero(), "%s: the lease is dropped after the fence (until %v)", id, until)
}

// After a heartbeat answered REBALANCE_IN_PROGRESS franz-go revokes and
// keeps heartbeating until the revoke is done, ignoring the replies — here
// every one is REBALANCE_IN_PROGRESS, and a revoke that outlasts the
// rebalance gets UNKNOWN_MEMBER_ID. None of those heartbeats confirms the
// membership: while the revoke is pending (its fence held by the output) no
// lease moves, neither the registry's nor the one a partition claimed then
// would get, however many heartbeats are written — so no lease reaches
// past the rebalance's end, rebalance_timeout after it began.
//
// An eager member revokes everything there (debezium_txn); a cooperative
// one (kafka_txn) revokes nothing on REBALANCE_IN_PROGRESS and rejoins at
// once, and its lease halts until the join all the same.
func TestLeaseIsNotRenewedWhileARevokeIsPending(t *testing.T) {
	w, _, id := loaded(t, "g-lease-revoking", kgo.Balancers(kgo.RangeBalancer()))
	fenceEntered := make(chan struct{})
	releaseFence := make(chan struct{})
	var once sync.Once
	w.reg.AddFencer(func(ctx context.Context, _ string) error {
		once.Do(func() { close(fenceEntered) })
		select {
		case <-releaseFence:
		case <-ctx.Done():
		}
		return nil
	})
	var mu sync.Mutex
	rebalancing := true
	var duringRevoke int
	revoking := false
	w.cluster.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		w.cluster.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		if !rebalancing {
			return nil, nil, false
		}
		if revoking {
			duringRevoke++
		}
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.RebalanceInProgress.Code
		return resp, nil, true
	})
	select {
	case <-fenceEntered:
	case <-time.After(10 * time.Second):
		t.Fatal("no revoke after REBALANCE_IN_PROGRESS")
	}
	_, regAtRevoke := w.leased(id)
	leaseAtRevoke := w.c.Lease().Until()
	mu.Lock()
	revoking = true
	mu.Unlock()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return duringRevoke >= 5
	}, 10*time.Second, 10*time.Millisecond, "franz-go keeps heartbeating while the revoke is pending")
	_, regNow := w.leased(id)
	assert.False(t, regNow.After(regAtRevoke), "the registry's lease moved during the revoke: %v after %v", regNow, regAtRevoke)
	assert.False(t, w.c.Lease().Until().After(leaseAtRevoke),
		"heartbeats written while the revoke was pending renewed the membership lease: %v after %v", w.c.Lease().Until(), leaseAtRevoke)

	// The revoke ends; the member rejoins and a new sync leases it again.
	mu.Lock()
	rebalancing = false
	mu.Unlock()
	close(releaseFence)
	require.Eventually(t, func() bool {
		ok, until := w.leased(id)
		return ok && until.After(leaseAtRevoke)
	}, 10*time.Second, 10*time.Millisecond, "the next generation is leased from its sync")
}

// The group membership does not depend on the input's lock: the lease's
// renewal runs inside franz-go's write of each heartbeat, on the goroutine
// that writes every request to the broker and reads no reply before the
// hook returns. A renewal that waited for the input's lock held back the
// heartbeats for as long as any holder of that lock ran — the poll loop
// feeding a large poll on a starved machine held it for seconds in the long
// chaos form — and the group ended the session; the member rejoined from
// the same offsets, met the same large poll, and lost the next session too.
// While the lock is held past session timeouts, heartbeats go on being
// answered and renewing the lease (a heartbeat's write confirms the one
// before it).
func TestHeartbeatsDoNotWaitForTheInputsLock(t *testing.T) {
	w, _, id := loaded(t, "g-lease-lock")
	w.in.mu.Lock()
	locked := true
	defer func() {
		if locked {
			w.in.mu.Unlock()
		}
	}()
	began := time.Now()
	_, last := w.leased(id)
	renewals := 0
	var lastRenewal time.Time
	// Renewals go on for the whole hold: the last one seen comes after two
	// session timeouts of it, so heartbeats kept being answered throughout.
	ok := testkit.Poll(20*time.Second, func() bool {
		if _, until := w.leased(id); until.After(last) {
			last, renewals, lastRenewal = until, renewals+1, time.Now()
		}
		return renewals >= 3 && lastRenewal.Sub(began) >= 2*w.c.conf.SessionTimeout
	})
	w.in.mu.Unlock()
	locked = false
	require.True(t, ok, "the lease was renewed %d times while the input's lock was held for %v", renewals, time.Since(began))
	_, until := w.leased(id)
	assert.False(t, until.IsZero(), "the partition is still tracked (a lost partition is unleased)")
}
