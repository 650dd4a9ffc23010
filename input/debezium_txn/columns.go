package debezium_txn

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// The StarRocks column of each Kafka Connect field (ARCHITECTURE.md §14.1):
// what the output creates and widens for a Debezium table. It is one table
// with the value conversions of values.go: a logical type's rule names both
// how its value is written (convFor) and the column that holds it, so a
// column always takes what the conversion writes.

// logicalRule is a logical type's conversion and column.
type logicalRule struct {
	conv convKind
	// column is the StarRocks type of the field; nil: by its Connect type.
	column func(f wireSchema) (schema.Type, error)
}

// fixed returns a rule's column function for one type.
func fixed(t schema.Type) func(wireSchema) (schema.Type, error) {
	return func(wireSchema) (schema.Type, error) { return t, nil }
}

// timeText is the text a time of day is written as ("HH:MM:SS.fffffffff").
var timeText = schema.Varchar(32)

var logicalRules = map[string]logicalRule{
	logicalDecimal:          {conv: convDecimal, column: decimalColumn},
	logicalVariableDecimal:  {conv: convVariableDecimal, column: fixed(schema.Text)},
	logicalJSON:             {conv: convJSON, column: fixed(schema.JSON)},
	logicalDate:             {conv: convDate, column: fixed(schema.Date)},
	logicalConnectDate:      {conv: convDate, column: fixed(schema.Date)},
	logicalTime:             {conv: convTimeMillis, column: fixed(timeText)},
	logicalConnectTime:      {conv: convTimeMillis, column: fixed(timeText)},
	logicalMicroTime:        {conv: convTimeMicros, column: fixed(timeText)},
	logicalNanoTime:         {conv: convTimeNanos, column: fixed(timeText)},
	logicalTimestamp:        {conv: convTimestampMS, column: fixed(schema.DateTime)},
	logicalConnectTimestamp: {conv: convTimestampMS, column: fixed(schema.DateTime)},
	logicalMicroTimestamp:   {conv: convTimestampUS, column: fixed(schema.DateTime)},
	logicalNanoTimestamp:    {conv: convTimestampNS, column: fixed(schema.DateTime)},
	logicalZonedTimestamp:   {conv: convZoned, column: fixed(schema.DateTime)},
	logicalIsoTimestamp:     {conv: convZoned, column: fixed(schema.DateTime)},
	logicalIsoDate:          {conv: convZoned, column: fixed(schema.Date)},
	"io.debezium.data.Uuid": {column: fixed(schema.Varchar(36))},
	"io.debezium.time.Year": {column: fixed(schema.Int)},
}

// Debezium's parameters of a column's source type (column.propagate.source.type,
// docs/notes/kafka-cdc.md §6).
const (
	paramSourceType   = "__debezium.source.column.type"
	paramSourceLength = "__debezium.source.column.length"
	paramSourceScale  = "__debezium.source.column.scale"
	paramPrecision    = "connect.decimal.precision"
)

// decimalColumn is DECIMAL(precision, scale) from the Decimal parameters:
// without a precision, the widest StarRocks DECIMAL of that scale; wider
// than StarRocks's DECIMAL, the exact text.
func decimalColumn(f wireSchema) (schema.Type, error) {
	scale, err := strconv.Atoi(f.Parameters[parameterDecimalScale])
	if err != nil || scale < 0 {
		return schema.Type{}, fmt.Errorf("%s without a valid scale parameter (%q)", logicalDecimal, f.Parameters[parameterDecimalScale])
	}
	p := f.Parameters[paramPrecision]
	if p == "" {
		p = f.Parameters[paramSourceLength]
	}
	prec, err := strconv.Atoi(p)
	if err != nil || prec <= 0 {
		// Only the scale is known (precision 0): a column of that scale
		// holds it, and one is created DECIMAL(38, scale).
		return schema.Type{Kind: schema.KindDecimal, Scale: scale}, nil
	}
	prec = max(prec, scale)
	if prec > schema.MaxDecimalPrecision {
		return schema.Varchar(prec + 2), nil
	}
	return schema.Decimal(prec, scale), nil
}

