// This file holds the group-membership lease of what the input writes
// (internal/kafka GroupLease, ARCHITECTURE.md §13.9).

package debezium_txn

import "time"

// leaseIDsLocked are the output partitions of the assignment: the
// connector's partition (every transaction) and each side partition that
// has had a row (snapshot and single_row rows). Nothing is leased while no
// assembler runs or a release has begun.
func (in *Input) leaseIDsLocked() []string {
	if in.asm == nil || in.revoking {
		return nil
	}
	ids := make([]string, 0, 1+len(in.sideEpochs))
	ids = append(ids, in.dbPartition())
	for p := range in.sideEpochs {
		ids = append(ids, p.String())
	}
	return ids
}

// renewLease extends the lease of the assignment's output partitions to
// until: a group request the coordinator answered confirmed the membership.
// A member cut off from the coordinator stops renewing, and the output
// starts no commit of its partitions once the lease is over, before another
// member can own them.
func (in *Input) renewLease(until time.Time) {
	in.mu.Lock()
	ids := in.leaseIDsLocked()
	in.mu.Unlock()
	if len(ids) > 0 {
		in.reg.Renew(ids, until)
	}
}

// leaseNewLocked leases a partition the assignment begins to write (the
// connector's partition at the assignment, a side partition at its first
// row) to the lease's current end; zero while no group request was
// confirmed.
func (in *Input) leaseNewLocked(id string, until time.Time) {
	if !until.IsZero() {
		in.reg.Renew([]string{id}, until)
	}
}
