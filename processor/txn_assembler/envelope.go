package txnassembler

import (
	"encoding/json"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"
)

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
// "json", optional "op"}. A SCHEMA event's json is a table definition
// (tableDefinition), the others' a row.
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
	case "SCHEMA":
		ev.kind, ev.schema = kindData, true
	case "TXN_END":
		ev.kind = kindEnd
	case "":
		return ev, badField("type", "is missing: expected TXN_BEGIN, DATA, SCHEMA or TXN_END")
	default:
		return ev, badField("type", "has unknown event type %q: expected TXN_BEGIN, DATA, SCHEMA or TXN_END", typ)
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
	if ev.schema {
		// A table definition, part of its transaction like a row.
		def, ierr := rawDefinition("json", raw.JSON)
		if ierr != nil {
			return ev, ierr
		}
		if ev.def, ierr = tableDefinition("json", def); ierr != nil {
			return ev, ierr
		}
		return ev, nil
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
	ev.keys = rowKeys(ev.rowJSON)
	return ev, nil
}
