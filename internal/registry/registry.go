// Package registry is the small in-process meeting point of the plugins of one
// Benthos stream (ARCHITECTURE.md §4.6). The starrocks_txn output publishes, per
// source partition, the offset through which StarRocks has committed whole
// source transactions, and offers to fence a partition; the kafka_txn input
// commits only those offsets, fences the partitions it loses and numbers each
// assignment of a partition (its epoch, stamped on the messages); the
// txn_assembler resets a fenced partition, and the assembler and the output
// drop messages of an assignment that is over; the assembler also tells the
// input which records end a source transaction, so that the input delivers
// whole ones (TxnEnds). None of the plugins imports another: they all find
// the same Registry through service.Resources.
package registry

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

type resourceKey struct{}

// Get returns the registry shared by every plugin built from res.
func Get(res *service.Resources) *Registry {
	if res == nil {
		return New()
	}
	v, _ := res.GetOrSetGeneric(resourceKey{}, New())
	return v.(*Registry)
}

// FenceFunc drops everything uncommitted of a partition and returns once no
// commit that could still contain the partition's rows is in flight (or ctx is
// done).
type FenceFunc func(ctx context.Context, partition string) error

// ProgressFunc reads the durable progress of a partition (exactly-once mode):
// the source offset through which whole source transactions are committed.
type ProgressFunc func(ctx context.Context, partition string) (offset int64, ok bool, err error)

// Registry is safe for concurrent use.
type Registry struct {
	mu        sync.Mutex
	committed map[string]int64
	tracking  bool
	fencers   []FenceFunc
	resetters []func(partition string)
	watchers  []func(partition string, offset int64)
	progress  ProgressFunc
	// epochs counts the assignments of each partition; fenced holds the
	// epoch that was current when the partition was last fenced.
	epochs map[string]uint64
	fenced map[string]uint64
	// unclaimed holds the partition keys reported to the unclaimed
	// watchers (at most maxUnclaimed).
	unclaimed         map[string]struct{}
	unclaimedWatchers []func(key string, claimed []string)
	// ends is the registered EndFunc; endsRegistered counts registrations.
	ends           EndFunc
	endsRegistered int
	// leases holds, per partition of an input that tracks its group
	// membership, until when the membership is certainly still valid.
	leases map[string]time.Time
}

// EndFunc reports whether a message, as an input delivers it, ends a
// source transaction of its partition (the last row, an END event, an
// abort): after it, the partition has no open transaction. It is safe for
// concurrent use.
type EndFunc func(msg *service.Message) bool

// SetTxnEnds is called by an assembler that reads the input's partitions as
// they are (one source stream per Kafka partition) to tell the input where
// source transactions end.
func (r *Registry) SetTxnEnds(fn EndFunc) {
	r.mu.Lock()
	r.ends = fn
	r.endsRegistered++
	r.mu.Unlock()
}

// TxnEnds returns the EndFunc of the stream's assembler, or nil when there is
// none, or more than one (then no single one can be trusted for every
// record).
func (r *Registry) TxnEnds() EndFunc {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.endsRegistered != 1 {
		return nil
	}
	return r.ends
}

// maxUnclaimed bounds how many distinct unclaimed partition keys are
// reported (and remembered): a misconfiguration that derives the key from
// the data must not grow the registry without end.
const maxUnclaimed = 256

// maxClaimedListed bounds how many claimed keys an unclaimed report lists.
const maxClaimedListed = 8

// New returns an empty registry.
func New() *Registry {
	return &Registry{
		committed: map[string]int64{},
		epochs:    map[string]uint64{},
		fenced:    map[string]uint64{},
		unclaimed: map[string]struct{}{},
		leases:    map[string]time.Time{},
	}
}

// EnableTracking is called by an output that will publish committed-through
// offsets. From then on an input must commit only those.
func (r *Registry) EnableTracking() {
	r.mu.Lock()
	r.tracking = true
	r.mu.Unlock()
}

// Tracking reports whether an output publishes committed-through offsets.
func (r *Registry) Tracking() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tracking
}

// PublishCommitted records that every source transaction of partition whose
// END offset is <= offset is committed (or was dead-lettered or abandoned).
// Offsets only move forward.
//
// A partition no input ever assigned, published while an input has assigned
// others, is reported to the OnUnclaimed watchers: its offsets reach no
// input.
func (r *Registry) PublishCommitted(partition string, offset int64) {
	r.mu.Lock()
	report := r.checkClaimedLocked(partition)
	if cur, ok := r.committed[partition]; ok && cur >= offset {
		r.mu.Unlock()
		report()
		return
	}
	r.committed[partition] = offset
	watchers := append([]func(string, int64){}, r.watchers...)
	r.mu.Unlock()
	report()
	for _, w := range watchers {
		w(partition, offset)
	}
}

// OnUnclaimed registers a callback for partition keys that the contract
// uses (starrocks_partition, seen by the assembler or the output, or
// published by the output) but that no input ever assigned, while inputs
// have assigned others: the key was changed between the input and the
// output (the assembler's partition field, or a mapping), so the output's
// committed-through offsets and its fences never meet the input's
// partitions. fn gets the key and up to eight claimed keys, sorted; it is
// called once per key (for at most 256 keys), never under the registry's
// lock, and must not block.
func (r *Registry) OnUnclaimed(fn func(key string, claimed []string)) {
	r.mu.Lock()
	r.unclaimedWatchers = append(r.unclaimedWatchers, fn)
	r.mu.Unlock()
}

