package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is a StarRocks column type without its parameters.
type Kind uint8

// The kinds, in the order of the StarRocks documentation's type list.
const (
	KindUnknown Kind = iota
	KindBoolean
	KindTinyInt
	KindSmallInt
	KindInt
	KindBigInt
	KindLargeInt
	KindFloat
	KindDouble
	KindDecimal
	KindDate
	KindDateTime
	KindChar
	KindVarchar
	KindJSON
	KindVarbinary
	KindArray
	KindMap
	KindStruct
)

// Limits of StarRocks types (docs/notes/starrocks-protocol.md §11.7).
const (
	// StringLen is the length of STRING, which StarRocks prints as
	// varchar(65533).
	StringLen = 65533
	// MaxVarcharLen is the longest VARCHAR of StarRocks 2.1 to 4.1.
	MaxVarcharLen = 1048576
	// MaxCharLen is the longest CHAR.
	MaxCharLen = 255
	// MaxDecimalPrecision is the widest DECIMAL StarRocks 3.x and 4.x
	// create (DECIMAL128).
	MaxDecimalPrecision = 38
)

var kindNames = map[Kind]string{
	KindBoolean: "BOOLEAN", KindTinyInt: "TINYINT", KindSmallInt: "SMALLINT", KindInt: "INT",
	KindBigInt: "BIGINT", KindLargeInt: "LARGEINT", KindFloat: "FLOAT", KindDouble: "DOUBLE",
	KindDecimal: "DECIMAL", KindDate: "DATE", KindDateTime: "DATETIME", KindChar: "CHAR",
	KindVarchar: "VARCHAR", KindJSON: "JSON", KindVarbinary: "VARBINARY", KindArray: "ARRAY",
	KindMap: "MAP", KindStruct: "STRUCT",
}

// String is the kind's name in DDL.
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return "UNKNOWN"
}

// Type is a StarRocks column type.
type Type struct {
	Kind Kind
	// Len is the length in bytes of CHAR, VARCHAR and VARBINARY; 0 when
	// it is not known (a source that does not say): such a column holds
	// any length (Holds) and is created as VARCHAR(65533), a key column as
	// VARCHAR(255) (CreateTableSQL).
	Len int
	// Precision and Scale of DECIMAL; Precision 0 when the source gives
	// only the scale: created as DECIMAL(38, Scale).
	Precision, Scale int
	// Elem is the element type of ARRAY; Key and Elem of MAP.
	Elem, Key *Type
	// Raw is the text the type was parsed from, for STRUCT (kept as is)
	// and for messages.
	Raw string
}

// Common types.
var (
	Boolean  = Type{Kind: KindBoolean}
	TinyInt  = Type{Kind: KindTinyInt}
	SmallInt = Type{Kind: KindSmallInt}
	Int      = Type{Kind: KindInt}
	BigInt   = Type{Kind: KindBigInt}
	LargeInt = Type{Kind: KindLargeInt}
	Float    = Type{Kind: KindFloat}
	Double   = Type{Kind: KindDouble}
	Date     = Type{Kind: KindDate}
	DateTime = Type{Kind: KindDateTime}
	JSON     = Type{Kind: KindJSON}
	// String is StarRocks's STRING: VARCHAR(65533).
	String = Varchar(StringLen)
	// Text is a VARCHAR whose length the source does not give.
	Text = Varchar(0)
)

// Varchar is VARCHAR(n).
func Varchar(n int) Type { return Type{Kind: KindVarchar, Len: n} }

// Char is CHAR(n).
func Char(n int) Type { return Type{Kind: KindChar, Len: n} }

// Decimal is DECIMAL(p, s).
func Decimal(p, s int) Type { return Type{Kind: KindDecimal, Precision: p, Scale: s} }

// ArrayOf is ARRAY<elem>.
func ArrayOf(elem Type) Type { return Type{Kind: KindArray, Elem: &elem} }

