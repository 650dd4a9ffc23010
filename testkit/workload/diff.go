package workload

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The one comparison of a target read back with the model: the tests, the
// demo and the bench all say "the tables equal what the source committed"
// through it, and report a difference the same way.

// TableDiff is how one table read from the target differs from the model.
// A row is identified by its key (the first key fields of its line): a key
// the target lacks is missing, a key the model lacks (or one read more
// often than the model has it) is unexpected, a key present with other
// values is stale (an older change of the row won).
type TableDiff struct {
	Table                      string
	Missing, Stale, Unexpected int
	// MissingLines and ExtraLines are the lines only the model and only
	// the target have (counted with repeats), sorted.
	MissingLines, ExtraLines []string
	// Duplicates are lines of the model the target holds more than once,
	// when the comparison allows them (CompareAtLeastOnce); they are not
	// in ExtraLines nor counted unexpected.
	Duplicates int
}

// Equal reports whether the table matches the model.
func (d TableDiff) Equal() bool { return len(d.MissingLines)+len(d.ExtraLines) == 0 }

// String describes the difference in counts, in one short phrase (a
// bench table's verdict).
func (d TableDiff) String() string {
	return fmt.Sprintf("%s: %d rows missing, %d stale (an older version of the row is visible), %d unexpected",
		d.Table, d.Missing, d.Stale, d.Unexpected)
}

// Detail is String with up to three lines of each side, for a test's or
// the demo's failure message.
func (d TableDiff) Detail() string {
	return fmt.Sprintf("%s (model only: %s; target only: %s)", d, examples(d.MissingLines), examples(d.ExtraLines))
}

func examples(lines []string) string {
	if len(lines) == 0 {
		return "-"
	}
	if len(lines) > 3 {
		return strings.Join(lines[:3], ", ") + fmt.Sprintf(" and %d more", len(lines)-3)
	}
	return strings.Join(lines, ", ")
}

// DiffTable compares the lines of one table, model (want) and target (got),
// whose lines start with keyFields "|"-separated key fields (0: the whole
// line is the key, and a repeated line is unexpected).
func DiffTable(table string, keyFields int, want, got []string) TableDiff {
	d := TableDiff{Table: table}
	d.MissingLines, d.ExtraLines = lineDiff(want, got)
	key := func(line string) string {
		if keyFields == 0 {
			return line
		}
		f := strings.SplitN(line, "|", keyFields+1)
		return strings.Join(f[:min(keyFields, len(f))], "|")
	}
	type versions struct{ want, got map[string]int }
	byKey := map[string]*versions{}
	at := func(k string) *versions {
		v := byKey[k]
		if v == nil {
			v = &versions{want: map[string]int{}, got: map[string]int{}}
			byKey[k] = v
		}
		return v
	}
	for _, l := range want {
		at(key(l)).want[l]++
	}
	for _, l := range got {
		at(key(l)).got[l]++
	}
	for _, v := range byKey {
		nw, ng := 0, 0
		for _, n := range v.want {
			nw += n
		}
		for _, n := range v.got {
			ng += n
		}
		switch {
		case ng == 0:
			d.Missing += nw
		case nw == 0 || ng > nw:
			d.Unexpected += ng - nw
		case !maps.Equal(v.want, v.got):
			d.Stale += nw
		}
	}
	return d
}

// lineDiff is the multiset difference of two renderings: the lines only
// want has and the lines only got has, each sorted.
func lineDiff(want, got []string) (missing, extra []string) {
	count := map[string]int{}
	for _, w := range want {
		count[w]++
	}
	for _, g := range got {
		count[g]--
	}
	for k, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, k)
		}
		for ; n < 0; n++ {
			extra = append(extra, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra
}

// Key fields of the example tables' lines (OrderLine, ItemLine; an event
// line is its id, and an event is written once).
const (
	ordersKeyFields = 1
	itemsKeyFields  = 2
	eventsKeyFields = 0
	wideKeyFields   = 1
)

// Compare compares a target read back (ReadTarget) with the model's
// snapshot: the tables that differ, in the order orders, order_items,
// order_events; none when the target holds exactly what the source
// committed.
func Compare(want, got Snapshot) []TableDiff {
	return keepDiffering(
		DiffTable(TableOrders, ordersKeyFields, want.Orders, got.Orders),
		DiffTable(TableItems, itemsKeyFields, want.Items, got.Items),
		DiffTable(TableEvents, eventsKeyFields, want.Events, got.Events),
	)
}

// CompareAtLeastOnce is Compare for an at-least-once load: orders and
// order_items must still equal the model (a replayed change rewrites a row
// with the value it had), but order_events, which an insert-only replay
// appends to, may hold an event of the model more than once; those repeats
// are counted in Duplicates of its diff (and returned as dups), not as a
// difference.
func CompareAtLeastOnce(want, got Snapshot) (diffs []TableDiff, dups int) {
	events := DiffTable(TableEvents, eventsKeyFields, want.Events, got.Events)
	known := map[string]bool{}
	for _, e := range want.Events {
		known[e] = true
	}
	var unknown []string
	for _, e := range events.ExtraLines {
		if known[e] {
			events.Duplicates++
		} else {
			unknown = append(unknown, e)
		}
	}
	events.ExtraLines = unknown
	events.Unexpected -= events.Duplicates
	return keepDiffering(
		DiffTable(TableOrders, ordersKeyFields, want.Orders, got.Orders),
		DiffTable(TableItems, itemsKeyFields, want.Items, got.Items),
		events,
	), events.Duplicates
}

// CompareWide compares the wide tables read back (ReadWide) with the
// model's WideSnapshot: the tables that differ, in table order.
func CompareWide(want, got map[string][]string, tables int) []TableDiff {
	var diffs []TableDiff
	for i := 0; i < tables; i++ {
		t := WideTable(i)
		diffs = append(diffs, DiffTable(t, wideKeyFields, want[t], got[t]))
	}
	return keepDiffering(diffs...)
}

func keepDiffering(diffs ...TableDiff) []TableDiff {
	var out []TableDiff
	for _, d := range diffs {
		if !d.Equal() {
			out = append(out, d)
		}
	}
	return out
}

// Describe joins the short descriptions of diffs (String; "" for none).
func Describe(diffs []TableDiff) string {
	parts := make([]string, len(diffs))
	for i, d := range diffs {
		parts[i] = d.String()
	}
	return strings.Join(parts, "; ")
}

// Detail joins the detailed descriptions of diffs (TableDiff.Detail; ""
// for none).
func Detail(diffs []TableDiff) string {
	parts := make([]string, len(diffs))
	for i, d := range diffs {
		parts[i] = d.Detail()
	}
	return strings.Join(parts, "; ")
}
