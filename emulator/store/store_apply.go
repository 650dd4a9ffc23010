package store

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/shopspring/decimal"
)

// Applying committed rows: one new snapshot for all the tables of a commit, each row by its
// table's key model (PRIMARY upsert/delete, UNIQUE replace, AGGREGATE merge, DUPLICATE append).

// Apply makes all changes visible atomically, in one new snapshot. Within a table rows apply
// in order: PRIMARY KEY upsert/delete by key (later wins, deleting a missing key is a no-op),
// UNIQUE KEY replace by key, DUPLICATE KEY append. Nothing is applied if any table is unknown
// or a row does not fit its table (wrong value count, NULL in a NOT NULL column, a value that
// does not convert to the column type). Apply keeps the rows' Values slices (no copy) and may
// normalise their elements to the storage types in place: callers must not modify them
// afterwards.
func (s *Store) Apply(changes []TableChange) error { return s.ApplyWithMeta(changes, nil) }

// ApplyWithMeta is Apply that also journals meta (the caller's facts about the change, such
// as the transaction it commits) in the same record, so both survive a restart or neither.
// Without a journal it is Apply; with one, a change with no rows still journals meta.
func (s *Store) ApplyWithMeta(changes []TableChange, meta any) error {
	if len(changes) == 0 && (meta == nil || s.journalless()) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applyLocked(changes, meta)
}

func (s *Store) journalless() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.journal == nil
}

func (s *Store) applyLocked(changes []TableChange, meta any) error {
	old := s.snap()
	next := &snapshot{version: old.version + 1, dbs: old.dbs}
	dbCopied := map[string]bool{}
	owned := map[*tableState]bool{}
	for _, ch := range changes {
		d, ok := next.db(ch.DB)
		if !ok {
			return fmt.Errorf("apply: %w", unknownDatabase(ch.DB))
		}
		t, ok := d.table(ch.Table)
		if !ok {
			return fmt.Errorf("apply: %w", unknownTable(ch.DB, ch.Table))
		}
		if !dbCopied[d.name] {
			if len(dbCopied) == 0 {
				m := make(map[string]*dbState, len(old.dbs))
				for k, v := range old.dbs {
					m[k] = v
				}
				next.dbs = m
			}
			nd := &dbState{name: d.name, id: d.id, tables: make(map[string]*tableState, len(d.tables))}
			for k, v := range d.tables {
				nd.tables[k] = v
			}
			next.dbs[d.name] = nd
			dbCopied[d.name] = true
			d = nd
		}
		if !owned[t] {
			t = &tableState{schema: t.schema, rows: t.rows.clone(), seq: t.seq}
			owned[t] = true
			d.tables[t.schema.Name] = t
		}
		if err := t.apply(ch.Rows); err != nil {
			return fmt.Errorf("apply to %s.%s: %w", ch.DB, ch.Table, err)
		}
	}
	// Durable before visible: a change whose record is not in the journal never shows.
	if err := s.journalApplyLocked(next, changes, meta); err != nil {
		return err
	}
	s.cur.Store(next)
	return nil
}

