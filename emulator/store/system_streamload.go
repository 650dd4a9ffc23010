package store

import (
	"fmt"
	"strings"

	"github.com/dolthub/vitess/go/sqltypes"
)

// showStreamLoadColumns are ShowStreamLoadStmt's TITLE_NAMES.
var showStreamLoadColumns = []string{"Label", "Id", "LoadId", "TxnId", "DbName", "TableName", "State", "ErrorMsg",
	"TrackingURL", "ChannelNum", "PreparedChannelNum", "NumRowsNormal", "NumRowsAbNormal", "NumRowsUnselected",
	"NumLoadBytes", "TimeoutSecond", "CreateTimeMs", "BeforeLoadTimeMs", "StartLoadingTimeMs",
	"StartPreparingTimeMs", "FinishPreparingTimeMs", "EndTimeMs", "ChannelState"}

// showStreamLoad is SHOW [ALL] STREAM LOAD [FROM db] [WHERE LABEL = 'l']: the tasks of the
// stream load manager, which are the multi-table transaction stream loads (one row per
// table, as each table is a sub-task); classic transactions and plain stream loads are
// coordinated by the BE and are not among them. Without ALL only tasks not yet final
// (FINISHED or CANCELLED) are listed.
func (h *ddlHandler) showStreamLoad(p *parser, sys System, cur string) (*sqltypes.Result, error) {
	const usage = "the emulator knows SHOW [ALL] STREAM LOAD [FROM db] [WHERE LABEL = 'label']"
	all := p.accept("all")
	if p.expect("stream") != nil || p.expect("load") != nil {
		return nil, sysErr("%s", usage)
	}
	db := cur
	if p.accept("from") || p.accept("in") {
		name, err := p.ident("a database name")
		if err != nil {
			return nil, sysErr("%s", err.Error())
		}
		db = name
	}
	if db == "" {
		return nil, sysErr("No database selected")
	}
	if _, ok := h.bridge.store.snap().db(db); !ok {
		return nil, sysErr("Unknown database '%s'", db)
	}
	label, byLabel := "", false
	if p.accept("where") {
		field := p.next()
		eq := p.expectPunct("=")
		val := p.next()
		if !field.is("label") || eq != nil || val.kind != tokString {
			return nil, sysErr("%s", usage)
		}
		label, byLabel = val.text, true
	}
	if p.done() != nil {
		return nil, sysErr("%s", usage)
	}
	db = h.canonicalDB(db)
	var rows [][]*string
	for _, l := range sys.Loads() {
		if !l.Multi || l.DB != db || byLabel && l.Label != label {
			continue
		}
		final := l.State == "FINISHED" || l.State == "CANCELLED"
		if final && !all {
			continue
		}
		prepared := int64(0)
		if l.State == "PREPARED" || l.State == "COMMITED" || l.State == "FINISHED" {
			prepared = 1
		}
		var tracking *string
		if l.TrackingURL != "" {
			tracking = str(l.TrackingURL)
		}
		var end *string
		if final {
			end = timeCell(l.LoadFinish)
		}
		rows = append(rows, []*string{str(l.Label), num(l.ID), str(fmt.Sprintf("%016x-%016x", l.JobID, l.ID)),
			num(l.TxnID), str(l.DB), str(l.Table), str(l.State), str(strings.TrimSpace(l.ErrorMsg)), tracking,
			str("1"), num(prepared), num(l.SinkRows), num(l.Filtered), num(l.Unselected), num(l.ScanBytes),
			num(l.TimeoutSec), timeCell(l.Create), timeCell(l.Create), timeCell(l.LoadStart), timeCell(l.LoadCommit),
			timeCell(l.LoadCommit), end, str(l.State)})
	}
	return textResult(showStreamLoadColumns, rows), nil
}
