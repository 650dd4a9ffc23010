package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// getLoadState is GET /api/{db}/get_load_state?label=L.
func (e *Emulator) getLoadState(q *req) {
	e.ctr.labelStates.Add(1)
	db, label := q.db, q.label
	if db == "" {
		writeJSON(q.w, http.StatusOK, restResult(false, "No database selected."))
		return
	}
	if label == "" {
		writeJSON(q.w, http.StatusOK, restResult(false, "No label selected."))
		return
	}
	if _, done := e.takeFault(q, func(_, msg string) reply { return restResult(false, msg) }); done {
		return
	}
	w := q.w
	if _, ok := e.store.DatabaseID(db); !ok {
		writeJSON(w, http.StatusOK, restResult(false, "unknown database, database="+db))
		return
	}
	state := statusUnknown
	e.mu.Lock()
	if t := e.latestLocked(db, label); t != nil {
		state = t.labelState()
	}
	e.mu.Unlock()
	writeJSON(w, http.StatusOK, append(reply{{"state", state}}, restResult(true, "")...))
}

// cancel is POST /api/{db}/{label}/_cancel: abort by label ("user cancel").
func (e *Emulator) cancel(q *req) {
	e.ctr.cancels.Add(1)
	db, label := q.db, q.label
	if db == "" {
		writeJSON(q.w, http.StatusOK, restResult(false, "No database selected."))
		return
	}
	if label == "" {
		writeJSON(q.w, http.StatusOK, restResult(false, "No label selected."))
		return
	}
	if _, done := e.takeFault(q, func(_, msg string) reply { return restResult(false, msg) }); done {
		return
	}
	w := q.w
	if _, ok := e.store.DatabaseID(db); !ok {
		writeJSON(w, http.StatusOK, restResult(false, "unknown database, database="+db))
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.latestLocked(db, label)
	if t == nil {
		writeJSON(w, http.StatusOK, restResult(false, fmt.Sprintf("transaction not found, label=%s", label)))
		return
	}
	st := t.labelState()
	cancellable := (t.multi && (t.state == stateBegin || t.state == stateAborting)) ||
		(!t.multi && (t.status == statusPrepare || t.status == statusPrepared))
	switch {
	case st == statusAborted:
		writeJSON(w, http.StatusOK, restResult(false, fmt.Sprintf("transaction [%d] is already aborted", t.id)))
	case !cancellable:
		writeJSON(w, http.StatusOK, restResult(false, fmt.Sprintf("transaction [%d] is already %s, could not abort", t.id, st)))
	default:
		e.abortLocked(t, reasonUserCncl)
		writeJSON(w, http.StatusOK, restResult(true, ""))
	}
}

// serveAdmin is the emulator's own control API on the FE port:
//
//	POST   /_emulator/faults    a Fault or an array of them
//	GET    /_emulator/faults    the pending faults
//	DELETE /_emulator/faults    drop every pending fault
//	GET    /_emulator/counters  the counters
//	POST   /_emulator/evict_labels {"db":"d","labels":["l1"]}: forget finished labels
//	POST   /_emulator/restart   emulate an FE restart
func (e *Emulator) serveAdmin(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/_emulator/faults" && r.Method == http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, maxControlBody))
		if err != nil {
			return
		}
		var fs []Fault
		if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
			err = json.Unmarshal(b, &fs)
		} else {
			var f Fault
			err = json.Unmarshal(b, &f)
			fs = []Fault{f}
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, reply{{"status", "FAILED"}, {"msg", "decoding the faults: " + err.Error()}})
			return
		}
		for _, f := range fs {
			if err := f.Validate(); err != nil {
				writeJSON(w, http.StatusBadRequest, reply{{"status", "FAILED"}, {"msg", err.Error()}})
				return
			}
		}
		for _, f := range fs {
			_ = e.faults.Add(f)
		}
		writeJSON(w, http.StatusOK, reply{{"status", "OK"}, {"pending", len(e.faults.Pending())}})
	case r.URL.Path == "/_emulator/faults" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, e.faults.Pending())
	case r.URL.Path == "/_emulator/faults" && r.Method == http.MethodDelete:
		e.faults.Clear()
		writeJSON(w, http.StatusOK, reply{{"status", "OK"}})
	case r.URL.Path == "/_emulator/counters" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, e.Counters())
	case r.URL.Path == "/_emulator/evict_labels" && r.Method == http.MethodPost:
		var sel struct {
			DB     string   `json:"db"`
			Labels []string `json:"labels"`
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxControlBody))
		if err != nil {
			return
		}
		if b := bytes.TrimSpace(body); len(b) > 0 {
			if err := json.Unmarshal(b, &sel); err != nil {
				writeJSON(w, http.StatusBadRequest, reply{{"status", "FAILED"}, {"msg", `decoding the selection (want {"db":"d","labels":["l1"]}): ` + err.Error()}})
				return
			}
		}
		n := e.EvictLabels(sel.DB, sel.Labels...)
		writeJSON(w, http.StatusOK, reply{{"status", "OK"}, {"evicted", n}})
	case r.URL.Path == "/_emulator/restart" && r.Method == http.MethodPost:
		e.Restart()
		writeJSON(w, http.StatusOK, reply{{"status", "OK"}})
	default:
		http.NotFound(w, r)
	}
}