// String renders the type as CREATE TABLE and ALTER TABLE take it.
func (t Type) String() string {
	switch t.Kind {
	case KindChar, KindVarchar, KindVarbinary:
		if t.Len > 0 {
			return fmt.Sprintf("%s(%d)", t.Kind, t.Len)
		}
		if t.Kind == KindVarchar {
			return fmt.Sprintf("VARCHAR(%d)", StringLen)
		}
		return t.Kind.String()
	case KindDecimal:
		p := t.Precision
		if p == 0 {
			p = MaxDecimalPrecision
		}
		return fmt.Sprintf("DECIMAL(%d,%d)", p, t.Scale)
	case KindArray:
		if t.Elem == nil {
			return "ARRAY<UNKNOWN>"
		}
		return "ARRAY<" + t.Elem.String() + ">"
	case KindMap:
		if t.Key == nil || t.Elem == nil {
			return "MAP<UNKNOWN,UNKNOWN>"
		}
		return "MAP<" + t.Key.String() + "," + t.Elem.String() + ">"
	case KindStruct:
		return t.Raw
	case KindUnknown:
		if t.Raw != "" {
			return t.Raw
		}
	}
	return t.Kind.String()
}

// Equal reports whether two types are the same StarRocks type.
func (t Type) Equal(u Type) bool {
	if t.Kind != u.Kind || t.Len != u.Len || t.Precision != u.Precision || t.Scale != u.Scale {
		return false
	}
	switch t.Kind {
	case KindArray:
		return t.Elem != nil && u.Elem != nil && t.Elem.Equal(*u.Elem)
	case KindMap:
		return t.Key != nil && u.Key != nil && t.Elem != nil && u.Elem != nil && t.Key.Equal(*u.Key) && t.Elem.Equal(*u.Elem)
	case KindStruct, KindUnknown:
		return strings.EqualFold(t.Raw, u.Raw)
	}
	return true
}

// integer widths, for the integer kinds.
var intWidth = map[Kind]int{KindTinyInt: 1, KindSmallInt: 2, KindInt: 4, KindBigInt: 8, KindLargeInt: 16}

// IsInteger reports whether the kind is an integer kind.
func (k Kind) IsInteger() bool { return intWidth[k] > 0 }

// IsString reports whether the kind holds text.
func (k Kind) IsString() bool { return k == KindChar || k == KindVarchar }

// names StarRocks (and MySQL) print for the kinds, lower case, with the
// aliases CREATE TABLE accepts.
var kindByName = map[string]Kind{
	"boolean": KindBoolean, "bool": KindBoolean,
	"tinyint": KindTinyInt, "smallint": KindSmallInt, "int": KindInt, "integer": KindInt,
	"bigint": KindBigInt, "largeint": KindLargeInt,
	"float": KindFloat, "double": KindDouble,
	"decimal": KindDecimal, "decimalv2": KindDecimal, "decimal32": KindDecimal, "decimal64": KindDecimal,
	"decimal128": KindDecimal, "decimal256": KindDecimal, "numeric": KindDecimal,
	"date": KindDate, "datetime": KindDateTime,
	"char": KindChar, "varchar": KindVarchar, "string": KindVarchar,
	"json": KindJSON, "varbinary": KindVarbinary, "binary": KindVarbinary,
	"array": KindArray, "map": KindMap, "struct": KindStruct,
}

// ParseType reads a StarRocks type as information_schema.columns prints it
// in COLUMN_TYPE (`int(11)`, `varchar(65533)`, `decimal(18,2)`,
// `decimal64(18, 2)`, `array<int(11)>`) or as DDL writes it (`INT`,
// `STRING`, `DECIMAL(18,2)`). The display width of integers is ignored. A
// type it does not know is KindUnknown with Raw set, not an error: the
// caller then never changes that column.
func ParseType(s string) (Type, error) {
	p := typeParser{s: s}
	t, err := p.parse()
	if err != nil {
		return Type{}, fmt.Errorf("parsing the column type %q: %w", s, err)
	}
	p.space()
	if p.i != len(p.s) {
		return Type{}, fmt.Errorf("parsing the column type %q: unexpected %q", s, p.s[p.i:])
	}
	return t, nil
}

