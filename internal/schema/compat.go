package schema

// Two questions decide what a change of a source column means for the
// StarRocks column that receives it (ARCHITECTURE.md §14.2): does the
// column hold every value of the source type as it is (Holds: nothing to
// do), and if not, can StarRocks widen it to the source type without losing
// a value (Widens: MODIFY COLUMN)? Anything else is a conflict the output
// never resolves on its own.

// Holds reports whether a column of type col stores every value of a source
// column of type src without loss, so the table needs no change for it. It
// is lenient where the source does not tell (a source type unknown, or text
// whose length the source does not give): StarRocks converts the value at
// load, and a value that does not convert makes the row an error row, which
// fails its source transaction loudly.
func Holds(col, src Type) bool {
	if col.Equal(src) || src.Kind == KindUnknown || col.Kind == KindUnknown {
		return true
	}
	switch {
	case col.Kind == KindJSON:
		return true
	case col.Kind.IsString():
		if src.Kind.IsString() {
			return src.Len == 0 || col.Len == 0 || src.Len <= col.Len
		}
		return src.Kind != KindArray && src.Kind != KindMap && src.Kind != KindStruct && src.Kind != KindVarbinary
	case src.Kind.IsString():
		// Text whose meaning the source does not give (a decimal sent as
		// a string, say): the column decides.
		return true
	}
	switch col.Kind {
	case KindTinyInt, KindSmallInt, KindInt, KindBigInt, KindLargeInt:
		if src.Kind == KindBoolean {
			return true
		}
		return src.Kind.IsInteger() && intWidth[src.Kind] <= intWidth[col.Kind]
	case KindDecimal:
		if src.Kind.IsInteger() {
			return col.Precision-col.Scale >= intDigits[src.Kind]
		}
		if src.Kind == KindDecimal && src.Precision == 0 {
			// Only the scale is known.
			return col.Scale >= src.Scale
		}
		return src.Kind == KindDecimal && col.Scale >= src.Scale && col.Precision-col.Scale >= src.Precision-src.Scale
	case KindDouble:
		// A DOUBLE's 53-bit mantissa keeps every FLOAT, every integer up to
		// INT and every decimal of up to 15 significant digits; a BIGINT
		// above 2^53, a LARGEINT or a wider DECIMAL is rounded without an
		// error (a DECIMAL whose precision the source does not give may be
		// any of those). Rounding is silent, so it is no case for leniency.
		switch src.Kind {
		case KindFloat, KindTinyInt, KindSmallInt, KindInt:
			return true
		case KindDecimal:
			return src.Precision > 0 && src.Precision <= doubleDigits
		}
		return false
	case KindFloat:
		// A 24-bit mantissa: SMALLINT fits, INT does not.
		return src.Kind == KindTinyInt || src.Kind == KindSmallInt
	case KindDateTime:
		return src.Kind == KindDate
	case KindBoolean:
		return false
	case KindVarbinary:
		if src.Kind == KindVarbinary {
			return src.Len == 0 || col.Len == 0 || src.Len <= col.Len
		}
		return false
	case KindArray:
		return src.Kind == KindArray && col.Elem != nil && src.Elem != nil && Holds(*col.Elem, *src.Elem)
	case KindMap:
		return src.Kind == KindMap && col.Key != nil && src.Key != nil && col.Elem != nil && src.Elem != nil &&
			Holds(*col.Key, *src.Key) && Holds(*col.Elem, *src.Elem)
	}
	return false
}

// doubleDigits is the number of significant decimal digits every DOUBLE
// keeps (DBL_DIG).
const doubleDigits = 15

// intDigits is the number of decimal digits of the largest value of each
// integer kind.
var intDigits = map[Kind]int{KindTinyInt: 3, KindSmallInt: 5, KindInt: 10, KindBigInt: 19, KindLargeInt: 39}

// Widens reports whether StarRocks's schema change turns a column of type
// from into one of type to (ALTER TABLE … MODIFY COLUMN), and to is wider:
// a larger integer, FLOAT to DOUBLE, a longer CHAR or VARCHAR, CHAR to a
// VARCHAR at least as long, a DECIMAL with no less scale and no fewer
// integer digits, DATE to DATETIME. These are the lossless pairs of
// StarRocks's schema-change matrix (docs/notes/starrocks-protocol.md
// §11.4); the matrix allows more (INT to VARCHAR, VARCHAR to INT, …), which
// change what a value means and are never applied automatically.
func Widens(from, to Type) bool {
	if from.Equal(to) {
		return false
	}
	switch {
	case from.Kind.IsInteger() && to.Kind.IsInteger():
		return intWidth[to.Kind] > intWidth[from.Kind]
	case from.Kind == KindFloat && to.Kind == KindDouble:
		return true
	case from.Kind == KindChar && to.Kind == KindChar, from.Kind == KindVarchar && to.Kind == KindVarchar:
		return to.Len > 0 && to.Len > from.Len
	case from.Kind == KindChar && to.Kind == KindVarchar:
		return to.Len > 0 && to.Len >= from.Len
	case from.Kind == KindDecimal && to.Kind == KindDecimal:
		if to.Precision == 0 {
			// Only the scale is known: never widen to a guess.
			return false
		}
		return to.Precision <= MaxDecimalPrecision && to.Scale >= from.Scale && to.Precision-to.Scale >= from.Precision-from.Scale
	case from.Kind == KindDate && to.Kind == KindDateTime:
		return true
	}
	return false
}

// Widest returns the narrowest type that both a and b widen to (or are),
// and whether there is one: the type a column must have to take both a
// value of a and one of b. A DECIMAL takes the larger scale and the larger
// integer part.
func Widest(a, b Type) (Type, bool) {
	switch {
	case a.Equal(b) || Widens(b, a):
		return a, true
	case Widens(a, b):
		return b, true
	case a.Kind == KindDecimal && b.Kind == KindDecimal:
		s := max(a.Scale, b.Scale)
		p := max(a.Precision-a.Scale, b.Precision-b.Scale) + s
		if p > MaxDecimalPrecision {
			return Type{}, false
		}
		return Decimal(p, s), true
	}
	return Type{}, false
}