// apply applies rows to an owned (cloned) table state.
func (t *tableState) apply(rows []Row) error {
	sc := t.schema
	if err := remapRows(sc, rows, time.Now()); err != nil {
		return err
	}
	var kb []byte
	for i := range rows {
		r := &rows[i]
		if len(r.Values) != len(sc.Columns) {
			return fmt.Errorf("row %d has %d values, table has %d columns: the table changed (ALTER TABLE) after the rows were loaded; load them again", i, len(r.Values), len(sc.Columns))
		}
		for c := range r.Values {
			if r.Set != nil && c < len(r.Set) && !r.Set[c] && r.Values[c] == nil {
				continue // a partial-update column the row does not set
			}
			v, err := normalizeValue(&sc.Columns[c], r.Values[c])
			if err != nil {
				return fmt.Errorf("row %d: %w", i, err)
			}
			r.Values[c] = v
		}
		if sc.KeyType == DuplicateKey {
			t.seq++
			kb = appendSeqKey(kb[:0], t.seq)
			t.rows.set(string(kb), r.Values)
			continue
		}
		kb = appendRowKey(kb[:0], sc, r.Values)
		// A view of kb, valid until the next row's key: the tree copies it only when it
		// adds the key (setTransient), so an update or a delete allocates no key.
		key := unsafe.String(unsafe.SliceData(kb), len(kb))
		if sc.KeyType == PrimaryKey && r.Op == OpDelete {
			t.rows.delete(key)
			continue
		}
		if sc.KeyType == AggregateKey {
			vals := r.Values
			if prev, ok := t.rows.get(key); ok {
				vals = aggregate(sc, prev, vals)
			}
			t.rows.setTransient(key, vals)
			continue
		}
		vals := r.Values
		if r.MergeCol > 0 && r.MergeCol <= len(vals) && sc.KeyType == PrimaryKey {
			if prev, ok := t.rows.get(key); ok {
				mc := r.MergeCol - 1
				condSet := r.Set == nil || mc < len(r.Set) && r.Set[mc]
				if condSet && compareValues(vals[mc], prev[mc]) < 0 {
					continue // merge_condition: a smaller value does not replace the stored row
				}
			}
		}
		if r.Set != nil && sc.KeyType == PrimaryKey {
			if prev, ok := t.rows.get(key); ok {
				merged := make([]any, len(vals))
				for c := range vals {
					if c < len(r.Set) && r.Set[c] {
						merged[c] = vals[c]
					} else {
						merged[c] = prev[c]
					}
				}
				t.rows.setTransient(key, merged)
				continue
			}
		}
		if r.Set != nil {
			// a partial-update row for a new key: unset columns take their defaults
			for c := range vals {
				if c < len(r.Set) && !r.Set[c] && vals[c] == nil {
					col := &sc.Columns[c]
					switch {
					case col.Default != nil && !col.DefaultCurrentTimestamp:
						vals[c] = col.defaultValue
					case !col.Nullable:
						vals[c] = zeroValue(col)
					}
				}
			}
		}
		t.rows.setTransient(key, vals)
	}
	return nil
}

// aggregate merges a loaded row into the stored row with the same key of an AGGREGATE KEY
// table: SUM adds (NULL adds nothing), MAX and MIN keep the extreme (NULL is no value),
// REPLACE takes the new value, REPLACE_IF_NOT_NULL the new value unless it is NULL.
func aggregate(sc *TableSchema, prev, next []any) []any {
	out := make([]any, len(next))
	copy(out, next)
	for i := len(sc.Key); i < len(sc.Columns); i++ {
		c := &sc.Columns[i]
		a, b := prev[i], next[i]
		switch c.Agg {
		case AggSum:
			switch {
			case b == nil:
				out[i] = a
			case a != nil:
				out[i] = addValues(a, b)
			}
		case AggMax, AggMin:
			switch {
			case b == nil:
				out[i] = a
			case a == nil:
			case c.Agg == AggMax && compareValues(a, b) > 0, c.Agg == AggMin && compareValues(a, b) < 0:
				out[i] = a
			}
		case AggReplaceIfNotNull:
			if b == nil {
				out[i] = a
			}
		}
	}
	return out
}

// addValues adds two values of one numeric storage type (integer sums wrap as the BE's do).
func addValues(a, b any) any {
	switch x := a.(type) {
	case int8:
		return x + b.(int8)
	case int16:
		return x + b.(int16)
	case int32:
		return x + b.(int32)
	case int64:
		return x + b.(int64)
	case float32:
		return x + b.(float32)
	case float64:
		return x + b.(float64)
	case decimal.Decimal:
		return x.Add(b.(decimal.Decimal))
	}
	return b
}
