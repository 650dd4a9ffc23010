package starrocks_txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Right after a commit that followed its anchor, StarRocks holds the
// anchor's row (merge_condition) or, should the FE ignore merge_condition,
// the commit's: a label is covered only if a successor finds it from both.
func TestCoveredHoldsForEitherRowAfterAnAnchor(t *testing.T) {
	var w labelLedger
	now := time.Now()
	w.durable(20, []int64{10}, now) // the anchor: top 20, lists the data cycle 10
	w.durable(10, nil, now)         // then the data cycle 10 itself
	assert.True(t, w.covered(21, now), "found from both rows")
	assert.False(t, w.covered(20+anchorGap, now), "only from the anchor's row: anchor again")
	assert.True(t, w.covered(10+anchorGap, now))
	w.durable(30, nil, now) // a later commit: one row again
	assert.True(t, w.covered(30+anchorGap, now))
}

// Numbers go up by one; what a row lists is every other open label, in
// order; a label stops being listed once it is done.
func TestLabelLedgerNumbersAndOpenLabels(t *testing.T) {
	var l labelLedger
	for want := int64(1); want <= 3; want++ {
		n := l.next()
		assert.Equal(t, want, n)
		l.opened(n)
	}
	assert.Equal(t, []int64{1, 3}, l.openExcept(2))
	l.done(1)
	assert.Equal(t, []int64{3}, l.openExcept(2))
	assert.Equal(t, []int64{2}, l.openExcept(3))
	assert.Equal(t, int64(4), l.next(), "a done label's number is never handed out again")
}

// The row may be deleted on close only once StarRocks holds one and no
// commit is in doubt.
func TestLabelLedgerForgettable(t *testing.T) {
	var l labelLedger
	assert.False(t, l.forgettable(), "no row in StarRocks yet")
	l.durable(1, nil, time.Now())
	assert.True(t, l.forgettable())
	l.commitSent()
	assert.False(t, l.forgettable(), "a commit in doubt may still land: the row stays")
	l.commitResolved()
	assert.True(t, l.forgettable())
	assert.False(t, l.covered(2, time.Now().Add(writerRowStale/2)), "a row half writerRowStale old covers nothing")
}
