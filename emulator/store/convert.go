package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

var errConvert = errors.New("conversion failed")

var (
	largeIntMax = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 127), big.NewInt(1))
	largeIntMin = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 127))
)

// convertText converts the text form of a value (CSV field, JSON string, DEFAULT literal)
// into the column's storage type. Storage types: int8/int16/int32/int64 for the integer
// types, decimal.Decimal for LARGEINT and DECIMAL, float32/float64, bool, string for
// CHAR/VARCHAR/STRING, time.Time (UTC) for DATE/DATETIME and compact JSON text (string)
// for JSON.
func convertText(c *Column, s string) (any, error) {
	switch c.Type {
	case TypeTinyInt:
		return parseIntRange(s, math.MinInt8, math.MaxInt8, func(v int64) any { return int8(v) })
	case TypeSmallInt:
		return parseIntRange(s, math.MinInt16, math.MaxInt16, func(v int64) any { return int16(v) })
	case TypeInt:
		return parseIntRange(s, math.MinInt32, math.MaxInt32, func(v int64) any { return int32(v) })
	case TypeBigInt:
		return parseIntRange(s, math.MinInt64, math.MaxInt64, func(v int64) any { return v })
	case TypeLargeInt:
		t := strings.TrimSpace(s)
		b, ok := new(big.Int).SetString(t, 10)
		if !ok && !strings.ContainsAny(t, "eE") {
			// Not an integer: a decimal truncated toward zero, as for BIGINT.
			if d, err := decimal.NewFromString(t); err == nil {
				b, ok = d.Truncate(0).BigInt(), true
			}
		}
		if !ok || b.Cmp(largeIntMax) > 0 || b.Cmp(largeIntMin) < 0 {
			return nil, errConvert
		}
		return decimal.NewFromBigInt(b, 0), nil
	case TypeDecimal:
		return parseDecimal(c, s)
	case TypeFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 32)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, errConvert
		}
		return float32(f), nil
	case TypeDouble:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, errConvert
		}
		return f, nil
	case TypeBoolean:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "1":
			return true, nil
		case "false", "0":
			return false, nil
		}
		return nil, errConvert
	case TypeChar, TypeVarchar, TypeString:
		if len(s) > c.Length {
			return nil, errConvert
		}
		return s, nil
	case TypeDate:
		t, ok := parseDateTime(s, true)
		if !ok {
			return nil, errConvert
		}
		return t, nil
	case TypeDatetime:
		t, ok := parseDateTime(s, false)
		if !ok {
			return nil, errConvert
		}
		return t, nil
	case TypeJSON:
		b := []byte(s)
		if !json.Valid(b) {
			return nil, errConvert
		}
		return compactJSON(b), nil
	case TypeArray, TypeMap:
		return convertComplex(c, s)
	}
	return nil, errConvert
}

// parseIntRange parses an integer of [lo, hi] the way StarRocks's CSV reader does
// (formats/csv/numeric_converter.cpp): an integer that overflows fails; any other text that
// is not an integer is read as a number and truncated toward zero ('1.5' is 1, '-2.9' is -2,
// '1e3' into an INT is 1000 — a double for TINYINT to INT, a decimal without exponent for
// BIGINT), and fails when that is out of range or not a number ('abc', ”).
func parseIntRange(s string, lo, hi int64, box func(int64) any) (any, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t := strings.TrimSpace(s)
		v, err = strconv.ParseInt(t, 10, 64)
		if err != nil {
			var ok bool
			if v, ok = truncatedInt(t, err, hi); !ok {
				return nil, errConvert
			}
		}
	}
	if v < lo || v > hi {
		return nil, errConvert
	}
	return box(v), nil
}

// truncatedInt is the fallback of parseIntRange for a text that is not an integer.
func truncatedInt(t string, err error, hi int64) (int64, bool) {
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		return 0, false // an integer that overflows
	}
	if hi <= math.MaxInt32 {
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		f = math.Trunc(f)
		if f < math.MinInt32 || f > math.MaxInt32 {
			return 0, false
		}
		return int64(f), true
	}
	if strings.ContainsAny(t, "eE") {
		return 0, false
	}
	d, err := decimal.NewFromString(t)
	if err != nil {
		return 0, false
	}
	d = d.Truncate(0)
	if !d.IsInteger() || d.Cmp(decimal.NewFromInt(math.MaxInt64)) > 0 || d.Cmp(decimal.NewFromInt(math.MinInt64)) < 0 {
		return 0, false
	}
	return d.IntPart(), true
}

// jsonFloatToInt converts a JSON number with a fraction or an exponent into an integer column
// as StarRocks's JSON reader does (formats/json/numeric_column.cpp, checked_cast): truncated
// toward zero, failing when out of the type's range.
func jsonFloatToInt(c *Column, raw []byte) (any, error) {
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return nil, errConvert
	}
	f = math.Trunc(f)
	var lo, hi float64
	switch c.Type {
	case TypeTinyInt:
		lo, hi = math.MinInt8, math.MaxInt8
	case TypeSmallInt:
		lo, hi = math.MinInt16, math.MaxInt16
	case TypeInt:
		lo, hi = math.MinInt32, math.MaxInt32
	default:
		// 2^63 is the first double above MaxInt64.
		if f < math.MinInt64 || f >= math.Exp2(63) {
			return nil, errConvert
		}
		return int64(f), nil
	}
	if f < lo || f > hi {
		return nil, errConvert
	}
	return convertText(c, strconv.FormatInt(int64(f), 10))
}

