package kafka

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// LeaseGap is what GroupLease does: heartbeats written every hb renew the
// lease at each write until the previous heartbeat's send + session/2, so
// between two writes the lease is over for LeaseGap(hb, session) — none up
// to a quarter of the session timeout, the whole interval from half of it
// on (HeartbeatBelowSessionMsg).
func TestLeaseGapIsTheLeasesOwnGap(t *testing.T) {
	const session = 40 * time.Second
	for _, hb := range []time.Duration{3 * time.Second, 10 * time.Second, 13 * time.Second, 19 * time.Second, 20 * time.Second, 30 * time.Second} {
		var renewed []time.Time
		l := NewGroupLease(session, func(until time.Time) { renewed = append(renewed, until) })
		base := time.Now().Add(-10 * time.Minute)
		// A heartbeat written at the virtual time base + k·hb: the hook
		// takes now - timeToWrite as its send time.
		writeAt := func(k int) time.Time {
			at := base.Add(time.Duration(k) * hb)
			l.OnBrokerWrite(kgo.BrokerMetadata{}, int16(kmsg.Heartbeat), 0, 0, time.Since(at), nil)
			return at
		}
		l.OnBrokerWrite(kgo.BrokerMetadata{}, int16(kmsg.JoinGroup), 0, 0, 0, nil)
		var at []time.Time
		for k := 0; k < 4; k++ {
			at = append(at, writeAt(k))
		}
		require.Len(t, renewed, 3, "hb %s: each write after the first confirms the one before", hb)
		for i := 0; i+1 < len(renewed); i++ {
			// The lease renewed at write i+1 lasts until renewed[i]; the
			// next renewal comes at write i+2.
			gap := max(at[i+2].Sub(renewed[i]), 0)
			assert.InDelta(t, LeaseGap(hb, session).Seconds(), gap.Seconds(), 0.05, "hb %s", hb)
			if 2*hb >= session {
				assert.Less(t, renewed[i].Sub(at[i+1]), 50*time.Millisecond, "hb %s: the lease is over (give or take the clock between calls) when it is renewed", hb)
			}
		}
	}
	assert.Zero(t, LeaseGap(10*time.Second, 40*time.Second))
	assert.Equal(t, 6*time.Second, LeaseGap(13*time.Second, 40*time.Second))
}

// Halt: from a release of a generation whose assignment was handed over to
// the next join, no write confirms anything — franz-go keeps heartbeating
// while a revoke it began after an errored heartbeat runs, and ignores the
// replies. A release before the assignment was handed over (a cooperative
// member giving back what the new generation moved away, while it
// heartbeats in that generation) halts nothing.
func TestGroupLeaseHaltsUntilTheNextJoin(t *testing.T) {
	var renewed []time.Time
	l := NewGroupLease(10*time.Second, func(until time.Time) { renewed = append(renewed, until) })
	write := func(key kmsg.Key) {
		l.OnBrokerWrite(kgo.BrokerMetadata{}, int16(key), 0, 0, 0, nil)
	}
	write(kmsg.JoinGroup)
	write(kmsg.SyncGroup)
	l.Halt() // before the assignment: a cooperative prerevoke
	until := l.Assigned()
	write(kmsg.Heartbeat)
	require.Len(t, renewed, 1, "a release before the hand-over halts nothing")

	l.Halt()
	for range 3 {
		write(kmsg.Heartbeat)
	}
	assert.Len(t, renewed, 1, "heartbeats written after the release confirm nothing")
	assert.Equal(t, renewed[0], l.Until(), "the lease stays where the release found it")
	assert.False(t, l.Until().Before(until))

	write(kmsg.JoinGroup)
	sync := time.Now()
	write(kmsg.SyncGroup)
	assert.False(t, l.Assigned().Before(sync.Add(l.Span())), "the next generation leases from its sync")
	write(kmsg.Heartbeat)
	assert.Len(t, renewed, 2, "and its heartbeats renew it")
}
