package emulator

import (
	"fmt"
	"slices"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/emulator/store"
)

// Classic transaction statuses (TransactionStatus names).
const (
	statusPrepare   = "PREPARE"
	statusPrepared  = "PREPARED"
	statusCommitted = "COMMITTED"
	statusVisible   = "VISIBLE"
	statusAborted   = "ABORTED"
	statusUnknown   = "UNKNOWN"
)

// Multi-statement task states (StreamLoadMultiStmtTask names, with
// StarRocks' spelling).
const (
	stateBegin      = "BEGIN"
	stateCommitting = "COMMITING"
	stateCommitted  = "COMMITED"
	stateFinished   = "FINISHED"
	stateAborting   = "ABORTING"
	stateCancelled  = "CANCELLED"
)

const (
	reasonRestart  = "cancelled after FE restart"
	reasonUser     = "User Aborted"
	reasonUserCncl = "user cancel"
)

// txn is one transaction: a classic one (status) or a multi-statement task
// (state). Every field is guarded by Emulator.mu.
type txn struct {
	id         int64
	label, db  string
	dbID       int64
	multi      bool
	stream     bool   // a plain stream load
	table      string // classic only
	status     string // classic only
	state      string // multi only
	registered bool   // known to the database's transaction manager
	created    time.Time
	timeout    time.Duration
	finishedAt time.Time
	// committedAt is when the commit applied the rows (zero until then).
	committedAt time.Time
	done        bool
	reason      string
	// abortingUntil is when an ABORTING task (injected slow abort) becomes
	// CANCELLED.
	abortingUntil time.Time
	// Classic only: idle_transaction_timeout (from the last request) and
	// prepared_timeout (PREPARED → aborted; 0 below 3.5.4, where the FE config applies).
	idleTimeout     time.Duration
	lastActive      time.Time
	preparedTimeout time.Duration
	preparedAt      time.Time
	// Classic BE context only, as /api/transaction/list shows it: the
	// begin's `timeout` and `idle_transaction_timeout` headers as the BE
	// keeps them (timeout_second, idle_timeout_sec: -1 when absent), and the
	// body bytes of the latest load request (receive_bytes, which the BE
	// resets when a load starts).
	beTimeoutSec, beIdleSec int64
	beLoadBytes             int64
	// feLost marks a BE context whose transaction the FE forgot in a 3.x FE restart
	// (classic3x.go): its prepare, commit or rollback fails.
	feLost bool

	// pubTicket is its place in the commit order (publish.go; 0 until it
	// commits). Set under Emulator.mu and publishOrder.mu, once.
	pubTicket int64

	tables  []*tableLoad // in first-load order
	byTable map[string]*tableLoad
	bytes   int64 // body bytes, cumulative over the loads
}

// tableLoad is one table's part of a transaction (a multi sub-task, or the
// single table of a classic transaction).
type tableLoad struct {
	name    string
	subID   int64
	headers map[string]string // the data headers of the first load
	params  store.LoadParams
	planned bool // params are fixed
	busy    bool
	loads   int
	// rows are the parsed rows of each load, in arrival order: kept per
	// load and joined once by changes, since appending every load to one
	// slice copied the rows again at each doubling.
	rows     [][]store.Row
	loaded   int64
	filtered int64
	unsel    int64
	bytes    int64
	errors   []string
	parseErr string
	errFile  string
	// stream is the table's CSV load stream: its bodies form one stream,
	// ended at prepare or commit.
	stream store.Stream
}

// endStreamsLocked ends the load stream of every table of t (prepare or
// commit): a CSV record left open by the last body becomes its last row.
func (e *Emulator) endStreamsLocked(t *txn) {
	for _, tl := range t.tables {
		if !tl.stream.Pending() {
			continue
		}
		p, err := e.store.EndStream(t.db, tl.name, tl.params, &tl.stream)
		if err != nil {
			if tl.parseErr == "" {
				tl.parseErr = err.Error()
			}
			continue
		}
		e.addParsedLocked(t, tl, p)
	}
}

// addParsedLocked adds a parse result to a table of t.
func (e *Emulator) addParsedLocked(t *txn, tl *tableLoad, p *parsedLoad) {
	if len(p.Rows) > 0 {
		tl.rows = append(tl.rows, p.Rows)
	}
	tl.loaded += p.Loaded
	tl.filtered += p.Filtered
	tl.unsel += p.Unselected
	if len(p.Errors) > 0 {
		e.recordErrorsLocked(t, tl, p.Errors)
	}
	e.ctr.rowsReceived.Add(p.Loaded)
}

