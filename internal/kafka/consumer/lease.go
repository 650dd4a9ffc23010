package consumer

import "time"

// renewLease is the hook of the membership lease (kafka.GroupLease): a
// group request the coordinator confirmed extends the lease of every
// claimed output partition that is not being released to until. It runs
// inside franz-go's write of the request, so it takes only leaseMu, never
// the input's lock (see Consumer.leaseMu); a release takes a partition out
// of leased under leaseMu before it drops the partition's lease, so a
// renewal never reaches a partition whose release dropped its lease.
func (c *Consumer) renewLease(until time.Time) {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	if len(c.leased) == 0 {
		return
	}
	ids := make([]string, 0, len(c.leased))
	for id := range c.leased {
		ids = append(ids, id)
	}
	c.reg.Renew(ids, until)
}

// leaseLocked starts renewing id's lease (from until, when not zero);
// release stops it (unleaseLocked).
func (c *Consumer) leaseLocked(id string, until time.Time) {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	c.leased[id] = true
	if !until.IsZero() {
		c.reg.Renew([]string{id}, until)
	}
}

// unleaseLocked stops renewing the leases of ids: their release began.
func (c *Consumer) unleaseLocked(ids []string) {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	for _, id := range ids {
		delete(c.leased, id)
	}
}
