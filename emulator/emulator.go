// Package emulator is a StarRocks-compatible server for tests, demos and
// local development: the FE HTTP transaction stream-load API (classic and
// multi-table), label states, timeouts, limits and error texts as the
// protocol reference lists them, an optional BE listener reached by 307
// redirects, a MySQL-protocol port over the committed data, and fault
// injection for every failure a client must survive.
//
// Endpoints. FE: POST/PUT /api/transaction/{begin,load,prepare,commit,rollback}
// (any other op, list included, is "Unknown transaction operation: <op>"),
// GET /api/{db}/get_load_state?label=L, POST /api/{db}/{label}/_cancel,
// PUT /api/{db}/{table}/_stream_load, GET /api/_load_error_log?file=F,
// GET /api/health and /api/bootstrap.
// BE (Config.BEAddr): POST/PUT /api/transaction/{begin,prepare,commit,rollback,list},
// PUT-only /api/transaction/load, PUT /api/{db}/{table}/_stream_load,
// GET /api/_load_error_log, GET /api/health. Every endpoint but the liveness
// probes (/api/health, /api/bootstrap), the error log and the control API
// below included, needs HTTP Basic auth with Config.User and Password (401
// without). The BE's list shows its classic transaction contexts
// (begun and not yet prepared, committed, rolled back or aborted) as one
// pretty-printed object each, concatenated without an array; an empty
// body when there are none.
//
// The MySQL port (Config.MySQLAddr) serves the committed data and the
// StarRocks statements a user tries first: SHOW PROC '/transactions…', SHOW
// TRANSACTION, SHOW LOAD, information_schema.loads and load_tracking_logs,
// SHOW FRONTENDS / BACKENDS, SHOW CREATE TABLE, ADMIN SET / SHOW FRONTEND
// CONFIG (label_keep_max_num, label_keep_max_second,
// stream_load_task_keep_max_num, stream_load_task_keep_max_second,
// max_running_txn_num_per_db; effective at once), current_version() and
// @@version_comment (see package store). Config.DataDir keeps the committed
// data and the label states across restarts (persist.go).
//
// Config.StarRocksVersion (--starrocks-version) picks the release the
// emulator answers as, 4.0 by default: below 4.0 there are no multi-table
// transactions and the FE routes classic ones through its label → BE map
// (classic3x.go); below 3.5.4 the prepare's prepared_timeout is not read
// (version.go; docs/notes/starrocks-protocol.md §12).
// ALTER TABLE ADD/DROP/MODIFY COLUMN runs as a StarRocks schema change job
// (alterjobs.go, package store): fast on fast_schema_evolution tables, else
// WAITING_TXN until the transactions begun before it on the table end (a
// multi-table one from its first load into the table), RUNNING for
// Config.SchemaChangeTime, then FINISHED; SHOW ALTER TABLE COLUMN lists the
// jobs, CANCEL ALTER TABLE COLUMN cancels one. The fault op alter_job acts on
// the next jobs: delay (RUNNING that long), cancel or error (CANCELLED with
// the fault's message).
//
// The conformance suite (conformance_test.go) replays StarRocks's own
// regression-test sequences; each case names its source.
//
// In process, use Start and Emulator.Faults. Out of process (the `emulator`
// subcommand), the FE port also serves a control API:
//
//	POST   /_emulator/faults    {"op":"commit","action":"commit_reply_lost","count":1}
//	                            (or an array of such objects); optional "db", "table",
//	                            "statement" (op mysql), "delay" ("1.5s") or "delay_ms",
//	                            "http_code", "code", "message", "status"
//	GET    /_emulator/faults    the pending faults with their remaining counts
//	DELETE /_emulator/faults    drop every pending fault
//	GET    /_emulator/counters  begins, loads, commits, rollbacks, rows, bytes…
//	POST   /_emulator/evict_labels  {"db":"test","labels":["l1"]} (both optional):
//	                            forget finished labels at once (Emulator.EvictLabels)
//	POST   /_emulator/restart   emulate an FE restart (open transactions abort, PREPARED ones stay;
//	                            below 4.0 open ones are forgotten)
//
// # Faults
//
// A fault hits the next Count requests of one op: begin, load, prepare,
// commit, rollback, get_load_state, stream_load, cancel (the HTTP API;
// loads of progress and writer rows are loads), or mysql (any statement
// on the MySQL port, narrowed by a "statement" regular expression). For
// every op each outcome of a remote call is one action:
//
//	action            server side                               the client sees
//	status actions    nothing happens                           that status at once: refused definitely
//	  (txn_in_processing, internal_error, txn_not_exists, running_txn_limit,
//	  label_already_exists; http_error answers HTTP http_code, default 503;
//	  on op mysql: error, a MySQL error code/message). Exception:
//	  internal_error on a commit or prepare of an open transaction is a
//	  failed commit, which aborts it as StarRocks does.
//	reset             nothing happens (a load's body is half    a connection reset (or EOF) at once
//	                  read; a statement is not executed)
//	reply_lost        the operation completes (rows ingested,   a connection reset at once, no reply
//	                  commit VISIBLE, statement executed), then
//	                  the connection is dropped;
//	                  <op>_reply_lost names it for one op
//	                  (load_reply_lost, commit_reply_lost, …)
//	reply_late        the operation completes, the reply is     its timeout if shorter than delay
//	                  held for delay (default 3s), then sent    (the operation took effect), else
//	                                                            the normal reply, late
//	no_answer         the operation completes, nothing is       its own timeout; the connection is
//	                  sent until delay passes or the client     then reset
//	                  gives up
//	delay             waits delay, then handles normally        a slow, normal reply
//	redirect          307 to the same URL on the same node      a redirect it must follow
//
// Commit-only actions: commit_report_failure (commits, answers FAILED or
// "status"), commit_late (answers FAILED at once, label PREPARE for delay,
// then VISIBLE), commit_abort (answers FAILED and aborts), commit_reset (=
// commit_reply_lost) and commit_no_answer (= no_answer). Rollback-only:
// abort_pending (OK "abort initiated", the task ABORTING for delay). See
// Action.
package emulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/emulator/store"
	"github.com/starrocks-txn/benthos-starrocks/internal/bufpool"
)

