package schema

import (
	"fmt"
	"strings"
)

// MySQL column types and the StarRocks types the project creates for them
// (ARCHITECTURE.md §14.3): what a Maxwell DDL event or an explicit schema
// event written from MySQL's catalogue maps to. MySQL counts CHAR and
// VARCHAR lengths in characters, StarRocks in bytes, so a length is taken
// four times (utf8mb4); MySQL's unsigned integers take the next wider
// signed type; text and blob types become VARCHAR (a blob arrives as
// base64 text in the JSON formats); TIME, which StarRocks cannot store,
// becomes its text.

// MySQLColumn is a MySQL column type as a source describes it: the type name
// (`int`, `varchar`, `decimal`, …), its numeric arguments when the source
// gives them (length; precision and scale), whether it is unsigned, and,
// for ENUM and SET, the values.
type MySQLColumn struct {
	Type     string
	Args     []int
	Unsigned bool
	Values   []string
}

// bytesPerChar is what one character of a MySQL string column may take in
// StarRocks's byte-counted VARCHAR (utf8mb4).
const bytesPerChar = 4

// FromMySQL returns the StarRocks type for a MySQL column type. A type it
// cannot map, and a DECIMAL whose precision the source does not give, is an
// error naming it: guessing a scale would round values silently.
func FromMySQL(c MySQLColumn) (Type, error) {
	name := strings.ToLower(strings.TrimSpace(c.Type))
	arg := func(i int) (int, bool) {
		if i < len(c.Args) {
			return c.Args[i], true
		}
		return 0, false
	}
	text := func(chars int, known bool) Type {
		if !known {
			return Text
		}
		return Varchar(min(max(chars*bytesPerChar, 1), MaxVarcharLen))
	}
	switch name {
	case "bool", "boolean":
		return Boolean, nil
	case "bit":
		if n, ok := arg(0); !ok || n == 1 {
			return Boolean, nil
		}
		return BigInt, nil
	case "tinyint":
		if c.Unsigned {
			return SmallInt, nil
		}
		return TinyInt, nil
	case "smallint":
		if c.Unsigned {
			return Int, nil
		}
		return SmallInt, nil
	case "mediumint":
		return Int, nil
	case "int", "integer":
		if c.Unsigned {
			return BigInt, nil
		}
		return Int, nil
	case "bigint":
		if c.Unsigned {
			return LargeInt, nil
		}
		return BigInt, nil
	case "float":
		return Float, nil
	case "double", "real", "double precision":
		return Double, nil
	case "decimal", "numeric", "dec", "fixed":
		p, ok := arg(0)
		if !ok {
			return Type{}, fmt.Errorf("MySQL %s without its precision: the source does not give it, and a guessed scale would round values", strings.ToUpper(name))
		}
		s, _ := arg(1)
		if p > MaxDecimalPrecision {
			// Wider than StarRocks's DECIMAL: the exact text.
			return Varchar(p + 2), nil
		}
		return Decimal(p, s), nil
	case "date":
		return Date, nil
	case "datetime", "timestamp":
		return DateTime, nil
	case "time":
		return Varchar(32), nil
	case "year":
		return SmallInt, nil
	case "char", "nchar", "varchar", "nvarchar", "character varying":
		n, ok := arg(0)
		return text(n, ok), nil
	case "tinytext":
		return Varchar(255), nil
	case "tinyblob":
		return Varchar(base64Len(255)), nil
	case "text":
		return Varchar(65535), nil
	case "blob":
		return Varchar(base64Len(65535)), nil
	case "mediumtext", "longtext", "mediumblob", "longblob":
		return Varchar(MaxVarcharLen), nil
	case "binary", "varbinary":
		n, ok := arg(0)
		if !ok {
			return String, nil
		}
		return Varchar(base64Len(n)), nil
	case "enum", "set":
		if len(c.Values) == 0 {
			return String, nil
		}
		longest := 0
		for _, v := range c.Values {
			longest = max(longest, len(v))
		}
		if name == "set" {
			longest = 0
			for _, v := range c.Values {
				longest += len(v) + 1
			}
		}
		return Varchar(min(max(longest, 1)*bytesPerChar, MaxVarcharLen)), nil
	case "json":
		return JSON, nil
	}
	return Type{}, fmt.Errorf("MySQL type %s has no StarRocks type the project creates", strings.ToUpper(name))
}

// base64Len is the length of the base64 text of n bytes.
func base64Len(n int) int { return max((n+2)/3*4, 4) }
