package store

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
)

// The statements a StarRocks user types first that go-mysql-server does not know are
// answered here, before it parses them, with StarRocks's column names: SHOW PROC
// '/transactions…', SHOW TRANSACTION, SHOW LOAD, SHOW FRONTENDS, SHOW BACKENDS, ADMIN SET
// and ADMIN SHOW FRONTEND CONFIG, and SHOW CREATE TABLE (StarRocks DDL). The transactions,
// loads, nodes and settings come from the server around the store (System);
// information_schema.loads and load_tracking_logs read the same (infoschema.go).

// TxnInfo is one transaction as SHOW PROC '/transactions/<db>/…' and SHOW TRANSACTION show it.
type TxnInfo struct {
	ID                                           int64
	Label, Coordinator, Status, SourceType       string
	PrepareTime, CommitTime, PublishTime, Finish time.Time
	Reason, ErrMsg                               string
	TimeoutMs                                    int64
	Running                                      bool
	// PreparedTime and PreparedTimeoutMs are shown from 3.5.4 (ServerVersion.PreparedColumns).
	PreparedTime      time.Time
	PreparedTimeoutMs int64
}

// LoadInfo is one table of one transaction stream load, a row of information_schema.loads.
type LoadInfo struct {
	ID, JobID                                           int64
	Label, DB, Table, User, State, Type                 string
	ScanRows, ScanBytes, Filtered, Unselected, SinkRows int64
	Create, LoadStart, LoadCommit, LoadFinish           time.Time
	Properties, ErrorMsg                                string
	TrackingLog                                         []string // the rejected rows' messages
	// For SHOW STREAM LOAD: the transaction id, whether it is a multi-table task (a
	// stream load manager task), the tracking URL and the timeout.
	TxnID       int64
	Multi       bool
	TrackingURL string
	TimeoutSec  int64
}

// NodeInfo describes the emulated cluster for SHOW FRONTENDS and SHOW BACKENDS.
type NodeInfo struct {
	Host                  string
	FEHTTPPort, QueryPort int
	BEHTTPPort            int // the BE's HTTP port (the FE's when no BE is configured)
	StartTime             time.Time
	Version               string
	Tablets               int
}

// ConfigItem is one setting of ADMIN SHOW FRONTEND CONFIG.
type ConfigItem struct {
	Key, Value, Type, Comment string
}

// System is the server around the store as the MySQL port sees it.
type System interface {
	// Transactions lists the transactions a database's manager knows, by id.
	Transactions(db string) []TxnInfo
	// Loads lists the recent transaction stream loads, one entry per table.
	Loads() []LoadInfo
	Nodes() NodeInfo
	Configs() []ConfigItem
	// SetConfig is ADMIN SET FRONTEND CONFIG; the error is the statement's.
	SetConfig(key, value string) error
}

// WithSystem makes the MySQL port answer StarRocks's system statements from sys.
func WithSystem(sys System) MySQLOption {
	return func(h *ddlHandler) { h.bridge.sys = sys }
}

// Version is the StarRocks version the emulator answers as (current_version(),
// @@version_comment, SHOW FRONTENDS).
const Version = "4.0.0-emulator"

// VersionComment is @@version_comment.
const VersionComment = "StarRocks version " + Version + " (a StarRocks-compatible emulator)"

// textResult builds a result whose columns are all VARCHAR; a nil cell is NULL.
func textResult(cols []string, rows [][]*string) *sqltypes.Result {
	res := &sqltypes.Result{Fields: make([]*querypb.Field, len(cols))}
	for i, c := range cols {
		res.Fields[i] = &querypb.Field{Name: c, Type: sqltypes.VarChar, Charset: uint32(sql.CharacterSet_utf8mb4)}
	}
	for _, r := range rows {
		vals := make([]sqltypes.Value, len(r))
		for i, v := range r {
			if v == nil {
				vals[i] = sqltypes.NULL
				continue
			}
			vals[i] = sqltypes.MakeTrusted(sqltypes.VarChar, []byte(*v))
		}
		res.Rows = append(res.Rows, vals)
	}
	return res
}

func str(s string) *string { return &s }

func num(n int64) *string { return str(strconv.FormatInt(n, 10)) }

// timeCell renders a StarRocks time column: "2006-01-02 15:04:05", NULL for no time.
func timeCell(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	return str(t.Local().Format("2006-01-02 15:04:05"))
}

// sysErr is a statement error as StarRocks reports them (1064, HY000).
func sysErr(format string, args ...any) error {
	return mysql.NewSQLError(1064, "HY000", format, args...)
}