// MustType is ParseType for types written in code; it panics on an error.
func MustType(s string) Type {
	t, err := ParseType(s)
	if err != nil {
		panic(err)
	}
	return t
}

type typeParser struct {
	s string
	i int
}

func (p *typeParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *typeParser) word() string {
	p.space()
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
			p.i++
			continue
		}
		break
	}
	return strings.ToLower(p.s[start:p.i])
}

func (p *typeParser) accept(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// args reads "(n[, m])" when present.
func (p *typeParser) args() ([]int, error) {
	if !p.accept('(') {
		return nil, nil
	}
	var out []int
	for {
		w := p.word()
		n, err := strconv.Atoi(w)
		if err != nil {
			return nil, fmt.Errorf("a number was expected, not %q", w)
		}
		out = append(out, n)
		if p.accept(')') {
			return out, nil
		}
		if !p.accept(',') {
			return nil, fmt.Errorf("',' or ')' was expected at %d", p.i)
		}
	}
}

func (p *typeParser) parse() (Type, error) {
	start := p.i
	name := p.word()
	if name == "" {
		return Type{}, fmt.Errorf("a type name was expected at %d", p.i)
	}
	k, known := kindByName[name]
	switch k {
	case KindArray:
		if !p.accept('<') {
			return Type{}, fmt.Errorf("ARRAY needs <element type>")
		}
		e, err := p.parse()
		if err != nil {
			return Type{}, err
		}
		if !p.accept('>') {
			return Type{}, fmt.Errorf("'>' was expected after the ARRAY element type")
		}
		return Type{Kind: KindArray, Elem: &e}, nil
	case KindMap:
		if !p.accept('<') {
			return Type{}, fmt.Errorf("MAP needs <key type, value type>")
		}
		kt, err := p.parse()
		if err != nil {
			return Type{}, err
		}
		if !p.accept(',') {
			return Type{}, fmt.Errorf("',' was expected after the MAP key type")
		}
		vt, err := p.parse()
		if err != nil {
			return Type{}, err
		}
		if !p.accept('>') {
			return Type{}, fmt.Errorf("'>' was expected after the MAP value type")
		}
		return Type{Kind: KindMap, Key: &kt, Elem: &vt}, nil
	case KindStruct:
		// Kept as text: the project never changes a STRUCT column.
		depth := 0
		for p.i < len(p.s) {
			c := p.s[p.i]
			if c == '<' {
				depth++
			} else if c == '>' {
				if depth == 0 {
					break
				}
				depth--
				if depth == 0 {
					p.i++
					break
				}
			}
			p.i++
		}
		return Type{Kind: KindStruct, Raw: strings.TrimSpace(p.s[start:p.i])}, nil
	}
	args, err := p.args()
	if err != nil {
		return Type{}, err
	}
	// "int(11) unsigned" and the like do not occur in StarRocks; a word
	// after the type is an error.
	if !known {
		return Type{Kind: KindUnknown, Raw: strings.TrimSpace(p.s[start:p.i])}, nil
	}
	t := Type{Kind: k}
	switch k {
	case KindChar, KindVarchar, KindVarbinary:
		if name == "string" {
			t.Len = StringLen
		} else if len(args) > 0 {
			t.Len = args[0]
		} else if k == KindChar {
			t.Len = 1
		}
	case KindDecimal:
		t.Precision, t.Scale = 10, 0
		if len(args) > 0 {
			t.Precision = args[0]
		}
		if len(args) > 1 {
			t.Scale = args[1]
		}
	}
	return t, nil
}

// MarshalJSON writes the type as its DDL text; a VARCHAR whose length is
// not known as "VARCHAR", which ParseType reads back as unknown.
func (t Type) MarshalJSON() ([]byte, error) {
	if t.Kind == KindVarchar && t.Len == 0 {
		return []byte(`"VARCHAR"`), nil
	}
	return []byte(strconv.Quote(t.String())), nil
}

// UnmarshalJSON reads a type written as DDL text ("BIGINT",
// "VARCHAR(255)", "DECIMAL(18,2)").
func (t *Type) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("a column type is a JSON string, not %s", b)
	}
	v, err := ParseType(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}
