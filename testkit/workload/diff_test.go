package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A row whose key is present with another value is stale (an older change
// won), one absent is missing, an extra one (or a duplicate event) is
// unexpected.
func TestDiffTableTellsStaleFromMissing(t *testing.T) {
	want := []string{"1|a", "2|b", "3|c"}
	got := []string{"1|a", "2|old", "4|x"}
	d := DiffTable("orders", 1, want, got)
	assert.Equal(t, [3]int{1, 1, 1}, [3]int{d.Missing, d.Stale, d.Unexpected})
	assert.Equal(t, []string{"2|b", "3|c"}, d.MissingLines)
	assert.Equal(t, []string{"2|old", "4|x"}, d.ExtraLines)
	d = DiffTable("order_events", 0, []string{"7", "8"}, []string{"7", "7", "8"})
	assert.Equal(t, [3]int{0, 0, 1}, [3]int{d.Missing, d.Stale, d.Unexpected})
	assert.False(t, d.Equal())
	d = DiffTable("order_items", 2, []string{"1|1|p"}, []string{"1|1|p"})
	assert.True(t, d.Equal())
	assert.Zero(t, d.Missing+d.Stale+d.Unexpected)
	assert.Equal(t, "orders: 1 rows missing, 1 stale (an older version of the row is visible), 1 unexpected",
		Describe(Compare(Snapshot{Orders: want}, Snapshot{Orders: got})))
	assert.Equal(t, "orders: 1 rows missing, 1 stale (an older version of the row is visible), 1 unexpected (model only: 2|b, 3|c; target only: 2|old, 4|x)",
		Detail(Compare(Snapshot{Orders: want}, Snapshot{Orders: got})))
	many := DiffTable("order_events", 0, []string{"1", "2", "3", "4", "5"}, nil)
	assert.Contains(t, many.Detail(), "(model only: 1, 2, 3 and 2 more; target only: -)")
}

// Equal snapshots have no difference; each table is compared with its own
// key (order_items by order and item).
func TestCompareNamesEveryTableThatDiffers(t *testing.T) {
	s := Snapshot{Orders: []string{"1|9|5.00|created"}, Items: []string{"1|1|p|1|5.00"}, Events: []string{"3"}}
	assert.Empty(t, Compare(s, s))
	got := Snapshot{Orders: s.Orders, Items: []string{"1|1|p|2|5.00"}, Events: []string{"3", "4"}}
	diffs := Compare(s, got)
	require.Len(t, diffs, 2)
	assert.Equal(t, TableItems, diffs[0].Table)
	assert.Equal(t, 1, diffs[0].Stale, "same order and item, other values")
	assert.Equal(t, TableEvents, diffs[1].Table)
	assert.Equal(t, 1, diffs[1].Unexpected)
	assert.Contains(t, Describe(diffs), "; order_events: 0 rows missing")
}

// An at-least-once load may repeat an event of the model, never add one it
// lacks nor lose one; orders and items must still match exactly.
func TestCompareAtLeastOnceCountsRepeatedEventsOnly(t *testing.T) {
	want := Snapshot{Orders: []string{"1|9|5.00|created"}, Events: []string{"3", "4"}}
	diffs, dups := CompareAtLeastOnce(want, Snapshot{Orders: want.Orders, Events: []string{"3", "3", "4", "4", "4"}})
	assert.Empty(t, diffs)
	assert.Equal(t, 3, dups)

	diffs, dups = CompareAtLeastOnce(want, Snapshot{Orders: want.Orders, Events: []string{"3", "3", "5"}})
	assert.Equal(t, 1, dups)
	require.Len(t, diffs, 1)
	assert.Equal(t, []string{"4"}, diffs[0].MissingLines)
	assert.Equal(t, []string{"5"}, diffs[0].ExtraLines, "an event the model lacks is a difference")
	assert.Equal(t, 1, diffs[0].Unexpected)

	diffs, _ = CompareAtLeastOnce(want, Snapshot{Events: want.Events})
	require.Len(t, diffs, 1)
	assert.Equal(t, TableOrders, diffs[0].Table, "orders must match exactly")

	diffs = Compare(want, Snapshot{Orders: want.Orders, Events: []string{"3", "3", "4"}})
	require.Len(t, diffs, 1, "the exact comparison counts the repeat")
}

// The wide tables are compared one by one, each keyed by id.
func TestCompareWide(t *testing.T) {
	want := map[string][]string{WideTable(0): {"1|a|1"}, WideTable(1): {"2|b|1"}}
	assert.Empty(t, CompareWide(want, want, 2))
	diffs := CompareWide(want, map[string][]string{WideTable(0): {"1|a|1"}}, 2)
	require.Len(t, diffs, 1)
	assert.Equal(t, WideTable(1), diffs[0].Table)
	assert.Equal(t, 1, diffs[0].Missing)
}
