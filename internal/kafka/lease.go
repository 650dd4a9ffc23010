package kafka

// Home of G71 (ARCHITECTURE.md §11.6): a member cut off from the group coordinator starts no
// commit once another may own its partitions. Main test:
// TestGroupLeaseRenewsOnlyFromConfirmedRequests.

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupLease is the group-membership lease of a consumer input (internal/
// registry Renew, checked by the starrocks_txn output before it starts a
// commit). A member that no longer reaches the group coordinator (a network
// partition, a starved or paused process) keeps its partitions in its own
// eyes until franz-go reports them lost, which can be many seconds after
// the broker expired the session and gave them to another member. Both
// would then commit the same source transactions to StarRocks, which has no
// fencing token. The broker cannot expire the session before
// session_timeout has passed since it received the member's last heartbeat
// (or join, or sync), and it received it after the member sent it: so until
// sent + session_timeout no other member owns the partitions. The output
// starts no commit of a partition whose lease is over; half of
// session_timeout is kept as the margin for that commit to reach StarRocks.
//
// The lease is renewed from the group requests franz-go sends (it is a
// kgo.HookBrokerWrite: add it with kgo.WithHooks). A reply's error code is
// not visible to a hook (BrokerE2E reports only the transport), and a
// coordinator that answers "unknown member" or "illegal generation" must not
// extend a lease: franz-go reports the partitions lost only after it has
// handled that reply, and a commit started in between would race the new
// owner's. So a reply is taken as confirmed only by franz-go's next step:
// its heartbeat loop sends the next heartbeat only after the previous
// heartbeat (or the sync that began the generation) was answered without
// error, and it answers an error by leaving the loop to rejoin. A
// heartbeat's write therefore renews the lease from the send time of the
// request before it; a join starts a new chain; an assignment renews from
// its sync (Assigned), which franz-go hands over only after the sync was
// answered without error. The lease then trails by one heartbeat_interval,
// which heartbeat_interval well below half of session_timeout (the default
// 3 s of 45 s) leaves room for.
//
// One exception: after a heartbeat answered REBALANCE_IN_PROGRESS, franz-go
// revokes (the input's revoke callback) and keeps heartbeating until the
// revoke is done, ignoring the replies — errors, and UNKNOWN_MEMBER_ID once
// the revoke outlasts the rebalance. Those writes confirm nothing, so the
// input's release sequence halts the lease first (Halt): from then until
// the next join no request renews it. Between the errored reply and the
// revoke callback franz-go only waits for the input's assignment callback,
// its poll hand-over and the offset fetch it cancels; a write in that
// moment confirms the errored heartbeat itself, whose send time precedes
// the rebalance's end by rebalance_timeout.
type GroupLease struct {
	span time.Duration
	// renew extends the lease of every partition the input holds and is
	// not releasing to until (called without the lease's lock).
	renew func(until time.Time)

	mu sync.Mutex
	// base is when the last group request the coordinator answered was
	// sent.
	base time.Time
	// groupSent is the send time of the last heartbeat or sync not yet
	// confirmed by the next heartbeat, syncSent that of the generation's
	// sync.
	groupSent, syncSent time.Time
	// handed is set once the generation's assignment was handed over
	// (Assigned); halted from a release of it (Halt) to the next join: no
	// request confirms the membership meanwhile.
	handed, halted bool
}

var _ kgo.HookBrokerWrite = (*GroupLease)(nil)

// NewGroupLease returns the lease of a member with this session timeout;
// renew is the input's: it renews the lease of what it holds in the
// registry.
func NewGroupLease(sessionTimeout time.Duration, renew func(until time.Time)) *GroupLease {
	return &GroupLease{span: sessionTimeout / 2, renew: renew}
}

// Span is how long a confirmed membership lets the output start commits.
func (l *GroupLease) Span() time.Duration { return l.span }

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (l *GroupLease) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, timeToWrite time.Duration, err error) {
	if err != nil {
		return
	}
	// The earliest the broker can have received the request.
	sent := time.Now().Add(-timeToWrite)
	switch kmsg.Key(key) {
	case kmsg.Heartbeat:
		l.requestSent(sent, true)
	case kmsg.ConsumerGroupHeartbeat:
		// Dead code today: franz-go speaks KIP-848 (ConsumerGroupHeartbeat)
		// only with kgo.ServerSideBalancer (or its beta context key) and a
		// sticky or range balancer first in the list; neither input sets
		// the option, and debezium_txn's single-owner balancer is neither.
		// Before it is enabled, the premise above must be checked again:
		// franz-go retries a KIP-848 heartbeat in place after a transport
		// or coordinator error (consumer_group.go, heartbeat), so the next
		// write does not prove that the previous one was answered without
		// error.
		l.requestSent(sent, true)
	case kmsg.SyncGroup:
		l.requestSent(sent, false)
	case kmsg.JoinGroup:
		// A new chain of confirmations: the next heartbeat follows a new
		// generation's sync, not the requests before the join.
		l.mu.Lock()
		l.groupSent, l.syncSent = time.Time{}, time.Time{}
		l.handed, l.halted = false, false
		l.mu.Unlock()
	}
}

// Halt stops renewals until the next join: the input began to release
// partitions of a generation whose assignment was handed over (a revoke or
// a loss ends the generation: franz-go rejoins after it, and may keep
// writing heartbeats whose replies it ignores until the release is done).
// A release before the assignment is handed over is a cooperative member
// giving back what the new generation moved away while it heartbeats in
// that generation, as usual: it halts nothing.
func (l *GroupLease) Halt() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.handed && !l.syncSent.IsZero() {
		return
	}
	l.halted = true
	l.groupSent, l.syncSent = time.Time{}, time.Time{}
}

// requestSent records a heartbeat's or sync's send time; a heartbeat's
// write confirms the request before it, whose send time renews the lease.
func (l *GroupLease) requestSent(sent time.Time, heartbeat bool) {
	l.mu.Lock()
	if l.halted {
		l.mu.Unlock()
		return
	}
	prev := l.groupSent
	l.groupSent = sent
	if !heartbeat {
		l.syncSent, l.handed = sent, false
	}
	var until time.Time
	if heartbeat && !prev.IsZero() {
		if prev.After(l.base) {
			l.base = prev
		}
		until = l.base.Add(l.span)
	}
	l.mu.Unlock()
	if !until.IsZero() {
		l.renew(until)
	}
}

// Assigned is called when franz-go hands over an assignment, which it does
// only after the generation's sync was answered without error: the sync's
// send time renews the lease. It returns the lease's end, for the newly
// assigned partitions (zero while no request was confirmed).
func (l *GroupLease) Assigned() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handed = true
	if l.syncSent.After(l.base) {
		l.base = l.syncSent
	}
	return l.untilLocked()
}

// Until is the lease's end, zero while no request was confirmed: the lease
// of a partition the input begins to write within the assignment.
func (l *GroupLease) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.untilLocked()
}

func (l *GroupLease) untilLocked() time.Time {
	if l.base.IsZero() {
		return time.Time{}
	}
	return l.base.Add(l.span)
}
