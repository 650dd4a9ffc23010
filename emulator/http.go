package emulator

import (
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/starrocks-txn/benthos-starrocks/emulator/store"
)

// exceptionPrefix is how the FE action prints an exception's class before
// its message in a FAILED TransactionResult.
const exceptionPrefix = "class com.starrocks.common.StarRocksException: "

// labelRe is FeNameFormat's label rule.
var labelRe = regexp.MustCompile(`^[-\w]{1,128}$`)

func labelFormatMsg(label string) string {
	return fmt.Sprintf("Label format error. regex: %s, label: %s", labelRe.String(), label)
}

// kv is one entry of an ordered JSON object.
type kv struct {
	k string
	v any
}

// reply is an ordered JSON object.
type reply []kv

func (r reply) with(k string, v any) reply { return append(r, kv{k, v}) }

// withStatus replaces the Status entry (when status is not empty).
func (r reply) withStatus(status string) reply {
	if status == "" {
		return r
	}
	out := append(reply(nil), r...)
	for i := range out {
		if out[i].k == "Status" {
			out[i].v = status
		}
	}
	return out
}

func (r reply) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalPlain is json.Marshal without the HTML escapes (<, >, &), which
// the BE's JSON writer does not make.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// pretty renders r the way the BE's rapidjson PrettyWriter does: one
// member a line, indented by four spaces, ": " after each key, and no
// newline after the closing brace.
func (r reply) pretty() ([]byte, error) {
	if len(r) == 0 {
		return []byte("{}"), nil
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, e := range r {
		if i > 0 {
			b.WriteString(",\n")
		}
		k, err := marshalPlain(e.k)
		if err != nil {
			return nil, fmt.Errorf("encoding the key %q: %w", e.k, err)
		}
		v, err := marshalPlain(e.v)
		if err != nil {
			return nil, fmt.Errorf("encoding the value of %q: %w", e.k, err)
		}
		b.WriteString("    ")
		b.Write(k)
		b.WriteString(": ")
		b.Write(v)
	}
	b.WriteString("\n}")
	return b.Bytes(), nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var b []byte
	var err error
	if r, ok := v.(reply); ok && onBE(w) {
		b, err = r.pretty()
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"status":"FAILED","msg":"encoding the reply failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// txnResult is an FE TransactionResult: Status and Message first.
func txnResult(status, msg string) reply {
	return reply{{"Status", status}, {"Message", msg}}
}

// feFailed is a FAILED TransactionResult for an exception thrown in the FE.
func feFailed(msg string) reply { return txnResult("FAILED", exceptionPrefix+msg) }

// beReply is a BE transaction reply: Status, then ExistingJobStatus (label
// exists) or Label (in processing), then Message.
func beReply(status, msg, label string) reply {
	r := reply{{"Status", status}}
	switch status {
	case "LABEL_ALREADY_EXISTS":
		r = r.with("ExistingJobStatus", "")
	case "TXN_IN_PROCESSING":
		r = r.with("Label", label)
	}
	return r.with("Message", msg)
}

// restResult is an FE RestBaseResult.
func restResult(ok bool, msg string) reply {
	if ok {
		return reply{{"status", "OK"}, {"code", "0"}, {"msg", "Success"}, {"message", "OK"}}
	}
	return reply{{"status", "FAILED"}, {"code", "1"}, {"msg", msg}, {"message", msg}}
}

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

func newReq(w http.ResponseWriter, r *http.Request, node string) *req {
	q := &req{w: w, r: r, node: node}
	q.db = q.header("db")
	q.label = q.header("label")
	q.table = q.header("table")
	q.multi = strings.EqualFold(q.header("transaction_type"), "multi")
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
		q := newReq(w, r, "fe")
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
		q := newReq(w, r, "be")
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
		{"feVersion", store.Version}})
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
	q := newReq(w, r, node)
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
// go on (no fault, a delay that passed, or an op-specific action).
func (e *Emulator) fire(q *req, f *Fault, shape func(status, msg string) reply) bool {
	if f == nil {
		return false
	}
	e.ctr.faultsFired.Add(1)
	e.log.Debug("fault fired", "op", f.Op, "action", f.Action, "label", q.label, "table", q.table)
	if f.Action.afterApply() {
		q.hold(f)
		return false
	}
	msg := f.Message
	switch f.Action {
	case ActDelay:
		e.sleep(q.r.Context(), f.Delay)
		return false
	case ActRedirect:
		base := e.FEURL()
		if q.node == "be" {
			base = e.BEURL()
		}
		loc := base + q.r.URL.Path
		if q.r.URL.RawQuery != "" {
			loc += "?" + q.r.URL.RawQuery
		}
		e.ctr.redirects.Add(1)
		q.w.Header().Set("Location", loc)
		q.w.WriteHeader(http.StatusTemporaryRedirect)
		return true
	case ActHTTPError:
		code := f.HTTPCode
		if code == 0 {
			code = http.StatusServiceUnavailable
		}
		http.Error(q.w, fmt.Sprintf("injected HTTP %d", code), code)
		return true
	case ActReset:
		if q.op == "load" || q.op == "stream_load" {
			// Read part of the body so the reset happens mid-transfer.
			half := q.r.ContentLength / 2
			if half <= 0 {
				half = 1
			}
			_, _ = io.CopyN(io.Discard, q.r.Body, half)
		}
		hijackReset(q.w)
		return true
	case ActTxnInProcessing:
		if msg == "" {
			msg = "Transaction is in processing"
		}
		writeJSON(q.w, http.StatusOK, shape("TXN_IN_PROCESSING", msg))
		return true
	case ActInternalError:
		if msg == "" {
			msg = "injected internal error"
		}
		writeJSON(q.w, http.StatusOK, shape("INTERNAL_ERROR", msg))
		return true
	case ActTxnNotExists:
		if msg == "" {
			msg = fmt.Sprintf("Transaction with label %s not exists", q.label)
		}
		writeJSON(q.w, http.StatusOK, shape("TXN_NOT_EXISTS", msg))
		return true
	case ActRunningTxnLimit:
		if msg == "" {
			dbID, _ := e.store.DatabaseID(q.db)
			e.mu.Lock()
			n := e.runningLocked(q.db)
			e.mu.Unlock()
			msg = runningLimitMsg(dbID, max(n, e.cfg.MaxRunningTxnPerDB), e.cfg.MaxRunningTxnPerDB)
		}
		writeJSON(q.w, http.StatusOK, shape("RUNNING_TXN_LIMIT", msg))
		return true
	case ActLabelAlreadyExists:
		if msg == "" {
			msg = fmt.Sprintf("Label [%s] has already been used.", q.label)
		}
		writeJSON(q.w, http.StatusOK, shape("LABEL_ALREADY_EXISTS", msg))
		return true
	}
	return false
}

// feShape shapes fault replies of FE transaction operations.
func feShape(q *req) func(status, msg string) reply {
	return func(status, msg string) reply {
		switch status {
		case "RUNNING_TXN_LIMIT":
			return feFailed(msg)
		case "LABEL_ALREADY_EXISTS":
			return txnResult(status, msg).with("ExistingJobStatus", "RUNNING")
		case "TXN_IN_PROCESSING":
			return txnResult(status, msg).with("Label", q.label)
		}
		return txnResult(status, msg)
	}
}

// beShape shapes fault replies of BE transaction operations.
func beShape(q *req) func(status, msg string) reply {
	return func(status, msg string) reply {
		switch status {
		case "RUNNING_TXN_LIMIT":
			return beReply("ANALYSIS_ERROR", msg, q.label)
		case "LABEL_ALREADY_EXISTS":
			return reply{{"Status", status}, {"ExistingJobStatus", "RUNNING"}, {"Message", msg}}
		}
		return beReply(status, msg, q.label)
	}
}

// dataHeaderNames are the stream-load data headers; every load of a table
// in one transaction must carry the same values.
var dataHeaderNames = []string{
	"format", "columns", "where", "column_separator", "row_delimiter", "skip_header", "trim_space",
	"enclose", "escape", "max_filter_ratio", "timeout", "partitions", "temporary_partitions",
	"negative", "strict_mode", "timezone", "load_mem_limit", "exec_mem_limit", "jsonpaths",
	"json_root", "strip_outer_array", "envelope", "partial_update", "partial_update_mode",
	"transmission_compression_type", "load_dop", "enable_replicated_storage", "merge_condition",
	"log_rejected_record_num", "compression", "warehouse", "ignore_json_size",
}

func dataHeaders(r *http.Request) map[string]string {
	h := map[string]string{}
	for _, n := range dataHeaderNames {
		if vs, ok := r.Header[http.CanonicalHeaderKey(n)]; ok && len(vs) > 0 {
			h[n] = vs[0]
		}
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" {
		h["content-encoding"] = ce
	}
	return h
}

// parsedHeaders are the data headers ParseLoadParams turns into a
// store.LoadParams field; sameParams compares those through the parsed
// value.
var parsedHeaders = map[string]bool{
	"format": true, "columns": true, "where": true, "column_separator": true, "row_delimiter": true,
	"skip_header": true, "trim_space": true, "enclose": true, "escape": true, "max_filter_ratio": true,
	"jsonpaths": true, "json_root": true, "strip_outer_array": true, "strict_mode": true,
	"partial_update": true, "timezone": true, "merge_condition": true,
}

// otherParams normalises the data headers without a LoadParams field the
// way the BE parses them: booleans by value (case-insensitive "true"),
// enum-like values case-insensitively, the payload compression whichever
// header (compression or Content-Encoding) sets it. Empty values and
// false booleans are the defaults and are left out.
func otherParams(h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		if parsedHeaders[k] {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "ignore_json_size", "negative", "enable_replicated_storage":
			if !strings.EqualFold(v, "true") {
				continue
			}
			v = "true"
		case "compression", "content-encoding":
			k, v = "compression", strings.ToLower(v)
		case "partial_update_mode", "transmission_compression_type":
			v = strings.ToLower(v)
		}
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// sameParams tells whether a load's parsed parameters equal those of the
// context's first load, as the BE compares its cached parsed request (so
// strip_outer_array "TRUE" equals "true", an absent header equals its
// default).
func sameParams(p store.LoadParams, h map[string]string, firstP store.LoadParams, first map[string]string) bool {
	return reflect.DeepEqual(p, firstP) && maps.Equal(otherParams(h), otherParams(first))
}

// checkCompression validates the payload compression headers.
func checkCompression(h map[string]string) error {
	c, ce := h["compression"], h["content-encoding"]
	if c != "" && ce != "" {
		return errors.New("Only one of http header content-encoding and compression can be set")
	}
	if c == "" {
		c = ce
	}
	switch strings.ToLower(c) {
	case "", "gzip", "lz4_frame", "zstd":
		return nil
	}
	return fmt.Errorf("Unsupported compression type: %s", c)
}

// decompress undoes the payload compression named by the headers.
func decompress(h map[string]string, body []byte) ([]byte, error) {
	c := h["compression"]
	if c == "" {
		c = h["content-encoding"]
	}
	var rd io.Reader
	switch strings.ToLower(c) {
	case "":
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("decompressing the gzip body: %w", err)
		}
		rd = zr
	case "lz4_frame":
		rd = lz4.NewReader(bytes.NewReader(body))
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("decompressing the zstd body: %w", err)
		}
		defer zr.Close()
		rd = zr
	default:
		return nil, fmt.Errorf("Unsupported compression type: %s", c)
	}
	out, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("decompressing the %s body: %w", c, err)
	}
	return out, nil
}

// parseTimeout parses the `timeout` header the FE way (Long.parseLong of
// seconds); the error is the Java exception text.
func parseTimeout(v string) (time.Duration, string) {
	if v == "" {
		return 0, ""
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Sprintf("class java.lang.NumberFormatException: For input string: %q", v)
	}
	return time.Duration(n) * time.Second, ""
}
