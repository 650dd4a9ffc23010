package store

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// The rules a MODIFY COLUMN must meet and the conversion of the stored values, after
// StarRocks's FE (SchemaChangeTypeCompatibility.schemaChangeMatrix,
// isSchemaChangeAllowedInvolvingDecimalV3, Column.checkSchemaChangeAllowed) and its BE (a
// schema change converts each value as a CAST does: docs/notes/starrocks-protocol.md §11.4).

// typeChangeAllowed is schemaChangeMatrix plus the DECIMAL rules: which type a column of type
// from may become. A type may stay itself (its length or scale is then checked elsewhere).
func typeChangeAllowed(from, to *Column) bool {
	if from.Type == TypeDecimal || to.Type == TypeDecimal {
		switch {
		case from.Type == TypeDecimal && to.Type == TypeDecimal:
			// The new type holds the old values: scale does not shrink, nor the integer part.
			return from.Scale <= to.Scale && from.Precision-from.Scale <= to.Precision-to.Scale
		case from.Type == TypeDecimal && stringFamily(to.Type) && to.Type != TypeChar:
			// The VARCHAR must hold the widest text (getMysqlResultSetFieldLength).
			return decimalTextWidth(from) <= to.Length
		case to.Type == TypeDecimal:
			return from.Type == TypeVarchar || from.Type == TypeString
		}
		return false
	}
	f, t := matrixType(from.Type), matrixType(to.Type)
	if f == t {
		return f != TypeArray && f != TypeMap // a complex type's primitive type is INVALID
	}
	switch f {
	case TypeTinyInt:
		return t == TypeSmallInt || t == TypeInt || t == TypeBigInt || t == TypeLargeInt || t == TypeDouble || t == TypeVarchar
	case TypeSmallInt:
		return t == TypeInt || t == TypeBigInt || t == TypeLargeInt || t == TypeDouble || t == TypeVarchar
	case TypeInt:
		return t == TypeBigInt || t == TypeLargeInt || t == TypeDouble || t == TypeDate || t == TypeVarchar
	case TypeBigInt:
		return t == TypeLargeInt || t == TypeDouble || t == TypeVarchar
	case TypeLargeInt, TypeDouble:
		return t == TypeVarchar
	case TypeFloat:
		return t == TypeDouble || t == TypeVarchar
	case TypeChar:
		return t == TypeVarchar
	case TypeJSON:
		return t == TypeVarchar
	case TypeVarchar:
		switch t {
		case TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt, TypeLargeInt, TypeFloat, TypeDouble, TypeDate, TypeJSON:
			return true
		}
	case TypeDatetime:
		return t == TypeDate
	case TypeDate:
		return t == TypeDatetime
	}
	return false
}

// matrixType folds STRING into VARCHAR, as StarRocks's STRING is a VARCHAR(65533).
func matrixType(t ColumnType) ColumnType {
	if t == TypeString {
		return TypeVarchar
	}
	return t
}

func stringFamily(t ColumnType) bool { return t == TypeChar || t == TypeVarchar || t == TypeString }

// decimalTextWidth is the widest text of a DECIMAL(p,s): sign, digits and point.
func decimalTextWidth(c *Column) int {
	w := c.Precision + 1
	if c.Scale > 0 {
		w++
	}
	return w
}

// typeString is a type as StarRocks's Type.toString prints it in error messages: lower case,
// no display width, the DECIMAL family by its storage type.
func typeString(c *Column) string {
	switch c.Type {
	case TypeDecimal:
		kind := "decimal128"
		switch {
		case c.Precision <= 9:
			kind = "decimal32"
		case c.Precision <= 18:
			kind = "decimal64"
		}
		return fmt.Sprintf("%s(%d, %d)", kind, c.Precision, c.Scale)
	case TypeChar:
		return fmt.Sprintf("char(%d)", c.Length)
	case TypeVarchar:
		return fmt.Sprintf("varchar(%d)", c.Length)
	case TypeString:
		return "varchar(65533)"
	case TypeArray:
		return "array<" + typeString(c.Elem) + ">"
	case TypeMap:
		return "map<" + typeString(c.MapKey) + "," + typeString(c.Elem) + ">"
	}
	return strings.ToLower(c.Type.String())
}

// strLen is a string column's length in bytes (STRING is 65533).
func strLen(c *Column) int {
	if c.Type == TypeString {
		return 65533
	}
	return c.Length
}

// sameType reports whether two columns have the same type with the same parameters.
func sameType(a, b *Column) bool {
	if matrixType(a.Type) != matrixType(b.Type) {
		return false
	}
	switch a.Type {
	case TypeDecimal:
		return a.Precision == b.Precision && a.Scale == b.Scale
	case TypeChar, TypeVarchar, TypeString:
		return strLen(a) == strLen(b)
	case TypeArray:
		return sameType(a.Elem, b.Elem)
	case TypeMap:
		return sameType(a.MapKey, b.MapKey) && sameType(a.Elem, b.Elem)
	}
	return true
}

