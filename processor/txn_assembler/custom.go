package txnassembler

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/bloblang"
	"github.com/redpanda-data/benthos/v4/public/service"
)

// customMappings are the Bloblang mappings of format: custom.
type customMappings struct {
	kind, txnID, database, table, row, del, schema *bloblang.Executor
}

// customKinds lists the kinds a custom kind mapping may give.
const customKinds = "begin, data, end, data_end, schema, schema_end, abort or skip"

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
	case "schema":
		ev.kind, ev.schema = kindData, true
	case "schema_end":
		ev.kind, ev.schema = kindDataEnd, true
	case "abort":
		ev.kind = kindAbort
		return ev, nil
	case "skip":
		ev.kind = kindSkip
		return ev, nil
	case "":
		return ev, badField("custom.kind", "gave no kind (%s): expected %s", typeName(v), customKinds)
	default:
		return ev, badField("custom.kind", "gave unknown kind %q: expected %s", kind, customKinds)
	}
	if ev.txnID == "" {
		return ev, badField("custom.txn_id", "gave no transaction id for a %s event", strings.ToLower(kind))
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
	if ev.schema {
		ev.def, err = c.definition(msg)
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
	ev.del = del
	if ev.rowJSON, err = encodeRow(row); err != nil {
		return ev, badField("custom.row", "cannot be encoded: %v", err)
	}
	ev.keys = mapKeys(row).Sum()
	return ev, nil
}

// definition runs the schema mapping of a schema event: a table
// definition as an object or a JSON string of one (tableDefinition).
func (c *customMappings) definition(msg *service.Message) ([]byte, error) {
	v, err := queryValue(msg, c.schema)
	if err != nil {
		return nil, badField("custom.schema", "mapping failed: %v", err)
	}
	var b []byte
	switch x := v.(type) {
	case nil:
		return nil, badField("custom.schema", "gave nothing: a schema change needs its table definition %s", definitionShape)
	case string:
		b = []byte(x)
	case map[string]any:
		if b, err = json.Marshal(x); err != nil {
			return nil, badField("custom.schema", "cannot be encoded: %v", err)
		}
	default:
		return nil, badField("custom.schema", "must give a table definition %s (an object, or a JSON string of one), got %s", definitionShape, typeName(v))
	}
	def, ierr := tableDefinition("custom.schema", b)
	if ierr != nil {
		return nil, ierr
	}
	return def, nil
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
// metadata) and returns the root value; nil when the root was deleted or
// is null (a field the event lacks). Benthos's query result holds a null
// root as the text "null", as it holds a string root: that text is taken
// for null, never for a table, a transaction id or a row named "null".
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
		if string(b) == "null" {
			return nil, nil
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
