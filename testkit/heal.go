package testkit

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Heal is the torn-read check of the starrocks_txn output's per-table mode
// (ARCHITECTURE.md §15): there a reader may see part of a source transaction
// between the first and the last COMMIT of a cycle, and never once the cycle
// is done. A reader reports each round's partial keys (the orders it saw
// without all of their source transaction) with Round; Heal follows each key
// from the round that first saw it partial until the first later round that
// sees it whole. A key partial for longer than the bound, or still partial
// when the run ends (Check after the target converged), is a source
// transaction left partial for good, which fails the run; every partial that
// healed in time is counted and measured, not failed.
//
// The multi-table mode needs no Heal: there a partial read is a failure at
// once.
type Heal struct {
	bound time.Duration

	mu sync.Mutex
	// open is, per key partial in the last round, when a round first saw it
	// partial (that round's start).
	open map[string]time.Time
	// Rounds counts the rounds, Partial those that saw a partial key;
	// Healed the partial streaks that ended, Longest the longest of them
	// (from the start of the first round that saw the key partial to the end
	// of the first that saw it whole).
	Rounds, Partial, Healed int
	Longest                 time.Duration
	// over are the keys that stayed partial longer than bound.
	over []string
}

// NewHeal returns a Heal that fails a key partial for longer than bound.
func NewHeal(bound time.Duration) *Heal {
	return &Heal{bound: bound, open: map[string]time.Time{}}
}

// Round records one reader round that ran from start to end (one snapshot,
// taken somewhere between) and saw partial as its partial keys.
func (h *Heal) Round(start, end time.Time, partial []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Rounds++
	if len(partial) > 0 {
		h.Partial++
	}
	now := map[string]bool{}
	for _, k := range partial {
		now[k] = true
		first, ok := h.open[k]
		if !ok {
			h.open[k] = start
			continue
		}
		if end.Sub(first) > h.bound && !containsKey(h.over, k) {
			h.over = append(h.over, fmt.Sprintf("%s (partial since %s, %v)", k, first.Format("15:04:05.000"), end.Sub(first).Round(time.Millisecond)))
		}
	}
	for k, first := range h.open {
		if now[k] {
			continue
		}
		delete(h.open, k)
		h.Healed++
		if d := end.Sub(first); d > h.Longest {
			h.Longest = d
		}
	}
}

func containsKey(xs []string, k string) bool {
	for _, x := range xs {
		if strings.HasPrefix(x, k+" ") {
			return true
		}
	}
	return false
}

// Check reports the keys partial longer than the bound and, with final (the
// run converged: nothing more is coming), every key still partial.
func (h *Heal) Check(final bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var bad []string
	bad = append(bad, h.over...)
	if final {
		var keys []string
		for k := range h.open {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			bad = append(bad, fmt.Sprintf("%s (still partial at the end, since %s)", k, h.open[k].Format("15:04:05.000")))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	if len(bad) > 10 {
		bad = append(bad[:10], fmt.Sprintf("… %d more", len(bad)-10))
	}
	return fmt.Errorf("source transactions left partial (not healed within %v): %s", h.bound, strings.Join(bad, "; "))
}

// String sums the partial reads up.
func (h *Heal) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("%d reader rounds, %d saw part of a source transaction; %d partial streaks healed, the longest in %v", h.Rounds, h.Partial, h.Healed, h.Longest.Round(time.Millisecond))
}
