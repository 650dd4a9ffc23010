// Package registry is the small in-process meeting point of the plugins of one
// Benthos stream (ARCHITECTURE.md §4.6). None of the plugins imports another:
// they all find the same Registry through service.Resources. It is split by
// direction, each part with its own lock, so that no plugin ever runs
// another's code under its own lock:
//
//   - Offsets, from the outputs to the inputs: the offset through which
//     StarRocks has committed whole source transactions of a partition
//     (committed-through), whether an output publishes it, and the
//     exactly-once progress reader. The starrocks_txn output only records a
//     value; an input pulls what moved from its Watch.
//   - Fences, from the inputs to the outputs and assemblers: a partition the
//     input lost or gave up is dropped from every cycle, its calls released
//     and its open transaction forgotten.
//   - Epochs, from the inputs to the assemblers and outputs: each assignment
//     of a partition is numbered and stamped on its messages, so that a
//     message of an assignment that is over is never applied; a partition
//     key used downstream that no input assigned is reported to the inputs'
//     watches.
//   - Leases, from the inputs to the outputs: until when an input's group
//     membership is certainly valid for a partition.
//   - Ends, from the assembler to the input: which records end a source
//     transaction, so that the input delivers whole ones.
package registry

import (
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

// Registry is the registry of one stream: its parts, each safe for
// concurrent use. A part's lock is taken alone (a Watch's lock after it,
// never the other way), and no part calls a plugin with it held.
type Registry struct {
	*Offsets
	*Fences
	*Epochs
	*Leases
	*Ends
}

// New returns an empty registry.
func New() *Registry {
	w := &watches{}
	e := newEpochs(w)
	o := newOffsets(w, e)
	return &Registry{
		Offsets: o,
		Fences:  &Fences{epochs: e, offsets: o},
		Epochs:  e,
		Leases:  &Leases{leases: map[string]time.Time{}},
		Ends:    &Ends{},
	}
}
