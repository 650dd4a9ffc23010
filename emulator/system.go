package emulator

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/emulator/store"
)

// sysView is what the MySQL port shows of the emulator (store.System): the transactions
// of SHOW PROC '/transactions/…' and SHOW TRANSACTION, the loads of information_schema.loads,
// the nodes of SHOW FRONTENDS / BACKENDS and the settings of ADMIN SET / SHOW FRONTEND
// CONFIG.
type sysView struct{ e *Emulator }

var _ store.System = sysView{}

const localCoordinator = "127.0.0.1"

func txnInfo(t *txn) store.TxnInfo {
	ti := store.TxnInfo{
		ID: t.id, Label: t.label, Status: t.labelState(), TimeoutMs: t.timeout.Milliseconds(),
		PrepareTime: t.created, CommitTime: t.committedAt, Finish: t.finishedAt, Running: !t.done,
		Coordinator: "BE: " + localCoordinator, SourceType: "BACKEND_STREAMING",
	}
	if t.multi {
		ti.Coordinator, ti.SourceType = "FE: "+localCoordinator, "MULTI_STATEMENT_STREAMING"
	}
	if ti.Status == statusVisible {
		ti.PublishTime = t.finishedAt
	}
	if ti.Status == statusAborted {
		ti.Reason = t.reason
	}
	return ti
}

// txnInfo is t as SHOW PROC shows it, with the prepared columns of 3.5.4 on: PreparedTime
// (empty until the prepare) and PreparedTimeoutMs (the transaction's own from its prepare,
// prepared_transaction_default_timeout_second before).
func (e *Emulator) txnInfo(t *txn) store.TxnInfo {
	ti := txnInfo(t)
	ti.PreparedTime = t.preparedAt
	ti.PreparedTimeoutMs = e.cfg.PreparedTxnTimeout.Milliseconds()
	if t.preparedTimeout > 0 {
		ti.PreparedTimeoutMs = t.preparedTimeout.Milliseconds()
	}
	return ti
}

