package store

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"time"

	"github.com/shopspring/decimal"
)

// appendSeqKey encodes a DUPLICATE KEY table's insertion sequence number.
func appendSeqKey(b []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(b, seq)
}

// appendRowKey encodes the key columns of vals so that byte order equals key order.
// Each component starts with 0 for NULL or 1 for a value.
func appendRowKey(b []byte, sc *TableSchema, vals []any) []byte {
	for _, ci := range sc.keyIdx {
		b = appendKeyValue(b, vals[ci])
	}
	return b
}

func appendKeyValue(b []byte, v any) []byte {
	if v == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	switch x := v.(type) {
	case int8:
		return appendInt(b, int64(x))
	case int16:
		return appendInt(b, int64(x))
	case int32:
		return appendInt(b, int64(x))
	case int64:
		return appendInt(b, x)
	case bool:
		if x {
			return append(b, 1)
		}
		return append(b, 0)
	case string:
		for i := 0; i < len(x); i++ {
			if x[i] == 0 {
				b = append(b, 0, 0xff)
			} else {
				b = append(b, x[i])
			}
		}
		return append(b, 0, 1)
	case time.Time:
		return appendInt(b, x.UnixMicro())
	case decimal.Decimal:
		return appendDecimal(b, x)
	case float32:
		return appendFloat(b, float64(x))
	case float64:
		return appendFloat(b, x)
	default:
		return b
	}
}

func appendInt(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(v)^(1<<63))
}

func appendFloat(b []byte, f float64) []byte {
	u := math.Float64bits(f)
	if f < 0 {
		u = ^u
	} else {
		u |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(b, u)
}

// appendDecimal encodes a decimal of a column's fixed scale: sign, digit count, digits.
// Values of one column share the scale, so comparing coefficients is enough.
func appendDecimal(b []byte, d decimal.Decimal) []byte {
	c := d.Coefficient()
	// normalise to a fixed exponent so that equal values of different exponents compare equal
	if exp := d.Exponent(); exp > -40 {
		c.Mul(c, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(exp+40)), nil))
	}
	mag := c.Bytes()
	switch c.Sign() {
	case 0:
		return append(b, 1)
	case 1:
		b = append(b, 2, byte(len(mag)))
		return append(b, mag...)
	default:
		b = append(b, 0, byte(255-len(mag)))
		for _, m := range mag {
			b = append(b, ^m)
		}
		return b
	}
}

// compareValues orders two values of one column; NULL sorts first.
func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch x := a.(type) {
	case decimal.Decimal:
		if y, ok := b.(decimal.Decimal); ok {
			return x.Cmp(y)
		}
	case float32:
		if y, ok := b.(float32); ok {
			return cmpOrdered(x, y)
		}
	case float64:
		if y, ok := b.(float64); ok {
			return cmpOrdered(x, y)
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y)
		}
	}
	return bytes.Compare(appendKeyValue(nil, a), appendKeyValue(nil, b))
}

func cmpOrdered[T int64 | float32 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
