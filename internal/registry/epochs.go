package registry

import (
	"sort"
	"sync"
)

// maxUnclaimed bounds how many distinct unclaimed partition keys are
// reported (and remembered): a misconfiguration that derives the key from
// the data must not grow the registry without end.
const maxUnclaimed = 256

// maxClaimedListed bounds how many claimed keys an unclaimed report lists.
const maxClaimedListed = 8

// Epochs numbers the assignments of each partition (inputs → assemblers and
// outputs) and finds the partition keys used downstream that no input
// assigned.
type Epochs struct {
	watches *watches

	mu sync.Mutex
	// epochs counts the assignments of each partition; fenced holds the
	// epoch that was current when the partition was last fenced.
	epochs map[string]uint64
	fenced map[string]uint64
	// unclaimed holds the partition keys reported unclaimed (at most
	// maxUnclaimed).
	unclaimed map[string]struct{}
}

func newEpochs(w *watches) *Epochs {
	return &Epochs{watches: w, epochs: map[string]uint64{}, fenced: map[string]uint64{}, unclaimed: map[string]struct{}{}}
}

// Assign is called by an input when it is assigned a partition: it starts a
// new assignment epoch of the partition and returns it (1 for the first
// assignment). The input stamps every message of the assignment with it
// (contract.KeyPartitionEpoch), so that a message of an older assignment
// that reaches the assembler or the output late is recognised as stale.
func (e *Epochs) Assign(partition string) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.epochs[partition]++
	return e.epochs[partition]
}

// Epoch returns the current assignment epoch of a partition (0: never
// assigned).
func (e *Epochs) Epoch(partition string) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.epochs[partition]
}

// Stale reports whether a message stamped with epoch belongs to an
// assignment of partition that is over: an older epoch than the current one,
// or the current one once it was fenced. Such a message must never be
// applied: the fence dropped the rest of its source transaction, and the
// partition's next owner reads it again.
//
// A message that carries an epoch (an input stamped it) under a key no input
// assigned is reported to the watches.
func (e *Epochs) Stale(partition string, epoch uint64) bool {
	e.mu.Lock()
	stale := epoch < e.epochs[partition]
	if f, ok := e.fenced[partition]; ok && epoch <= f {
		stale = true
	}
	e.mu.Unlock()
	if epoch > 0 {
		e.checkClaimed(partition)
	}
	return stale
}

// markFenced records the current epoch of partition as fenced: a message of
// it that arrives during or after the fence is stale.
func (e *Epochs) markFenced(partition string) {
	e.mu.Lock()
	if cur := e.epochs[partition]; cur > 0 {
		e.fenced[partition] = cur
	}
	e.mu.Unlock()
}

// checkClaimed reports key to the watches, once, when inputs assigned
// partitions but never key: the key was changed between the input and the
// output (the assembler's partition field, or a mapping), so the output's
// committed-through offsets and its fences never meet the input's
// partitions.
func (e *Epochs) checkClaimed(key string) {
	e.mu.Lock()
	if len(e.epochs) == 0 || e.epochs[key] > 0 {
		e.mu.Unlock()
		return
	}
	if _, done := e.unclaimed[key]; done || len(e.unclaimed) >= maxUnclaimed {
		e.mu.Unlock()
		return
	}
	e.unclaimed[key] = struct{}{}
	claimed := make([]string, 0, len(e.epochs))
	for k := range e.epochs {
		claimed = append(claimed, k)
	}
	e.mu.Unlock()
	sort.Strings(claimed)
	if len(claimed) > maxClaimedListed {
		claimed = claimed[:maxClaimedListed]
	}
	e.watches.unclaimed(Unclaimed{Key: key, Claimed: claimed})
}