// Transactions lists what the database's transaction manager holds: classic transactions
// from begin, multi ones from their first load, until retention drops them.
func (v sysView) Transactions(db string) []store.TxnInfo {
	e := v.e
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.dbs[db]
	if d == nil {
		return nil
	}
	var out []store.TxnInfo
	for _, ts := range d.labels {
		for _, t := range ts {
			out = append(out, e.txnInfo(t))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// loadState maps a transaction to information_schema.loads's STATE.
func loadState(t *txn, tl *tableLoad) string {
	switch t.labelState() {
	case statusPrepared:
		return "PREPARED"
	case statusCommitted:
		return "COMMITED"
	case statusVisible:
		return "FINISHED"
	case statusAborted:
		return "CANCELLED"
	}
	if tl.loads == 0 {
		return "BEGIN"
	}
	return "LOADING"
}

// Loads lists one entry per table of every transaction the emulator still knows, multi tasks
// kept by the stream load manager included.
func (v sysView) Loads() []store.LoadInfo {
	e := v.e
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[*txn]bool{}
	var txns []*txn
	add := func(t *txn) {
		if !seen[t] {
			seen[t] = true
			txns = append(txns, t)
		}
	}
	for _, d := range e.dbs {
		for _, ts := range d.labels {
			for _, t := range ts {
				add(t)
			}
		}
	}
	for _, t := range e.multi {
		add(t)
	}
	var out []store.LoadInfo
	for _, t := range txns {
		for _, tl := range t.tables {
			li := store.LoadInfo{
				ID: tl.subID, JobID: t.id, Label: t.label, DB: t.db, Table: tl.name, User: e.cfg.User,
				State: loadState(t, tl), Type: "STREAM", ScanRows: tl.loaded + tl.filtered + tl.unsel,
				ScanBytes: tl.bytes, Filtered: tl.filtered, Unselected: tl.unsel, SinkRows: tl.loaded,
				Create: t.created, LoadCommit: t.committedAt, LoadFinish: t.finishedAt,
				Properties: fmt.Sprintf(`{"timeout":%d,"max_filter_ratio":%g}`, int64(t.timeout/time.Second), tl.params.MaxFilterRatio),
				TxnID:      t.id, Multi: t.multi, TimeoutSec: int64(t.timeout / time.Second),
			}
			if tl.errFile != "" {
				li.TrackingURL = e.errorURL(tl.errFile)
			}
			if tl.loads > 0 {
				li.LoadStart = t.created
			}
			if li.State == "CANCELLED" {
				li.ErrorMsg = t.reason
				li.SinkRows = 0
			}
			if tl.errFile != "" {
				li.TrackingLog = append([]string(nil), e.errorLogs[tl.errFile]...)
			}
			out = append(out, li)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func port(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// Nodes describes the emulated cluster: one FE (the leader) and one BE.
func (v sysView) Nodes() store.NodeInfo {
	e := v.e
	n := store.NodeInfo{Host: localCoordinator, FEHTTPPort: port(e.feLn.Addr().String()), StartTime: e.started, Version: e.ver.buildVersion()}
	n.BEHTTPPort = n.FEHTTPPort
	if e.beLn != nil {
		n.BEHTTPPort = port(e.beLn.Addr().String())
	}
	if e.mysql != nil {
		n.QueryPort = port(e.mysql.Addr())
	}
	for _, db := range e.store.Databases() {
		n.Tablets += len(e.store.Tables(db))
	}
	return n
}

// setting is one FE config the emulator has (a command-line flag or a Config field).
type setting struct {
	key, typ, comment string
	get               func(c *Config) int64
	set               func(c *Config, n int64)
}

var settings = []setting{
	{"label_keep_max_num", "int", "final transaction states kept per database (running ones counted)",
		func(c *Config) int64 { return int64(c.LabelKeepMax) }, func(c *Config, n int64) { c.LabelKeepMax = int(n) }},
	{"label_keep_max_second", "int", "seconds a final transaction state is kept",
		func(c *Config) int64 { return int64(c.LabelKeepMaxAge / time.Second) }, func(c *Config, n int64) { c.LabelKeepMaxAge = time.Duration(n) * time.Second }},
	{"stream_load_task_keep_max_num", "int", "finished multi-table tasks kept",
		func(c *Config) int64 { return int64(c.StreamLoadTaskKeepMax) }, func(c *Config, n int64) { c.StreamLoadTaskKeepMax = int(n) }},
	{"stream_load_task_keep_max_second", "int", "seconds a finished multi-table task is kept",
		func(c *Config) int64 { return int64(c.StreamLoadTaskKeepMaxAge / time.Second) }, func(c *Config, n int64) { c.StreamLoadTaskKeepMaxAge = time.Duration(n) * time.Second }},
	{"max_running_txn_num_per_db", "int", "running transactions allowed per database",
		func(c *Config) int64 { return int64(c.MaxRunningTxnPerDB) }, func(c *Config, n int64) { c.MaxRunningTxnPerDB = int(n) }},
	{"prepared_transaction_default_timeout_second", "int", "seconds a PREPARED transaction waits for its commit or rollback (from 3.5.4 a prepare's prepared_timeout overrides it)",
		func(c *Config) int64 { return int64(c.PreparedTxnTimeout / time.Second) }, func(c *Config, n int64) { c.PreparedTxnTimeout = time.Duration(n) * time.Second }},
}

// Configs lists the settings ADMIN SET FRONTEND CONFIG can change.
func (v sysView) Configs() []store.ConfigItem {
	e := v.e
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]store.ConfigItem, 0, len(settings)+1)
	for _, s := range settings {
		out = append(out, store.ConfigItem{Key: s.key, Value: strconv.FormatInt(s.get(&e.cfg), 10), Type: s.typ, Comment: s.comment})
	}
	out = append(out, store.ConfigItem{Key: emptyLoadAsError, Value: strconv.FormatBool(!e.emptyLoadOK.Load()), Type: "boolean",
		Comment: "a stream load or classic transaction that imported no rows fails (false: it commits)"})
	return out
}

// emptyLoadAsError is the FE config that makes a load with no rows fail at commit
// (DatabaseTransactionMgr's commit and prepare; the multi-table coordinator check does
// not consult it).
const emptyLoadAsError = "empty_load_as_error"

// SetConfig is ADMIN SET FRONTEND CONFIG: it takes effect at once (a lowered retention evicts
// right away, as the next clean-up would).
func (v sysView) SetConfig(key, value string) error {
	e := v.e
	if key == emptyLoadAsError {
		b := strings.EqualFold(value, "true")
		if !b && !strings.EqualFold(value, "false") {
			return fmt.Errorf("Failed to set config '%s'. err: Invalid boolean value: %s", key, value)
		}
		e.emptyLoadOK.Store(!b)
		e.log.Info("frontend config set", "key", key, "value", b)
		return nil
	}
	for _, s := range settings {
		if s.key != key {
			continue
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("Failed to set config '%s'. err: For input string: \"%s\"", key, value)
		}
		e.mu.Lock()
		s.set(&e.cfg, n)
		e.evictLocked(e.now())
		e.mu.Unlock()
		e.log.Info("frontend config set", "key", key, "value", n)
		return nil
	}
	return fmt.Errorf("Config '%s' does not exist or is not mutable (the emulator has label_keep_max_num, label_keep_max_second, stream_load_task_keep_max_num, stream_load_task_keep_max_second, max_running_txn_num_per_db, prepared_transaction_default_timeout_second, empty_load_as_error)", key)
}
