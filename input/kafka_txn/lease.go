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
func (in *Input) leaseSpan() time.Duration { return in.conf.sessionTimeout / 2 }

// leaseHook renews the lease after every group request the coordinator
// answered.
type leaseHook struct{ in *Input }

var _ kgo.HookBrokerE2E = leaseHook{}

// OnBrokerE2E implements kgo.HookBrokerE2E. The reply's error code is not
// known here: a coordinator that answers "unknown member" makes franz-go
// report the partitions lost at once, which fences them.
func (h leaseHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	switch kmsg.Key(key) {
	case kmsg.Heartbeat, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.ConsumerGroupHeartbeat:
	default:
		return
	}
	if e2e.Err() != nil {
		return
	}
	// The earliest the request can have been sent: the lease counts from
	// then.
	h.in.renewLease(time.Now().Add(-e2e.DurationE2E()))
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