// systemStatement answers a StarRocks system statement; ok is false when query is not one.
func (h *ddlHandler) systemStatement(ctx context.Context, c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	q := strings.TrimSpace(query)
	if strings.EqualFold(strings.TrimRight(q, "; \t\r\n"), "sync") {
		// SYNC waits until this FE has replayed the leader's journal; the emulator is one FE.
		return &sqltypes.Result{}, true, nil
	}
	if len(q) < 4 {
		return nil, false, nil
	}
	switch strings.ToLower(q[:4]) {
	case "show", "admi", "crea", "desc", "canc", "sync":
	default:
		return nil, false, nil
	}
	toks, err := lexScript(q)
	if err != nil || len(toks) < 2 {
		return nil, false, nil
	}
	if n := len(toks); toks[n-1].isPunct(";") {
		toks = toks[:n-1]
	}
	if msg := unsupportedStatement(toks); msg != "" {
		return nil, true, sysErr("%s", msg)
	}
	if toks[0].is("create") {
		return nil, false, nil
	}
	p := &parser{toks: toks}
	cur := h.currentDB(ctx, c, query)
	switch {
	case toks[0].is("show") && toks[1].is("create") && len(toks) > 2 && toks[2].is("table"):
		p.pos = 3
		res, err := h.showCreateTable(p, cur)
		return res, true, err
	case toks[0].is("admin"):
		res, err := h.admin(p)
		return res, true, err
	case toks[0].is("show") && toks[1].is("alter"):
		p.pos = 1
		res, err := h.showAlter(p, cur)
		return res, true, err
	case toks[0].is("cancel") && toks[1].is("alter"):
		res, err := h.cancelAlter(p, cur)
		return res, true, err
	case toks[0].is("desc") || toks[0].is("describe"):
		return h.describe(p, cur)
	case toks[0].is("show") && (toks[1].is("columns") || toks[1].is("fields") || toks[1].is("full")):
		return h.showColumns(p, cur)
	}
	sys := h.bridge.sys
	if sys == nil {
		return nil, false, nil
	}
	switch k := toks[1]; {
	case k.is("proc"):
		p.pos = 2
		res, err := h.showProc(p, sys)
		return res, true, err
	case k.is("transaction"):
		p.pos = 2
		res, err := h.showTransaction(p, sys, cur)
		return res, true, err
	case k.is("stream") || k.is("all") && len(toks) > 2 && toks[2].is("stream"):
		p.pos = 1
		res, err := h.showStreamLoad(p, sys, cur)
		return res, true, err
	case k.is("load"):
		// SHOW LOAD lists Broker Load, INSERT and Spark Load jobs; transaction stream loads
		// are not among them (information_schema.loads has them).
		return textResult(showLoadColumns, nil), true, nil
	case k.is("frontends") && len(toks) == 2:
		return showFrontends(sys.Nodes()), true, nil
	case k.is("backends") && len(toks) == 2:
		return showBackends(sys.Nodes()), true, nil
	}
	return nil, false, nil
}

func (h *ddlHandler) currentDB(ctx context.Context, c *mysql.Conn, query string) string {
	if h.sm == nil {
		return ""
	}
	sctx, err := h.sm.NewContextWithQuery(ctx, c, query)
	if err != nil {
		return ""
	}
	return sctx.Session.GetCurrentDatabase()
}

// transColumns are TransProcDir.TITLE_NAMES.
var transColumns = []string{"TransactionId", "Label", "Coordinator", "TransactionStatus", "LoadJobSourceType",
	"PrepareTime", "CommitTime", "PublishTime", "FinishTime", "Reason", "ErrorReplicasCount", "ListenerId",
	"TimeoutMs", "ErrMsg"}

func transRow(t TxnInfo) []*string {
	reason := str(t.Reason)
	return []*string{num(t.ID), str(t.Label), str(t.Coordinator), str(t.Status), str(t.SourceType),
		timeCell(t.PrepareTime), timeCell(t.CommitTime), timeCell(t.PublishTime), timeCell(t.Finish),
		reason, str("0"), str("-1"), num(t.TimeoutMs), str(t.ErrMsg)}
}

