package registry

import (
	"sync"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// EndFunc reports whether a message, as an input delivers it, ends a
// source transaction of its partition (the last row, an END event, an
// abort): after it, the partition has no open transaction. It is safe for
// concurrent use.
type EndFunc func(msg *service.Message) bool

// Ends carries, from the stream's assembler to the input, where source
// transactions end, so that the input delivers whole ones.
type Ends struct {
	mu sync.Mutex
	// ends is the registered EndFunc; registered counts registrations.
	ends       EndFunc
	registered int
}

// SetTxnEnds is called by an assembler that reads the input's partitions as
// they are (one source stream per Kafka partition) to tell the input where
// source transactions end.
func (e *Ends) SetTxnEnds(fn EndFunc) {
	e.mu.Lock()
	e.ends = fn
	e.registered++
	e.mu.Unlock()
}

// TxnEnds returns the EndFunc of the stream's assembler, or nil when there is
// none, or more than one (then no single one can be trusted for every
// record).
func (e *Ends) TxnEnds() EndFunc {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.registered != 1 {
		return nil
	}
	return e.ends
}
