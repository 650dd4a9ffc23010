package store

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// CAST in a `columns` mapping expression follows StarRocks, not MySQL. StarRocks's cast of a
// string to a number (be/src/exprs/cast_expr.cpp, cast_int_from_string_fn and
// cast_float_from_string_fn) parses the whole string and answers NULL when it is not a number
// of that type: CAST('abc' AS INT), CAST('1.5' AS INT), CAST('' AS INT) and an overflow are
// NULL, where MySQL answers 0, 1, 0 and the clamped value. A number cast to a narrower integer
// is NULL when out of range (NumberCheck) and truncated toward zero otherwise; an invalid date
// is NULL. The NULL then loads as a NULL, or filters the row in strict mode or for a NOT NULL
// column, like any value that does not convert.
//
// The emulator rewrites every CAST(expr AS type) of an expression into sr_cast(expr, 'type')
// before go-mysql-server analyses it, and sr_cast converts by the same rules the emulator
// applies to loaded values (convertText), which are StarRocks's.

// srCastName is the function the rewritten casts call.
const srCastName = "sr_cast"

// rewriteCasts replaces each CAST(expr AS type) of a mapping expression by sr_cast(expr,
// 'type'), inner casts first. A type the emulator does not know is an error naming it.
func rewriteCasts(expr string) (string, error) {
	var out strings.Builder
	for i := 0; i < len(expr); {
		ch := expr[i]
		if ch == '\'' || ch == '"' || ch == '`' {
			j := skipQuoted(expr, i)
			out.WriteString(expr[i:j])
			i = j
			continue
		}
		if !isCastAt(expr, i) {
			out.WriteByte(ch)
			i++
			continue
		}
		open := strings.IndexByte(expr[i:], '(') + i
		end := matchParen(expr, open)
		if end < 0 {
			return "", fmt.Errorf("columns header: the CAST at %q has no closing parenthesis", expr[i:])
		}
		body := expr[open+1 : end]
		as := lastTopLevelAs(body)
		if as < 0 {
			return "", fmt.Errorf("columns header: CAST(%s) has no AS <type>", body)
		}
		inner, err := rewriteCasts(body[:as])
		if err != nil {
			return "", err
		}
		typ := strings.TrimSpace(body[as+2:])
		if _, err := castColumn(typ); err != nil {
			return "", err
		}
		fmt.Fprintf(&out, "%s(%s, '%s')", srCastName, inner, typ)
		i = end + 1
	}
	return out.String(), nil
}

// isCastAt reports whether the word CAST followed by "(" starts at i.
func isCastAt(s string, i int) bool {
	if i+4 > len(s) || !strings.EqualFold(s[i:i+4], "cast") || (i > 0 && isIdentByte(s[i-1])) {
		return false
	}
	j := i + 4
	for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n') {
		j++
	}
	return j < len(s) && s[j] == '('
}

// skipQuoted returns the index after the quoted text starting at i (a doubled quote or a
// backslash escapes one).
func skipQuoted(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++
		case s[j] == q && j+1 < len(s) && s[j+1] == q:
			j++
		case s[j] == q:
			return j + 1
		}
	}
	return len(s)
}

// matchParen returns the index of the parenthesis closing the one at open, or -1.
func matchParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\'', '"', '`':
			i = skipQuoted(s, i) - 1
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// lastTopLevelAs returns the index of the last AS keyword of s outside parentheses and
// quotes, or -1.
func lastTopLevelAs(s string) int {
	depth, at := 0, -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'', '"', '`':
			i = skipQuoted(s, i) - 1
		case '(', '<':
			depth++
		case ')', '>':
			depth--
		default:
			if depth == 0 && i+2 <= len(s) && strings.EqualFold(s[i:i+2], "as") &&
				(i == 0 || !isIdentByte(s[i-1])) && (i+2 == len(s) || !isIdentByte(s[i+2])) {
				at = i
			}
		}
	}
	return at
}