// showProc is SHOW PROC '/transactions', '/transactions/<db>', '/transactions/<db>/running'
// and '/transactions/<db>/finished' (db by name or id).
func (h *ddlHandler) showProc(p *parser, sys System) (*sqltypes.Result, error) {
	t := p.next()
	if t.kind != tokString || p.done() != nil {
		return nil, sysErr("SHOW PROC takes one quoted path, e.g. SHOW PROC '/transactions/<db>/running'")
	}
	parts := strings.Split(strings.Trim(path.Clean("/"+t.text), "/"), "/")
	if parts[0] != "transactions" {
		return nil, sysErr("Proc path '%s' is not supported by the emulator: it serves /transactions, /transactions/<db>, /transactions/<db>/running and /transactions/<db>/finished", t.text)
	}
	sn := h.bridge.store.snap()
	if len(parts) == 1 {
		var rows [][]*string
		names := make([]string, 0, len(sn.dbs))
		for n := range sn.dbs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			rows = append(rows, []*string{num(sn.dbs[n].id), str(n)})
		}
		return textResult([]string{"DbId", "DbName"}, rows), nil
	}
	var db *dbState
	for _, d := range sn.dbs {
		if strings.EqualFold(d.name, parts[1]) || strconv.FormatInt(d.id, 10) == parts[1] {
			db = d
		}
	}
	if db == nil {
		return nil, sysErr("Database[%s] does not exist", parts[1])
	}
	txns := sys.Transactions(db.name)
	if len(parts) == 2 {
		var running, finished int64
		for _, t := range txns {
			if t.Running {
				running++
			} else {
				finished++
			}
		}
		return textResult([]string{"State", "Number"}, [][]*string{{str("running"), num(running)}, {str("finished"), num(finished)}}), nil
	}
	if len(parts) != 3 || (parts[2] != "running" && parts[2] != "finished") {
		return nil, sysErr("Proc path '%s' is not supported by the emulator: use /transactions/<db>/running or /finished", t.text)
	}
	var rows [][]*string
	for _, t := range txns {
		if t.Running == (parts[2] == "running") {
			rows = append(rows, h.transRow(t))
		}
	}
	return textResult(h.transColumns(), rows), nil
}

// showTransaction is SHOW TRANSACTION [FROM db] WHERE ID = n, StarRocks's only form
// (ShowTransactionStmtAnalyzer: an integer id and nothing else, so WHERE LABEL = … is
// refused as on a cluster; SHOW PROC '/transactions/<db>/…' and information_schema.loads
// list by label).
func (h *ddlHandler) showTransaction(p *parser, sys System, cur string) (*sqltypes.Result, error) {
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
	if err := p.expect("where"); err != nil {
		return nil, sysErr("should supply condition like: ID = $transaction_id")
	}
	field := p.next()
	eq := p.expectPunct("=")
	val := p.next()
	if eq != nil || p.done() != nil || !field.is("id") || val.kind != tokNumber {
		return nil, sysErr("Where clause should looks like: ID = $transaction_id")
	}
	var rows [][]*string
	for _, t := range sys.Transactions(h.canonicalDB(db)) {
		if strconv.FormatInt(t.ID, 10) == val.text {
			rows = append(rows, h.transRow(t))
		}
	}
	if len(rows) == 0 {
		return nil, sysErr("transaction with id %s does not exist", val.text)
	}
	return textResult(h.transColumns(), rows), nil
}

func (h *ddlHandler) canonicalDB(name string) string {
	if d, ok := h.bridge.store.snap().db(name); ok {
		return d.name
	}
	return name
}

// showLoadColumns are SHOW LOAD's columns (LoadJob.SHOW_PROC names).
var showLoadColumns = []string{"JobId", "Label", "State", "Progress", "Type", "Priority", "ScanRows", "FilteredRows",
	"UnselectedRows", "SinkRows", "EtlInfo", "TaskInfo", "ErrorMsg", "CreateTime", "EtlStartTime", "EtlFinishTime",
	"LoadStartTime", "LoadFinishTime", "TrackingSQL", "JobDetails", "Warehouse"}

func showFrontends(n NodeInfo) *sqltypes.Result {
	cols := []string{"Name", "IP", "EditLogPort", "HttpPort", "QueryPort", "RpcPort", "Role", "ClusterId", "Join",
		"Alive", "ReplayedJournalId", "LastHeartbeat", "IsHelper", "ErrMsg", "StartTime", "Version"}
	row := []*string{str(fmt.Sprintf("%s_%d_emulator", n.Host, n.FEHTTPPort)), str(n.Host), str("9010"),
		num(int64(n.FEHTTPPort)), num(int64(n.QueryPort)), str("9020"), str("LEADER"), str("1"), str("true"),
		str("true"), str("0"), timeCell(time.Now()), str("true"), str(""), timeCell(n.StartTime), str(n.Version)}
	return textResult(cols, [][]*string{row})
}

