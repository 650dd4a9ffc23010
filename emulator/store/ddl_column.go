package store

import (
	"fmt"
	"strconv"
	"strings"
)

// Column definitions: the column types the emulator stores (and the clear error for those it
// does not), and a column's NULL, DEFAULT, aggregation and COMMENT clauses.

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
	c.defStart = p.peek()
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
		if p.pos > 0 {
			c.defLast = p.toks[p.pos-1]
		}
		switch {
		case t.is("not"):
			p.next()
			if err := p.expect("null"); err != nil {
				return c, err
			}
			c.Nullable, c.nullSet = false, true
		case t.is("null"):
			p.next()
			c.Nullable, c.nullSet = true, true
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
			p.next() // "col INT KEY" marks a key column; in CREATE TABLE the key clause decides
			c.keySet = true
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