// Defaults of Config.
const (
	DefaultHTTPAddr           = "127.0.0.1:8030"
	DefaultMySQLAddr          = "127.0.0.1:9030"
	DefaultUser               = "root"
	DefaultTxnTimeout         = 20 * time.Second
	DefaultMaxRunningTxnPerDB = 1000
	DefaultLabelKeepMax       = 1000
	DefaultLabelKeepMaxAge    = 3 * 24 * time.Hour
	// DefaultStreamingLoadMaxMB is the BE's streaming_load_max_mb.
	DefaultStreamingLoadMaxMB = 102400
	// DefaultJSONMaxBatchMB is the BE's streaming_load_max_batch_size_mb.
	DefaultJSONMaxBatchMB = 100
	DefaultReaperInterval = time.Second
	// DefaultPreparedTxnTimeout is prepared_transaction_default_timeout_second (86400 s).
	DefaultPreparedTxnTimeout = 86400 * time.Second
	// DefaultSchemaChangeTime is how long a schema change job stays RUNNING.
	DefaultSchemaChangeTime = store.DefaultSchemaChangeRunTime
)

// Config configures an Emulator. The zero value of a field means its
// default, except MySQLAddr and BEAddr, whose zero value means "none".
type Config struct {
	// HTTPAddr is the FE listener (default "127.0.0.1:8030"); "127.0.0.1:0"
	// picks a free port.
	HTTPAddr string
	// BEAddr is the optional BE listener. When set, the FE answers loads (and
	// classic begin/load/prepare/commit/rollback of PREPARE transactions)
	// with a 307 to it, and the BE accepts loads only as PUT.
	BEAddr string
	// MySQLAddr is the MySQL-protocol listener; "" = none.
	MySQLAddr string
	// User and Password are the HTTP Basic and MySQL credentials (default
	// "root" and "").
	User, Password string
	// Schema is a DDL script run at start.
	Schema string
	// DefaultTxnTimeout applies when a begin has no `timeout` header (20 s).
	DefaultTxnTimeout time.Duration
	// MaxRunningTxnPerDB is max_running_txn_num_per_db (1000).
	MaxRunningTxnPerDB int
	// LabelKeepMax and LabelKeepMaxAge are label_keep_max_num and
	// label_keep_max_second: the retention of final transaction states per
	// database (1000, running ones counted, and 3 days).
	LabelKeepMax    int
	LabelKeepMaxAge time.Duration
	// StreamLoadTaskKeepMax and StreamLoadTaskKeepMaxAge are
	// stream_load_task_keep_max_num and _second: the retention of finished
	// multi tasks (default: LabelKeepMax and LabelKeepMaxAge, which have
	// StarRocks's defaults of both, 1000 and 3 days).
	StreamLoadTaskKeepMax    int
	StreamLoadTaskKeepMaxAge time.Duration
	// StreamingLoadMaxMB and JSONMaxBatchMB bound the body bytes of one
	// transaction, cumulative over its loads (102400 and 100).
	StreamingLoadMaxMB, JSONMaxBatchMB int
	// ReaperInterval is how often timeouts and label retention are enforced
	// (1 s).
	ReaperInterval time.Duration
	// DataDir, when set, keeps the committed data and the label states in
	// that directory across restarts (a journal, see persist.go); the Schema
	// script runs only when the directory holds no journal yet. The emulator
	// holds a lock on it while it runs: a second one on it fails to start.
	// Empty: memory only.
	DataDir string
	// StarRocksVersion is the StarRocks release the emulator answers as: "3.3", "3.4", "3.5",
	// "3.5.4", "4.0" … (a missing patch is 0). Empty: 4.0, the behaviour the emulator has
	// always had. Below 4.0 there are no multi-table transactions (transaction_type means
	// nothing to the FE or the BE) and the FE routes classic transactions through its
	// label → BE map; below 3.5.4 the prepare's prepared_timeout header is ignored. See
	// version.go and docs/notes/starrocks-protocol.md §12.
	StarRocksVersion string
	// PreparedTxnTimeout is prepared_transaction_default_timeout_second (86400 s, ADMIN SET
	// FRONTEND CONFIG changes it): how long a PREPARED transaction waits for its commit or
	// rollback before the FE aborts it ("timeout by txn manager"). From 3.5.4 a prepare's
	// prepared_timeout header overrides it for that transaction.
	PreparedTxnTimeout time.Duration
	// Now is the emulator's clock (default time.Now). Transaction timeouts (begin, idle,
	// prepared), retention by age, an abort_pending fault's end and the schema change jobs'
	// times (their RUNNING time, an alter_job delay, alter_table_timeout_second) are measured
	// on it, so a test can step it past a timeout instead of waiting; the reaper still runs
	// every ReaperInterval of real time, the jobs are stepped every 10 ms of real time, and
	// the delays of the other faults are real time.
	Now func() time.Time
	// SchemaChangeTime is how long a schema change job (an ALTER TABLE that is not a
	// fast schema evolution) stays RUNNING before it is FINISHED (200 ms); ADMIN SET
	// FRONTEND CONFIG ('emulator_schema_change_run_ms' = …) changes it (alterjobs.go).
	SchemaChangeTime time.Duration
	// Logger is optional.
	Logger *slog.Logger
}

