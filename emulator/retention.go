package emulator

import (
	"slices"
	"strings"
	"time"
)

// Label retention: when finished transaction states and multi-table tasks are forgotten, by
// count and by age as StarRocks's two managers do, and the outcome cache of classic ones.

// evictLocked applies label retention the way StarRocks has two of it.
// Each database's transaction manager (DatabaseTransactionMgr.
// removeExpiredTxns) drops its oldest final transaction states while they
// are older than label_keep_max_second or while it holds more than
// label_keep_max_num states, running ones included; get_load_state then
// answers UNKNOWN and a classic commit or rollback answers from the
// outcome cache. The stream load manager drops finished multi tasks by
// stream_load_task_keep_max_num and _second: until then a multi label
// still cannot be begun again and its commit and rollback answer from the
// task. (StarRocks trims its tasks when one is added beyond the count, all
// finished ones at once; the emulator keeps the newest ones.)
func (e *Emulator) evictLocked(now time.Time) {
	for _, d := range e.dbs {
		total := len(d.running) + len(d.finished)
		n := 0
		for n < len(d.finished) {
			t := d.finished[n]
			if total-n <= e.cfg.LabelKeepMax && now.Sub(t.finishedAt) <= e.cfg.LabelKeepMaxAge {
				break
			}
			e.dropStateLocked(d, t, true)
			n++
		}
		if n > 0 {
			d.finished = append(d.finished[:0:0], d.finished[n:]...)
		}
	}
	n := 0
	for n < len(e.finishedTasks) {
		t := e.finishedTasks[n]
		if len(e.finishedTasks)-n <= e.cfg.StreamLoadTaskKeepMax && now.Sub(t.finishedAt) <= e.cfg.StreamLoadTaskKeepMaxAge {
			break
		}
		if e.multi[t.label] == t {
			delete(e.multi, t.label)
		}
		n++
	}
	if n > 0 {
		e.finishedTasks = append(e.finishedTasks[:0:0], e.finishedTasks[n:]...)
	}
}

// dropStateLocked removes a final transaction state from its database's
// labels; cache keeps a classic transaction's outcome for the FE's
// idempotent commit and rollback replies.
func (e *Emulator) dropStateLocked(d *dbTxns, t *txn, cache bool) {
	if cache && !t.multi {
		e.cacheOutcomeLocked(t)
	}
	ts := d.labels[t.label]
	for i, x := range ts {
		if x == t {
			ts = append(ts[:i:i], ts[i+1:]...)
			break
		}
	}
	if len(ts) == 0 {
		delete(d.labels, t.label)
	} else {
		d.labels[t.label] = ts
	}
}

// EvictLabels forgets finished labels at once, as if they had never been
// used: their transaction states (get_load_state answers UNKNOWN), their
// multi tasks (commit and rollback answer "does not exist", begin may use
// the label again) and the cached outcomes of classic ones. db "" means
// every database, no labels every finished label of db. Running
// transactions are never evicted. It returns how many transactions it
// forgot.
func (e *Emulator) EvictLabels(db string, labels ...string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	want := func(t *txn) bool {
		return (db == "" || t.db == db) && (len(labels) == 0 || slices.Contains(labels, t.label))
	}
	evicted := map[*txn]bool{}
	for _, d := range e.dbs {
		kept := d.finished[:0:0]
		for _, t := range d.finished {
			if !want(t) {
				kept = append(kept, t)
				continue
			}
			e.dropStateLocked(d, t, false)
			evicted[t] = true
		}
		d.finished = kept
	}
	kept := e.finishedTasks[:0:0]
	for _, t := range e.finishedTasks {
		if !want(t) {
			kept = append(kept, t)
			continue
		}
		if e.multi[t.label] == t {
			delete(e.multi, t.label)
		}
		evicted[t] = true
	}
	e.finishedTasks = kept
	if e.cfg.DataDir != "" {
		for t := range evicted {
			r := t.record(t.labelState())
			r.Evicted = true
			if err := e.store.Journal(r); err != nil {
				e.log.Error("journaling an eviction failed", "label", t.label, "error", err)
			}
		}
	}
	// The outcomes cached when retention dropped a classic state go too.
	for k := range e.outcomes {
		kdb, klabel, _ := strings.Cut(k, "\x00")
		if want(&txn{db: kdb, label: klabel}) {
			delete(e.outcomes, k)
		}
	}
	e.log.Debug("labels evicted on demand", "db", db, "labels", labels, "transactions", len(evicted))
	return len(evicted)
}

// outcomeKeepFactor bounds the outcome cache at this many times
// LabelKeepMax entries.
const outcomeKeepFactor = 10

func outcomeKey(db, label string) string { return db + "\x00" + label }

// cacheOutcomeLocked remembers the final state of an evicted classic
// transaction.
func (e *Emulator) cacheOutcomeLocked(t *txn) {
	k := outcomeKey(t.db, t.label)
	if _, ok := e.outcomes[k]; !ok {
		e.outcomeOrder = append(e.outcomeOrder, k)
	}
	e.outcomes[k] = t.labelState()
	if keep := e.cfg.LabelKeepMax * outcomeKeepFactor; len(e.outcomeOrder) > keep {
		drop := len(e.outcomeOrder) - keep
		for _, old := range e.outcomeOrder[:drop] {
			delete(e.outcomes, old)
		}
		e.outcomeOrder = append(e.outcomeOrder[:0:0], e.outcomeOrder[drop:]...)
	}
}
