package debezium_txn

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// Logical type names of the Kafka Connect schema that change how a value must
// be written for StarRocks (ARCHITECTURE.md §13.2). Every other type is loaded
// as the JSON converter printed it: integers, floats, booleans, strings,
// bytes (base64 text), structs and arrays.
const (
	logicalDecimal          = "org.apache.kafka.connect.data.Decimal"
	logicalConnectDate      = "org.apache.kafka.connect.data.Date"
	logicalConnectTime      = "org.apache.kafka.connect.data.Time"
	logicalConnectTimestamp = "org.apache.kafka.connect.data.Timestamp"
	logicalVariableDecimal  = "io.debezium.data.VariableScaleDecimal"
	logicalJSON             = "io.debezium.data.Json"
	logicalDate             = "io.debezium.time.Date"
	logicalTime             = "io.debezium.time.Time"
	logicalMicroTime        = "io.debezium.time.MicroTime"
	logicalNanoTime         = "io.debezium.time.NanoTime"
	logicalTimestamp        = "io.debezium.time.Timestamp"
	logicalMicroTimestamp   = "io.debezium.time.MicroTimestamp"
	logicalNanoTimestamp    = "io.debezium.time.NanoTimestamp"
	logicalZonedTimestamp   = "io.debezium.time.ZonedTimestamp"
	logicalIsoDate          = "io.debezium.time.IsoDate"
	logicalIsoTimestamp     = "io.debezium.time.IsoTimestamp"
	parameterDecimalScale   = "scale"
)

// Bounds on a decimal the input renders: StarRocks's widest DECIMAL holds
// 76 digits (32 bytes of unscaled value).
const (
	maxDecimalBytes = 64
	maxDecimalScale = 100
)

// convKind is how one field's value is rewritten.
type convKind uint8

const (
	convNone convKind = iota
	convDecimal
	convVariableDecimal
	convJSON
	convDate        // days since the epoch
	convTimeMillis  // past midnight
	convTimeMicros  // past midnight
	convTimeNanos   // past midnight
	convTimestampMS // since the epoch, no zone
	convTimestampUS
	convTimestampNS
	convZoned // ISO-8601 text with an offset
)

// fieldConv is the conversion of one field.
type fieldConv struct {
	kind  convKind
	scale int32
}

// rowPlan holds the conversions of the fields of one table's row schema.
// A plan without conversions lets the row through byte for byte.
type rowPlan struct {
	convs map[string]fieldConv
	// row is the row struct's schema, from which the source table is built
	// (nil: the envelope's schema has no row struct).
	row *wireSchema
	// tables are the source tables of this row schema by the key's
	// columns (keyTable), built once each: the identity the output checks
	// a table's columns by (ARCHITECTURE.md §14.1).
	tables map[string]*schema.Table
}

// maxKeyTables bounds a plan's tables (one per key schema seen with it).
const maxKeyTables = 8

// keyTable returns the source table of the plan's rows whose record key has
// these columns (nil: no key known), nil when the row schema has a field
// the output has no column for (its rows then load untyped).
func (p *rowPlan) keyTable(kc keyColumns) *schema.Table {
	if p.row == nil {
		return nil
	}
	key, k := kc.cols, kc.joined
	if t, ok := p.tables[k]; ok {
		return t
	}
	var ks *wireSchema
	if key != nil {
		ks = &wireSchema{}
		for _, n := range key {
			ks.Fields = append(ks.Fields, wireSchema{Field: n})
		}
	}
	t, err := sourceTable(p.row, ks)
	if err != nil {
		t = nil
	}
	if p.tables == nil || len(p.tables) >= maxKeyTables {
		p.tables = map[string]*schema.Table{}
	}
	p.tables[k] = t
	return t
}

// wireSchema is the part of a Kafka Connect JSON schema the plan needs.
type wireSchema struct {
	Type       string            `json:"type"`
	Name       string            `json:"name"`
	Field      string            `json:"field"`
	Fields     []wireSchema      `json:"fields"`
	Parameters map[string]string `json:"parameters"`
	Optional   bool              `json:"optional"`
	Default    json.RawMessage   `json:"default"`
	Doc        string            `json:"doc"`
	// Items is an array's element schema.
	Items *wireSchema `json:"items"`
}

