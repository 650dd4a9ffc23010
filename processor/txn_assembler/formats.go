package txnassembler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// eventKind is what a source event means for the transaction state machine.
type eventKind int

const (
	kindUnknown eventKind = iota
	kindBegin
	kindData
	kindEnd
	kindDataEnd
	kindAbort
	kindSkip
)

func (k eventKind) String() string {
	switch k {
	case kindBegin:
		return "begin"
	case kindData:
		return "data"
	case kindEnd:
		return "end"
	case kindDataEnd:
		return "data_end"
	case kindAbort:
		return "abort"
	case kindSkip:
		return "skip"
	}
	return "unknown"
}

func (k eventKind) isData() bool { return k == kindData || k == kindDataEnd }

// event is one decoded source event. A decoder fills what it could read even
// when it also returns an error, so that a bad message can still be
// attributed to its transaction.
type event struct {
	kind  eventKind
	txnID string
	// bootstrap marks a maxwell bootstrap-insert row: its transaction id is
	// derived from its source offset once that is known.
	bootstrap bool
	database  string
	table     string
	// rowJSON is the row object to load, with __op set; del is that
	// __op (1); keys is the schema.KeysHash sum of its top-level keys, as
	// the row is written (ARCHITECTURE.md §14.1).
	rowJSON []byte
	del     bool
	keys    uint64
	// schema marks an explicit schema change (ARCHITECTURE.md §14.1), a
	// data event whose body is def, the table definition (schema.Table as
	// JSON) of database.table, emitted with starrocks_schema_change.
	schema bool
	def    []byte
	// ddl marks a maxwell DDL event: a source transaction of its own,
	// whose id is derived from its source offset once that is known.
	ddl bool
	// drop is the txn_assembler_dropped kind of a skipped event (dropSkip
	// when empty), and note what the debug log says of it.
	drop, note string
	// envPartition is the envelope's own partition field, the fallback
	// partition identity for non-Kafka sources.
	envPartition string
}

// inputError is bad input: the named field of the event is missing or wrong.
type inputError struct {
	field string
	msg   string
}

func (e *inputError) Error() string {
	return fmt.Sprintf("field %q %s", e.field, e.msg)
}

func badField(field, format string, args ...any) *inputError {
	return &inputError{field: field, msg: fmt.Sprintf(format, args...)}
}

type decoder func(msg *service.Message) (event, error)

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64, int, int64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// idString renders a transaction id or partition given as a string or a
// number. ok is false for anything else (null included).
func idString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, x != ""
	case json.Number:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	}
	return "", false
}

// rowObject accepts a row given as an object or as a JSON string of one.
func rowObject(field string, v any) (map[string]any, *inputError) {
	switch x := v.(type) {
	case map[string]any:
		return x, nil
	case string:
		parsed, err := decodeJSON([]byte(x))
		if err != nil {
			return nil, badField(field, "is not valid JSON: %v", err)
		}
		obj, ok := parsed.(map[string]any)
		if !ok {
			return nil, badField(field, "must hold a JSON object, got %s", typeName(parsed))
		}
		return obj, nil
	case nil:
		return nil, badField(field, "is missing: a data row needs its row object")
	}
	return nil, badField(field, "must be a JSON object or a JSON string of one, got %s", typeName(v))
}

// setOp stamps the row as an upsert or a delete.
func setOp(row map[string]any, del bool) {
	if del {
		row[contract.OpField] = 1
	} else {
		row[contract.OpField] = 0
	}
}

// existingOp reads an __op the row already carries; ok is false when it has
// none.
func existingOp(row map[string]any) (del bool, ok bool, err *inputError) {
	v, exists := row[contract.OpField]
	if !exists {
		return false, false, nil
	}
	switch s, _ := idString(v); s {
	case "0":
		return false, true, nil
	case "1":
		return true, true, nil
	}
	return false, false, badField(contract.OpField, "must be 0 (upsert) or 1 (delete), got %v", v)
}

// parseOp reads an envelope's op indication.
func parseOp(v any) (bool, *inputError) {
	s, ok := idString(v)
	if ok {
		switch strings.ToLower(s) {
		case "insert", "update", "upsert", "create", "read", "i", "c", "u", "r", "0":
			return false, nil
		case "delete", "d", "1":
			return true, nil
		}
	}
	return false, badField("op", "must be insert, update, upsert, delete (or c, u, r, d, 0, 1), got %v", v)
}

func unmarshalBody(msg *service.Message, dst any) error {
	b, err := msg.AsBytes()
	if err != nil {
		return badField("body", "cannot be read: %v", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		if !json.Valid(b) {
			return badField("body", "is not valid JSON")
		}
		return badField("body", "must be a JSON object, got %s", rawTypeName(b))
	}
	if err := json.Unmarshal(b, dst); err != nil {
		if !json.Valid(b) {
			return badField("body", "is not valid JSON: %v", err)
		}
		return badField("body", "has a field of the wrong type: %v", err)
	}
	return nil
}

// rawAbsent reports a field that is missing or null.
func rawAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func rawTypeName(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// rawString reads an optional string field.
func rawString(field string, raw json.RawMessage) (string, *inputError) {
	if rawAbsent(raw) {
		return "", nil
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", badField(field, "must be a string, got %s", rawTypeName(raw))
	}
	return s, nil
}

// rawID reads a string or a number, keeping a number's text as written.
func rawID(raw json.RawMessage) (string, bool) {
	if rawAbsent(raw) {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, s != ""
	}
	if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
		return string(raw), true
	}
	return "", false
}

// rawRow accepts a row given as an object or as a JSON string of one and
// returns the object's JSON text.
func rawRow(field string, raw json.RawMessage) ([]byte, *inputError) {
	if rawAbsent(raw) {
		return nil, badField(field, "is missing: a data row needs its row object")
	}
	switch raw[0] {
	case '{':
		return raw, nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badField(field, "is not a valid JSON string: %v", err)
		}
		b := bytes.TrimSpace([]byte(s))
		if !json.Valid(b) {
			return nil, badField(field, "is not valid JSON: %q", truncate(s))
		}
		if len(b) == 0 || b[0] != '{' {
			return nil, badField(field, "must hold a JSON object, got %s", rawTypeName(b))
		}
		return b, nil
	}
	return nil, badField(field, "must be a JSON object or a JSON string of one, got %s", rawTypeName(raw))
}

func truncate(s string) string {
	const maxShown = 64
	if len(s) > maxShown {
		return s[:maxShown] + "…"
	}
	return s
}
