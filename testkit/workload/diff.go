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
	// Columns are the named columns ("|name=value" fields, the ones a
	// schema plan changed) whose values differ in rows of the same key.
	Columns []ColumnDiff
}

// ColumnDiff counts, for one named column, the rows present on both sides
// whose value differs: missing when the model has a value and the target
// NULL or no such column at all (a value lost), wrong otherwise.
type ColumnDiff struct {
	Column         string
	Missing, Wrong int
	// Examples are up to three "key: model X, target Y".
	Examples []string
}

func (c ColumnDiff) String() string {
	return fmt.Sprintf("column %s: %d values missing, %d different (%s)", c.Column, c.Missing, c.Wrong, strings.Join(c.Examples, "; "))
}

// Equal reports whether the table matches the model.
func (d TableDiff) Equal() bool { return len(d.MissingLines)+len(d.ExtraLines) == 0 }

// String describes the difference in counts, in one short phrase (a
// bench table's verdict).
func (d TableDiff) String() string {
	return fmt.Sprintf("%s: %d rows missing, %d stale (an older version of the row is visible), %d unexpected",
		d.Table, d.Missing, d.Stale, d.Unexpected)
}

// Detail is String with up to three lines of each side and the columns
// whose values differ, for a test's or the demo's failure message.
func (d TableDiff) Detail() string {
	s := fmt.Sprintf("%s (model only: %s; target only: %s)", d, examples(d.MissingLines), examples(d.ExtraLines))
	for _, c := range d.Columns {
		s += "; " + c.String()
	}
	return s
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
	d.Columns = columnDiffs(key, d.MissingLines, d.ExtraLines)
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

// columnDiffs compares the named fields of the lines only one side has,
// key by key (a key repeated on either side is left to the line counts).
func columnDiffs(key func(string) string, missing, extra []string) []ColumnDiff {
	byKey := func(lines []string) map[string]string {
		m := map[string]string{}
		n := map[string]int{}
		for _, l := range lines {
			k := key(l)
			m[k] = l
			n[k]++
		}
		for k, c := range n {
			if c > 1 {
				delete(m, k)
			}
		}
		return m
	}
	want, got := byKey(missing), byKey(extra)
	diffs := map[string]*ColumnDiff{}
	var order []string
	keys := slices.Sorted(maps.Keys(want))
	for _, k := range keys {
		g, ok := got[k]
		if !ok {
			continue
		}
		wf, gf := namedFields(want[k]), namedFields(g)
		for _, name := range slices.Sorted(maps.Keys(wf)) {
			wv, gv := wf[name], gf[name]
			if gv == "" {
				gv = absentText
			}
			if wv == gv {
				continue
			}
			cd := diffs[name]
			if cd == nil {
				cd = &ColumnDiff{Column: name}
				diffs[name] = cd
				order = append(order, name)
			}
			if wv != nullText && (gv == nullText || gv == absentText) {
				cd.Missing++
			} else {
				cd.Wrong++
			}
			if len(cd.Examples) < 3 {
				cd.Examples = append(cd.Examples, fmt.Sprintf("%s: model %s, target %s", k, wv, gv))
			}
		}
	}
	slices.Sort(order)
	out := make([]ColumnDiff, 0, len(order))
	for _, n := range order {
		out = append(out, *diffs[n])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// namedFields returns the "name=value" fields of a line.
func namedFields(line string) map[string]string {
	out := map[string]string{}
	for _, f := range strings.Split(line, "|") {
		if name, v, ok := strings.Cut(f, "="); ok {
			out[name] = v
		}
	}
	return out
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
	ordersKeyFields    = 1
	itemsKeyFields     = 2
	eventsKeyFields    = 0
	wideKeyFields      = 1
	shipmentsKeyFields = 1
)

// Compare compares a target read back (ReadTarget) with the model's
// snapshot: the tables that differ, in the order orders, order_items,
// order_events; none when the target holds exactly what the source
// committed.
//
// With a schema plan, the orders lines carry the columns it changed (a
// TableDiff names each column whose values differ) and shipments is
// compared too (after order_events) once the model has it.
func Compare(want, got Snapshot) []TableDiff {
	return keepDiffering(
		DiffTable(TableOrders, ordersKeyFields, want.Orders, got.Orders),
		DiffTable(TableItems, itemsKeyFields, want.Items, got.Items),
		DiffTable(TableEvents, eventsKeyFields, want.Events, got.Events),
		diffShipments(want, got),
	)
}

// diffShipments compares shipments when the model has the table.
func diffShipments(want, got Snapshot) TableDiff {
	if !want.HasShipments {
		return TableDiff{Table: TableShipments}
	}
	return DiffTable(TableShipments, shipmentsKeyFields, want.Shipments, got.Shipments)
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
		diffShipments(want, got),
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
