package emulator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/emulator/store"
)

// Persistence (Config.DataDir). The store journals every DDL statement and commit; the
// emulator adds its label facts to the same journal: a transaction's registration (so a
// restart knows the label) and its abort as facts of their own, and its commit in the commit's
// own record, so the rows and the VISIBLE state survive together or not at all. A classic
// transaction's prepare is a fact too, with its pending rows: the FE keeps a PREPARED
// transaction in its edit log until its prepared timeout, so after a restart it is still
// PREPARED and can be committed or rolled back. A restart replays the journal: committed data,
// label states and prepared transactions come back; what was running and not prepared when
// the process stopped is ABORTED ("cancelled after FE restart"), as an FE restart leaves it
// (below 4.0 it is forgotten: the 3.x FE journals a BE's transaction from its prepare on).
// Retention then applies as usual. The BE's transaction contexts, the fault queue, the
// counters and the error logs are not kept.

// journalFile is the journal's name inside the data directory.
const journalFile = "emulator.journal"

// txnRecord is what the journal keeps of a transaction.
type txnRecord struct {
	ID         int64         `json:"id"`
	Label      string        `json:"label"`
	DB         string        `json:"db"`
	Multi      bool          `json:"multi,omitempty"`
	Stream     bool          `json:"stream,omitempty"`
	Table      string        `json:"table,omitempty"`
	Registered bool          `json:"registered,omitempty"`
	State      string        `json:"state"` // the label state: PREPARE, VISIBLE, ABORTED …
	Created    time.Time     `json:"created"`
	Committed  time.Time     `json:"committed,omitzero"`
	Finished   time.Time     `json:"finished,omitzero"`
	Reason     string        `json:"reason,omitempty"`
	TimeoutMs  int64         `json:"timeout_ms"`
	Tables     []tableRecord `json:"tables,omitempty"`
	// Evicted records EvictLabels: a restart forgets the transaction too.
	Evicted bool `json:"evicted,omitempty"`
	// A prepare's fact: the pending rows (store.EncodeChanges), when it was prepared and
	// its prepared timeout.
	Pending           json.RawMessage `json:"pending,omitempty"`
	PreparedAt        time.Time       `json:"prepared_at,omitzero"`
	PreparedTimeoutMs int64           `json:"prepared_timeout_ms,omitempty"`
	// pending is Pending decoded during the replay, against the schemas of its time.
	pending []store.TableChange
}

type tableRecord struct {
	Name     string `json:"name"`
	SubID    int64  `json:"sub_id"`
	Loads    int    `json:"loads"`
	Loaded   int64  `json:"loaded"`
	Filtered int64  `json:"filtered"`
	Unsel    int64  `json:"unselected"`
	Bytes    int64  `json:"bytes"`
}

// record is t as the journal keeps it, in the label state given.
func (t *txn) record(state string) txnRecord {
	r := txnRecord{ID: t.id, Label: t.label, DB: t.db, Multi: t.multi, Stream: t.stream, Table: t.table,
		Registered: t.registered, State: state, Created: t.created, Committed: t.committedAt,
		Finished: t.finishedAt, Reason: t.reason, TimeoutMs: t.timeout.Milliseconds()}
	for _, tl := range t.tables {
		r.Tables = append(r.Tables, tableRecord{Name: tl.name, SubID: tl.subID, Loads: tl.loads,
			Loaded: tl.loaded, Filtered: tl.filtered, Unsel: tl.unsel, Bytes: tl.bytes})
	}
	return r
}

// journalLocked journals a label fact; a failure is logged (the fact is lost on a restart,
// the transaction itself goes on).
func (e *Emulator) journalLocked(t *txn, state string) {
	if e.cfg.DataDir == "" {
		return
	}
	if err := e.store.Journal(t.record(state)); err != nil {
		e.log.Error("journaling a label fact failed", "label", t.label, "error", err)
	}
}

// journalPreparedLocked journals the prepare of a classic transaction with its pending
// rows, so a restart keeps it PREPARED and committable.
func (e *Emulator) journalPreparedLocked(t *txn) {
	if e.cfg.DataDir == "" {
		return
	}
	r := t.record(statusPrepared)
	r.PreparedAt, r.PreparedTimeoutMs = t.preparedAt, t.preparedTimeout.Milliseconds()
	pending, err := e.store.EncodeChanges(t.changes())
	if err == nil {
		r.Pending = pending
		err = e.store.Journal(r)
	}
	if err != nil {
		e.log.Error("journaling a prepare failed", "label", t.label, "error", err)
	}
}

// releaseDataDir gives up the data directory's lock (a no-op without one).
func (e *Emulator) releaseDataDir() error {
	if e.unlockDir == nil {
		return nil
	}
	err := e.unlockDir()
	e.unlockDir = nil
	return err
}