// bytesPerChar: StarRocks counts VARCHAR in bytes, the source in characters
// (utf8mb4).
const bytesPerChar = 4

// columnType returns the StarRocks type of a Connect field.
func columnType(f wireSchema, key bool) (schema.Type, error) {
	if r, ok := logicalRules[f.Name]; ok && r.column != nil {
		return r.column(f)
	}
	switch f.Type {
	case "int8":
		return schema.TinyInt, nil
	case "int16":
		return schema.SmallInt, nil
	case "int32":
		return schema.Int, nil
	case "int64":
		return schema.BigInt, nil
	case "float32", "float":
		return schema.Float, nil
	case "float64", "double":
		return schema.Double, nil
	case "boolean":
		return schema.Boolean, nil
	case "string":
		if n, err := strconv.Atoi(f.Parameters[paramSourceLength]); err == nil && n > 0 && isCharType(f.Parameters[paramSourceType]) {
			return schema.Varchar(min(n*bytesPerChar, schema.MaxVarcharLen)), nil
		}
		// A length the source does not give: it changes nothing in an
		// existing column, and is created as VARCHAR(65533) (a key:
		// schema.KeyTextLen).
		return schema.Text, nil
	case "bytes":
		// base64 text, as the JSON converter writes bytes.
		return schema.Text, nil
	case "array":
		if f.Items != nil {
			if et, err := columnType(*f.Items, false); err == nil && et.Kind != schema.KindJSON {
				return schema.ArrayOf(et), nil
			}
		}
		return schema.JSON, nil
	case "struct", "map":
		return schema.JSON, nil
	}
	return schema.Type{}, fmt.Errorf("the Kafka Connect type %q has no StarRocks column the output creates", f.Type)
}

// isCharType reports whether a propagated source type is a character type
// whose length is a character count.
func isCharType(t string) bool {
	t = strings.ToUpper(t)
	return strings.Contains(t, "CHAR") || strings.Contains(t, "TEXT") && !strings.Contains(t, "LONG") && !strings.Contains(t, "MEDIUM")
}

// defaultText renders a field's Connect default as the text of a DEFAULT,
// through the field's value conversion, so it reads as the values do. A
// default the output cannot state (a struct, bytes) is none.
func defaultText(f wireSchema) *string {
	d := f.Default
	if len(d) == 0 || string(d) == "null" {
		return nil
	}
	c, err := convFor(f)
	if err != nil {
		return nil
	}
	out, err := valueWriter{loc: time.UTC}.convert(nil, c, d)
	if err != nil || len(out) == 0 {
		return nil
	}
	switch out[0] {
	case '"':
		var s string
		if json.Unmarshal(out, &s) != nil {
			return nil
		}
		if f.Type == "bytes" && c.kind == convNone {
			return nil
		}
		return &s
	case '{', '[':
		return nil
	}
	s := string(out)
	return &s
}

// sourceTable builds the source table of a row schema (the fields of the
// envelope's "after" struct) and the record key's schema (its fields are
// the primary key; nil: the table has none).
func sourceTable(row *wireSchema, key *wireSchema) (*schema.Table, error) {
	keys := map[string]bool{}
	t := &schema.Table{}
	if key != nil {
		for _, f := range key.Fields {
			t.Key = append(t.Key, f.Field)
			keys[f.Field] = true
		}
	}
	for _, f := range row.Fields {
		ty, err := columnType(f, keys[f.Field])
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Field, err)
		}
		t.Columns = append(t.Columns, schema.Column{
			Name: f.Field, Type: ty, Nullable: f.Optional && !keys[f.Field],
			Default: defaultText(f), Comment: f.Doc,
		})
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}
