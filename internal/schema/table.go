package schema

import (
	"fmt"
	"strings"
)

// Column is one column of a table: in StarRocks (read from
// information_schema.columns) or at the source (what a writer learned from
// a Kafka Connect schema or a DDL event), in StarRocks's types.
type Column struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
	// Nullable is false for NOT NULL columns (key columns always).
	Nullable bool `json:"nullable"`
	// Default is the column's DEFAULT as text, nil when it has none.
	Default *string `json:"default,omitempty"`
	Comment string  `json:"comment,omitempty"`
}

// Table is a table's columns in order and its primary key, a list of column
// names (empty: no key known).
type Table struct {
	Columns []Column `json:"columns"`
	Key     []string `json:"primary_key,omitempty"`
}

// Column returns the column named name ignoring case, as StarRocks's DDL
// and SQL resolve column names, and whether there is one: the column a new
// column of that name would collide with. What a JSON load fills is
// another matter (LoadsInto).
func (t *Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if strings.EqualFold(c.Name, name) {
			return c, true
		}
	}
	return Column{}, false
}

// LoadsInto returns the column a JSON load fills from a key named name, and
// whether there is one: StarRocks's JSON reader takes a key only by the
// column's exact name (docs/notes/starrocks-protocol.md §11.8), so a key
// "Coupon" fills no column "coupon".
func (t *Table) LoadsInto(name string) (Column, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// IsKey reports whether name is a primary-key column.
func (t *Table) IsKey(name string) bool {
	for _, k := range t.Key {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// Validate checks what a table needs before it is compared or created: a
// name for every column, no name twice, and every key column among the
// columns.
func (t *Table) Validate() error {
	seen := make(map[string]bool, len(t.Columns))
	for i, c := range t.Columns {
		if c.Name == "" {
			return fmt.Errorf("column %d has no name", i+1)
		}
		if err := checkIdent("column", c.Name); err != nil {
			return err
		}
		l := strings.ToLower(c.Name)
		if seen[l] {
			return fmt.Errorf("column %q is listed twice", c.Name)
		}
		seen[l] = true
	}
	for _, k := range t.Key {
		if !seen[strings.ToLower(k)] {
			return fmt.Errorf("the primary key names %q, which is not a column", k)
		}
	}
	return nil
}