// castColumn is the target of a cast as a column type. VARCHAR and CHAR without a length are
// STRING, as StarRocks reads them in a cast (CAST(x AS VARCHAR) is VARCHAR(65533)).
func castColumn(typ string) (*Column, error) {
	c := &Column{Name: "cast", Nullable: true}
	switch strings.ToLower(typ) {
	case "varchar", "char", "string", "text":
		c.Type, c.Length = TypeString, 65533
		return c, nil
	}
	toks, err := lexScript(typ)
	if err == nil {
		p := &parser{toks: toks}
		if err = p.columnType(c); err == nil {
			err = p.done()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("columns header: CAST to %s: %w", typ, err)
	}
	if c.Type == TypeChar || c.Type == TypeVarchar {
		// A cast does not cut a string to the length; the target column checks it.
		c.Type, c.Length = TypeString, math.MaxInt32
	}
	return c, nil
}

// srCast is CAST(child AS col) with StarRocks's semantics.
type srCast struct {
	child sql.Expression
	typ   string
	col   *Column
}

var _ sql.Expression = (*srCast)(nil)

// newSRCast builds sr_cast(expr, 'type'); rewriteCasts has checked the type.
func newSRCast(e, t sql.Expression) sql.Expression {
	typ, _ := t.Eval(sql.NewEmptyContext(), nil)
	s, _ := typ.(string)
	c, err := castColumn(s)
	if err != nil {
		c = &Column{Name: "cast", Type: TypeString, Length: math.MaxInt32, Nullable: true}
	}
	return &srCast{child: e, typ: s, col: c}
}

func (c *srCast) Resolved() bool             { return c.child.Resolved() }
func (c *srCast) String() string             { return fmt.Sprintf("CAST(%s AS %s)", c.child, c.typ) }
func (c *srCast) IsNullable() bool           { return true }
func (c *srCast) Children() []sql.Expression { return []sql.Expression{c.child} }
func (c *srCast) WithChildren(ch ...sql.Expression) (sql.Expression, error) {
	if len(ch) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(c, len(ch), 1)
	}
	return &srCast{child: ch[0], typ: c.typ, col: c.col}, nil
}

// Type is the go-mysql-server type of the values Eval returns.
func (c *srCast) Type() sql.Type {
	switch c.col.Type {
	case TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt:
		return types.Int64
	case TypeLargeInt:
		return types.MustCreateDecimalType(39, 0)
	case TypeDecimal:
		return types.MustCreateDecimalType(uint8(c.col.Precision), uint8(c.col.Scale))
	case TypeFloat, TypeDouble:
		return types.Float64
	case TypeBoolean:
		return types.Boolean
	case TypeDate:
		return types.Date
	case TypeDatetime:
		return types.DatetimeMaxPrecision
	}
	return types.LongText
}

// Eval converts the child's value; a value that is not of the type is NULL.
func (c *srCast) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := c.child.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	text, ok := castSource(c.col, v)
	if !ok {
		return nil, nil
	}
	if c.col.numericInt() {
		// cast_int_from_string_fn: the whole text must be an integer; '1.5' is NULL.
		if _, ok := new(big.Int).SetString(strings.TrimSpace(text), 10); !ok {
			return nil, nil
		}
	}
	if c.col.Type == TypeBoolean {
		// A string that is an integer is true when not 0 (cast_from_string_to_bool_fn).
		if n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64); err == nil {
			text = strconv.FormatBool(n != 0)
		}
	}
	out, err := convertText(c.col, text)
	if err != nil {
		return nil, nil
	}
	switch x := out.(type) {
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case bool:
		if x {
			return int8(1), nil
		}
		return int8(0), nil
	}
	return out, nil
}

// castSource is the text a value converts from: a number cast to an integer is first
// truncated toward zero (a NaN or an infinity is NULL); every other value is its text.
func castSource(c *Column, v any) (string, bool) {
	integer := c.numericInt()
	switch x := v.(type) {
	case float32:
		return castFloat(float64(x), integer)
	case float64:
		return castFloat(x, integer)
	case decimal.Decimal:
		if integer {
			return x.Truncate(0).String(), true
		}
		return x.String(), true
	case time.Time:
		if integer {
			// A date or datetime cast to a number is its literal (DateToNumber).
			if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 {
				return x.Format("20060102"), true
			}
			return x.Format("20060102150405"), true
		}
	}
	s, ok, err := sqlText(v)
	return s, ok && err == nil
}

func castFloat(f float64, integer bool) (string, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	if integer {
		return strconv.FormatFloat(math.Trunc(f), 'f', -1, 64), true
	}
	return strconv.FormatFloat(f, 'g', -1, 64), true
}

// numericInt reports whether c is one of the integer types.
func (c *Column) numericInt() bool {
	switch c.Type {
	case TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt, TypeLargeInt:
		return true
	}
	return false
}