func (c *Config) applyDefaults() {
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.DefaultTxnTimeout <= 0 {
		c.DefaultTxnTimeout = DefaultTxnTimeout
	}
	if c.MaxRunningTxnPerDB <= 0 {
		c.MaxRunningTxnPerDB = DefaultMaxRunningTxnPerDB
	}
	if c.LabelKeepMax <= 0 {
		c.LabelKeepMax = DefaultLabelKeepMax
	}
	if c.LabelKeepMaxAge <= 0 {
		c.LabelKeepMaxAge = DefaultLabelKeepMaxAge
	}
	if c.StreamLoadTaskKeepMax <= 0 {
		c.StreamLoadTaskKeepMax = c.LabelKeepMax
	}
	if c.StreamLoadTaskKeepMaxAge <= 0 {
		c.StreamLoadTaskKeepMaxAge = c.LabelKeepMaxAge
	}
	if c.StreamingLoadMaxMB <= 0 {
		c.StreamingLoadMaxMB = DefaultStreamingLoadMaxMB
	}
	if c.JSONMaxBatchMB <= 0 {
		c.JSONMaxBatchMB = DefaultJSONMaxBatchMB
	}
	if c.ReaperInterval <= 0 {
		c.ReaperInterval = DefaultReaperInterval
	}
	if c.PreparedTxnTimeout <= 0 {
		c.PreparedTxnTimeout = DefaultPreparedTxnTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.SchemaChangeTime <= 0 {
		c.SchemaChangeTime = DefaultSchemaChangeTime
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Counters are cumulative request and data counters, for tests.
type Counters struct {
	Begins       int64 `json:"begins"`
	Loads        int64 `json:"loads"`
	Prepares     int64 `json:"prepares"`
	Commits      int64 `json:"commits"`
	Rollbacks    int64 `json:"rollbacks"`
	StreamLoads  int64 `json:"stream_loads"`
	LabelStates  int64 `json:"label_states"`
	Cancels      int64 `json:"cancels"`
	Redirects    int64 `json:"redirects"`
	FaultsFired  int64 `json:"faults_fired"`
	Committed    int64 `json:"committed_txns"`
	Aborted      int64 `json:"aborted_txns"`
	RowsReceived int64 `json:"rows_received"`
	// Rows counts rows made visible by commits (loaded rows, deletes
	// included).
	Rows int64 `json:"rows"`
	// Bytes counts load body bytes received (as sent, before decompression).
	Bytes int64 `json:"bytes"`
	// Statements counts the statements the MySQL port executed.
	Statements int64 `json:"mysql_statements"`
	// PublishHeld counts commits that waited in the publish order for an
	// earlier commit of one of their tables (publish.go).
	PublishHeld int64 `json:"publish_held"`
}

type counters struct {
	begins, loads, prepares, commits, rollbacks, streamLoads, labelStates, cancels atomic.Int64
	redirects, faultsFired, committed, aborted, rowsReceived, rows, bytes          atomic.Int64
	publishHeld                                                                    atomic.Int64
}

// Emulator is a running StarRocks-compatible server.
type Emulator struct {
	cfg    Config
	ver    srVersion
	log    *slog.Logger
	store  *store.Store
	faults *Faults
	ctr    counters
	// bodies keeps load body buffers for reuse (load.go, ingest).
	bodies bufpool.FreeList

	// unlockDir releases the data directory's lock (nil without one).
	unlockDir func() error
	// emptyLoadOK is the FE config empty_load_as_error set to false: a
	// stream load or classic transaction that imported no rows commits.
	emptyLoadOK atomic.Bool

	feLn, beLn   net.Listener
	feSrv, beSrv *http.Server
	mysql        store.MySQLServer

	// pub orders the application of committed transactions (publish.go).
	pub publishOrder

	mu         sync.Mutex
	nextID     int64
	multi      map[string]*txn    // multi-statement tasks by label, across databases
	dbs        map[string]*dbTxns // the per-database transaction managers
	beContexts map[string]*txn    // classic BE transaction contexts by label
	// nodes is the 3.x FE's label → BE map (nodemap.go); unused from 4.0.
	nodes *txnNodeMap
	// finishedTasks are the finished multi tasks in finish order, for the
	// stream load manager's retention.
	finishedTasks []*txn
	errorLogs     map[string][]string
	errorOrder    []string
	// outcomes caches the final state of evicted classic transactions by
	// db and label, so commit/rollback still answer idempotently.
	outcomes     map[string]string
	outcomeOrder []string

	started  time.Time
	stop     chan struct{}
	bg       sync.WaitGroup
	closed   atomic.Bool
	closeErr error
}

// dbTxns is one database's transaction manager: every transaction the
// database knows by label (classic ones from begin, multi ones from their
// first load), and the running ones.
type dbTxns struct {
	labels  map[string][]*txn
	running map[int64]*txn
	// finished are the registered transactions in a final state, in finish
	// order, for label retention.
	finished []*txn
}

// Start runs the schema script and starts the listeners. On an error
// nothing stays open, and a port already taken reads "listen tcp
// 127.0.0.1:9030: bind: address already in use".
func Start(cfg Config) (*Emulator, error) {
	cfg.applyDefaults()
	ver, err := parseVersion(cfg.StarRocksVersion)
	if err != nil {
		return nil, err
	}
	e := &Emulator{
		cfg:        cfg,
		ver:        ver,
		nodes:      newTxnNodeMap(1),
		log:        cfg.Logger,
		store:      store.New(),
		faults:     newFaults(),
		nextID:     10000,
		multi:      map[string]*txn{},
		dbs:        map[string]*dbTxns{},
		beContexts: map[string]*txn{},
		errorLogs:  map[string][]string{},
		outcomes:   map[string]string{},
		stop:       make(chan struct{}),
		started:    cfg.Now(),
	}
	e.initSchemaChanges()
	replayed := false
	if cfg.DataDir != "" {
		var err error
		if replayed, err = e.openJournal(); err != nil {
			return nil, fmt.Errorf("opening the data directory %s: %w", cfg.DataDir, err)
		}
	}
	closeJournal := func() { _ = e.store.CloseJournal(); _ = e.releaseDataDir() }
	switch {
	case replayed && cfg.Schema != "":
		e.log.Info("the data directory holds a journal: the schema script is not run again", "data_dir", cfg.DataDir)
	case cfg.Schema != "":
		if err := e.store.ExecScript(cfg.Schema); err != nil {
			closeJournal()
			return nil, fmt.Errorf("running the schema script: %w", err)
		}
	}
	// A listen error names the address ("listen tcp 127.0.0.1:9030: bind:
	// address already in use"); callers add what they were starting.
	if e.feLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		closeJournal()
		return nil, err
	}
	if cfg.BEAddr != "" {
		if e.beLn, err = net.Listen("tcp", cfg.BEAddr); err != nil {
			_ = e.feLn.Close()
			closeJournal()
			return nil, err
		}
	}
	if cfg.MySQLAddr != "" {
		if e.mysql, err = e.store.ServeMySQL(cfg.MySQLAddr, cfg.User, cfg.Password, store.WithStatementHook(e.statementFault), store.WithSystem(sysView{e}), store.WithVersion(e.serverVersion())); err != nil {
			_ = e.feLn.Close()
			if e.beLn != nil {
				_ = e.beLn.Close()
			}
			closeJournal()
			return nil, err
		}
	}
	e.feSrv = &http.Server{Handler: http.HandlerFunc(e.serveFE), ReadHeaderTimeout: 30 * time.Second}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		_ = e.feSrv.Serve(e.feLn)
	}()
	if e.beLn != nil {
		e.beSrv = &http.Server{Handler: http.HandlerFunc(e.serveBE), ReadHeaderTimeout: 30 * time.Second}
		e.bg.Add(1)
		go func() {
			defer e.bg.Done()
			_ = e.beSrv.Serve(e.beLn)
		}()
	}
	e.bg.Add(1)
	go e.reaper()
	e.bg.Add(1)
	go e.schemaChangeLoop()
	e.log.Info("starrocks emulator started", "fe", e.FEURL(), "be", e.BEURL(), "mysql", e.MySQLAddr(), "starrocks_version", e.ver.String())
	return e, nil
}

// FEURL is the FE base URL, http://127.0.0.1:port.
func (e *Emulator) FEURL() string { return "http://" + e.feLn.Addr().String() }

// BEURL is the BE base URL, "" without a BE.
func (e *Emulator) BEURL() string {
	if e.beLn == nil {
		return ""
	}
	return "http://" + e.beLn.Addr().String()
}

// MySQLAddr is the MySQL listener's host:port, "" without one.
func (e *Emulator) MySQLAddr() string {
	if e.mysql == nil {
		return ""
	}
	return e.mysql.Addr()
}

// StarRocksVersion is the StarRocks release the emulator answers as, major.minor.patch
// (Config.StarRocksVersion).
func (e *Emulator) StarRocksVersion() string { return e.ver.String() }

// Store is the table model behind the emulator.
func (e *Emulator) Store() *store.Store { return e.store }

// Faults is the fault-injection control.
func (e *Emulator) Faults() *Faults { return e.faults }

// Counters returns a snapshot of the counters.
func (e *Emulator) Counters() Counters {
	c := &e.ctr
	return Counters{
		Begins: c.begins.Load(), Loads: c.loads.Load(), Prepares: c.prepares.Load(),
		Commits: c.commits.Load(), Rollbacks: c.rollbacks.Load(), StreamLoads: c.streamLoads.Load(),
		LabelStates: c.labelStates.Load(), Cancels: c.cancels.Load(), Redirects: c.redirects.Load(),
		FaultsFired: c.faultsFired.Load(), Committed: c.committed.Load(), Aborted: c.aborted.Load(),
		RowsReceived: c.rowsReceived.Load(), Rows: c.rows.Load(), Bytes: c.bytes.Load(),
		Statements: e.statements(), PublishHeld: c.publishHeld.Load(),
	}
}

func (e *Emulator) statements() int64 {
	if e.mysql == nil {
		return 0
	}
	return e.mysql.Statements()
}

// Restart emulates an FE restart: every open transaction that is neither
// prepared nor committing is aborted ("cancelled after FE restart") and the
// BE transaction contexts are lost. Committed data, finished labels and
// PREPARED transactions survive: the FE journals a prepare and keeps the
// transaction until its prepared timeout, so it can still be committed.
// Below 4.0 the FE forgets its running transactions instead, and its label →
// BE map; the BE keeps its contexts (restartV3, classic3x.go).
func (e *Emulator) Restart() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.ver.multiTable() {
		e.restartV3Locked()
		return
	}
	for _, d := range e.dbs {
		for _, t := range d.running {
			if (t.multi && t.state == stateCommitting) || (!t.multi && (t.status == statusCommitted || t.status == statusPrepared)) {
				continue // a commit in flight completes; a prepared transaction is kept
			}
			e.abortLocked(t, reasonRestart)
		}
	}
	for _, t := range e.multi {
		if t.state == stateBegin || t.state == stateAborting {
			e.abortLocked(t, reasonRestart)
		}
	}
	for l, t := range e.beContexts {
		if t.status == statusPrepare || t.status == statusPrepared {
			e.abortLocked(t, reasonRestart)
		}
		delete(e.beContexts, l)
	}
	e.store.RequeueSchemaChanges() // RUNNING is not journaled: the job runs again
	e.log.Info("emulated FE restart: open transactions aborted, prepared ones kept")
}

