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
	// rowJSON is the row object to load, with __op set.
	rowJSON []byte
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

// envelopeEvent is the envelope as it arrives; fields stay raw so that each
// one is checked on its own and the row is never re-encoded needlessly.
type envelopeEvent struct {
	Partition json.RawMessage `json:"partition"`
	TxnID     json.RawMessage `json:"txnId"`
	Type      json.RawMessage `json:"type"`
	Database  json.RawMessage `json:"database"`
	Table     json.RawMessage `json:"table"`
	JSON      json.RawMessage `json:"json"`
	Op        json.RawMessage `json:"op"`
}

// decodeEnvelope reads {"partition", "txnId", "type", "database", "table",
// "json", optional "op"}.
func decodeEnvelope(msg *service.Message) (event, error) {
	var ev event
	var raw envelopeEvent
	if err := unmarshalBody(msg, &raw); err != nil {
		return ev, err
	}
	if p, ok := rawID(raw.Partition); ok {
		ev.envPartition = p
	}
	if !rawAbsent(raw.TxnID) {
		id, ok := rawID(raw.TxnID)
		if !ok {
			return ev, badField("txnId", "must be a string or a number, got %s", rawTypeName(raw.TxnID))
		}
		ev.txnID = id
	}
	typ, ierr := rawString("type", raw.Type)
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
	if ev.database, ierr = rawString("database", raw.Database); ierr != nil {
		return ev, ierr
	}
	if ev.table, ierr = rawString("table", raw.Table); ierr != nil {
		return ev, ierr
	}
	rowJSON, ierr := rawRow("json", raw.JSON)
	if ierr != nil {
		return ev, ierr
	}
	del, explicit := false, false
	if !rawAbsent(raw.Op) {
		var v any
		if err := json.Unmarshal(raw.Op, &v); err != nil {
			return ev, badField("op", "is not valid JSON: %v", err)
		}
		if del, ierr = parseOp(v); ierr != nil {
			return ev, ierr
		}
		explicit = true
	}
	if ev.rowJSON, ierr = withOp("json", rowJSON, del, explicit); ierr != nil {
		return ev, ierr
	}
	return ev, nil
}

// maxwellEvent is a maxwell row as it arrives.
type maxwellEvent struct {
	Database json.RawMessage `json:"database"`
	Table    json.RawMessage `json:"table"`
	Type     json.RawMessage `json:"type"`
	Xid      json.RawMessage `json:"xid"`
	Commit   json.RawMessage `json:"commit"`
	Data     json.RawMessage `json:"data"`
	SQL      json.RawMessage `json:"sql"`
	Def      json.RawMessage `json:"def"`
}

// maxwellSkipped lists maxwell event types that carry no row.
var maxwellSkipped = map[string]bool{
	"bootstrap-start":    true,
	"bootstrap-complete": true,
}

// decodeMaxwell reads maxwell's JSON rows.
func decodeMaxwell(msg *service.Message) (event, error) {
	var ev event
	var raw maxwellEvent
	if err := unmarshalBody(msg, &raw); err != nil {
		return ev, err
	}
	typ, ierr := rawString("type", raw.Type)
	if ierr != nil {
		return ev, ierr
	}
	if !rawAbsent(raw.Xid) {
		id, ok := rawID(raw.Xid)
		if !ok {
			return ev, badField("xid", "must be a number, got %s", rawTypeName(raw.Xid))
		}
		ev.txnID = id
	}
	switch {
	case typ == "insert" || typ == "update" || typ == "delete":
		ev.kind = kindData
	case typ == "bootstrap-insert":
		ev.kind = kindDataEnd
		ev.bootstrap = true
		ev.txnID = ""
	case maxwellSkipped[typ] || len(raw.SQL) > 0 || len(raw.Def) > 0 ||
		strings.HasPrefix(typ, "database-") || strings.HasPrefix(typ, "table-"):
		ev.kind = kindSkip
		return ev, nil
	case typ == "":
		return ev, badField("type", "is missing: expected insert, update, delete or bootstrap-insert")
	default:
		return ev, badField("type", "has unknown maxwell type %q: expected insert, update, delete, bootstrap-insert, bootstrap-start, bootstrap-complete or a DDL type", typ)
	}
	if !ev.bootstrap {
		if !rawAbsent(raw.Commit) {
			var c bool
			if err := json.Unmarshal(raw.Commit, &c); err != nil {
				return ev, badField("commit", "must be a boolean, got %s", rawTypeName(raw.Commit))
			}
			if c {
				ev.kind = kindDataEnd
			}
		}
		if ev.txnID == "" {
			return ev, badField("xid", "is missing: maxwell must run with output_commit_info enabled (the default) so that rows carry xid and commit")
		}
	}
	if ev.database, ierr = rawString("database", raw.Database); ierr != nil {
		return ev, ierr
	}
	if ev.table, ierr = rawString("table", raw.Table); ierr != nil {
		return ev, ierr
	}
	if rawAbsent(raw.Data) || raw.Data[0] != '{' {
		return ev, badField("data", "must be the row object, got %s", rawTypeName(raw.Data))
	}
	if ev.rowJSON, ierr = withOp("data", raw.Data, typ == "delete", true); ierr != nil {
		return ev, ierr
	}
	return ev, nil
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

var opKey = []byte(`"` + contract.OpField + `"`)

// withOp returns the row object's JSON with __op set. When explicit is false
// an __op the row already carries is kept. A row without any "__op" text is
// extended in place, without decoding it.
func withOp(field string, rowJSON []byte, del, explicit bool) ([]byte, *inputError) {
	op := byte('0')
	if del {
		op = '1'
	}
	if !bytes.Contains(rowJSON, opKey) {
		body := bytes.TrimSpace(rowJSON)
		if len(body) < 2 || body[len(body)-1] != '}' {
			return nil, badField(field, "must be a JSON object")
		}
		inner := bytes.TrimSpace(body[1 : len(body)-1])
		out := make([]byte, 0, len(body)+12)
		out = append(out, '{')
		if len(inner) > 0 {
			out = append(out, inner...)
			out = append(out, ',')
		}
		out = append(out, `"`+contract.OpField+`":`...)
		out = append(out, op, '}')
		return out, nil
	}
	v, err := decodeJSON(rowJSON)
	if err != nil {
		return nil, badField(field, "is not valid JSON: %v", err)
	}
	row, ok := v.(map[string]any)
	if !ok {
		return nil, badField(field, "must be a JSON object, got %s", typeName(v))
	}
	if !explicit {
		d, has, ierr := existingOp(row)
		if ierr != nil {
			return nil, ierr
		}
		if has {
			del = d
		}
	}
	setOp(row, del)
	b, err := encodeRow(row)
	if err != nil {
		return nil, badField(field, "cannot be encoded: %v", err)
	}
	return b, nil
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
	row, ierr := rowObject("custom.row", normalise(v))
	if ierr != nil {
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
	setOp(row, del)
	if ev.rowJSON, err = encodeRow(row); err != nil {
		return ev, badField("custom.row", "cannot be encoded: %v", err)
	}
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