// labelState is the get_load_state view of t.
func (t *txn) labelState() string {
	if !t.multi {
		return t.status
	}
	switch t.state {
	case stateCommitted:
		return statusCommitted
	case stateFinished:
		return statusVisible
	case stateCancelled:
		return statusAborted
	default:
		return statusPrepare
	}
}

// jobStatus is the ExistingJobStatus of a LabelAlreadyUsedException.
func jobStatus(state string) string {
	switch state {
	case statusCommitted, statusVisible:
		return "FINISHED"
	}
	return "RUNNING"
}

func (e *Emulator) newIDLocked() int64 {
	e.nextID++
	return e.nextID
}

func (e *Emulator) dbLocked(db string) *dbTxns {
	d := e.dbs[db]
	if d == nil {
		d = &dbTxns{labels: map[string][]*txn{}, running: map[int64]*txn{}}
		e.dbs[db] = d
	}
	return d
}

// registerLocked adds t to its database's transaction manager as running.
func (e *Emulator) registerLocked(t *txn) {
	d := e.dbLocked(t.db)
	d.labels[t.label] = append(d.labels[t.label], t)
	d.running[t.id] = t
	t.registered = true
	e.journalLocked(t, t.labelState())
}

// runningLocked is the number of running transactions of db.
func (e *Emulator) runningLocked(db string) int {
	if d := e.dbs[db]; d != nil {
		return len(d.running)
	}
	return 0
}

// limitErrLocked returns the running-transaction limit error of db, or "".
func (e *Emulator) limitErrLocked(db string, dbID int64) string {
	n := e.runningLocked(db)
	if n >= e.cfg.MaxRunningTxnPerDB {
		return runningLimitMsg(dbID, n, e.cfg.MaxRunningTxnPerDB)
	}
	return ""
}

func runningLimitMsg(dbID int64, n, limit int) string {
	return fmt.Sprintf("current running txns on db %d is %d, larger than limit %d", dbID, n, limit)
}

// latestLocked is the newest transaction of (db, label) the database knows.
func (e *Emulator) latestLocked(db, label string) *txn {
	d := e.dbs[db]
	if d == nil {
		return nil
	}
	ts := d.labels[label]
	if len(ts) == 0 {
		return nil
	}
	return ts[len(ts)-1]
}

// usedLocked is a non-aborted transaction of (db, label), or nil.
func (e *Emulator) usedLocked(db, label string) *txn {
	d := e.dbs[db]
	if d == nil {
		return nil
	}
	ts := d.labels[label]
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].labelState() != statusAborted {
			return ts[i]
		}
	}
	return nil
}

// finishLocked records that t reached a final state: its database keeps
// its transaction state (if registered) and the stream load manager its
// multi task, each until its retention drops it.
func (e *Emulator) finishLocked(t *txn) {
	if t.done {
		return
	}
	t.done = true
	t.finishedAt = e.now()
	if d := e.dbs[t.db]; d != nil && t.registered {
		delete(d.running, t.id)
		d.finished = append(d.finished, t)
	}
	if t.multi {
		e.finishedTasks = append(e.finishedTasks, t)
	}
	for _, tl := range t.tables {
		tl.rows = nil
	}
	e.evictLocked(t.finishedAt)
}

// abortLocked aborts t (no-op when already final or committed).
func (e *Emulator) abortLocked(t *txn, reason string) {
	if t.multi {
		switch t.state {
		case stateBegin, stateAborting, stateCommitting:
		default:
			return
		}
		t.state = stateCancelled
	} else {
		switch t.status {
		case statusPrepare, statusPrepared, statusCommitted:
		default:
			return
		}
		t.status = statusAborted
		if e.beContexts[t.label] == t {
			delete(e.beContexts, t.label)
		}
	}
	if t.reason == "" {
		t.reason = reason
	}
	e.ctr.aborted.Add(1)
	e.log.Debug("transaction aborted", "label", t.label, "txn_id", t.id, "reason", reason)
	e.finishLocked(t)
	if t.registered || t.multi {
		e.journalLocked(t, statusAborted)
	}
}