func showBackends(n NodeInfo) *sqltypes.Result {
	cols := []string{"BackendId", "IP", "HeartbeatPort", "BePort", "HttpPort", "BrpcPort", "LastStartTime",
		"LastHeartbeat", "Alive", "SystemDecommissioned", "ClusterDecommissioned", "TabletNum", "DataUsedCapacity",
		"AvailCapacity", "TotalCapacity", "UsedPct", "MaxDiskUsedPct", "ErrMsg", "Version", "Status",
		"DataTotalCapacity", "DataUsedPct", "CpuCores", "MemLimit", "NumRunningQueries", "MemUsedPct", "CpuUsedPct",
		"DataCacheMetrics", "Location", "StatusCode"}
	row := []*string{str("10001"), str(n.Host), str("9050"), str("9060"), num(int64(n.BEHTTPPort)), str("8060"),
		timeCell(n.StartTime), timeCell(time.Now()), str("true"), str("false"), str("false"), num(int64(n.Tablets)),
		str("0.000 B"), str("1.000 TB"), str("1.000 TB"), str("0.00 %"), str("0.00 %"), str(""), str(n.Version),
		str(`{"lastSuccessReportTabletsTime":"N/A"}`), str("1.000 TB"), str("0.00 %"), str("1"), str("0.000 B"),
		str("0"), str("0.00 %"), str("0.0 %"), str("N/A"), str(""), str("OK")}
	return textResult(cols, [][]*string{row})
}

// admin is ADMIN SET FRONTEND CONFIG ("k" = "v") and ADMIN SHOW FRONTEND CONFIG [LIKE 'p'].
func (h *ddlHandler) admin(p *parser) (*sqltypes.Result, error) {
	p.next() // ADMIN
	sys := h.bridge.sys
	switch {
	case p.accept("set"):
		if p.expect("frontend") != nil || p.expect("config") != nil {
			return nil, sysErr("the emulator knows ADMIN SET FRONTEND CONFIG (\"key\" = \"value\") and ADMIN SHOW FRONTEND CONFIG")
		}
		props, err := p.properties()
		if err != nil || p.done() != nil || len(props) != 1 {
			return nil, sysErr("ADMIN SET FRONTEND CONFIG takes one (\"key\" = \"value\") pair")
		}
		if ok, err := h.bridge.store.setSchemaChangeConfig(props[0][0], props[0][1]); ok {
			if err != nil {
				return nil, sysErr("%s", err.Error())
			}
			return &sqltypes.Result{}, nil
		}
		if sys == nil {
			return nil, sysErr("Config '%s' does not exist or is not mutable", props[0][0])
		}
		if err := sys.SetConfig(props[0][0], props[0][1]); err != nil {
			return nil, sysErr("%s", err.Error())
		}
		return &sqltypes.Result{}, nil
	case p.accept("show"):
		if p.expect("frontend") != nil || p.expect("config") != nil {
			return nil, sysErr("the emulator knows ADMIN SHOW FRONTEND CONFIG [LIKE 'pattern']")
		}
		like := ""
		if p.accept("like") {
			t := p.next()
			if t.kind != tokString {
				return nil, sysErr("LIKE takes a quoted pattern")
			}
			like = t.text
		}
		if p.done() != nil {
			return nil, sysErr("ADMIN SHOW FRONTEND CONFIG [LIKE 'pattern']")
		}
		var rows [][]*string
		items := h.bridge.store.schemaChangeConfigItems()
		if sys != nil {
			items = append(sys.Configs(), items...)
		}
		for _, c := range items {
			if like != "" && !likeMatch(like, c.Key) {
				continue
			}
			rows = append(rows, []*string{str(c.Key), str("[]"), str(c.Value), str(c.Type), str("true"), str(c.Comment)})
		}
		return textResult([]string{"Key", "AliasNames", "Value", "Type", "IsMutable", "Comment"}, rows), nil
	}
	return nil, sysErr("the emulator knows ADMIN SET FRONTEND CONFIG and ADMIN SHOW FRONTEND CONFIG only")
}

// likeMatch is SQL LIKE (% and _), case-insensitive.
func likeMatch(pattern, s string) bool {
	pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	var match func(p, s string) bool
	match = func(p, s string) bool {
		for len(p) > 0 {
			switch p[0] {
			case '%':
				for i := 0; i <= len(s); i++ {
					if match(p[1:], s[i:]) {
						return true
					}
				}
				return false
			case '_':
				if s == "" {
					return false
				}
			default:
				if s == "" || s[0] != p[0] {
					return false
				}
			}
			p, s = p[1:], s[1:]
		}
		return s == ""
	}
	return match(pattern, s)
}

// showCreateTable is SHOW CREATE TABLE [db.]t, printed in StarRocks DDL.
func (h *ddlHandler) showCreateTable(p *parser, cur string) (*sqltypes.Result, error) {
	db, name, err := p.qualifiedName("a table name")
	if err != nil || p.done() != nil {
		return nil, sysErr("SHOW CREATE TABLE [db.]table")
	}
	if db == "" {
		db = cur
	}
	if db == "" {
		return nil, sysErr("No database selected")
	}
	t, err := h.bridge.store.snap().table(db, name)
	if err != nil {
		return nil, sysErr("Unknown table '%s.%s'", db, name)
	}
	return textResult([]string{"Table", "Create Table"}, [][]*string{{str(t.schema.Name), str(t.schema.DDL())}}), nil
}
