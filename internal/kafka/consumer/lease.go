package consumer

import "time"

// renewLease is the hook of the membership lease (kafka.GroupLease): a
// group request the coordinator confirmed extends the lease of every
// claimed output partition that is not being released to until. The
// renewal is made under the input's lock, so that it never reaches a
// partition whose release dropped its lease.
func (c *Consumer) renewLease(until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.claims))
	for id, cl := range c.claims {
		if !cl.releasing {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		c.reg.Renew(ids, until)
	}
}