// openJournal replays the data directory's journal into the store and the label states,
// and reports whether there was one.
func (e *Emulator) openJournal() (bool, error) {
	if err := os.MkdirAll(e.cfg.DataDir, 0o755); err != nil {
		return false, fmt.Errorf("creating the data directory: %w", err)
	}
	unlock, err := lockDataDir(e.cfg.DataDir)
	if err != nil {
		return false, err
	}
	e.unlockDir = unlock
	recs := map[int64]txnRecord{}
	replayed, err := e.store.OpenJournal(filepath.Join(e.cfg.DataDir, journalFile), func(raw json.RawMessage) error {
		var r txnRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("decoding a label fact: %w", err)
		}
		if r.Evicted {
			delete(recs, r.ID)
			return nil
		}
		if len(r.Pending) > 0 {
			var err error
			if r.pending, err = e.store.DecodeChanges(r.Pending); err != nil {
				return fmt.Errorf("the prepared transaction %d (label %s): %w", r.ID, r.Label, err)
			}
		}
		recs[r.ID] = r
		return nil
	})
	if err != nil {
		_ = e.releaseDataDir()
		return false, err
	}
	e.restoreLabels(recs)
	return replayed, nil
}

// restoreLabels rebuilds the transaction managers from the journal's facts.
func (e *Emulator) restoreLabels(recs map[int64]txnRecord) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ordered := make([]txnRecord, 0, len(recs))
	for _, r := range recs {
		ordered = append(ordered, r)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].ID < ordered[j].ID })
	now := e.now()
	var restored, prepared []*txn
	for _, r := range ordered {
		dbID, ok := e.store.DatabaseID(r.DB)
		if !ok {
			continue // its database was dropped
		}
		t := &txn{id: r.ID, label: r.Label, db: r.DB, dbID: dbID, multi: r.Multi, stream: r.Stream, table: r.Table,
			registered: r.Registered, created: r.Created, committedAt: r.Committed, finishedAt: r.Finished,
			reason: r.Reason, timeout: time.Duration(r.TimeoutMs) * time.Millisecond, done: true,
			byTable: map[string]*tableLoad{}}
		for _, tr := range r.Tables {
			tl := &tableLoad{name: tr.Name, subID: tr.SubID, loads: tr.Loads, loaded: tr.Loaded, filtered: tr.Filtered,
				unsel: tr.Unsel, bytes: tr.Bytes, planned: true}
			t.tables = append(t.tables, tl)
			t.byTable[tl.name] = tl
			e.nextID = max(e.nextID, tr.SubID)
		}
		e.nextID = max(e.nextID, r.ID)
		state := r.State
		if state == statusPrepared && !t.multi && len(r.pending) > 0 {
			// the FE keeps a prepared transaction: running, committable
			t.done, t.status = false, statusPrepared
			t.preparedAt, t.preparedTimeout = r.PreparedAt, time.Duration(r.PreparedTimeoutMs)*time.Millisecond
			for _, ch := range r.pending {
				if tl := t.byTable[ch.Table]; tl != nil {
					tl.rows = append(tl.rows, ch.Rows)
				}
			}
			prepared = append(prepared, t)
			continue
		}
		if state == statusPrepare && !t.multi && !e.ver.multiTable() {
			// running when the process stopped: a 3.x FE never journaled it
			// (classic3x.go restartV3Locked), so it knows nothing of it now
			continue
		}
		if state != statusVisible && state != statusAborted {
			// running when the process stopped: an FE restart cancels it
			state, t.reason, t.finishedAt = statusAborted, reasonRestart, now
			e.journalLocked(t, statusAborted)
		}
		if t.multi {
			t.state = stateCancelled
			if state == statusVisible {
				t.state = stateFinished
			}
		} else {
			t.status = state
		}
		restored = append(restored, t)
	}
	sort.SliceStable(restored, func(i, j int) bool { return restored[i].finishedAt.Before(restored[j].finishedAt) })
	for _, t := range restored {
		if t.registered {
			d := e.dbLocked(t.db)
			d.labels[t.label] = append(d.labels[t.label], t)
			d.finished = append(d.finished, t)
		}
		if t.multi {
			e.multi[t.label] = t
			e.finishedTasks = append(e.finishedTasks, t)
		}
	}
	for _, t := range prepared {
		d := e.dbLocked(t.db)
		d.labels[t.label] = append(d.labels[t.label], t)
		d.running[t.id] = t
	}
	if len(restored)+len(prepared) > 0 {
		e.log.Info("label states restored from the data directory", "transactions", len(restored), "prepared", len(prepared))
	}
	e.evictLocked(now)
}