// Close stops every listener and background task.
func (e *Emulator) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return e.closeErr
	}
	close(e.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var errs []error
	if err := e.feSrv.Shutdown(ctx); err != nil {
		_ = e.feSrv.Close()
	}
	if e.beSrv != nil {
		if err := e.beSrv.Shutdown(ctx); err != nil {
			_ = e.beSrv.Close()
		}
	}
	if e.mysql != nil {
		if err := e.mysql.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the MySQL server: %w", err))
		}
	}
	e.bg.Wait()
	if err := e.store.CloseJournal(); err != nil {
		errs = append(errs, fmt.Errorf("closing the journal: %w", err))
	}
	if err := e.releaseDataDir(); err != nil {
		errs = append(errs, fmt.Errorf("releasing the data directory: %w", err))
	}
	e.closeErr = errors.Join(errs...)
	return e.closeErr
}

// now is the emulator's clock (Config.Now).
func (e *Emulator) now() time.Time { return e.cfg.Now() }

// sleep waits d, or less when the emulator closes or ctx ends; it reports
// whether the full time passed.
func (e *Emulator) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.stop:
		return false
	case <-ctx.Done():
		return false
	}
}

func (e *Emulator) reaper() {
	defer e.bg.Done()
	tick := time.NewTicker(e.cfg.ReaperInterval)
	defer tick.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-tick.C:
			e.reap(e.now())
		}
	}
}
