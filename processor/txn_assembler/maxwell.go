package txnassembler

import (
	"encoding/json"
	"fmt"

	"github.com/redpanda-data/benthos/v4/public/service"
)

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
	Old      json.RawMessage `json:"old"`
}

// maxwellSkipped lists maxwell event types that carry no row.
var maxwellSkipped = map[string]bool{
	"bootstrap-start":    true,
	"bootstrap-complete": true,
}

// skippedDDL is a maxwell DDL event that is no schema change (a
// database's, or a table-drop): skipped, counted as dropped DDL, with a
// note for the debug log. database and table are the event's raw fields.
func skippedDDL(typ, txnID string, database, table json.RawMessage) event {
	db, _ := rawString("database", database)
	tbl, _ := rawString("table", table)
	return event{kind: kindSkip, txnID: txnID, drop: dropDDL,
		note: fmt.Sprintf("maxwell %s of %s skipped: the output creates databases with their first table and never drops anything", typ, qualifiedName(db, tbl))}
}

// decodeMaxwell reads maxwell's JSON rows and DDL events.
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
	case isMaxwellSchemaChange(typ):
		err := maxwellDDL(typ, &raw, &ev)
		return ev, err
	case isMaxwellDDL(typ):
		return skippedDDL(typ, ev.txnID, raw.Database, raw.Table), nil
	case maxwellSkipped[typ] || len(raw.SQL) > 0 || len(raw.Def) > 0:
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
	ev.keys = rowKeys(ev.rowJSON)
	return ev, nil
}
