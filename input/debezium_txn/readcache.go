// This file holds what the read-back keeps across the assignments of one
// process (ARCHITECTURE.md §13.7): the END ids it already read with their
// transaction-topic offsets, and the bound its reads last needed.

package debezium_txn

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// endAt is the id of an END event and its offset on the transaction topic.
type endAt struct {
	off int64
	id  string
}

// endRun is a contiguous range [lo, hi) of transaction-topic offsets read
// whole, and the ENDs in it in offset order.
type endRun struct {
	lo, hi int64
	ends   []endAt
}

// endCache remembers the ENDs of the transaction topic that earlier
// read-backs of this process read, as disjoint covered ranges, so that a
// member that rejoins (its group session lost while it was still reading
// back) reads only what it does not know yet instead of starting over at
// every assignment — on a starved broker the read-back may otherwise never
// finish within one session. A range is remembered only once read whole,
// so an id set is taken from it only when the ranges cover all of what
// the read-back needs. It keeps the last keep offsets below the highest
// start it served, and forgets everything when the topic may have changed
// under it (check).
type endCache struct {
	mu sync.Mutex
	// topicID is the transaction topic's id when the ranges were read
	// (zero: not known).
	topicID [16]byte
	// top is the highest start a read-back served from the cache's ranges.
	top  int64
	runs []endRun // sorted by lo, disjoint, not adjacent
}

// check forgets every range unless the topic is still the one they were
// read from: the same topic id, known both when the ranges were read and
// now (a broker that gives no id, or a topic listing that failed, leaves
// no way to tell a recreated topic from the old one, whose group offsets
// went with it: the new one may be consumed from past every range), a log
// end at or above every range, and a start at or above every start served
// before (a start that goes back means offsets were reset or the topic
// recreated). When in doubt the read-back reads.
func (c *endCache) check(topicID [16]byte, start, logEnd int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.runs) == 0 {
		c.topicID, c.top = topicID, start
		return true
	}
	var zero [16]byte
	hi := c.runs[len(c.runs)-1].hi
	if topicID == zero || topicID != c.topicID || start < c.top || (logEnd >= 0 && logEnd < hi) {
		c.runs, c.top = nil, start
		c.topicID = topicID
		return false
	}
	c.top = start
	return true
}

// gaps returns the parts of [from, to) no range covers, in offset order.
func (c *endCache) gaps(from, to int64) [][2]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][2]int64
	at := from
	for _, r := range c.runs {
		if r.hi <= at || r.lo >= to {
			continue
		}
		if r.lo > at {
			out = append(out, [2]int64{at, r.lo})
		}
		at = max(at, r.hi)
	}
	if at < to {
		out = append(out, [2]int64{at, to})
	}
	return out
}

// ids returns the ids of the ENDs at offsets [from, to), in offset order;
// the caller made sure that no part of it is a gap.
func (c *endCache) ids(from, to int64) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.runs {
		for _, e := range r.ends {
			if e.off >= from && e.off < to {
				out = append(out, e.id)
			}
		}
	}
	return out
}

// add remembers [lo, hi) as read whole with its ENDs, and keeps only the
// last keep offsets below the highest start served.
func (c *endCache) add(lo, hi int64, ends []endAt, keep int64) {
	if lo >= hi {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	runs := append(c.runs, endRun{lo: lo, hi: hi, ends: slices.Clone(ends)})
	slices.SortFunc(runs, func(a, b endRun) int { return cmp.Compare(a.lo, b.lo) })
	merged := runs[:0]
	for _, r := range runs {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi {
			m := &merged[n-1]
			for _, e := range r.ends {
				if e.off >= m.hi {
					m.ends = append(m.ends, e)
				}
			}
			m.hi = max(m.hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	top := max(c.top, merged[len(merged)-1].hi)
	cut := top - keep
	kept := merged[:0]
	for _, r := range merged {
		if r.hi <= cut {
			continue
		}
		if r.lo < cut {
			i, _ := slices.BinarySearchFunc(r.ends, cut, func(e endAt, off int64) int { return cmp.Compare(e.off, off) })
			r.lo, r.ends = cut, slices.Clone(r.ends[i:])
		}
		kept = append(kept, r)
	}
	c.runs = kept
}

// growBound is the bound of one kind of retried call to Kafka at an
// assignment (a read-back piece, the listing of offsets): a call that ran
// out of its bound doubles the next one's up to a cap, and a call done
// within half its bound halves it again, down to base — like the bounds of
// StarRocks calls (internal/starrocks/callbound.go). It outlives the
// assignment, so the first attempt of the next one starts from what the
// last needed rather than from base again: on a broker starved for longer
// than a group session, every assignment would otherwise time out at the
// same small bound.
type growBound struct {
	mu   sync.Mutex
	next time.Duration // 0: base
}

// get returns the bound of the next call.
func (b *growBound) get(base time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.next, base)
}

// ranOut grows the bound after a call ran out of bound d.
func (b *growBound) ranOut(d, limit time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next = min(max(b.next, 2*d), max(limit, d))
}

// done shrinks the bound after a call with bound d was done in took,
// when that is within half of it.
func (b *growBound) done(d, took, base time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if took <= d/2 {
		b.next = max(min(b.next, d/2), base)
	}
}