// reap enforces transaction timeouts, finishes injected slow aborts and
// applies label retention.
func (e *Emulator) reap(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var victims []*txn
	for _, t := range e.multi {
		switch {
		case t.state == stateBegin && t.timeout > 0 && now.Sub(t.created) > t.timeout:
			victims = append(victims, t)
		case t.state == stateAborting && !t.abortingUntil.IsZero() && !now.Before(t.abortingUntil):
			victims = append(victims, t)
		}
	}
	for _, t := range victims {
		if t.state == stateBegin {
			e.abortLocked(t, fmt.Sprintf("transaction timeout after %dms", t.timeout.Milliseconds()))
		} else {
			e.abortLocked(t, t.reason)
		}
	}
	victims = victims[:0]
	reasons := map[*txn]string{}
	for _, t := range e.beContexts {
		switch {
		case t.status != statusPrepare || t.tables[0].busy:
		case t.timeout > 0 && now.Sub(t.created) > t.timeout:
			reasons[t] = e.ver.beTimeoutMsg("timeout", t.timeout)
		case t.idleTimeout > 0 && now.Sub(t.lastActive) > t.idleTimeout:
			reasons[t] = e.ver.beTimeoutMsg("idle timeout", t.idleTimeout)
		}
	}
	for _, d := range e.dbs {
		for _, t := range d.running {
			if !t.multi && t.status == statusPrepared && e.preparedExpiredLocked(t, now) {
				reasons[t] = txnTimeoutByManager
			}
		}
	}
	for t, why := range reasons {
		e.abortLocked(t, why)
	}
	e.evictLocked(now)
}

// txnTimeoutByManager is the reason DatabaseTransactionMgr.abortTimeoutTxns gives a
// transaction it aborts (TXN_TIMEOUT_BY_MANAGER): a PREPARED one past its prepared timeout
// reads "ABORTED|…|timeout by txn manager" (test_prepared_timeout).
const txnTimeoutByManager = "timeout by txn manager"

// preparedExpiredLocked is TransactionState.isTimeout for a PREPARED transaction. From 3.5.4
// it has its own prepared timeout (the header, or the config at its prepare); before, the
// FE compares whole seconds since the prepare with prepared_transaction_default_timeout_second
// as it is now ((now - preparedTime) / 1000 > config, 3.3.7 and 3.4.3 sources), so ADMIN
// SET FRONTEND CONFIG also moves the deadline of transactions already prepared.
func (e *Emulator) preparedExpiredLocked(t *txn, now time.Time) bool {
	if e.ver.preparedTimeout() {
		return t.preparedTimeout > 0 && now.Sub(t.preparedAt) > t.preparedTimeout
	}
	return int64(now.Sub(t.preparedAt)/time.Second) > int64(e.cfg.PreparedTxnTimeout/time.Second)
}

// changesLocked builds the store changes of t: tables in first-load order,
// rows in arrival order.
func (t *txn) changes() []store.TableChange {
	out := make([]store.TableChange, 0, len(t.tables))
	for _, tl := range t.tables {
		if rows := tl.joinedRows(); len(rows) > 0 {
			out = append(out, store.TableChange{DB: t.db, Table: tl.name, Rows: rows})
		}
	}
	return out
}

// joinedRows returns the rows of every load of tl in arrival order: the one
// load's own slice when there is one, else one slice of the exact size,
// which then replaces the loads' slices, so that every later call (a
// prepare journals the rows, the commit applies them) sees the same rows,
// as the store may normalise them in place.
func (tl *tableLoad) joinedRows() []store.Row {
	switch len(tl.rows) {
	case 0:
		return nil
	case 1:
		return tl.rows[0]
	}
	out := slices.Concat(tl.rows...)
	// The slots past the join let go of the loads' slices: a prepared
	// transaction would hold every row header twice until its commit.
	clear(tl.rows)
	tl.rows = append(tl.rows[:0], out)
	return out
}

func (t *txn) totals() (loaded, filtered, unsel, bytes int64) {
	for _, tl := range t.tables {
		loaded += tl.loaded
		filtered += tl.filtered
		unsel += tl.unsel
	}
	return loaded, filtered, unsel, t.bytes
}

// recordErrorsLocked keeps a load's rejected-row messages for the
// /api/_load_error_log endpoint and returns the file name.
func (e *Emulator) recordErrorsLocked(t *txn, tl *tableLoad, lines []string) string {
	if tl.errFile == "" {
		tl.errFile = fmt.Sprintf("error_log_%s_%d_%d", t.label, t.id, tl.subID)
		e.errorOrder = append(e.errorOrder, tl.errFile)
		const keep = 1000
		if len(e.errorOrder) > keep {
			for _, f := range e.errorOrder[:len(e.errorOrder)-keep] {
				delete(e.errorLogs, f)
			}
			e.errorOrder = append(e.errorOrder[:0:0], e.errorOrder[len(e.errorOrder)-keep:]...)
		}
	}
	const maxLines = 1000
	cur := e.errorLogs[tl.errFile]
	for _, l := range lines {
		if len(cur) >= maxLines {
			break
		}
		cur = append(cur, l)
	}
	e.errorLogs[tl.errFile] = cur
	return tl.errFile
}

// errorURL is the tracking URL of an error log file.
func (e *Emulator) errorURL(file string) string {
	base := e.BEURL()
	if base == "" {
		base = e.FEURL()
	}
	return base + "/api/_load_error_log?file=" + file
}
