package debezium_txn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// leaseOf is the registry's lease of an output partition of in.
func leaseOf(in *Input, id string) (bool, time.Time) {
	return in.reg.Leased(id, time.Now())
}

// loadedInput is an input of group that has loaded all of w's traffic.
func loadedInput(t *testing.T, w *kworld, group string) *Input {
	t.Helper()
	in, _ := w.newInput(group, "")
	s := newSink(t)
	readUntil(t, in, s, 30*time.Second, w.converged(s))
	return in
}

// sideIDs are the side partitions in has written in this assignment.
func sideIDs(in *Input) []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var ids []string
	for p := range in.sideEpochs {
		ids = append(ids, p.String())
	}
	return ids
}

// While heartbeats get through, the connector's partition and every side
// partition the assignment wrote are leased half a session timeout ahead;
// once heartbeats stop getting through (the member is cut off from the
// coordinator), the lease ends while the member still holds the
// assignment — franz-go has not reported it lost, and the broker may
// already have given it to a standby — so the output stops starting
// commits. A released assignment's lease is dropped.
func TestGroupLeaseFollowsHeartbeats(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, SnapshotOrders: 3, Seed: 21})
	w.produce(10)
	in := loadedInput(t, w, "g-lease")
	db := in.dbPartition()
	sides := sideIDs(in)
	require.NotEmpty(t, sides, "the snapshot wrote side partitions")

	ok, first := leaseOf(in, db)
	require.True(t, ok)
	require.False(t, first.IsZero(), "the assignment is leased")
	assert.LessOrEqual(t, time.Until(first), 2*time.Second, "at most half the session timeout ahead")
	for _, id := range sides {
		ok, until := leaseOf(in, id)
		assert.True(t, ok && !until.IsZero(), "side partition %s is leased", id)
	}
	require.Eventually(t, func() bool {
		ok, until := leaseOf(in, db)
		return ok && until.After(first)
	}, 5*time.Second, 10*time.Millisecond, "heartbeats renew the lease")

	// From now on the coordinator holds every heartbeat without an answer.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	w.cluster.ControlKey(int16(kmsg.Heartbeat), func(kmsg.Request) (kmsg.Response, error, bool) {
		w.cluster.KeepControl()
		w.cluster.SleepControl(func() { <-release })
		return nil, errors.New("cut off"), true
	})
	require.Eventually(t, func() bool {
		ok, _ := leaseOf(in, db)
		return !ok
	}, 5*time.Second, 5*time.Millisecond, "the lease ends while no heartbeat gets through")
	for _, id := range sides {
		ok, _ := leaseOf(in, id)
		assert.False(t, ok, "the lease of side partition %s ends with the connector's", id)
	}
	in.mu.Lock()
	held := in.asm != nil
	in.mu.Unlock()
	assert.True(t, held, "franz-go has not reported the assignment lost yet: only the lease tells the output")
}

// A coordinator that answers heartbeats with an error (the session expired
// meanwhile) never extends the lease: every renewal after it began refusing
// counts from a request sent before. Once the assignment is released its
// lease is dropped.
func TestGroupLeaseIsNotRenewedByARefusedHeartbeat(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, Seed: 22})
	w.produce(5)
	in := loadedInput(t, w, "g-lease-refused")
	db := in.dbPartition()
	genOf := func() (uint64, bool) {
		in.mu.Lock()
		defer in.mu.Unlock()
		return in.gen, in.asm != nil
	}
	require.Eventually(t, func() bool {
		ok, until := leaseOf(in, db)
		return ok && !until.IsZero()
	}, 5*time.Second, 10*time.Millisecond, "the assignment is leased")
	g0, _ := genOf()

	refusing := time.Now()
	w.cluster.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		w.cluster.KeepControl()
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	span := in.lease.Span()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, until := leaseOf(in, db)
		if g, held := genOf(); g != g0 || !held {
			// Lost: the release dropped the lease (or a new generation
			// took it from its own sync).
			in.mu.Lock()
			releasedOnly := in.gen == g0+1 && in.asm == nil
			in.mu.Unlock()
			if releasedOnly {
				ok, until := leaseOf(in, db)
				assert.True(t, ok && until.IsZero(), "a released assignment's lease is dropped (until %v)", until)
			}
			return
		}
		if !until.IsZero() {
			require.False(t, until.Add(-span).After(refusing),
				"the lease was renewed from a heartbeat sent after the coordinator began refusing (until %v, refusing since %v)", until, refusing)
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("franz-go never reported the assignment lost after the coordinator refused its heartbeats")
}

// Closing the input (a revoke) drops the lease of everything it wrote.
func TestGroupLeaseIsDroppedOnRevoke(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, SnapshotOrders: 2, Seed: 23})
	w.produce(5)
	in := loadedInput(t, w, "g-lease-revoke")
	ids := append(sideIDs(in), in.dbPartition())
	for _, id := range ids {
		require.Eventually(t, func() bool {
			ok, until := leaseOf(in, id)
			return ok && !until.IsZero()
		}, 5*time.Second, 10*time.Millisecond, "%s is leased", id)
	}
	require.NoError(t, in.Close(context.Background()))
	for _, id := range ids {
		ok, until := leaseOf(in, id)
		assert.True(t, ok && until.IsZero(), "%s: the lease is dropped after the fence (until %v)", id, until)
	}
}
