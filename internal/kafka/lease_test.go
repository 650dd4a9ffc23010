package kafka

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request renews the lease only once franz-go's next step confirms that
// it was answered without error: a heartbeat by the next heartbeat's
// write, a sync by the assignment (Assigned). A join breaks the chain, and
// a write that failed counts for nothing.
func TestGroupLeaseRenewsOnlyFromConfirmedRequests(t *testing.T) {
	var renewed []time.Time
	l := NewGroupLease(10*time.Second, func(until time.Time) { renewed = append(renewed, until) })
	assert.Equal(t, 5*time.Second, l.Span())
	write := func(key kmsg.Key, err error) time.Time {
		before := time.Now()
		l.OnBrokerWrite(kgo.BrokerMetadata{}, int16(key), 0, 0, 0, err)
		return before
	}

	assert.True(t, l.Assigned().IsZero(), "nothing confirmed yet")
	write(kmsg.JoinGroup, nil)
	sync := write(kmsg.SyncGroup, nil)
	assert.Empty(t, renewed, "a sync alone confirms nothing")
	until := l.Assigned()
	assert.False(t, until.Before(sync.Add(l.Span())), "the assignment leases from its sync")
	assert.Equal(t, until, l.Until())

	hb1 := write(kmsg.Heartbeat, nil)
	assert.Len(t, renewed, 1, "the first heartbeat's write confirms the sync")
	write(kmsg.Heartbeat, errors.New("broken pipe"))
	assert.Len(t, renewed, 1, "a failed write confirms nothing")
	write(kmsg.Heartbeat, nil)
	assert.Len(t, renewed, 2)
	assert.False(t, renewed[1].Before(hb1.Add(l.Span())), "the second heartbeat confirms the first")

	write(kmsg.JoinGroup, nil)
	write(kmsg.Heartbeat, nil)
	assert.Len(t, renewed, 2, "after a join the first heartbeat confirms nothing of before")
}
