package debezium_txn

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// balancerProtocol is the group protocol of the input's balancer. Members of
// a group must share one protocol, so a group used by debezium_txn cannot be
// shared with other consumers by mistake: their JoinGroup is refused.
const balancerProtocol = "debezium-txn-single"

// singleOwnerBalancer is an eager group balancer that gives every partition
// of the subscription to one member (ARCHITECTURE.md §13.1): a Debezium
// transaction can only be assembled where all of its partitions are read. The
// member that owned the most partitions keeps them; a new group's first
// member (by member id) gets them. The others get nothing: hot standbys.
//
// An eager client forgets its assignment before it rejoins, so the balancer
// asks owned for what the member held last (kept by the input until a loss).
type singleOwnerBalancer struct {
	owned func() map[string][]int32
}

var _ kgo.GroupBalancer = singleOwnerBalancer{}

func (singleOwnerBalancer) ProtocolName() string { return balancerProtocol }

// IsCooperative is false: every rebalance revokes every partition, so the
// input starts each assignment from committed offsets with nothing buffered.
func (singleOwnerBalancer) IsCooperative() bool { return false }

func (b singleOwnerBalancer) JoinGroupMetadata(interests []string, current map[string][]int32, generation int32) []byte {
	if len(current) == 0 && b.owned != nil {
		current = b.owned()
	}
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 2
	meta.Topics = interests
	meta.Generation = generation
	topics := make([]string, 0, len(current))
	for t := range current {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic = t
		op.Partitions = current[t]
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	return meta.AppendTo(nil)
}

func (singleOwnerBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return kgo.ParseConsumerSyncAssignment(assignment)
}

func (b singleOwnerBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	if err != nil {
		return nil, nil, err
	}
	return cb, cb.MemberTopics(), nil
}

// Balance gives every partition of every topic the owner subscribes to to
// the owner.
func (singleOwnerBalancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	var owner *kmsg.JoinGroupResponseMember
	var ownerMeta *kmsg.ConsumerMemberMetadata
	best := -1
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		n := 0
		for _, op := range meta.OwnedPartitions {
			n += len(op.Partitions)
		}
		if n > best {
			owner, ownerMeta, best = m, meta, n
		}
	})
	plan := cb.NewPlan()
	if owner == nil {
		return plan
	}
	for _, t := range ownerMeta.Topics {
		n, ok := topics[t]
		if !ok {
			continue
		}
		parts := make([]int32, n)
		for i := range parts {
			parts[i] = int32(i)
		}
		plan.AddPartitions(owner, t, parts)
	}
	return plan
}
