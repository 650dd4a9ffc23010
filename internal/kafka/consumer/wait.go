package consumer

import (
	"time"
)

// maxAssignmentWaitLog bounds how long a member waits for an assignment
// before it says so.
const maxAssignmentWaitLog = 10 * time.Second

// assignmentWait is a wait for an assignment: from Connect, or from a
// release that left the member nothing, to franz-go's next assignment.
type assignmentWait struct {
	since time.Time
	timer *time.Timer
}

// waitLogAfter is how long a wait for an assignment lasts before it is
// logged: a quarter of session_timeout, at most maxAssignmentWaitLog. A
// rebalance among live members takes a few heartbeats; a member that
// stopped without leaving the group (killed) holds its partitions, and
// holds up every join, until its session expires — up to session_timeout
// after it stopped — and nothing is read meanwhile.
func (c *Consumer) waitLogAfter() time.Duration {
	return min(c.conf.SessionTimeout/4, maxAssignmentWaitLog)
}

// waitBeginLocked starts a wait for an assignment, logged once if it lasts
// waitLogAfter.
func (c *Consumer) waitBeginLocked() {
	if c.closed || !c.wait.since.IsZero() {
		return
	}
	since := time.Now()
	c.wait.since = since
	c.wait.timer = c.afterFunc(c.waitLogAfter(), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.wait.since != since || c.closed {
			return
		}
		c.log.Warnf("No assignment from consumer_group %q after waiting %s: a previous member may hold the partitions until session_timeout (%s) expires (a member that stopped without leaving the group, e.g. killed, keeps them that long, and nothing is read meanwhile)",
			c.conf.ConsumerGroup, time.Since(since).Round(time.Millisecond), c.conf.SessionTimeout)
	})
}

// waitEndLocked ends the wait: an assignment arrived, or the input closes.
func (c *Consumer) waitEndLocked() {
	if c.wait.timer != nil {
		c.wait.timer.Stop()
	}
	c.wait = assignmentWait{}
}
