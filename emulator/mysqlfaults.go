package emulator

import "github.com/starrocks-txn/benthos-starrocks/emulator/store"

// statementFault is the MySQL port's hook: it consumes the first op mysql
// fault whose pattern matches the statement.
func (e *Emulator) statementFault(stmt string) store.StatementFault {
	f := e.faults.takeSQL(stmt)
	if f == nil {
		return store.StatementFault{}
	}
	e.ctr.faultsFired.Add(1)
	e.log.Debug("fault fired", "op", f.Op, "action", f.Action, "statement", stmt)
	sf := store.StatementFault{Delay: f.Delay, Code: f.Code, Message: f.Message}
	switch f.Action.canonical() {
	case ActSQLError:
		sf.Action = store.StatementError
	case ActReset:
		sf.Action = store.StatementReset
	case ActDelay:
		sf.Action = store.StatementDelay
	case ActReplyLost:
		sf.Action = store.StatementReplyLost
	case ActReplyLate:
		sf.Action = store.StatementReplyLate
		if sf.Delay <= 0 {
			sf.Delay = defaultReplyLateDelay
		}
	case ActNoAnswer:
		sf.Action = store.StatementNoAnswer
	}
	return sf
}
