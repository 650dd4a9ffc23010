package registry

import (
	"slices"
	"sync"
)

// Unclaimed is a partition key used downstream (starrocks_partition, seen
// by the assembler or the output, or published by the output) that no
// input assigned while inputs assigned others, with up to eight of the
// claimed keys, sorted.
type Unclaimed struct {
	Key     string
	Claimed []string
}

// Watch is an input's mailbox in the registry: the committed-through
// offsets published and the unclaimed partition keys found since the input
// last took them. The registry fills it without calling the input (an
// output publishes under its own lock), and signals C; the input takes
// what is there, with its own lock, when it wants.
type Watch struct {
	list *watches
	c    chan struct{}

	mu        sync.Mutex
	committed map[string]int64
	unclaimed []Unclaimed
}

// C is ready when something arrived since the last Take.
func (w *Watch) C() <-chan struct{} { return w.c }

// Take returns and clears what arrived: per partition the newest
// committed-through offset published since the last Take (an offset only
// moves forward, so the newest is all there is to know), and the unclaimed
// keys, each reported once by the registry.
func (w *Watch) Take() (committed map[string]int64, unclaimed []Unclaimed) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.committed) > 0 {
		committed, w.committed = w.committed, map[string]int64{}
	}
	unclaimed, w.unclaimed = w.unclaimed, nil
	return committed, unclaimed
}

// Drop forgets what arrived for partition and was not taken: the input
// starts a new assignment of it, and what was published before belongs to
// the one before.
func (w *Watch) Drop(partition string) {
	w.mu.Lock()
	delete(w.committed, partition)
	w.mu.Unlock()
}

// Close removes the watch from the registry.
func (w *Watch) Close() { w.list.remove(w) }

// signal makes C ready, if it is not.
func (w *Watch) signal() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// watches are the registry's watches.
type watches struct {
	mu   sync.Mutex
	list []*Watch
}

func (ws *watches) add() *Watch {
	w := &Watch{list: ws, c: make(chan struct{}, 1), committed: map[string]int64{}}
	ws.mu.Lock()
	ws.list = append(ws.list, w)
	ws.mu.Unlock()
	return w
}

func (ws *watches) remove(w *Watch) {
	ws.mu.Lock()
	ws.list = slices.DeleteFunc(ws.list, func(x *Watch) bool { return x == w })
	ws.mu.Unlock()
}

// moved records in every watch that partition's committed-through offset
// moved forward to offset.
func (ws *watches) moved(partition string, offset int64) {
	ws.each(func(w *Watch) { w.committed[partition] = offset })
}

// unclaimed records an unclaimed key in every watch.
func (ws *watches) unclaimed(u Unclaimed) {
	ws.each(func(w *Watch) { w.unclaimed = append(w.unclaimed, u) })
}

func (ws *watches) each(fn func(*Watch)) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, w := range ws.list {
		w.mu.Lock()
		fn(w)
		w.mu.Unlock()
		w.signal()
	}
}
