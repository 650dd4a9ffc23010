package debezium_txn

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func balance(t *testing.T, owned map[string]map[string][]int32, ids ...string) map[string]map[string][]int32 {
	t.Helper()
	topics := []string{"db.transaction", "db.t.a", "db.t.b"}
	var members []kmsg.JoinGroupResponseMember
	for _, id := range ids {
		b := singleOwnerBalancer{owned: func() map[string][]int32 { return owned[id] }}
		m := kmsg.NewJoinGroupResponseMember()
		m.MemberID = id
		m.ProtocolMetadata = b.JoinGroupMetadata(topics, nil, 3)
		members = append(members, m)
	}
	gb, _, err := singleOwnerBalancer{}.MemberBalancer(members)
	require.NoError(t, err)
	into, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(map[string]int32{"db.transaction": 1, "db.t.a": 3, "db.t.b": 2})
	require.NoError(t, err)
	plan := into.(*kgo.BalancePlan)
	return plan.AsMemberIDMap()
}

// Every partition goes to one member: the one that owned the most before
// (an eager client forgets its assignment at a rejoin, the balancer asks
// the input), else the first member; the others get nothing.
func TestSingleOwnerBalancer(t *testing.T) {
	all := map[string][]int32{"db.transaction": {0}, "db.t.a": {0, 1, 2}, "db.t.b": {0, 1}}
	got := balance(t, nil, "m1", "m2", "m3")
	assert.Equal(t, all, got["m1"])
	assert.Empty(t, got["m2"])
	assert.Empty(t, got["m3"])
	got = balance(t, map[string]map[string][]int32{"m3": all}, "m1", "m2", "m3")
	assert.Equal(t, all, got["m3"], "the owner keeps its partitions when a member joins")
	assert.Empty(t, got["m1"])
	assert.Equal(t, balancerProtocol, singleOwnerBalancer{}.ProtocolName())
	assert.False(t, singleOwnerBalancer{}.IsCooperative(), "every rebalance must start from committed offsets")
}
