package emulator

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// req is the parsed transport view of one request.
type req struct {
	w       http.ResponseWriter
	r       *http.Request
	node    string // "fe" or "be"
	op      string
	db      string
	label   string
	table   string
	multi   bool
	timeout time.Duration // the `timeout` header, 0 when absent
	// held and post are set when an after-apply fault took the request:
	// the handler writes to held, and Emulator.release acts on it.
	held *heldReply
	post *Fault
}

func (q *req) header(name string) string { return strings.TrimSpace(q.r.Header.Get(name)) }

// newReq parses a request's headers. transaction_type: multi makes a multi-table request
// only from 4.0; a 3.x FE and BE do not know the header (docs/notes/starrocks-protocol.md
// §12.1).
func (e *Emulator) newReq(w http.ResponseWriter, r *http.Request, node string) *req {
	q := &req{w: w, r: r, node: node}
	q.db = q.header("db")
	q.label = q.header("label")
	q.table = q.header("table")
	q.multi = e.ver.multiTable() && strings.EqualFold(q.header("transaction_type"), "multi")
	return q
}

// checkAuth verifies HTTP Basic credentials and answers 401 when they are
// missing or wrong.
func (e *Emulator) checkAuth(w http.ResponseWriter, r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	var msg string
	switch {
	case !ok:
		msg = "Need auth information."
	case subtle.ConstantTimeCompare([]byte(user), []byte(e.cfg.User)) != 1 ||
		subtle.ConstantTimeCompare([]byte(pass), []byte(e.cfg.Password)) != 1:
		using := "NO"
		if pass != "" {
			using = "YES"
		}
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		msg = fmt.Sprintf("Access denied for user '%s'@'%s' (using password: %s)", user, host, using)
	default:
		return true
	}
	w.Header().Set("WWW-Authenticate", `Basic realm=""`)
	writeJSON(w, http.StatusUnauthorized, restResult(false, msg))
	return false
}