// checkClaimedLocked returns the report to make, after the lock is
// released, when key is unclaimed and not reported yet; otherwise a no-op.
func (r *Registry) checkClaimedLocked(key string) func() {
	if len(r.epochs) == 0 || r.epochs[key] > 0 {
		return func() {}
	}
	if _, done := r.unclaimed[key]; done || len(r.unclaimed) >= maxUnclaimed {
		return func() {}
	}
	r.unclaimed[key] = struct{}{}
	claimed := make([]string, 0, len(r.epochs))
	for k := range r.epochs {
		claimed = append(claimed, k)
	}
	sort.Strings(claimed)
	if len(claimed) > maxClaimedListed {
		claimed = claimed[:maxClaimedListed]
	}
	watchers := append([]func(string, []string){}, r.unclaimedWatchers...)
	return func() {
		for _, w := range watchers {
			w(key, claimed)
		}
	}
}

// Committed returns the committed-through offset of a partition.
func (r *Registry) Committed(partition string) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.committed[partition]
	return v, ok
}

// Forget drops the committed-through offset of a partition, so that a new
// assignment starts from what the new owner publishes.
func (r *Registry) Forget(partition string) {
	r.mu.Lock()
	delete(r.committed, partition)
	r.mu.Unlock()
}

// OnCommitted registers a callback for every forward move of a partition's
// committed-through offset. Callbacks must not block.
func (r *Registry) OnCommitted(fn func(partition string, offset int64)) {
	r.mu.Lock()
	r.watchers = append(r.watchers, fn)
	r.mu.Unlock()
}

// AddFencer registers an output's fence function.
func (r *Registry) AddFencer(fn FenceFunc) {
	r.mu.Lock()
	r.fencers = append(r.fencers, fn)
	r.mu.Unlock()
}

// OnFence registers a callback (the assembler's reset) that runs whenever a
// partition is fenced.
func (r *Registry) OnFence(fn func(partition string)) {
	r.mu.Lock()
	r.resetters = append(r.resetters, fn)
	r.mu.Unlock()
}

// Assign is called by an input when it is assigned a partition: it starts a
// new assignment epoch of the partition and returns it (1 for the first
// assignment). The input stamps every message of the assignment with it
// (contract.KeyPartitionEpoch), so that a message of an older assignment
// that reaches the assembler or the output late is recognised as stale.
func (r *Registry) Assign(partition string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.epochs[partition]++
	return r.epochs[partition]
}

// Epoch returns the current assignment epoch of a partition (0: never
// assigned).
func (r *Registry) Epoch(partition string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.epochs[partition]
}

// Stale reports whether a message stamped with epoch belongs to an
// assignment of partition that is over: an older epoch than the current one,
// or the current one once it was fenced. Such a message must never be
// applied: the fence dropped the rest of its source transaction, and the
// partition's next owner reads it again.
//
// A message that carries an epoch (an input stamped it) under a key no input
// assigned is reported to the OnUnclaimed watchers.
func (r *Registry) Stale(partition string, epoch uint64) bool {
	r.mu.Lock()
	report := func() {}
	if epoch > 0 {
		report = r.checkClaimedLocked(partition)
	}
	stale := epoch < r.epochs[partition]
	if f, ok := r.fenced[partition]; ok && epoch <= f {
		stale = true
	}
	r.mu.Unlock()
	report()
	return stale
}

// Fence is called by an input that lost or gave up a partition: every output
// drops the partition's uncommitted rows and releases what it held for it,
// and every assembler forgets the partition's open transaction. The
// partition's current epoch is recorded as fenced first, so a message of it
// that arrives during or after the fence is stale.
func (r *Registry) Fence(ctx context.Context, partition string) error {
	r.mu.Lock()
	if e := r.epochs[partition]; e > 0 {
		r.fenced[partition] = e
	}
	fencers := append([]FenceFunc{}, r.fencers...)
	resetters := append([]func(string){}, r.resetters...)
	r.mu.Unlock()
	var errs []error
	for _, f := range fencers {
		if err := f(ctx, partition); err != nil {
			errs = append(errs, err)
		}
	}
	for _, fn := range resetters {
		fn(partition)
	}
	r.Forget(partition)
	return errors.Join(errs...)
}

// SetProgress registers the exactly-once progress reader of an output.
func (r *Registry) SetProgress(fn ProgressFunc) {
	r.mu.Lock()
	r.progress = fn
	r.mu.Unlock()
}

// Progress reads a partition's durable progress, if an output provides it.
func (r *Registry) Progress(ctx context.Context, partition string) (int64, bool, error) {
	r.mu.Lock()
	fn := r.progress
	r.mu.Unlock()
	if fn == nil {
		return 0, false, nil
	}
	return fn(ctx, partition)
}

// Renew is called by an input that knows how long its group membership is
// certainly valid: the broker cannot have given partitions to another
// member before until (a successful heartbeat sent at t keeps the session
// alive until at least t + the session timeout). An output must not start a
// commit that contains a partition's rows once its lease is over: the
// partition may have a new owner, which would load the same source
// transactions again (ARCHITECTURE.md §7, the zombie window). A lease only
// moves forward.
func (r *Registry) Renew(partitions []string, until time.Time) {
	r.mu.Lock()
	for _, p := range partitions {
		if cur, ok := r.leases[p]; !ok || until.After(cur) {
			r.leases[p] = until
		}
	}
	r.mu.Unlock()
}

// Unlease forgets the lease of partitions an input released: it no longer
// speaks for them.
func (r *Registry) Unlease(partitions []string) {
	r.mu.Lock()
	for _, p := range partitions {
		delete(r.leases, p)
	}
	r.mu.Unlock()
}

// Leased reports whether a commit of partition's rows may start at now:
// true when no input tracks the partition's lease (an input without group
// membership, or none at all), else whether now is before the lease's end.
// until is the lease's end (zero when none is tracked).
func (r *Registry) Leased(partition string, now time.Time) (ok bool, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, tracked := r.leases[partition]
	return !tracked || now.Before(until), until
}
