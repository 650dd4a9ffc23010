package starrocks_txn

// Home of G37 (ARCHITECTURE.md §11.1): every label this writer may commit can be found by a
// successor. Main test: TestCoveredHoldsForEitherRowAfterAnAnchor.

import (
	"slices"
	"sync"
	"time"
)

const (
	// anchorGap bounds how far above its row's label a writer may commit
	// without an anchor: a successor checks the anchorGap labels above it.
	anchorGap = 16
	// writerRowStale is the age of a writer row (its updated_at) past which
	// a successor skips it: a writer anchors again before committing when
	// its row is half that old, so a row that old cannot belong to a writer
	// with a commit in flight (clocks may differ by up to half of it).
	writerRowStale = 24 * time.Hour
)

// labelLedger is a writer's account of its labels in one database
// (ARCHITECTURE.md §7, takeover.go): the numbers it has handed out, the ones
// that may still be committed, what the writer row StarRocks holds says, and
// how many commits are in doubt. It does no I/O; its mutex is a leaf lock
// (ARCHITECTURE.md §10), since the worker and its commit goroutine both
// begin labels.
type labelLedger struct {
	mu sync.Mutex
	// last is the number of the last label handed out.
	last int64
	// open holds the numbers of begun labels that may still be committed.
	open map[int64]bool
	// anchored is set once StarRocks holds this writer's row in the
	// database; held is what that row says (two candidates right after a
	// commit that followed its anchor), durableAt its updated_at.
	anchored  bool
	durableAt time.Time
	held      []heldRow
	// inDoubt counts commits sent whose outcome is unknown.
	inDoubt int
}

// heldRow is what a writer row committed by this writer says.
type heldRow struct {
	top  int64
	open map[int64]bool
}

// finds reports whether a successor reading r checks label m.
func (r heldRow) finds(m int64) bool {
	return r.open[m] || (m > r.top && m-r.top <= anchorGap)
}

// next hands out the number of the writer's next label in the database.
func (l *labelLedger) next() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last++
	return l.last
}

// opened records a begun label: it may be committed until done is called.
func (l *labelLedger) opened(n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open == nil {
		l.open = map[int64]bool{}
	}
	l.open[n] = true
}

// done records that label n is final or will never be committed.
func (l *labelLedger) done(n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.open, n)
}

// openExcept returns the numbers of the open labels other than m, in order:
// what a row loaded under label m lists.
func (l *labelLedger) openExcept(m int64) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int64
	for n := range l.open {
		if n != m {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// covered reports whether a successor reading the writer row StarRocks
// holds would check label m — listed as open, or at most anchorGap above
// the row's own label — and the row is, at now, less than half
// writerRowStale old. When a commit's row has a lower number than an anchor
// committed just before it, merge_condition keeps the anchor's row; should
// the FE ignore merge_condition the commit's row replaces it, so m must be
// found from either.
func (l *labelLedger) covered(m int64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.anchored || now.Sub(l.durableAt) >= writerRowStale/2 {
		// A row that old may be skipped as stale by a successor.
		return false
	}
	for _, r := range l.held {
		if !r.finds(m) {
			return false
		}
	}
	return true
}

// durable records the writer row of a committed label n, listing open; at
// is the row's updated_at, from which successors measure its age.
func (l *labelLedger) durable(n int64, open []int64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := heldRow{top: n, open: make(map[int64]bool, len(open))}
	for _, x := range open {
		r.open[x] = true
	}
	if l.anchored && len(l.held) > 0 && n < l.held[0].top {
		// The anchor's row, or this one if merge_condition is ignored.
		l.held = append(l.held, r)
		if at.Before(l.durableAt) {
			l.durableAt = at
		}
		return
	}
	l.anchored = true
	l.durableAt = at
	l.held = []heldRow{r}
}

// commitSent and commitResolved bracket a commit request whose outcome is
// not known yet.
func (l *labelLedger) commitSent() {
	l.mu.Lock()
	l.inDoubt++
	l.mu.Unlock()
}

func (l *labelLedger) commitResolved() {
	l.mu.Lock()
	l.inDoubt--
	l.mu.Unlock()
}

// top is the highest label_number of a writer row StarRocks holds (0:
// none). A row the writer loads is numbered at least this high, so that
// merge_condition never keeps an older row over it.
func (l *labelLedger) top() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var t int64
	for _, r := range l.held {
		t = max(t, r.top)
	}
	return t
}

// idle reports whether no label is open and no commit in doubt.
func (l *labelLedger) idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open) == 0 && l.inDoubt == 0
}

// forgettable reports whether the writer's row may be deleted on close:
// StarRocks holds one, and no commit of the writer is in doubt.
func (l *labelLedger) forgettable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.anchored && l.inDoubt == 0
}