// planFromEnvelopeSchema builds the plan of a Debezium envelope's row from
// the envelope's schema: the fields of its "after" struct (or "before", the
// same schema, when "after" is missing).
func planFromEnvelopeSchema(raw []byte) (*rowPlan, error) {
	var s wireSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("parsing the schema: %w", err)
	}
	var row *wireSchema
	for i := range s.Fields {
		switch s.Fields[i].Field {
		case "after":
			row = &s.Fields[i]
		case "before":
			if row == nil {
				row = &s.Fields[i]
			}
		}
	}
	p := &rowPlan{row: row}
	if row == nil {
		return p, nil
	}
	for _, f := range row.Fields {
		c, err := convFor(f)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Field, err)
		}
		if c.kind == convNone {
			continue
		}
		if p.convs == nil {
			p.convs = map[string]fieldConv{}
		}
		p.convs[f.Field] = c
	}
	return p, nil
}

// convFor is the conversion of a field's value: its logical type's rule
// (columns.go), or none.
func convFor(f wireSchema) (fieldConv, error) {
	r, ok := logicalRules[f.Name]
	if !ok || r.conv == convNone {
		return fieldConv{}, nil
	}
	if r.conv == convDecimal {
		sc := f.Parameters[parameterDecimalScale]
		n, err := strconv.ParseInt(sc, 10, 32)
		if err != nil {
			return fieldConv{}, fmt.Errorf("%s without a valid scale parameter (%q)", logicalDecimal, sc)
		}
		return fieldConv{kind: convDecimal, scale: int32(n)}, nil
	}
	return fieldConv{kind: r.conv}, nil
}

// valueWriter renders converted values. loc is the zone DATETIME text of a
// zoned timestamp is given in.
type valueWriter struct {
	loc *time.Location
}

