package txnassembler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/bloblang"
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
	row       map[string]any
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

// decodeObject parses a message body as one JSON object, keeping numbers
// exactly as written.
func decodeObject(msg *service.Message) (map[string]any, error) {
	b, err := msg.AsBytes()
	if err != nil {
		return nil, badField("body", "cannot be read: %v", err)
	}
	v, err := decodeJSON(b)
	if err != nil {
		return nil, badField("body", "is not valid JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, badField("body", "must be a JSON object, got %s", typeName(v))
	}
	return obj, nil
}

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

func stringField(obj map[string]any, key string) (string, *inputError) {
	v, exists := obj[key]
	if !exists || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", badField(key, "must be a string, got %s", typeName(v))
	}
	return s, nil
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

// decodeEnvelope reads {"partition", "txnId", "type", "database", "table",
// "json", optional "op"}.
func decodeEnvelope(msg *service.Message) (event, error) {
	var ev event
	obj, err := decodeObject(msg)
	if err != nil {
		return ev, err
	}
	if p, ok := idString(obj["partition"]); ok {
		ev.envPartition = p
	}
	if v, exists := obj["txnId"]; exists && v != nil {
		id, ok := idString(v)
		if !ok {
			return ev, badField("txnId", "must be a string or a number, got %s", typeName(v))
		}
		ev.txnID = id
	}
	typ, ierr := stringField(obj, "type")
	if ierr != nil {
		return ev, ierr
	}
	switch strings.ToUpper(typ) {
	case "TXN_BEGIN":
		ev.kind = kindBegin
	case "DATA":
		ev.kind = kindData
	case "TXN_END":
		ev.kind = kindEnd
	case "":
		return ev, badField("type", "is missing: expected TXN_BEGIN, DATA or TXN_END")
	default:
		return ev, badField("type", "has unknown event type %q: expected TXN_BEGIN, DATA or TXN_END", typ)
	}
	if ev.txnID == "" {
		return ev, badField("txnId", "is missing: every %s event needs its transaction id", strings.ToUpper(typ))
	}
	if ev.kind != kindData {
		return ev, nil
	}
	if ev.database, ierr = stringField(obj, "database"); ierr != nil {
		return ev, ierr
	}
	if ev.table, ierr = stringField(obj, "table"); ierr != nil {
		return ev, ierr
	}
	if ev.row, ierr = rowObject("json", obj["json"]); ierr != nil {
		return ev, ierr
	}
	del, has, ierr := existingOp(ev.row)
	if ierr != nil {
		return ev, ierr
	}
	if v, exists := obj["op"]; exists && v != nil {
		if del, ierr = parseOp(v); ierr != nil {
			return ev, ierr
		}
	} else if !has {
		del = false // no op anywhere: an upsert
	}
	setOp(ev.row, del)
	return ev, nil
}

// maxwellSkipped lists maxwell event types that carry no row.
var maxwellSkipped = map[string]bool{
	"bootstrap-start":    true,
	"bootstrap-complete": true,
}

// decodeMaxwell reads maxwell's JSON rows.
func decodeMaxwell(msg *service.Message) (event, error) {
	var ev event
	obj, err := decodeObject(msg)
	if err != nil {
		return ev, err
	}
	typ, ierr := stringField(obj, "type")
	if ierr != nil {
		return ev, ierr
	}
	if v, exists := obj["xid"]; exists && v != nil {
		id, ok := idString(v)
		if !ok {
			return ev, badField("xid", "must be a number, got %s", typeName(v))
		}
		ev.txnID = id
	}
	_, hasSQL := obj["sql"]
	_, hasDef := obj["def"]
	switch {
	case typ == "insert" || typ == "update" || typ == "delete":
		ev.kind = kindData
	case typ == "bootstrap-insert":
		ev.kind = kindDataEnd
		ev.bootstrap = true
		ev.txnID = ""
	case maxwellSkipped[typ] || hasSQL || hasDef ||
		strings.HasPrefix(typ, "database-") || strings.HasPrefix(typ, "table-"):
		ev.kind = kindSkip
		return ev, nil
	case typ == "":
		return ev, badField("type", "is missing: expected insert, update, delete or bootstrap-insert")
	default:
		return ev, badField("type", "has unknown maxwell type %q: expected insert, update, delete, bootstrap-insert, bootstrap-start, bootstrap-complete or a DDL type", typ)
	}
	if !ev.bootstrap {
		if v, exists := obj["commit"]; exists && v != nil {
			c, ok := v.(bool)
			if !ok {
				return ev, badField("commit", "must be a boolean, got %s", typeName(v))
			}
			if c {
				ev.kind = kindDataEnd
			}
		}
		if ev.txnID == "" {
			return ev, badField("xid", "is missing: maxwell must run with output_commit_info enabled (the default) so that rows carry xid and commit")
		}
	}
	if ev.database, ierr = stringField(obj, "database"); ierr != nil {
		return ev, ierr
	}
	if ev.table, ierr = stringField(obj, "table"); ierr != nil {
		return ev, ierr
	}
	if ev.row, ierr = rowObject("data", obj["data"]); ierr != nil {
		return ev, ierr
	}
	setOp(ev.row, typ == "delete")
	return ev, nil
}

// customMappings are the Bloblang mappings of format: custom.
type customMappings struct {
	kind, txnID, database, table, row, del *bloblang.Executor
}

func (c *customMappings) decode(msg *service.Message) (event, error) {
	var ev event
	v, err := queryValue(msg, c.kind)
	if err != nil {
		return ev, badField("custom.kind", "mapping failed: %v", err)
	}
	kind, _ := v.(string)
	if v, err = queryValue(msg, c.txnID); err != nil {
		return ev, badField("custom.txn_id", "mapping failed: %v", err)
	}
	if v != nil {
		id, ok := idString(v)
		if !ok && v != "" {
			return ev, badField("custom.txn_id", "must give a string or a number, got %s", typeName(v))
		}
		ev.txnID = id
	}
	switch strings.ToLower(kind) {
	case "begin":
		ev.kind = kindBegin
	case "data":
		ev.kind = kindData
	case "end":
		ev.kind = kindEnd
	case "data_end":
		ev.kind = kindDataEnd
	case "abort":
		ev.kind = kindAbort
		return ev, nil
	case "skip":
		ev.kind = kindSkip
		return ev, nil
	case "":
		return ev, badField("custom.kind", "gave no kind (%s): expected begin, data, end, data_end, abort or skip", typeName(v))
	default:
		return ev, badField("custom.kind", "gave unknown kind %q: expected begin, data, end, data_end, abort or skip", kind)
	}
	if ev.txnID == "" {
		return ev, badField("custom.txn_id", "gave no transaction id for a %s event", ev.kind)
	}
	if !ev.kind.isData() {
		return ev, nil
	}
	if ev.database, err = c.stringValue(msg, c.database, "custom.database"); err != nil {
		return ev, err
	}
	if ev.table, err = c.stringValue(msg, c.table, "custom.table"); err != nil {
		return ev, err
	}
	if v, err = queryValue(msg, c.row); err != nil {
		return ev, badField("custom.row", "mapping failed: %v", err)
	}
	var ierr *inputError
	if ev.row, ierr = rowObject("custom.row", normalise(v)); ierr != nil {
		return ev, ierr
	}
	if v, err = queryValue(msg, c.del); err != nil {
		return ev, badField("custom.delete", "mapping failed: %v", err)
	}
	del := false
	switch x := v.(type) {
	case bool:
		del = x
	case nil:
	default:
		return ev, badField("custom.delete", "must give a boolean, got %s", typeName(v))
	}
	setOp(ev.row, del)
	return ev, nil
}

func (c *customMappings) stringValue(msg *service.Message, exec *bloblang.Executor, field string) (string, error) {
	v, err := queryValue(msg, exec)
	if err != nil {
		return "", badField(field, "mapping failed: %v", err)
	}
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	}
	return "", badField(field, "must give a string, got %s", typeName(v))
}

// queryValue runs a mapping against a message (this = its JSON body, @ = its
// metadata) and returns the root value; nil when the root was deleted.
func queryValue(msg *service.Message, exec *bloblang.Executor) (any, error) {
	res, err := msg.BloblangQuery(exec)
	if err != nil || res == nil {
		return nil, err
	}
	if !res.HasStructured() {
		// A string result is stored as raw bytes.
		b, err := res.AsBytes()
		if err != nil {
			return nil, fmt.Errorf("reading the mapping result: %w", err)
		}
		return string(b), nil
	}
	v, err := res.AsStructured()
	if err != nil {
		return nil, fmt.Errorf("reading the mapping result: %w", err)
	}
	return v, nil
}

// normalise copies a Bloblang result into plain JSON values, so that the row
// a mapping returns is never shared with the message it came from.
func normalise(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalise(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalise(e)
		}
		return out
	}
	return v
}

// encodeRow renders a row as compact JSON without HTML escaping.
func encodeRow(row map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(row); err != nil {
		return nil, fmt.Errorf("encoding row: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
