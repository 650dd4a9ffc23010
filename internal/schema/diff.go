package schema

import (
	"fmt"
	"strings"
)

// Diff is what separates the StarRocks table from a source table
// (Compare).
type Diff struct {
	// Add are the source columns the table lacks, as ADD COLUMN takes
	// them: nullable, with the source's default.
	Add []Column
	// Modify are the table's columns to widen to the source's type, as
	// MODIFY COLUMN takes them: the new type with the column's own
	// nullability, default and comment (a MODIFY that states another
	// default is refused).
	Modify []Modify
	// Conflicts are the source columns the table cannot take and
	// StarRocks cannot be made to take automatically.
	Conflicts []Conflict
	// Dropped are the table's columns the source no longer has: they stay,
	// and later rows leave them NULL or their default.
	Dropped []string
	// Cased are the source fields whose name matches a column's only
	// ignoring case: a JSON load drops their values, and no column can be
	// added for them.
	Cased []CaseMismatch
}

// CaseMismatch is a source field whose name differs from its column's in
// case only. StarRocks's JSON reader matches keys to columns exactly, so
// the field's values never reach the column, while DDL compares names
// ignoring case, so ADD COLUMN for the field is refused as a duplicate
// (docs/notes/starrocks-protocol.md §11.8): no schema change can take it.
type CaseMismatch struct {
	Field, Column string
}

// Error names the field and the column and why neither a load nor a
// schema change takes the field.
func (c CaseMismatch) Error() string {
	return fmt.Sprintf("the source field %s matches the column %s only ignoring case: StarRocks loads a JSON key into a column of exactly its name, so the values of %s would be dropped, and it cannot add a column %s beside %s (column names are not case sensitive)",
		c.Field, c.Column, c.Field, c.Field, c.Column)
}

// Modify is one column to widen.
type Modify struct {
	Column Column
	From   Type
}

// Conflict is a source column the table cannot take as it is.
type Conflict struct {
	Column string
	// Have is the StarRocks column's type, Want the source's.
	Have, Want Type
	Reason     string
}

// Error names the column, both types and why (a key conflict: why).
func (c Conflict) Error() string {
	if c.Have.Kind == KindUnknown && c.Want.Kind == KindUnknown {
		return c.Reason
	}
	return fmt.Sprintf("column %s is %s in StarRocks and %s at the source: %s", c.Column, c.Have, c.Want, c.Reason)
}

// Changes reports whether the diff asks StarRocks for a change.
func (d Diff) Changes() bool { return len(d.Add) > 0 || len(d.Modify) > 0 }

// Compare returns what the StarRocks table have lacks to take the rows of
// the source table want. A source column matches the column of exactly its
// name, as a JSON load does; one whose name matches a column's only ignoring
// case is neither loaded nor addable (Cased). A source key whose columns differ from the table's (when both are
// known; in any order, since a source may list them in another: a Kafka key
// without a schema is a JSON object) is a conflict: StarRocks cannot change
// a primary key.
func Compare(have, want *Table) Diff {
	var d Diff
	for _, w := range want.Columns {
		h, ok := have.LoadsInto(w.Name)
		if !ok {
			if h, taken := have.Column(w.Name); taken {
				d.Cased = append(d.Cased, CaseMismatch{Field: w.Name, Column: h.Name})
				continue
			}
			add := w
			add.Nullable = true
			d.Add = append(d.Add, add)
			continue
		}
		switch {
		case Holds(h.Type, w.Type):
		case !Widens(h.Type, w.Type):
			d.Conflicts = append(d.Conflicts, Conflict{Column: h.Name, Have: h.Type, Want: w.Type,
				Reason: "StarRocks cannot change the column to the source's type without losing values"})
		case have.IsKey(h.Name) && !(h.Type.Kind == KindVarchar && w.Type.Kind == KindVarchar):
			d.Conflicts = append(d.Conflicts, Conflict{Column: h.Name, Have: h.Type, Want: w.Type,
				Reason: "it is a primary-key column, which StarRocks changes only to a longer VARCHAR"})
		default:
			m := h
			m.Type = w.Type
			d.Modify = append(d.Modify, Modify{Column: m, From: h.Type})
		}
	}
	for _, h := range have.Columns {
		// A column a source field names ignoring case is in Cased.
		if _, ok := want.Column(h.Name); !ok {
			d.Dropped = append(d.Dropped, h.Name)
		}
	}
	if len(have.Key) > 0 && len(want.Key) > 0 && !sameSet(have.Key, want.Key) {
		d.Conflicts = append(d.Conflicts, Conflict{Column: strings.Join(want.Key, ","),
			Reason: fmt.Sprintf("the source's primary key (%s) differs from the table's (%s), and StarRocks cannot change a primary key",
				strings.Join(want.Key, ", "), strings.Join(have.Key, ", "))})
	}
	return d
}

// sameSet reports whether a and b name the same columns, in any order,
// ignoring case.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := make(map[string]int, len(a))
	for _, n := range a {
		seen[strings.ToLower(n)]++
	}
	for _, n := range b {
		k := strings.ToLower(n)
		if seen[k] == 0 {
			return false
		}
		seen[k]--
	}
	return true
}
