package kafka_txn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group-membership lease (internal/registry Renew): a member that no
// longer reaches the group coordinator (a network partition, a starved or
// paused process) keeps its partitions in its own eyes until franz-go
// reports them lost, which can be many seconds after the broker expired the
// session and gave them to another member. Both would then commit the same
// source transactions to StarRocks, which has no fencing token. The broker
// cannot expire the session before session_timeout has passed since it
// received the member's last heartbeat (or join, or sync), and it received
// it after the member sent it: so until sent + session_timeout no other
// member owns the partitions. The output starts no commit of a partition
// whose lease is over; half of session_timeout is kept as the margin for
// that commit to reach StarRocks.

// leaseSpan is how long a confirmed membership lets the output start
// commits.
func (in *Input) leaseSpan() time.Duration { return in.conf.SessionTimeout / 2 }

// leaseHook renews the lease from the group requests franz-go sends. A
// reply's error code is not visible to a hook (BrokerE2E reports only the
// transport), and a coordinator that answers "unknown member" or "illegal
// generation" must not extend a lease: franz-go reports the partitions lost
// only after it has handled that reply, and a commit started in between
// would race the new owner's. So a reply is taken as confirmed only by
// franz-go's next step: its heartbeat loop sends the next heartbeat only
// after the previous heartbeat (or the sync that began the generation) was
// answered without error, and it answers an error by leaving the loop to
// rejoin. A heartbeat's write therefore renews the lease from the send time
// of the request before it; a join starts a new chain; the assignment
// renews from its sync (rebalance.go onAssigned), which franz-go hands over
// only after the sync was answered without error. The lease then trails by
// one heartbeat_interval, which heartbeat_interval well below half of
// session_timeout (the default 3 s of 45 s) leaves room for.
type leaseHook struct{ in *Input }

var _ kgo.HookBrokerWrite = leaseHook{}

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (h leaseHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, timeToWrite time.Duration, err error) {
	if err != nil {
		return
	}
	// The earliest the broker can have received the request.
	sent := time.Now().Add(-timeToWrite)
	switch kmsg.Key(key) {
	case kmsg.Heartbeat, kmsg.ConsumerGroupHeartbeat:
		h.in.groupRequestSent(sent, true)
	case kmsg.SyncGroup:
		h.in.groupRequestSent(sent, false)
	case kmsg.JoinGroup:
		h.in.groupJoining()
	}
}

// groupRequestSent records a heartbeat's or sync's send time; a heartbeat's
// write confirms the request before it, whose send time renews the lease.
func (in *Input) groupRequestSent(sent time.Time, heartbeat bool) {
	in.mu.Lock()
	prev := in.groupSent
	in.groupSent = sent
	if !heartbeat {
		in.syncSent = sent
	}
	in.mu.Unlock()
	if heartbeat && !prev.IsZero() {
		in.renewLease(prev)
	}
}

// groupJoining breaks the chain of confirmations: the next heartbeat follows
// a new generation's sync, not the requests before the join.
func (in *Input) groupJoining() {
	in.mu.Lock()
	in.groupSent, in.syncSent = time.Time{}, time.Time{}
	in.mu.Unlock()
}

// renewLease extends the lease of every assigned partition that is not
// being released to sent + leaseSpan.
func (in *Input) renewLease(sent time.Time) {
	in.mu.Lock()
	if sent.After(in.leaseBase) {
		in.leaseBase = sent
	}
	ids := make([]string, 0, len(in.parts))
	for id, ps := range in.parts {
		if !ps.revoking {
			ids = append(ids, id)
		}
	}
	until := in.leaseBase.Add(in.leaseSpan())
	in.mu.Unlock()
	in.reg.Renew(ids, until)
}
