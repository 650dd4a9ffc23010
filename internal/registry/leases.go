package registry

import (
	"sync"
	"time"
)

// Leases carries the inputs' group-membership leases to the outputs.
type Leases struct {
	mu sync.Mutex
	// leases holds, per partition of an input that tracks its group
	// membership, until when the membership is certainly still valid.
	leases map[string]time.Time
}

// Renew is called by an input that knows how long its group membership is
// certainly valid: the broker cannot have given partitions to another
// member before until (a successful heartbeat sent at t keeps the session
// alive until at least t + the session timeout). An output must not start a
// commit that contains a partition's rows once its lease is over: the
// partition may have a new owner, which would load the same source
// transactions again (ARCHITECTURE.md §7, the zombie window). A lease only
// moves forward.
func (l *Leases) Renew(partitions []string, until time.Time) {
	l.mu.Lock()
	for _, p := range partitions {
		if cur, ok := l.leases[p]; !ok || until.After(cur) {
			l.leases[p] = until
		}
	}
	l.mu.Unlock()
}

// Unlease forgets the lease of partitions an input released: it no longer
// speaks for them.
func (l *Leases) Unlease(partitions []string) {
	l.mu.Lock()
	for _, p := range partitions {
		delete(l.leases, p)
	}
	l.mu.Unlock()
}

// Leased reports whether a commit of partition's rows may start at now:
// true when no input tracks the partition's lease (an input without group
// membership, or none at all), else whether now is before the lease's end.
// until is the lease's end (zero when none is tracked).
func (l *Leases) Leased(partition string, now time.Time) (ok bool, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	until, tracked := l.leases[partition]
	return !tracked || now.Before(until), until
}
