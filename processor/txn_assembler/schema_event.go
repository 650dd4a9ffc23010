// This file reads the table definition of an explicit schema change that a
// producer writes itself: the envelope's SCHEMA event and a custom
// mapping's schema kind (ARCHITECTURE.md §14.1).

package txnassembler

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// definitionShape is the table definition's JSON form, for messages.
const definitionShape = `{"columns":[{"name","type","nullable","default","comment"}],"primary_key":[…]}`

// rawDefinition accepts a table definition given as an object or as a JSON
// string of one and returns the object's JSON text.
func rawDefinition(field string, raw json.RawMessage) ([]byte, *inputError) {
	if rawAbsent(raw) {
		return nil, badField(field, "is missing: a schema change needs its table definition %s", definitionShape)
	}
	switch raw[0] {
	case '{':
		return raw, nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badField(field, "is not a valid JSON string: %v", err)
		}
		return []byte(s), nil
	}
	return nil, badField(field, "must be a table definition %s (an object, or a JSON string of one), got %s", definitionShape, rawTypeName(raw))
}

// tableDefinition reads the table definition b (schema.Table as JSON, its
// column types as StarRocks DDL text), checks it as the output needs it
// (no field it does not know, at least one column, every column named
// once with a type StarRocks has, the key among the columns) and returns
// it in its canonical form. An error names field and what is wrong.
func tableDefinition(field string, b []byte) ([]byte, *inputError) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, badField(field, "must be a table definition %s, got %s", definitionShape, rawTypeName(b))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t schema.Table
	if err := dec.Decode(&t); err != nil {
		return nil, badField(field, "is not a table definition %s: %v", definitionShape, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, badField(field, "has trailing data after the table definition")
	}
	if len(t.Columns) == 0 {
		return nil, badField(field, "lists no columns: a table definition lists every column of the table")
	}
	if err := t.Validate(); err != nil {
		return nil, badField(field, "is not a valid table definition: %v", err)
	}
	for _, c := range t.Columns {
		if c.Type.Kind == schema.KindUnknown {
			return nil, badField(field, "column %q has the type %q, which is no StarRocks type the project knows", c.Name, c.Type.String())
		}
	}
	out, err := json.Marshal(&t)
	if err != nil {
		return nil, badField(field, "cannot be encoded: %v", err)
	}
	return out, nil
}
