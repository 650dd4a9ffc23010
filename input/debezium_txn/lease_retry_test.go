package debezium_txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

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
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, Seed: 24})
	w.produce(5)
	in := loadedInput(t, w, "g-lease-retried")
	db := in.dbPartition()
	require.Eventually(t, func() bool {
		ok, until := leaseOf(in, db)
		return ok && !until.IsZero()
	}, 5*time.Second, 10*time.Millisecond, "the assignment is leased")

	refusing := time.Now()
	w.cluster.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		w.cluster.KeepControl()
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp, nil, true
	})
	span := in.lease.Span()
	session := in.conf.SessionTimeout
	genOf := func() uint64 {
		in.mu.Lock()
		defer in.mu.Unlock()
		return in.gen
	}
	// Only this assignment's renewals count: once franz-go gives up on the
	// heartbeat and rejoins, a new sync confirms the membership again.
	g0 := genOf()
	var latest time.Time
	deadline := time.Now().Add(3 * session)
	for time.Now().Before(deadline) && genOf() == g0 {
		if _, until := leaseOf(in, db); until.After(latest) && genOf() == g0 {
			latest = until
		}
		time.Sleep(time.Millisecond)
	}
	// The coordinator may expire the session session_timeout after the
	// last heartbeat it took (sent before refusing); the lease keeps half
	// of it as the margin for a commit started at its end to land. Every
	// renewal past refusing + span eats into that margin (franz-go retries
	// a heartbeat for up to session_timeout, so in the worst case the lease
	// passes the session's end).
	t.Logf("span %v, session %v: the lease reached refusing + %v", span, session, latest.Sub(refusing))
	require.False(t, latest.Add(-span).After(refusing),
		"the lease was renewed from heartbeats sent after the coordinator began refusing them: it reached refusing + %v (span %v: the commit margin shrank by the excess; session_timeout %v, past which another member may own the partitions)", latest.Sub(refusing), span, session)
}