// serveFE routes the FE listener.
func (e *Emulator) serveFE(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if strings.HasPrefix(path, "/_emulator/") {
		// The control API changes what every client sees: the same
		// credentials as the API.
		if !e.checkAuth(w, r) {
			return
		}
		e.serveAdmin(w, r)
		return
	}
	if !strings.HasPrefix(path, "/api/") {
		http.NotFound(w, r)
		return
	}
	seg := strings.Split(strings.TrimPrefix(path, "/api/"), "/")
	switch {
	case len(seg) == 1 && (seg[0] == "health" || seg[0] == "bootstrap") && r.Method == http.MethodGet:
		// Liveness probes, answered without credentials as the FE's
		// HealthAction and BootstrapAction are.
		e.serveLiveness(w, seg[0])
	case len(seg) == 2 && seg[0] == "transaction":
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		if !e.checkAuth(w, r) {
			return
		}
		q := e.newReq(w, r, "fe")
		defer e.release(q)
		e.feTransaction(q, seg[1])
	case len(seg) == 2 && seg[1] == "get_load_state":
		if r.Method != http.MethodGet {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		if !e.checkAuth(w, r) {
			return
		}
		q := &req{w: w, r: r, node: "fe", op: string(OpGetLoadState), db: seg[0], label: r.URL.Query().Get("label")}
		defer e.release(q)
		e.getLoadState(q)
	case len(seg) == 3 && seg[2] == "_cancel":
		if r.Method != http.MethodPost {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		if !e.checkAuth(w, r) {
			return
		}
		q := &req{w: w, r: r, node: "fe", op: string(OpCancel), db: seg[0], label: seg[1]}
		defer e.release(q)
		e.cancel(q)
	case len(seg) == 3 && seg[2] == "_stream_load":
		e.serveStreamLoad(w, r, "fe", seg[0], seg[1])
	case len(seg) == 1 && seg[0] == "_load_error_log":
		// No credentials, as the BE's download action serves the error log:
		// the tracking URL opens in a browser or a bare curl.
		e.serveErrorLog(w, r)
	default:
		http.NotFound(w, r)
	}
}

// beWriter marks the ResponseWriter of a BE request: the BE renders its
// JSON replies with rapidjson's PrettyWriter (StreamLoadContext::
// to_resp_json and to_json), so writeJSON pretty-prints them.
type beWriter struct{ http.ResponseWriter }

// Unwrap lets http.ResponseController reach the connection.
func (b beWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// onBE reports whether w (or a writer it wraps) is a BE request's.
func onBE(w http.ResponseWriter) bool {
	for w != nil {
		if _, ok := w.(beWriter); ok {
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
	return false
}

// serveBE routes the BE listener.
func (e *Emulator) serveBE(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path != "/api/health" {
		w = beWriter{w} // the BE's health action writes its own compact text
	}
	if !strings.HasPrefix(path, "/api/") {
		http.NotFound(w, r)
		return
	}
	seg := strings.Split(strings.TrimPrefix(path, "/api/"), "/")
	switch {
	case len(seg) == 1 && seg[0] == "health" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, reply{{"status", "OK"}, {"msg", "To Be Added"}})
	case len(seg) == 2 && seg[0] == "transaction":
		op := strings.ToLower(seg[1])
		allowed := r.Method == http.MethodPost || r.Method == http.MethodPut
		if op == "load" {
			allowed = r.Method == http.MethodPut
		}
		if !allowed {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		if !e.checkAuth(w, r) {
			return
		}
		q := e.newReq(w, r, "be")
		defer e.release(q)
		e.beTransaction(q, op)
	case len(seg) == 3 && seg[2] == "_stream_load":
		e.serveStreamLoad(w, r, "be", seg[0], seg[1])
	case len(seg) == 1 && seg[0] == "_load_error_log":
		// No credentials, as the BE's download action serves the error log:
		// the tracking URL opens in a browser or a bare curl.
		e.serveErrorLog(w, r)
	default:
		http.NotFound(w, r)
	}
}

// serveLiveness is GET /api/health (the FE's backend counts) and
// /api/bootstrap (the FE's start-up facts).
func (e *Emulator) serveLiveness(w http.ResponseWriter, which string) {
	if which == "health" {
		writeJSON(w, http.StatusOK, append(restResult(true, ""), kv{"total_backend_num", 1}, kv{"online_backend_num", 1}))
		return
	}
	n := sysView{e}.Nodes()
	writeJSON(w, http.StatusOK, reply{{"status", "OK"}, {"msg", "Success"}, {"replayedJournalId", 0},
		{"queryPort", n.QueryPort}, {"rpcPort", 9020}, {"arrowFlightSqlPort", -1}, {"feStartTime", e.started.UnixMilli()},
		{"feVersion", e.ver.buildVersion()}})
}

// serveStreamLoad routes PUT /api/{db}/{table}/_stream_load on either node
// ("fe" or "be"): the method and auth checks both nodes share, then the
// load itself (which an FE with a BE redirects).
func (e *Emulator) serveStreamLoad(w http.ResponseWriter, r *http.Request, node, db, table string) {
	if r.Method != http.MethodPut {
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if !e.checkAuth(w, r) {
		return
	}
	q := e.newReq(w, r, node)
	defer e.release(q)
	e.streamLoad(q, db, table)
}

// redirectToBE answers 307 to the same path and query on the BE, without
// reading the body.
func (e *Emulator) redirectToBE(w http.ResponseWriter, r *http.Request) {
	loc := e.BEURL() + r.URL.Path
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	e.ctr.redirects.Add(1)
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusTemporaryRedirect)
}

func (e *Emulator) serveErrorLog(w http.ResponseWriter, r *http.Request) {
	file := r.URL.Query().Get("file")
	e.mu.Lock()
	lines, ok := e.errorLogs[file]
	e.mu.Unlock()
	if !ok {
		http.Error(w, "error log file "+file+" not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	for _, l := range lines {
		_, _ = io.WriteString(w, l+"\n")
	}
}

// hijackReset closes the client connection abruptly (RST where possible).
func hijackReset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// fire applies the generic part of a fault. It returns true when the
// request was fully answered (the caller stops), false when the caller must
