package registry

import (
	"context"
	"errors"
	"sync"
)

// FenceFunc drops everything uncommitted of a partition and returns once no
// commit that could still contain the partition's rows is in flight (or ctx is
// done).
type FenceFunc func(ctx context.Context, partition string) error

// Fences carries an input's release of a partition to the outputs (their
// fence functions) and the assemblers (their resets).
type Fences struct {
	epochs  *Epochs
	offsets *Offsets

	mu        sync.Mutex
	fencers   []FenceFunc
	resetters []func(partition string)
}

// AddFencer registers an output's fence function.
func (f *Fences) AddFencer(fn FenceFunc) {
	f.mu.Lock()
	f.fencers = append(f.fencers, fn)
	f.mu.Unlock()
}

// OnFence registers a callback (the assembler's reset) that runs whenever a
// partition is fenced.
func (f *Fences) OnFence(fn func(partition string)) {
	f.mu.Lock()
	f.resetters = append(f.resetters, fn)
	f.mu.Unlock()
}

// Fence is called by an input that lost or gave up a partition, without
// any lock of its own (the fencers call into the outputs): every output
// drops the partition's uncommitted rows and releases what it held for it,
// and every assembler forgets the partition's open transaction. The
// partition's current epoch is recorded as fenced first, so a message of it
// that arrives during or after the fence is stale; its committed-through
// offset is forgotten last.
func (f *Fences) Fence(ctx context.Context, partition string) error {
	f.epochs.markFenced(partition)
	f.mu.Lock()
	fencers := append([]FenceFunc{}, f.fencers...)
	resetters := append([]func(string){}, f.resetters...)
	f.mu.Unlock()
	var errs []error
	for _, fn := range fencers {
		if err := fn(ctx, partition); err != nil {
			errs = append(errs, err)
		}
	}
	for _, fn := range resetters {
		fn(partition)
	}
	f.offsets.Forget(partition)
	return errors.Join(errs...)
}
