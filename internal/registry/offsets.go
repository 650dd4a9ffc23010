package registry

import (
	"context"
	"sync"
)

// ProgressFunc reads the durable progress of a partition (exactly-once mode):
// the source offset through which whole source transactions are committed.
type ProgressFunc func(ctx context.Context, partition string) (offset int64, ok bool, err error)

// Offsets carries what the outputs know to the inputs: committed-through
// offsets, whether an output publishes them, and the progress reader.
type Offsets struct {
	watches *watches
	epochs  *Epochs

	mu        sync.Mutex
	committed map[string]int64
	tracking  bool
	progress  ProgressFunc
}

func newOffsets(w *watches, e *Epochs) *Offsets {
	return &Offsets{watches: w, epochs: e, committed: map[string]int64{}}
}

// EnableTracking is called by an output that will publish committed-through
// offsets. From then on an input must commit only those.
func (o *Offsets) EnableTracking() {
	o.mu.Lock()
	o.tracking = true
	o.mu.Unlock()
}

// Tracking reports whether an output publishes committed-through offsets.
func (o *Offsets) Tracking() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tracking
}

// PublishCommitted records that every source transaction of partition whose
// END offset is <= offset is committed (or was dead-lettered or abandoned).
// Offsets only move forward. It only records, here and in each input's
// Watch, which the input reads when it wants — nothing of an input runs
// here, so the output may publish under its own lock.
//
// A partition no input ever assigned, published while an input has assigned
// others, is reported to the watches (Epochs): its offsets reach no input.
func (o *Offsets) PublishCommitted(partition string, offset int64) {
	o.mu.Lock()
	moved := false
	if cur, ok := o.committed[partition]; !ok || offset > cur {
		o.committed[partition] = offset
		moved = true
	}
	o.mu.Unlock()
	o.epochs.checkClaimed(partition)
	if moved {
		o.watches.moved(partition, offset)
	}
}

// Committed returns the committed-through offset of a partition.
func (o *Offsets) Committed(partition string) (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.committed[partition]
	return v, ok
}

// Forget drops the committed-through offset of a partition, so that a new
// assignment starts from what the new owner publishes.
func (o *Offsets) Forget(partition string) {
	o.mu.Lock()
	delete(o.committed, partition)
	o.mu.Unlock()
}

// SetProgress registers the exactly-once progress reader of an output.
func (o *Offsets) SetProgress(fn ProgressFunc) {
	o.mu.Lock()
	o.progress = fn
	o.mu.Unlock()
}

// Progress reads a partition's durable progress, if an output provides it.
// The reader runs without any registry lock: an input calls it without its
// own.
func (o *Offsets) Progress(ctx context.Context, partition string) (int64, bool, error) {
	o.mu.Lock()
	fn := o.progress
	o.mu.Unlock()
	if fn == nil {
		return 0, false, nil
	}
	return fn(ctx, partition)
}

// Watch returns a new watch: what an input learns from the outputs and
// assemblers, pulled when it is signalled. Close it when the input closes.
func (o *Offsets) Watch() *Watch { return o.watches.add() }