// sameDefault is Column.isSameDefaultValue: no default on both, CURRENT_TIMESTAMP on both, or
// the same literal.
func sameDefault(a, b *Column) bool {
	if a.DefaultCurrentTimestamp || b.DefaultCurrentTimestamp {
		return a.DefaultCurrentTimestamp == b.DefaultCurrentTimestamp
	}
	if a.Default == nil || b.Default == nil {
		return a.Default == nil && b.Default == nil
	}
	return *a.Default == *b.Default
}

// sameColumn is Column.equals: name (any case), type, aggregation, key, nullability,
// default and comment.
func sameColumn(a *Column, aKey bool, b *Column, bKey bool) bool {
	return strings.EqualFold(a.Name, b.Name) && sameType(a, b) && a.Agg == b.Agg && aKey == bKey &&
		a.Nullable == b.Nullable && sameDefault(a, b) && a.Comment == b.Comment
}

// checkSchemaChangeAllowed is Column.checkSchemaChangeAllowed, with StarRocks's texts.
func checkSchemaChangeAllowed(from, to *Column) error {
	if !typeChangeAllowed(from, to) {
		return fmt.Errorf("Can not change %s to %s", typeString(from), typeString(to))
	}
	if from.Agg != to.Agg {
		return fmt.Errorf("Can not change aggregation type")
	}
	if from.Nullable && !to.Nullable {
		return fmt.Errorf("Can not change from nullable to non-nullable")
	}
	if !sameDefault(from, to) {
		return fmt.Errorf("Can not change default value")
	}
	if stringFamily(from.Type) && stringFamily(to.Type) && to.Type != TypeChar || from.Type == TypeChar && to.Type == TypeChar {
		if strLen(from) > strLen(to) {
			return fmt.Errorf("Cannot shorten string length")
		}
	}
	return nil
}

// varcharWiden is a VARCHAR whose length grows and nothing else changes: the one MODIFY a
// shared-nothing table with fast schema evolution does without rewriting data.
func varcharWiden(from *Column, fromKey bool, to *Column, toKey bool) bool {
	return matrixType(from.Type) == TypeVarchar && matrixType(to.Type) == TypeVarchar && strLen(to) > strLen(from) &&
		from.Agg == to.Agg && fromKey == toKey && from.Nullable == to.Nullable
}

// convertStored converts a stored value of column from into column to's storage type, as the
// BE's schema change does (a CAST): a value that does not convert is an error, which the
// caller turns into NULL for a nullable column and into a failed job for a NOT NULL one.
func convertStored(from, to *Column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if sameType(from, to) || matrixType(from.Type) == TypeVarchar && matrixType(to.Type) == TypeVarchar {
		if s, ok := v.(string); ok && stringFamily(to.Type) && len(s) > strLen(to) {
			return nil, errConvert
		}
		return v, nil
	}
	switch x := v.(type) {
	case float32:
		if to.Type == TypeDouble {
			return float64(x), nil // the BE widens the binary value
		}
	case int8, int16, int32, int64:
		if to.Type == TypeDouble {
			i, _ := toInt64(v)
			return float64(i), nil
		}
	case time.Time:
		switch to.Type {
		case TypeDate:
			return time.Date(x.Year(), x.Month(), x.Day(), 0, 0, 0, 0, time.UTC), nil
		case TypeDatetime:
			return x, nil
		}
	}
	text := storedText(from, v)
	if to.numericInt() {
		// A string cast to an integer must be a whole integer ('1.5' and 'abc' are NULL).
		if _, ok := new(big.Int).SetString(strings.TrimSpace(text), 10); !ok {
			if from.Type != TypeInt || to.Type != TypeDate {
				return nil, errConvert
			}
		}
	}
	out, err := convertText(to, text)
	if err != nil {
		return nil, errConvert
	}
	if s, ok := out.(string); ok && stringFamily(to.Type) && len(s) > strLen(to) {
		return nil, errConvert
	}
	return out, nil
}

// storedText is the text a stored value casts from.
func storedText(c *Column, v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "1"
		}
		return "0"
	case decimal.Decimal:
		if c.Type == TypeDecimal {
			return x.StringFixed(int32(c.Scale))
		}
		return x.String()
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		if c.Type == TypeDate {
			return x.Format("2006-01-02")
		}
		if x.Nanosecond() != 0 {
			return x.Format("2006-01-02 15:04:05.000000")
		}
		return x.Format("2006-01-02 15:04:05")
	}
	if i, ok := toInt64(v); ok {
		return strconv.FormatInt(i, 10)
	}
	return fmt.Sprint(v)
}

// columnSQL is a column as StarRocks's Column.toSql prints it (SHOW CREATE TABLE's column
// lines, and the "you can remove …" of a refused ADD COLUMN).
func columnSQL(c *Column) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", quoteIdent(c.Name), displayType(c))
	if c.Agg != AggNone {
		b.WriteString(" " + c.Agg.String())
	}
	if c.Nullable {
		b.WriteString(" NULL")
	} else {
		b.WriteString(" NOT NULL")
	}
	switch {
	case c.DefaultCurrentTimestamp:
		b.WriteString(" DEFAULT CURRENT_TIMESTAMP")
	case c.Default != nil:
		b.WriteString(" DEFAULT " + quoteString(*c.Default))
	}
	b.WriteString(" COMMENT " + quoteString(c.Comment))
	return b.String()
}