// convert appends the StarRocks form of raw (one JSON value) to out. A JSON
// null stays null.
func (w valueWriter) convert(out []byte, c fieldConv, raw []byte) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return append(out, "null"...), nil
	}
	switch c.kind {
	case convDecimal:
		if len(raw) > 0 && raw[0] != '"' {
			// JsonConverter with decimal.format=NUMERIC prints the decimal
			// as a JSON number: its text is exact already.
			if !isJSONNumber(raw) {
				return out, fmt.Errorf("decimal: %s is neither base64 text nor a number", clip(raw))
			}
			return appendQuoted(out, string(raw)), nil
		}
		if o, ok := appendDecimalFast(out, raw, c.scale); ok {
			return o, nil
		}
		b, err := base64String(raw)
		if err != nil {
			return out, fmt.Errorf("decimal: %w", err)
		}
		s, err := decimalText(b, c.scale)
		if err != nil {
			return out, err
		}
		return appendQuoted(out, s), nil
	case convVariableDecimal:
		var v struct {
			Scale json.Number `json:"scale"`
			Value string      `json:"value"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return out, fmt.Errorf("variable scale decimal: %w", err)
		}
		scale, err := strconv.ParseInt(v.Scale.String(), 10, 32)
		if err != nil {
			return out, fmt.Errorf("variable scale decimal: scale %q is not an integer", v.Scale)
		}
		b, err := base64.StdEncoding.DecodeString(v.Value)
		if err != nil {
			return out, fmt.Errorf("variable scale decimal: value is not base64: %w", err)
		}
		s, err := decimalText(b, int32(scale))
		if err != nil {
			return out, err
		}
		return appendQuoted(out, s), nil
	case convJSON:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			// Already a JSON value rather than JSON text in a string.
			if json.Valid(raw) {
				return append(out, raw...), nil
			}
			return out, fmt.Errorf("json: %s is not JSON text", clip(raw))
		}
		if !json.Valid([]byte(s)) {
			return out, fmt.Errorf("json: the text %q is not valid JSON", clipString(s))
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(s)); err != nil {
			return out, fmt.Errorf("json: %w", err)
		}
		return append(out, buf.Bytes()...), nil
	case convDate:
		n, err := intValue(raw)
		if err != nil {
			return out, fmt.Errorf("date: %w", err)
		}
		return appendQuoted(out, time.Unix(n*86400, 0).UTC().Format(time.DateOnly)), nil
	case convTimeMillis, convTimeMicros, convTimeNanos:
		n, err := intValue(raw)
		if err != nil {
			return out, fmt.Errorf("time: %w", err)
		}
		ns := n
		switch c.kind {
		case convTimeMillis:
			ns = n * int64(time.Millisecond)
		case convTimeMicros:
			ns = n * int64(time.Microsecond)
		}
		return appendQuoted(out, timeOfDayText(ns)), nil
	case convTimestampMS, convTimestampUS, convTimestampNS:
		n, err := intValue(raw)
		if err != nil {
			return out, fmt.Errorf("timestamp: %w", err)
		}
		var t time.Time
		switch c.kind {
		case convTimestampMS:
			t = time.UnixMilli(n)
		case convTimestampUS:
			t = time.UnixMicro(n)
		default:
			t = time.Unix(0, n)
		}
		// The value is the wall clock written as if it were UTC.
		out = append(out, '"')
		out = appendDatetime(out, t.UTC())
		return append(out, '"'), nil
	case convZoned:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return out, fmt.Errorf("zoned timestamp: %s is not a string", clip(raw))
		}
		t, dateOnly, err := parseISO(s)
		if err != nil {
			return out, fmt.Errorf("zoned timestamp: %w", err)
		}
		if dateOnly {
			return appendQuoted(out, t.Format(time.DateOnly)), nil
		}
		return appendQuoted(out, datetimeText(t.In(w.loc))), nil
	}
	return append(out, raw...), nil
}

// decimalText renders a big-endian two's complement unscaled value (Java's
// BigInteger.toByteArray) with its scale as exact decimal text.
func decimalText(b []byte, scale int32) (string, error) {
	if len(b) > maxDecimalBytes {
		return "", fmt.Errorf("decimal: %d bytes of unscaled value is more than any StarRocks DECIMAL holds", len(b))
	}
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(b))*8))
	}
	neg := n.Sign() < 0
	digits := new(big.Int).Abs(n).String()
	if scale < 0 {
		if n.Sign() != 0 {
			digits += strings.Repeat("0", int(-scale))
		}
		scale = 0
	}
	if scale > maxDecimalScale {
		return "", fmt.Errorf("decimal: scale %d is more than any StarRocks DECIMAL holds", scale)
	}
	if scale > 0 {
		if len(digits) <= int(scale) {
			digits = strings.Repeat("0", int(scale)-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-int(scale)] + "." + digits[len(digits)-int(scale):]
	}
	if neg {
		digits = "-" + digits
	}
	return digits, nil
}

// appendDecimalFast is the decimal case of convert for the common value:
// base64 text without escapes of at most 8 bytes, a scale within bounds;
// ok is false for anything else, which convert renders (and refuses) as
// before. TestDecimalFastEqualsBigInt holds the two equal.
func appendDecimalFast(out, raw []byte, scale int32) ([]byte, bool) {
	if !isPlainASCIIString(raw) || len(raw) > 2+12 || scale < 0 || scale > maxDecimalScale {
		return out, false
	}
	var buf [9]byte
	n, err := base64.StdEncoding.Decode(buf[:], raw[1:len(raw)-1])
	if err != nil || n > 8 {
		return out, false
	}
	return appendDecimal(out, buf[:n], scale), true
}

// appendDecimal renders, quoted, a big-endian two's complement unscaled
// value of at most 8 bytes with its scale (0 to maxDecimalScale) as
// decimalText does.
func appendDecimal(out, b []byte, scale int32) []byte {
	var u uint64
	for _, c := range b {
		u = u<<8 | uint64(c)
	}
	neg := false
	if len(b) > 0 && b[0]&0x80 != 0 {
		// Sign-extend, then take the magnitude in uint64 (MinInt64 too).
		// (A shift by 64 gives 0: eight bytes are already the whole word.)
		u |= ^uint64(0) << (uint(len(b)) * 8)
		neg = true
		u = -u
	}
	var digits [24]byte
	d := strconv.AppendUint(digits[:0], u, 10)
	out = append(out, '"')
	if neg {
		out = append(out, '-')
	}
	if scale > 0 {
		sc := int(scale)
		if len(d) <= sc {
			out = append(out, '0', '.')
			for i := len(d); i < sc; i++ {
				out = append(out, '0')
			}
			out = append(out, d...)
		} else {
			out = append(out, d[:len(d)-sc]...)
			out = append(out, '.')
			out = append(out, d[len(d)-sc:]...)
		}
	} else {
		out = append(out, d...)
	}
	return append(out, '"')
}

// appendDatetime appends datetimeText(t).
func appendDatetime(out []byte, t time.Time) []byte {
	out = t.AppendFormat(out, "2006-01-02 15:04:05")
	return appendFraction(out, int64(t.Nanosecond()))
}

// appendFraction appends fraction(ns).
func appendFraction(out []byte, ns int64) []byte {
	width := 9
	switch {
	case ns == 0:
		return out
	case ns%1000 == 0:
		ns, width = ns/1000, 6
	}
	var d [9]byte
	for i := width - 1; i >= 0; i-- {
		d[i] = byte('0' + ns%10)
		ns /= 10
	}
	out = append(out, '.')
	return append(out, d[:width]...)
}

// timeOfDayText renders a time past midnight as HH:MM:SS[.ffffff]. MySQL's
// TIME can be negative or above 24 hours; hours are then not wrapped.
func timeOfDayText(ns int64) string {
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	h := ns / int64(time.Hour)
	ns -= h * int64(time.Hour)
	m := ns / int64(time.Minute)
	ns -= m * int64(time.Minute)
	s := ns / int64(time.Second)
	ns -= s * int64(time.Second)
	return fmt.Sprintf("%s%02d:%02d:%02d%s", sign, h, m, s, fraction(ns))
}

// datetimeText renders StarRocks DATETIME text: date, space, time, and the
// fraction only when it is not zero (six digits, nine when the nanoseconds
// need them).
func datetimeText(t time.Time) string {
	return t.Format("2006-01-02 15:04:05") + fraction(int64(t.Nanosecond()))
}

func fraction(ns int64) string {
	switch {
	case ns == 0:
		return ""
	case ns%1000 == 0:
		return fmt.Sprintf(".%06d", ns/1000)
	default:
		return fmt.Sprintf(".%09d", ns)
	}
}

// parseISO reads Debezium's ISO-8601 texts: ZonedTimestamp
// ("2011-12-03T10:15:30.030431+01:00", "…Z"), IsoTimestamp, and IsoDate
// ("2023-11-21Z", a date with an offset).
func parseISO(s string) (time.Time, bool, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, false, nil
	}
	if len(s) >= 10 && !strings.ContainsRune(s, 'T') {
		if t, err := time.Parse(time.DateOnly, s[:10]); err == nil {
			return t, true, nil
		}
	}
	return time.Time{}, false, fmt.Errorf("%q is not ISO-8601 date-time text with an offset", clipString(s))
}

// intValue reads a JSON integer, or an integer printed as a JSON string.
func intValue(raw []byte) (int64, error) {
	s := string(raw)
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not an integer", clip(raw))
	}
	return n, nil
}

func base64String(raw []byte) ([]byte, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s is not a string", clip(raw))
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not base64 (set decimal.handling.mode or keep the schema): %w", clipString(s), err)
	}
	return b, nil
}

func isJSONNumber(raw []byte) bool {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return false
	}
	n, ok := v.(json.Number)
	return ok && n != ""
}

func appendQuoted(out []byte, s string) []byte {
	// Decimal, date and time text never needs escaping.
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

func clip(raw []byte) string { return clipString(string(raw)) }

func clipString(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
