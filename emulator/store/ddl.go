package store

import (
	"fmt"
	"strconv"
	"strings"
)

// ddlStmt is one parsed DDL statement.
type ddlStmt interface{ ddl() }

type createDatabaseStmt struct {
	name        string
	ifNotExists bool
}

type createTableStmt struct {
	db, name    string // db empty: current database
	ifNotExists bool
	schema      *TableSchema
}

type dropTableStmt struct {
	db, name string
	ifExists bool
}

type dropDatabaseStmt struct {
	name     string
	ifExists bool
}

type useStmt struct{ name string }

type truncateTableStmt struct{ db, name string }

// alterTableStmt is ALTER TABLE … ADD COLUMN / DROP COLUMN (one or more, comma-separated).
type alterTableStmt struct {
	db, name string
	ops      []alterOp
}

type alterOp struct {
	add   *Column // ADD COLUMN; nil for DROP COLUMN
	after string  // AFTER col
	first bool    // FIRST
	drop  string  // DROP COLUMN
}

func (createDatabaseStmt) ddl() {}
func (createTableStmt) ddl()    {}
func (dropTableStmt) ddl()      {}
func (dropDatabaseStmt) ddl()   {}
func (useStmt) ddl()            {}
func (truncateTableStmt) ddl()  {}
func (alterTableStmt) ddl()     {}

// parser walks the tokens of one statement.
type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	last := token{kind: tokEOF}
	if len(p.toks) > 0 {
		lt := p.toks[len(p.toks)-1]
		last.line, last.col = lt.line, lt.col+len(lt.text)
	}
	return last
}

func (p *parser) next() token {
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	}
	return t
}

func (p *parser) errAt(t token, want string) error {
	if t.kind == tokEOF {
		return fmt.Errorf("unexpected end of statement, expected %s", want)
	}
	return fmt.Errorf("unexpected token %s at line %d col %d, expected %s", t, t.line, t.col, want)
}