// parseDecimal parses a decimal, rounds it half away from zero to the column's scale (as a
// StarRocks cast does) and fails when the integer part needs more than precision-scale digits.
func parseDecimal(c *Column, s string) (any, error) {
	if d, ok := parseDecimalFast(s, c.Precision, c.Scale); ok {
		return d, nil
	}
	d, err := decimal.NewFromString(strings.TrimSpace(s))
	if err != nil {
		return nil, errConvert
	}
	d = d.Round(int32(c.Scale))
	intDigits := c.Precision - c.Scale
	// |d| must be < 10^intDigits
	if d.Abs().Cmp(decimalPow10(intDigits)) >= 0 {
		return nil, errConvert
	}
	return d, nil
}

// parseDecimalFast handles plain "[-]digits[.digits]" that fits an int64 at the column's
// scale without rounding; anything else takes the general path.
func parseDecimalFast(s string, precision, scale int) (decimal.Decimal, bool) {
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	var unscaled int64
	intDigits, fracDigits := 0, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if intDigits > 0 || s[i] != '0' {
			intDigits++
		}
		unscaled = unscaled*10 + int64(s[i]-'0')
		if intDigits > 18 {
			return decimal.Decimal{}, false
		}
	}
	if i == 0 || neg && i == 1 {
		return decimal.Decimal{}, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			fracDigits++
			if fracDigits > scale {
				return decimal.Decimal{}, false
			}
			unscaled = unscaled*10 + int64(s[i]-'0')
		}
	}
	if i != len(s) || intDigits > precision-scale || intDigits+scale > 18 {
		return decimal.Decimal{}, false
	}
	for ; fracDigits < scale; fracDigits++ {
		unscaled *= 10
	}
	if neg {
		unscaled = -unscaled
	}
	return decimal.New(unscaled, int32(-scale)), true
}

var pow10Cache [80]decimal.Decimal

func init() {
	for i := range pow10Cache {
		pow10Cache[i] = decimal.New(1, int32(i))
	}
}

func decimalPow10(n int) decimal.Decimal {
	if n >= 0 && n < len(pow10Cache) {
		return pow10Cache[n]
	}
	return decimal.New(1, int32(n))
}

// parseDateTime accepts "YYYY-MM-DD", "YYYY-MM-DD HH:MM:SS[.ffffff]" (also with 'T') and
// "YYYYMMDD"; dateOnly truncates to the day. Fractional seconds are kept to microseconds.
func parseDateTime(s string, dateOnly bool) (time.Time, bool) {
	s = strings.TrimSpace(s)
	var y, mo, d, h, mi, sec, usec int
	num := func(p string) (int, bool) {
		n := 0
		if p == "" {
			return 0, false
		}
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return 0, false
			}
			n = n*10 + int(p[i]-'0')
		}
		return n, true
	}
	var ok bool
	switch {
	case len(s) == 8 && !strings.ContainsAny(s, "-: "):
		if y, ok = num(s[0:4]); !ok {
			return time.Time{}, false
		}
		if mo, ok = num(s[4:6]); !ok {
			return time.Time{}, false
		}
		if d, ok = num(s[6:8]); !ok {
			return time.Time{}, false
		}
	case len(s) >= 10 && s[4] == '-' && s[7] == '-':
		if y, ok = num(s[0:4]); !ok {
			return time.Time{}, false
		}
		if mo, ok = num(s[5:7]); !ok {
			return time.Time{}, false
		}
		if d, ok = num(s[8:10]); !ok {
			return time.Time{}, false
		}
		rest := s[10:]
		if rest != "" {
			if rest[0] != ' ' && rest[0] != 'T' {
				return time.Time{}, false
			}
			rest = rest[1:]
			if len(rest) < 8 || rest[2] != ':' || rest[5] != ':' {
				return time.Time{}, false
			}
			if h, ok = num(rest[0:2]); !ok {
				return time.Time{}, false
			}
			if mi, ok = num(rest[3:5]); !ok {
				return time.Time{}, false
			}
			if sec, ok = num(rest[6:8]); !ok {
				return time.Time{}, false
			}
			rest = rest[8:]
			if rest != "" {
				if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
					return time.Time{}, false
				}
				frac := rest[1:]
				f, ok := num(frac)
				if !ok {
					return time.Time{}, false
				}
				for i := len(frac); i < 6; i++ {
					f *= 10
				}
				for i := len(frac); i > 6; i-- {
					f /= 10
				}
				usec = f
			}
		}
	default:
		return time.Time{}, false
	}
	if mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, usec*1000, time.UTC)
	if t.Day() != d { // Feb 30 etc.
		return time.Time{}, false
	}
	if dateOnly {
		t = time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC)
	}
	return t, true
}

// compactJSON returns JSON text without insignificant whitespace.
func compactJSON(b []byte) string {
	needs := false
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
		} else if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			needs = true
			break
		}
	}
	if !needs {
		return string(b)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return string(b)
	}
	return out.String()
}

// zeroValue is what a NOT NULL column without DEFAULT gets when a partial update inserts a
// new row without it.
func zeroValue(c *Column) any {
	switch c.Type {
	case TypeTinyInt:
		return int8(0)
	case TypeSmallInt:
		return int16(0)
	case TypeInt:
		return int32(0)
	case TypeBigInt:
		return int64(0)
	case TypeLargeInt, TypeDecimal:
		return decimal.Zero
	case TypeFloat:
		return float32(0)
	case TypeDouble:
		return float64(0)
	case TypeBoolean:
		return false
	case TypeDate, TypeDatetime:
		return time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	case TypeJSON:
		return "null"
	default:
		return ""
	}
}

func describeValue(s string) string {
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	return fmt.Sprintf("%q", s)
}
