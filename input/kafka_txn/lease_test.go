package kafka_txn

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// While heartbeats get through, the assigned partitions' lease runs half a
// session timeout ahead; once they stop getting through (the member is cut
// off from the coordinator), the lease ends before franz-go reports the
// partitions lost — the time the broker may already have given them to
// another member — and a lost partition's lease is dropped.
func TestGroupLeaseFollowsHeartbeats(t *testing.T) {
	c := newCluster(t, 1)
	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, "g-lease", ""))
	reg := registry.Get(res)
	connect(t, in)
	produce(t, producer(t, c, ""), 0, "a")
	_, ack := readBatch(t, in, 10*time.Second)
	require.NoError(t, ack(t.Context(), nil))
	id := contract.KafkaPartition(testTopic, 0)

	ok, first := reg.Leased(id, time.Now())
	require.True(t, ok)
	require.False(t, first.IsZero(), "the assignment is leased")
	assert.LessOrEqual(t, time.Until(first), 500*time.Millisecond, "at most half the session timeout ahead")
	require.Eventually(t, func() bool {
		ok, until := reg.Leased(id, time.Now())
		return ok && until.After(first)
	}, 5*time.Second, 10*time.Millisecond, "heartbeats renew the lease")

	// From now on the coordinator holds every heartbeat without an answer
	// (a member cut off, or a coordinator too slow to answer): franz-go
	// waits for the reply and reports nothing meanwhile.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c.ControlKey(int16(kmsg.Heartbeat), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-release })
		return nil, errors.New("cut off"), true
	})
	require.Eventually(t, func() bool {
		ok, _ := reg.Leased(id, time.Now())
		return !ok
	}, 5*time.Second, 5*time.Millisecond, "the lease ends while no heartbeat gets through")
	in.mu.Lock()
	_, held := in.parts[id]
	in.mu.Unlock()
	assert.True(t, held, "franz-go has not reported the partition lost yet: only the lease tells the output")
}

// A coordinator that answers a heartbeat with an error (the member's
// session expired meanwhile: UNKNOWN_MEMBER_ID) must not extend the lease:
// franz-go reports the partitions lost only after it handled that reply,
// and a commit started in between would race the partitions' new owner.
// Every renewal of the old assignment after the coordinator started
// refusing counts from a request sent before it did.
func TestGroupLeaseIsNotRenewedByARefusedHeartbeat(t *testing.T) {
	c := newCluster(t, 1)
	res, _ := newResources()
	in := newTestInput(t, res, testYAML(c, "g-lease-refused", ""))
	reg := registry.Get(res)
	connect(t, in)
	produce(t, producer(t, c, ""), 0, "a")
	_, ack := readBatch(t, in, 10*time.Second)
	require.NoError(t, ack(t.Context(), nil))
	id := contract.KafkaPartition(testTopic, 0)
	epochOf := func() (uint64, bool) {
		in.mu.Lock()
		defer in.mu.Unlock()
		ps, ok := in.parts[id]
		if !ok {
			return 0, false
		}
		return ps.epoch, true
	}
	require.Eventually(t, func() bool {
		ok, until := reg.Leased(id, time.Now())
		return ok && !until.IsZero()
	}, 5*time.Second, 10*time.Millisecond, "the assignment is leased")
	e0, ok := epochOf()
	require.True(t, ok)

	refusing := time.Now()
	c.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	span := in.leaseSpan()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		_, until := reg.Leased(id, time.Now())
		e, held := epochOf()
		if !held || e != e0 {
			return // lost (and maybe assigned again in a new generation)
		}
		if !until.IsZero() {
			require.False(t, until.Add(-span).After(refusing),
				"the lease of the old assignment was renewed from a heartbeat sent after the coordinator began refusing (until %v, refusing since %v)", until, refusing)
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("franz-go never reported the partition lost after the coordinator refused its heartbeats")
}
