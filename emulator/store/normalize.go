package store

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/shopspring/decimal"
)

// normalizeValue makes a value given to Apply fit the column's storage type (see
// convertText). Values produced by Parse already fit and take the first type switch only;
// Go callers may pass other integer/float kinds, strings, []byte or json.RawMessage, which
// are converted when they fit and rejected otherwise.
func normalizeValue(c *Column, v any) (any, error) {
	if v == nil {
		if !c.Nullable {
			return nil, fmt.Errorf("NULL value in non-nullable column '%s'", c.Name)
		}
		return nil, nil
	}
	switch c.Type {
	case TypeTinyInt:
		if _, ok := v.(int8); ok {
			return v, nil
		}
		return intFit(c, v, math.MinInt8, math.MaxInt8, func(i int64) any { return int8(i) })
	case TypeSmallInt:
		if _, ok := v.(int16); ok {
			return v, nil
		}
		return intFit(c, v, math.MinInt16, math.MaxInt16, func(i int64) any { return int16(i) })
	case TypeInt:
		if _, ok := v.(int32); ok {
			return v, nil
		}
		return intFit(c, v, math.MinInt32, math.MaxInt32, func(i int64) any { return int32(i) })
	case TypeBigInt:
		if _, ok := v.(int64); ok {
			return v, nil
		}
		return intFit(c, v, math.MinInt64, math.MaxInt64, func(i int64) any { return i })
	case TypeLargeInt, TypeDecimal:
		if d, ok := v.(decimal.Decimal); ok {
			if c.Type == TypeLargeInt {
				if d.Exponent() == 0 {
					return v, nil
				}
				return reconvert(c, d.String())
			}
			if d.Exponent() == int32(-c.Scale) {
				return v, nil
			}
			return reconvert(c, d.String())
		}
		if i, ok := toInt64(v); ok {
			return reconvert(c, fmt.Sprint(i))
		}
		switch x := v.(type) {
		case *big.Int:
			return reconvert(c, x.String())
		case float64:
			return reconvert(c, decimal.NewFromFloat(x).String())
		case string:
			return reconvert(c, x)
		}
	case TypeFloat:
		switch x := v.(type) {
		case float32:
			return v, nil
		case float64:
			return float32(x), nil
		}
		if i, ok := toInt64(v); ok {
			return float32(i), nil
		}
	case TypeDouble:
		switch x := v.(type) {
		case float64:
			return v, nil
		case float32:
			return float64(x), nil
		}
		if i, ok := toInt64(v); ok {
			return float64(i), nil
		}
	case TypeBoolean:
		if _, ok := v.(bool); ok {
			return v, nil
		}
		if i, ok := toInt64(v); ok && (i == 0 || i == 1) {
			return i == 1, nil
		}
	case TypeChar, TypeVarchar, TypeString:
		switch x := v.(type) {
		case string:
			if len(x) > c.Length {
				return nil, fmt.Errorf("column '%s': value of %d bytes is longer than %s", c.Name, len(x), c.SQLType())
			}
			return v, nil // unchanged: no re-boxing
		case []byte:
			if len(x) > c.Length {
				return nil, fmt.Errorf("column '%s': value of %d bytes is longer than %s", c.Name, len(x), c.SQLType())
			}
			return string(x), nil
		default:
			return nil, mismatch(c, v)
		}
	case TypeDate, TypeDatetime:
		switch x := v.(type) {
		case time.Time:
			if c.Type == TypeDate {
				return time.Date(x.Year(), x.Month(), x.Day(), 0, 0, 0, 0, time.UTC), nil
			}
			if x.Location() == time.UTC && x.Nanosecond()%1000 == 0 {
				return v, nil // unchanged: no re-boxing
			}
			// keep the wall clock, drop the zone and sub-microsecond digits
			return time.Date(x.Year(), x.Month(), x.Day(), x.Hour(), x.Minute(), x.Second(), x.Nanosecond()/1000*1000, time.UTC), nil
		case string:
			return reconvert(c, x)
		}
	case TypeJSON:
		switch x := v.(type) {
		case string:
			return reconvert(c, x)
		case []byte:
			return reconvert(c, string(x))
		case json.RawMessage:
			return reconvert(c, string(x))
		default:
			b, err := json.Marshal(x)
			if err != nil {
				return nil, fmt.Errorf("column '%s': %w", c.Name, err)
			}
			return string(b), nil
		}
	case TypeArray, TypeMap:
		switch x := v.(type) {
		case string:
			return reconvert(c, x)
		case []byte:
			return reconvert(c, string(x))
		case json.RawMessage:
			return reconvert(c, string(x))
		default:
			b, err := json.Marshal(x)
			if err != nil {
				return nil, fmt.Errorf("column '%s': %w", c.Name, err)
			}
			return reconvert(c, string(b))
		}
	}
	return nil, mismatch(c, v)
}

func mismatch(c *Column, v any) error {
	return fmt.Errorf("column '%s': a %T value does not fit %s", c.Name, v, c.SQLType())
}

func reconvert(c *Column, s string) (any, error) {
	v, err := convertText(c, s)
	if err != nil {
		return nil, fmt.Errorf("column '%s': value %s does not fit %s", c.Name, describeValue(s), c.SQLType())
	}
	return v, nil
}

func intFit(c *Column, v any, lo, hi int64, box func(int64) any) (any, error) {
	i, ok := toInt64(v)
	if !ok {
		if s, isStr := v.(string); isStr {
			return reconvert(c, s)
		}
		return nil, mismatch(c, v)
	}
	if i < lo || i > hi {
		return nil, fmt.Errorf("column '%s': value %d is out of range for %s", c.Name, i, c.SQLType())
	}
	return box(i), nil
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), true
		}
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}
