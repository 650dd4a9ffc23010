package store

import (
	"fmt"
	"time"
)

// Rows under an older schema. A load's rows are converted under the schema its table had
// when the load was planned (the first load of a transaction's table, or a plain stream
// load); a schema change may finish before the transaction commits. Apply then maps each row
// onto the table's current schema by column uid, as the history schema of fast schema
// evolution and the double-written shadow index of a schema change job make StarRocks do: a
// column added since takes its DEFAULT or NULL, a dropped one goes, a modified one is
// converted. The same mapping converts a table's rows when a job finishes (convertTable).

// colMap maps the columns of one schema onto another.
type colMap struct {
	from, to *TableSchema
	src      []int // per column of to: the index of the same column in from, -1 if new
}

func newColMap(from, to *TableSchema) *colMap {
	byUID := make(map[int]int, len(from.Columns))
	for i := range from.Columns {
		byUID[from.Columns[i].uid] = i
	}
	m := &colMap{from: from, to: to, src: make([]int, len(to.Columns))}
	for i := range to.Columns {
		j, ok := byUID[to.Columns[i].uid]
		if !ok || to.Columns[i].uid == 0 {
			j = -1
		}
		m.src[i] = j
	}
	return m
}

// convert maps one row; a new column's CURRENT_TIMESTAMP default is the wall clock of at.
func (m *colMap) convert(vals []any, at time.Time) ([]any, error) {
	out := make([]any, len(m.to.Columns))
	for i, j := range m.src {
		c := &m.to.Columns[i]
		if j < 0 {
			switch {
			case c.DefaultCurrentTimestamp:
				out[i] = wallClock(at)
			case c.Default != nil:
				out[i] = c.defaultValue
			}
			continue
		}
		if j >= len(vals) {
			return nil, fmt.Errorf("a row has %d values, the schema it was loaded under %d columns", len(vals), len(m.from.Columns))
		}
		v, err := convertStored(&m.from.Columns[j], c, vals[j])
		if err == nil && v != nil {
			v, err = normalizeValue(c, v) // the storage form of the new type (a DECIMAL's scale)
		}
		if err != nil {
			if !c.Nullable {
				return nil, fmt.Errorf("column '%s': the value %s does not convert to %s, and the column is NOT NULL",
					c.Name, describeValue(storedText(&m.from.Columns[j], vals[j])), c.SQLType())
			}
			v = nil
		}
		out[i] = v
	}
	return out, nil
}

// convertRow maps a loaded row onto the current schema (its Set and merge column too).
func (m *colMap) convertRow(r *Row, at time.Time) error {
	vals, err := m.convert(r.Values, at)
	if err != nil {
		return err
	}
	if r.Set != nil {
		set := make([]bool, len(m.to.Columns))
		for i, j := range m.src {
			set[i] = j >= 0 && j < len(r.Set) && r.Set[j]
		}
		r.Set = set
	}
	if r.MergeCol > 0 {
		mc := 0
		for i, j := range m.src {
			if j == r.MergeCol-1 {
				mc = i + 1
			}
		}
		r.MergeCol = mc
	}
	r.Values, r.sc = vals, m.to
	return nil
}

// remapRows maps the rows of a change loaded under an older schema of the table onto sc, in
// place; a row of another table with the same name (dropped and created again) is an error.
func remapRows(sc *TableSchema, rows []Row, at time.Time) error {
	var maps map[*TableSchema]*colMap
	for i := range rows {
		r := &rows[i]
		if r.sc == nil || r.sc == sc {
			continue
		}
		if r.sc.ID != sc.ID {
			return fmt.Errorf("row %d was loaded into table %s (id %d), which was dropped: the table %s now has id %d; load the rows again",
				i, r.sc.Name, r.sc.ID, sc.Name, sc.ID)
		}
		m := maps[r.sc]
		if m == nil {
			if maps == nil {
				maps = map[*TableSchema]*colMap{}
			}
			m = newColMap(r.sc, sc)
			maps[r.sc] = m
		}
		if err := m.convertRow(r, at); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
	}
	return nil
}