func (p *parser) accept(kw string) bool {
	if p.peek().is(kw) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) acceptPunct(s string) bool {
	if p.peek().isPunct(s) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(kw string) error {
	if t := p.next(); !t.is(kw) {
		return p.errAt(t, strings.ToUpper(kw))
	}
	return nil
}

func (p *parser) expectPunct(s string) error {
	if t := p.next(); !t.isPunct(s) {
		return p.errAt(t, fmt.Sprintf("%q", s))
	}
	return nil
}

func (p *parser) ident(what string) (string, error) {
	t := p.next()
	if t.kind == tokIdent || t.kind == tokQuoted {
		return t.text, nil
	}
	return "", p.errAt(t, what)
}

// qualifiedName reads [db.]name.
func (p *parser) qualifiedName(what string) (db, name string, err error) {
	first, err := p.ident(what)
	if err != nil {
		return "", "", err
	}
	if p.acceptPunct(".") {
		second, err := p.ident(what)
		if err != nil {
			return "", "", err
		}
		return first, second, nil
	}
	return "", first, nil
}

func (p *parser) done() error {
	if t := p.peek(); t.kind != tokEOF {
		return p.errAt(t, "end of statement")
	}
	return nil
}

// parseDDL parses one statement's tokens.
func parseDDL(toks []token) (ddlStmt, error) {
	p := &parser{toks: toks}
	t := p.next()
	switch {
	case t.is("create"):
		switch k := p.next(); {
		case k.is("database") || k.is("schema"):
			return p.createDatabase()
		case k.is("table"):
			return p.createTable()
		case k.is("external") || k.is("temporary") || k.is("materialized") || k.is("view") || k.is("index"):
			return nil, fmt.Errorf("CREATE %s is not supported by the emulator: only CREATE DATABASE and CREATE TABLE are", strings.ToUpper(k.text))
		default:
			return nil, p.errAt(k, "DATABASE or TABLE")
		}
	case t.is("drop"):
		switch k := p.next(); {
		case k.is("database") || k.is("schema"):
			s := dropDatabaseStmt{}
			if p.accept("if") {
				if err := p.expect("exists"); err != nil {
					return nil, err
				}
				s.ifExists = true
			}
			name, err := p.ident("a database name")
			if err != nil {
				return nil, err
			}
			s.name = name
			p.accept("force")
			return s, p.done()
		case k.is("table"):
			s := dropTableStmt{}
			if p.accept("if") {
				if err := p.expect("exists"); err != nil {
					return nil, err
				}
				s.ifExists = true
			}
			db, name, err := p.qualifiedName("a table name")
			if err != nil {
				return nil, err
			}
			s.db, s.name = db, name
			p.accept("force")
			return s, p.done()
		default:
			return nil, p.errAt(k, "DATABASE or TABLE")
		}
	case t.is("truncate"):
		p.accept("table")
		db, name, err := p.qualifiedName("a table name")
		if err != nil {
			return nil, err
		}
		return truncateTableStmt{db: db, name: name}, p.done()
	case t.is("alter"):
		if k := p.next(); !k.is("table") {
			return nil, fmt.Errorf("ALTER %s is not supported by the emulator: only ALTER TABLE … ADD COLUMN / DROP COLUMN are", strings.ToUpper(k.text))
		}
		return p.alterTable()
	case t.is("use"):
		name, err := p.ident("a database name")
		if err != nil {
			return nil, err
		}
		return useStmt{name: name}, p.done()
	default:
		return nil, p.errAt(t, "CREATE DATABASE, CREATE TABLE, ALTER TABLE, DROP TABLE, DROP DATABASE, TRUNCATE TABLE or USE")
	}
}

// alterTable parses the actions of ALTER TABLE [db.]t: ADD COLUMN col_def [FIRST | AFTER col],
// ADD COLUMN (col_def, …), DROP COLUMN col; the rollup and property clauses StarRocks allows
// after them are accepted and ignored.
func (p *parser) alterTable() (ddlStmt, error) {
	db, name, err := p.qualifiedName("a table name")
	if err != nil {
		return nil, err
	}
	s := alterTableStmt{db: db, name: name}
	for {
		switch t := p.next(); {
		case t.is("add"):
			p.accept("column")
			if p.acceptPunct("(") {
				for {
					c, err := p.columnDef()
					if err != nil {
						return nil, err
					}
					s.ops = append(s.ops, alterOp{add: &c})
					if p.acceptPunct(",") {
						continue
					}
					if err := p.expectPunct(")"); err != nil {
						return nil, err
					}
					break
				}
			} else {
				c, err := p.columnDef()
				if err != nil {
					return nil, err
				}
				op := alterOp{add: &c}
				switch {
				case p.accept("first"):
					op.first = true
				case p.accept("after"):
					if op.after, err = p.ident("a column name"); err != nil {
						return nil, err
					}
				}
				s.ops = append(s.ops, op)
			}
		case t.is("drop"):
			if !p.accept("column") {
				return nil, fmt.Errorf("ALTER TABLE … DROP %s is not supported by the emulator: only ADD COLUMN and DROP COLUMN are", strings.ToUpper(p.peek().text))
			}
			col, err := p.ident("a column name")
			if err != nil {
				return nil, err
			}
			s.ops = append(s.ops, alterOp{drop: col})
		default:
			if t.kind == tokEOF {
				return nil, p.errAt(t, "ADD COLUMN or DROP COLUMN")
			}
			return nil, fmt.Errorf("ALTER TABLE … %s is not supported by the emulator: only ADD COLUMN and DROP COLUMN are", strings.ToUpper(t.text))
		}
		if p.accept("to") || p.accept("from") {
			if _, err := p.ident("a rollup name"); err != nil {
				return nil, err
			}
		}
		if p.accept("properties") {
			if _, err := p.properties(); err != nil {
				return nil, err
			}
		}
		if p.acceptPunct(",") {
			continue
		}
		return s, p.done()
	}
}

func (p *parser) createDatabase() (ddlStmt, error) {
	s := createDatabaseStmt{}
	if p.accept("if") {
		if err := p.expect("not"); err != nil {
			return nil, err
		}
		if err := p.expect("exists"); err != nil {
			return nil, err
		}
		s.ifNotExists = true
	}
	name, err := p.ident("a database name")
	if err != nil {
		return nil, err
	}
	s.name = name
	if p.accept("properties") {
		if err := p.skipParens(); err != nil {
			return nil, err
		}
	}
	return s, p.done()
}

// properties reads ("k" = "v", …).
func (p *parser) properties() ([][2]string, error) {
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	var out [][2]string
	if p.acceptPunct(")") {
		return out, nil
	}
	for {
		k := p.next()
		if k.kind != tokString && k.kind != tokIdent && k.kind != tokQuoted {
			return nil, p.errAt(k, "a property name")
		}
		if err := p.expectPunct("="); err != nil {
			return nil, err
		}
		v := p.next()
		if v.kind != tokString && v.kind != tokNumber && v.kind != tokIdent {
			return nil, p.errAt(v, "a property value")
		}
		out = append(out, [2]string{k.text, v.text})
		if p.acceptPunct(",") {
			continue
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		return out, nil
	}
}

// skipParens skips a balanced parenthesised group starting at the current token.
func (p *parser) skipParens() error {
	if err := p.expectPunct("("); err != nil {
		return err
	}
	depth := 1
	for depth > 0 {
		t := p.next()
		switch {
		case t.kind == tokEOF:
			return p.errAt(t, `")"`)
		case t.isPunct("("):
			depth++
		case t.isPunct(")"):
			depth--
		}
	}
	return nil
}

// nameList reads ( name, name … ).
func (p *parser) nameList(what string) ([]string, error) {
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	var out []string
	for {
		n, err := p.ident(what)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
		if p.acceptPunct(",") {
			continue
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		return out, nil
	}
}

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
			ts.properties = props
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

var decimalMaxPrecision = map[string]int{"decimal32": 9, "decimal64": 18, "decimal128": 38}

// unsupportedTypes are StarRocks types the emulator has no storage for.
var unsupportedTypes = map[string]bool{"hll": true, "bitmap": true, "percentile": true, "struct": true,
	"varbinary": true, "binary": true, "time": true, "variant": true}

// columnType reads a column type (with its parameters, and the element types of ARRAY<…> and
// MAP<…,…>) into c.
func (p *parser) columnType(c *Column) error {
	tt := p.next()
	if tt.kind != tokIdent {
		return p.errAt(tt, "a column type")
	}
	tn := strings.ToLower(tt.text)
	if tn == "array" || tn == "map" {
		if err := p.expectPunct("<"); err != nil {
			return err
		}
		elem := &Column{Name: c.Name, Nullable: true}
		if tn == "map" {
			key := &Column{Name: c.Name, Nullable: true}
			if err := p.columnType(key); err != nil {
				return err
			}
			if key.complex() || key.Type == TypeJSON {
				return fmt.Errorf("column %s: a MAP key must be a scalar type, not %s", c.Name, key.SQLType())
			}
			if err := p.expectPunct(","); err != nil {
				return err
			}
			c.MapKey = key
		}
		if err := p.columnType(elem); err != nil {
			return err
		}
		if err := p.expectPunct(">"); err != nil {
			return err
		}
		c.Elem = elem
		c.Type = TypeArray
		if tn == "map" {
			c.Type = TypeMap
		}
		return nil
	}
	var a []int
	if p.peek().isPunct("(") {
		p.next()
		for {
			n := p.next()
			if n.kind != tokNumber {
				return p.errAt(n, "a number")
			}
			v, err := strconv.Atoi(n.text)
			if err != nil {
				return p.errAt(n, "an integer")
			}
			a = append(a, v)
			if p.acceptPunct(",") {
				continue
			}
			if err := p.expectPunct(")"); err != nil {
				return err
			}
			break
		}
	}
	switch tn {
	case "tinyint":
		c.Type = TypeTinyInt
	case "smallint":
		c.Type = TypeSmallInt
	case "int", "integer":
		c.Type = TypeInt
	case "bigint":
		c.Type = TypeBigInt
	case "largeint":
		c.Type = TypeLargeInt
	case "decimal", "decimalv2", "decimalv3", "decimal32", "decimal64", "decimal128", "numeric":
		c.Type = TypeDecimal
		c.Precision, c.Scale = 10, 0
		maxP := 38
		if m, ok := decimalMaxPrecision[tn]; ok {
			maxP = m
		}
		if tn == "decimalv2" {
			maxP = 27
		}
		switch len(a) {
		case 0:
		case 1:
			c.Precision = a[0]
		case 2:
			c.Precision, c.Scale = a[0], a[1]
		default:
			return fmt.Errorf("column %s: %s takes (precision[, scale])", c.Name, strings.ToUpper(tn))
		}
		if c.Precision < 1 || c.Precision > maxP {
			return fmt.Errorf("column %s: %s precision %d out of range [1, %d]", c.Name, strings.ToUpper(tn), c.Precision, maxP)
		}
		if c.Scale < 0 || c.Scale > c.Precision {
			return fmt.Errorf("column %s: %s scale %d out of range [0, %d]", c.Name, strings.ToUpper(tn), c.Scale, c.Precision)
		}
	case "float":
		c.Type = TypeFloat
	case "double":
		c.Type = TypeDouble
	case "boolean", "bool":
		c.Type = TypeBoolean
	case "char":
		c.Type = TypeChar
		c.Length = 1
		if len(a) == 1 {
			c.Length = a[0]
		}
		if c.Length < 1 || c.Length > 255 {
			return fmt.Errorf("column %s: CHAR length %d out of range [1, 255]", c.Name, c.Length)
		}
	case "varchar":
		c.Type = TypeVarchar
		c.Length = 1
		if len(a) == 1 {
			c.Length = a[0]
		}
		if c.Length < 1 || c.Length > 1048576 {
			return fmt.Errorf("column %s: VARCHAR length %d out of range [1, 1048576]", c.Name, c.Length)
		}
	case "string":
		c.Type = TypeString
		c.Length = 65533
	case "date":
		c.Type = TypeDate
	case "datetime":
		c.Type = TypeDatetime
	case "json":
		c.Type = TypeJSON
	default:
		if unsupportedTypes[tn] {
			return fmt.Errorf("column %s: type %s is not supported by the emulator (line %d col %d); supported: TINYINT SMALLINT INT BIGINT LARGEINT DECIMAL FLOAT DOUBLE BOOLEAN CHAR VARCHAR STRING DATE DATETIME JSON ARRAY<…> MAP<…,…>",
				c.Name, strings.ToUpper(tt.text), tt.line, tt.col)
		}
		return fmt.Errorf("column %s: unsupported type %s at line %d col %d (supported: TINYINT SMALLINT INT BIGINT LARGEINT DECIMAL FLOAT DOUBLE BOOLEAN CHAR VARCHAR STRING DATE DATETIME JSON ARRAY<…> MAP<…,…>)",
			c.Name, strings.ToUpper(tt.text), tt.line, tt.col)
	}
	return nil
}

// aggKeywords are the aggregation types of AGGREGATE KEY value columns.
var aggKeywords = map[string]AggType{"sum": AggSum, "max": AggMax, "min": AggMin, "replace": AggReplace, "replace_if_not_null": AggReplaceIfNotNull}

func (p *parser) columnDef() (Column, error) {
	var c Column
	name, err := p.ident("a column name")
	if err != nil {
		return c, err
	}
	c.Name = name
	c.Nullable = true
	if err := p.columnType(&c); err != nil {
		return c, err
	}
	for {
		t := p.peek()
		switch {
		case t.is("not"):
			p.next()
			if err := p.expect("null"); err != nil {
				return c, err
			}
			c.Nullable = false
		case t.is("null"):
			p.next()
			c.Nullable = true
		case t.is("default"):
			p.next()
			d := p.next()
			switch {
			case d.kind == tokString || d.kind == tokNumber:
				v := d.text
				c.Default = &v
			case d.is("current_timestamp") || d.is("now"):
				if c.Type != TypeDatetime {
					return c, fmt.Errorf("column %s: DEFAULT CURRENT_TIMESTAMP is only valid for DATETIME", c.Name)
				}
				if p.acceptPunct("(") {
					if err := p.expectPunct(")"); err != nil {
						return c, err
					}
				}
				v := "CURRENT_TIMESTAMP"
				c.Default = &v
				c.DefaultCurrentTimestamp = true
			case d.is("null"):
				c.Default = nil
			default:
				return c, p.errAt(d, "a default value (string, number or CURRENT_TIMESTAMP)")
			}
		case t.is("comment"):
			p.next()
			s := p.next()
			if s.kind != tokString {
				return c, p.errAt(s, "a comment string")
			}
			c.Comment = s.text
		case t.is("key"):
			p.next() // "col INT KEY" marks a key column in old syntax; the key clause decides
		case t.kind == tokIdent && aggKeywords[strings.ToLower(t.text)] != AggNone:
			p.next()
			if c.Agg != AggNone {
				return c, p.errAt(t, "one aggregation type")
			}
			c.Agg = aggKeywords[strings.ToLower(t.text)]
		case t.is("hll_union") || t.is("bitmap_union") || t.is("percentile_union") || t.is("agg_state_union"):
			return c, fmt.Errorf("column %s: aggregation %s is not supported by the emulator: use SUM, MAX, MIN, REPLACE or REPLACE_IF_NOT_NULL", c.Name, strings.ToUpper(t.text))
		case t.is("auto_increment"):
			return c, fmt.Errorf("column %s: AUTO_INCREMENT is not supported by the emulator", c.Name)
		case t.is("as"):
			return c, fmt.Errorf("column %s: generated columns (AS expr) are not supported by the emulator", c.Name)
		default:
			return c, nil
		}
	}
}
