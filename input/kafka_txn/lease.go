package kafka_txn

import "time"

// The group-membership lease is internal/kafka's GroupLease: its hook sees
// franz-go's group requests, and each confirmed one renews the lease of
// every assigned partition that is not being released (renewLease); an
// assignment is leased from its sync (rebalance.go onAssigned) and a
// released partition's lease is dropped after its fence (release).

// leaseSpan is how long a confirmed membership lets the output start
// commits.
func (in *Input) leaseSpan() time.Duration { return in.lease.Span() }

// renewLease extends the lease of every assigned partition that is not
// being released to until.
func (in *Input) renewLease(until time.Time) {
	in.mu.Lock()
	ids := make([]string, 0, len(in.parts))
	for id, ps := range in.parts {
		if !ps.revoking {
			ids = append(ids, id)
		}
	}
	in.mu.Unlock()
	in.reg.Renew(ids, until)
}
