package debezium_txn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// What this input adds to the shell's lease (internal/kafka/consumer's
// lease tests): the connector's partition is claimed at the assignment and
// each side partition at its first row, and the side partitions follow
// the connector's lease — renewed while heartbeats get through, over once
// they stop getting through although the member still holds the
// assignment.
func TestSidePartitionsFollowTheConnectorsLease(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, SnapshotOrders: 3, Seed: 21})
	w.produce(10)
	in := loadedInput(t, w, "g-lease")
	db := in.dbPartition()
	sides := sideIDs(in)
	require.NotEmpty(t, sides, "the snapshot wrote side partitions")

	ok, first := leaseOf(in, db)
	require.True(t, ok)
	require.False(t, first.IsZero(), "the assignment is leased")
	for _, id := range sides {
		ok, until := leaseOf(in, id)
		assert.True(t, ok && !until.IsZero(), "side partition %s is leased", id)
	}
	require.Eventually(t, func() bool {
		for _, id := range append(sides, db) {
			if ok, until := leaseOf(in, id); !ok || !until.After(first) {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "heartbeats renew every lease")

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

// Closing the input (a revoke) drops the lease of everything it wrote: the
// connector's partition and every side partition.
func TestSidePartitionLeasesAreDroppedOnRevoke(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, SnapshotOrders: 2, Seed: 23})
	w.produce(5)
	in := loadedInput(t, w, "g-lease-revoke")
	ids := append(sideIDs(in), in.dbPartition())
	require.Greater(t, len(ids), 1, "the snapshot wrote side partitions")
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
