package store

import (
	"fmt"
	"strconv"
	"strings"
)

// CREATE TABLE: the statement's clauses (keys, partitioning, distribution, properties) and the
// StarRocks rules a table schema must meet (key prefix, key types, aggregation types).

func (p *parser) createTable() (ddlStmt, error) {
	s := createTableStmt{}
	if p.accept("if") {
		if err := p.expect("not"); err != nil {
			return nil, err
		}
		if err := p.expect("exists"); err != nil {
			return nil, err
		}
		s.ifNotExists = true
	}
	db, name, err := p.qualifiedName("a table name")
	if err != nil {
		return nil, err
	}
	s.db, s.name = db, name
	ts := &TableSchema{Name: name, KeyType: DuplicateKey}
	switch t := p.peek(); {
	case t.is("like"):
		return nil, fmt.Errorf("CREATE TABLE … LIKE is not supported by the emulator: write the column list")
	case t.is("as"):
		return nil, fmt.Errorf("CREATE TABLE … AS SELECT is not supported by the emulator: create the table, then load it")
	}
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	for {
		if t := p.peek(); t.is("index") {
			// INDEX idx (col) USING BITMAP [COMMENT ''] — accepted and ignored.
			p.next()
			if _, err := p.ident("an index name"); err != nil {
				return nil, err
			}
			if err := p.skipParens(); err != nil {
				return nil, err
			}
			if p.accept("using") {
				if _, err := p.ident("an index type"); err != nil {
					return nil, err
				}
			}
			if p.accept("comment") {
				if t := p.next(); t.kind != tokString {
					return nil, p.errAt(t, "a comment string")
				}
			}
		} else {
			col, err := p.columnDef()
			if err != nil {
				return nil, err
			}
			for _, c := range ts.Columns {
				if strings.EqualFold(c.Name, col.Name) {
					return nil, fmt.Errorf("Duplicate column name '%s'", col.Name)
				}
			}
			ts.Columns = append(ts.Columns, col)
		}
		if p.acceptPunct(",") {
			continue
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		break
	}
	if len(ts.Columns) == 0 {
		return nil, fmt.Errorf("table %s has no columns: declare at least one", name)
	}
	keySeen := false
	// Table clauses, in StarRocks order; each optional.
	for {
		t := p.peek()
		switch {
		case t.kind == tokEOF:
			if !keySeen {
				// StarRocks default: a DUPLICATE KEY table keyed by the first column.
				ts.KeyType = DuplicateKey
				ts.Key = []string{ts.Columns[0].Name}
			}
			if err := finishSchema(ts); err != nil {
				return nil, err
			}
			s.schema = ts
			return s, nil
		case t.is("engine"):
			p.next()
			if err := p.expectPunct("="); err != nil {
				return nil, err
			}
			e, err := p.ident("an engine name")
			if err != nil {
				return nil, err
			}
			if !strings.EqualFold(e, "olap") {
				return nil, fmt.Errorf("ENGINE=%s is not supported by the emulator: only ENGINE=OLAP is", e)
			}
		case t.is("primary") || t.is("duplicate") || t.is("unique") || t.is("aggregate"):
			p.next()
			if keySeen {
				return nil, p.errAt(t, "only one key description")
			}
			if err := p.expect("key"); err != nil {
				return nil, err
			}
			switch {
			case t.is("primary"):
				ts.KeyType = PrimaryKey
			case t.is("duplicate"):
				ts.KeyType = DuplicateKey
			case t.is("unique"):
				ts.KeyType = UniqueKey
			default:
				ts.KeyType = AggregateKey
			}
			keys, err := p.nameList("a key column name")
			if err != nil {
				return nil, err
			}
			ts.Key = keys
			keySeen = true
		case t.is("comment"):
			p.next()
			c := p.next()
			if c.kind != tokString {
				return nil, p.errAt(c, "a comment string")
			}
			ts.comment = c.text
		case t.is("partition"):
			p.next()
			if err := p.expect("by"); err != nil {
				return nil, err
			}
			// Partitioning does not change the data model: skip the clause up to the next
			// table clause at parenthesis depth 0.
			depth := 0
			for {
				x := p.peek()
				if x.kind == tokEOF || depth == 0 && (x.is("distributed") || x.is("order") || x.is("properties")) {
					break
				}
				p.next()
				if x.isPunct("(") {
					depth++
				} else if x.isPunct(")") {
					depth--
				}
			}
		case t.is("distributed"):
			p.next()
			if err := p.expect("by"); err != nil {
				return nil, err
			}
			switch d := p.next(); {
			case d.is("hash"):
				cols, err := p.nameList("a distribution column name")
				if err != nil {
					return nil, err
				}
				for _, c := range cols {
					if !hasColumn(ts, c) {
						return nil, fmt.Errorf("Unknown distribution column '%s'", c)
					}
				}
				ts.distType, ts.distKeys = "HASH", cols
			case d.is("random"):
				ts.distType = "RANDOM"
			default:
				return nil, p.errAt(d, "HASH or RANDOM")
			}
			if p.accept("buckets") {
				n := p.next()
				if n.kind != tokNumber && !n.is("auto") {
					return nil, p.errAt(n, "a bucket count")
				}
				if n.kind == tokNumber {
					ts.buckets, _ = strconv.Atoi(n.text)
				}
			}
		case t.is("order"):
			p.next()
			if err := p.expect("by"); err != nil {
				return nil, err
			}
			cols, err := p.nameList("a sort column name")
			if err != nil {
				return nil, err
			}
			for _, c := range cols {
				if !hasColumn(ts, c) {
					return nil, fmt.Errorf("Unknown column '%s' in ORDER BY", c)
				}
			}
			ts.sortKeys = cols
		case t.is("properties"):
			p.next()
			props, err := p.properties()
			if err != nil {
				return nil, err
			}
			if ts.properties, err = checkTableProperties(ts, props); err != nil {
				return nil, err
			}
		default:
			return nil, p.errAt(t, "ENGINE, a key description, COMMENT, PARTITION BY, DISTRIBUTED BY, ORDER BY or PROPERTIES")
		}
	}
}

func hasColumn(ts *TableSchema, name string) bool {
	for _, c := range ts.Columns {
		if strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

// finishSchema checks the StarRocks key rules and converts defaults.
func finishSchema(ts *TableSchema) error {
	if len(ts.Key) > len(ts.Columns) {
		return fmt.Errorf("table %s: more key columns than columns", ts.Name)
	}
	for i, k := range ts.Key {
		if !strings.EqualFold(ts.Columns[i].Name, k) {
			if !hasColumn(ts, k) {
				return fmt.Errorf("Key column '%s' doesn't exist in table", k)
			}
			return fmt.Errorf("Key columns should be a ordered prefix of the schema. KeyColumns[%d] (starts from zero) is %s, but corresponding column is %s in the previous columns declaration",
				i, k, ts.Columns[i].Name)
		}
		ts.Key[i] = ts.Columns[i].Name
		c := &ts.Columns[i]
		switch c.Type {
		case TypeFloat, TypeDouble, TypeJSON, TypeArray, TypeMap:
			return fmt.Errorf("Invalid data type of key column '%s': '%s'", c.Name, c.SQLType())
		}
		if c.Agg != AggNone {
			return fmt.Errorf("Key column '%s' should not specify an aggregation type (%s)", c.Name, c.Agg)
		}
		if ts.KeyType == PrimaryKey && !c.nullSet {
			// A primary key column without NULL or NOT NULL is NOT NULL (CREATE TABLE's
			// analyzer); written NULL, it is refused below.
			c.Nullable = false
		}
		if ts.KeyType == PrimaryKey && c.Nullable {
			return fmt.Errorf("primary key column[%s] cannot be nullable: declare it NOT NULL", c.Name)
		}
	}
	for i := range ts.Columns {
		if err := checkAgg(ts, i); err != nil {
			return err
		}
	}
	for i := range ts.Columns {
		c := &ts.Columns[i]
		if c.Default == nil || c.DefaultCurrentTimestamp {
			continue
		}
		v, err := convertText(c, *c.Default)
		if err != nil {
			return fmt.Errorf("Invalid default value for '%s': %s", c.Name, *c.Default)
		}
		c.defaultValue = v
	}
	for i := range ts.Columns {
		c := &ts.Columns[i]
		if c.uid == 0 {
			ts.maxUID++
			c.uid = ts.maxUID
		}
		// What the definition said is the statement's, not the table's.
		c.nullSet, c.keySet, c.defStart, c.defLast = false, false, token{}, token{}
	}
	ts.index()
	return nil
}

// checkAgg holds column i to the aggregation rules of its table's model.
func checkAgg(ts *TableSchema, i int) error {
	c := &ts.Columns[i]
	isKey := i < len(ts.Key)
	switch {
	case ts.KeyType != AggregateKey && c.Agg != AggNone:
		return fmt.Errorf("column '%s': the aggregation type %s is only valid in an AGGREGATE KEY table", c.Name, c.Agg)
	case ts.KeyType != AggregateKey || isKey:
		return nil
	case c.Agg == AggNone:
		return fmt.Errorf("value column '%s' of the AGGREGATE KEY table %s needs an aggregation type: SUM, MAX, MIN, REPLACE or REPLACE_IF_NOT_NULL", c.Name, ts.Name)
	case c.Agg == AggSum && !c.numeric():
		return fmt.Errorf("column '%s': SUM is not valid for type %s", c.Name, c.SQLType())
	case (c.Agg == AggMax || c.Agg == AggMin) && (c.complex() || c.Type == TypeJSON):
		return fmt.Errorf("column '%s': %s is not valid for type %s", c.Name, c.Agg, c.SQLType())
	}
	return nil
}

// numeric reports whether SUM applies to the column's type.
func (c *Column) numeric() bool {
	switch c.Type {
	case TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt, TypeLargeInt, TypeDecimal, TypeFloat, TypeDouble:
		return true
	}
	return false
}
