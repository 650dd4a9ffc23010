package emulator

import (
	"context"
	"strings"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/emulator/store"
)

// Schema change jobs (package store's schemachange.go runs them): the emulator tells them
// about its transactions, hands them their alter_job faults and steps them in the
// background while any is unfinished.

// schemaChangeTick is how often unfinished jobs are stepped.
const schemaChangeTick = 10 * time.Millisecond

// defaultAlterJobDelay is how long an alter_job delay fault without a delay keeps the job
// RUNNING.
const defaultAlterJobDelay = 3 * time.Second

// initSchemaChanges connects the store's jobs to the emulator's transactions, faults and
// clock (Config.Now).
func (e *Emulator) initSchemaChanges() {
	e.store.SetSchemaChangeHooks(store.SchemaChangeHooks{Txns: txnOracle{e}, JobFault: e.alterJobFault, Now: e.cfg.Now})
	e.store.SetSchemaChangeRunTime(e.cfg.SchemaChangeTime)
}

// schemaChangeLoop steps the jobs while any is unfinished, and waits for the next one
// otherwise.
func (e *Emulator) schemaChangeLoop() {
	defer e.bg.Done()
	wake := e.store.SchemaChangeWake()
	for {
		select {
		case <-e.stop:
			return
		case <-wake:
		}
		for e.store.StepSchemaChanges() > 0 {
			if !e.sleep(context.Background(), schemaChangeTick) {
				return
			}
		}
	}
}

// txnOracle is store.TxnOracle over the emulator's transaction managers.
type txnOracle struct{ e *Emulator }

// NextTxnID takes the next transaction id, as a job's watershed does.
func (o txnOracle) NextTxnID() int64 {
	o.e.mu.Lock()
	defer o.e.mu.Unlock()
	return o.e.newIDLocked()
}

// PendingTxns is DatabaseTransactionMgr.isPreviousTransactionsFinished's test: the running
// transactions of the database with an id below the watershed whose table list meets the
// table. A classic transaction and a plain stream load name their table from the begin; a
// multi-table transaction is in the database's manager from its first load, with the tables
// it has loaded into (a registered one without a table would count for every table).
func (o txnOracle) PendingTxns(db, table string, below int64) []int64 {
	e := o.e
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []int64
	for name, d := range e.dbs {
		if !strings.EqualFold(name, db) {
			continue
		}
		for id, t := range d.running {
			if id < below && txnInvolves(t, table) {
				out = append(out, id)
			}
		}
	}
	return out
}

func txnInvolves(t *txn, table string) bool {
	if !t.multi {
		return strings.EqualFold(t.table, table)
	}
	for name := range t.byTable {
		if strings.EqualFold(name, table) {
			return true
		}
	}
	return len(t.byTable) == 0
}

// alterJobFault takes the first alter_job fault for the job's table.
func (e *Emulator) alterJobFault(db, table string) store.JobFault {
	f := e.faults.take(OpAlterJob, db, table, "")
	if f == nil {
		return store.JobFault{}
	}
	e.ctr.faultsFired.Add(1)
	e.log.Debug("fault fired", "op", f.Op, "action", f.Action, "db", db, "table", table)
	switch f.Action {
	case ActDelay:
		d := f.Delay
		if d <= 0 {
			d = defaultAlterJobDelay
		}
		return store.JobFault{Action: store.JobDelay, Delay: d}
	case ActCancel:
		return store.JobFault{Action: store.JobCancel, Message: f.Message}
	case ActSQLError:
		return store.JobFault{Action: store.JobError, Message: f.Message}
	}
	return store.JobFault{}
}
