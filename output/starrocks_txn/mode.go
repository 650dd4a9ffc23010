package starrocks_txn

// Home of G49 (ARCHITECTURE.md §11.1): transaction_mode: auto decides from the FE; multi_table
// against a 3.x FE stops at start. Main test: TestAutoModeDecidesFromTheFE.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The transaction mode (ARCHITECTURE.md §15): multi-table transactions
// (StarRocks 4.0 and later) or per-table ones prepared together (3.x), the
// two fields that choose and tune it, and how `auto` decides, at Connect
// from the FE's version, else from the FE's answer to the first multi-table
// begin (docs/notes/starrocks-protocol.md §12.1, §12.2).

const (
	fieldTransactionMode = "transaction_mode"
	fieldPreparedTimeout = "prepared_timeout"

	modeAuto       = "auto"
	modeMultiTable = "multi_table"
	modePerTable   = "per_table"

	// defaultPreparedLimit is prepared_transaction_default_timeout_second's
	// default (86400 s, docs/notes/starrocks-protocol.md §12.3): what a
	// prepared transaction waits when the FE's config cannot be read.
	defaultPreparedLimit = 24 * time.Hour
	// minPreparedTimeout is the least prepared_timeout the output accepts.
	minPreparedTimeout = 10 * time.Second
)

// modeConfig is the part of the config this file parses.
type modeConfig struct {
	mode string
	// preparedTimeout is sent with every prepare (0: none, the FE's own
	// prepared_transaction_default_timeout_second applies).
	preparedTimeout time.Duration
}

func transactionModeField() *service.ConfigField {
	return service.NewStringAnnotatedEnumField(fieldTransactionMode, map[string]string{
		modeAuto: "Multi-table transactions when the FE has them (StarRocks 4.0 and later), per-table ones otherwise. Decided at start from the FE's version " +
			"(`select current_version()` over `" + fieldMySQLAddress + "`), or without it from the FE's answer to a multi-table begin (at start when `" + fieldDatabase + "` is a literal, else at the first begin), and logged with the reason.",
		modeMultiTable: "One StarRocks multi-table transaction per database and commit cycle: every table of the cycle becomes visible at once. Needs StarRocks 4.0 or later: against a 3.x FE the output stops at start with an error that says to use `per_table` or to upgrade.",
		modePerTable: "For StarRocks 3.x (3.3 and later), which has no multi-table transactions: one classic transaction per table of a cycle, every one of them PREPARED, then a decision recorded and committed durably (with `semantic: exactly_once`, or `pipeline_id` with `" + fieldMySQLAddress + "`), then each COMMITTED. " +
			"Whatever crashes in between, a cycle's prepared transactions are committed or rolled back together, and nothing is lost or (with `exactly_once`) doubled. " +
			"One difference from `multi_table`: between the first and the last COMMIT of a cycle (milliseconds; `starrocks_txn_commit_window_ns`) a reader may see some tables of a source transaction and not yet the others; never once the cycle is done.",
	}).
		Description("How a commit cycle's tables become visible: one multi-table transaction, or per-table transactions prepared together. See the README's guarantees section for what each mode promises.").
		Example(modePerTable).
		Default(modeAuto)
}

func preparedTimeoutField() *service.ConfigField {
	return service.NewDurationField(fieldPreparedTimeout).
		Description("Per-table mode: how long StarRocks keeps a prepared transaction waiting for its COMMIT, sent with each prepare as the `prepared_timeout` header (StarRocks 3.5.4 and later read it; older FEs ignore it and use `prepared_transaction_default_timeout_second`, 86400 s by default). " +
			"`0s` sends nothing: the FE's own setting applies, read at start over `" + fieldMySQLAddress + "` when the account may (`ADMIN SHOW FRONTEND CONFIG`), else taken as 86400 s. " +
			"A cycle whose prepares are older than half of it is rolled back and replayed rather than decided, so that no prepared transaction expires between the decision and its commit. When set: at least 10s and at least twice `" + fieldRequestTimeout + "`.").
		Example("1h").
		Default("0s").
		Advanced()
}

func modeConfigFromParsed(conf *service.ParsedConfig) (m modeConfig, err error) {
	if m.mode, err = conf.FieldString(fieldTransactionMode); err != nil {
		return
	}
	m.preparedTimeout, err = durationField(conf, fieldPreparedTimeout)
	return
}

func msgTransactionMode(m string) string {
	return fmt.Sprintf("transaction_mode %q must be one of auto, multi_table, per_table", m)
}

const msgPreparedTimeout = "prepared_timeout must be 0s (the FE's own prepared_transaction_default_timeout_second) or at least 10s and at least twice request_timeout: a cycle decides within half of it"

// validate checks the mode's fields, with the lint rule's words.
func (m modeConfig) validate(requestTimeout time.Duration) error {
	switch m.mode {
	case "", modeAuto, modeMultiTable, modePerTable:
		// "": a config built in code, multi-table as before the mode.
	default:
		return errors.New(msgTransactionMode(m.mode))
	}
	if m.preparedTimeout < 0 || (m.preparedTimeout > 0 && (m.preparedTimeout < minPreparedTimeout || m.preparedTimeout < 2*requestTimeout)) {
		return errors.New(msgPreparedTimeout)
	}
	return nil
}

// lintMode is the mode's part of the lint rule (lint.go): its lets, and
// $mode_errs, merged into the rule's list.
var lintMode = `
let mode = this.` + fieldTransactionMode + `.or("` + modeAuto + `")
let pt = this.` + fieldPreparedTimeout + `.or("0s").apply("dur_ns")
let rt = this.request_timeout.or("` + defaultRequestTimeout + `").apply("dur_ns")
let mode_errs = [
  if !["` + modeAuto + `", "` + modeMultiTable + `", "` + modePerTable + `"].contains($mode) { "transaction_mode %q must be one of auto, multi_table, per_table".format($mode) } else { null },
  {"name": "` + fieldPreparedTimeout + `", "value": this.` + fieldPreparedTimeout + `}.apply("dur_err"),
  if $pt != null && $rt != null && ($pt < 0 || ($pt > 0 && ($pt < ` + strconv.FormatInt(int64(minPreparedTimeout), 10) + ` || $pt < 2 * $rt))) { "` + msgPreparedTimeout + `" } else { null },
]
`

// newProtocol returns the protocol of the configured mode: auto starts
// undecided (autoProtocol).
func newProtocol(c config) protocol {
	switch c.mode.mode {
	case modePerTable:
		return newPerTable(c)
	case modeAuto:
		return &autoProtocol{per: newPerTable(c)}
	}
	return multiTable{}
}

// autoProtocol is transaction_mode auto: multi-table until decided, then
// the decided protocol. It is decided at Connect from the FE's version, or
// by the FE's answer to a multi-table begin (Output.noMultiTable), once.
type autoProtocol struct {
	per     *perTable
	decided atomic.Pointer[protocol]
	once    sync.Once
}

func (a *autoProtocol) current() protocol {
	if p := a.decided.Load(); p != nil {
		return *p
	}
	return multiTable{}
}

// decide fixes the protocol and logs why; later calls change nothing and
// report what was decided.
func (a *autoProtocol) decide(perTable bool, log *service.Logger, reason string) protocol {
	a.once.Do(func() {
		var p protocol = multiTable{}
		if perTable {
			p = a.per
			log.Infof("transaction_mode auto: per-table transactions prepared together, as StarRocks 3.x has no multi-table transactions (%s). Each cycle prepares one transaction per table, records its decision, then commits them: between the first and the last commit of a cycle a reader may see part of a source transaction, never once the cycle is done (ARCHITECTURE.md §15)", reason)
		} else {
			log.Infof("transaction_mode auto: multi-table transactions (%s)", reason)
		}
		a.decided.Store(&p)
	})
	return a.current()
}

func (a *autoProtocol) begin(ctx context.Context, w *dbWorker, c *cycle) bool {
	return a.current().begin(ctx, w, c)
}

func (a *autoProtocol) load(ctx context.Context, w *dbWorker, c *cycle) error {
	return a.current().load(ctx, w, c)
}

func (a *autoProtocol) commit(ctx context.Context, w *dbWorker, c *cycle) (bool, bool, error) {
	return a.current().commit(ctx, w, c)
}

func (a *autoProtocol) rollback(w *dbWorker, c *cycle) { a.current().rollback(w, c) }

func (a *autoProtocol) classic() bool { return a.current().classic() }

func (a *autoProtocol) labelFor(ctx context.Context, w *dbWorker, c *cycle, table string) (string, error) {
	return a.current().labelFor(ctx, w, c, table)
}

// perTableOf returns the per-table protocol p is or has decided for, nil
// when it is (or will be) multi-table.
func perTableOf(p protocol) *perTable {
	switch x := p.(type) {
	case *perTable:
		return x
	case *autoProtocol:
		return x.per
	}
	return nil
}

// errStopped is an error that stops the output at start (connect.go:
// stopLocked), with its own text.
type errStopped struct{ error }

// decideMode runs at Connect, once StarRocks answered: it decides auto from
// the FE's version (mysql_address) or, with a literal database, from a
// multi-table begin, stops multi_table against a 3.x FE, and learns how long
// the FE keeps a prepared transaction. An errStopped stops the output.
func (o *Output) decideMode(ctx context.Context) error {
	mode := o.conf.mode.mode
	per := perTableOf(o.proto)
	// major is the FE's major version when known (0: not), why how it is
	// known, version the version itself ("" when not read).
	major, why, version := 0, "", ""
	if o.meta != nil {
		if v, err := o.meta.Version(ctx); err != nil {
			// Not a StarRocks MySQL port we know, or it did not answer: the
			// FE's answer to a multi-table begin decides instead.
			o.log.Infof("%s %s: the FE's version could not be read (%v); the FE's answer to a multi-table begin decides", fieldTransactionMode, mode, err)
		} else {
			version = v
			major, _ = strconv.Atoi(strings.SplitN(v, ".", 2)[0])
			why = "the FE is StarRocks " + v
		}
	}
	if major == 0 && mode != modePerTable {
		// No version: ask the FE with a multi-table begin, when the
		// database is known and the client is StarRocks's own.
		db := o.conn.conf.database
		if _, real := o.client.(prober); real && db != "" {
			if threeX, decided := o.probeMultiTable(ctx, db); decided && threeX {
				major, why = 3, "a multi-table begin in database "+db+" was answered `unknown table \""+db+".\"`, as StarRocks 3.x answers it"
			} else if decided {
				major, why = 4, "a multi-table begin in database "+db+" succeeded"
			}
		}
	}
	switch {
	case major == 0:
		if mode == modeAuto {
			o.log.Infof("transaction_mode auto: the FE's version is not known yet (no %s); decided by the first begin", fieldMySQLAddress)
		}
	case mode == modeMultiTable && major < 4:
		return errStopped{fmt.Errorf("%s multi_table needs StarRocks 4.0 or later, and %s: set %s: per_table (or auto), or upgrade StarRocks", fieldTransactionMode, why, fieldTransactionMode)}
	case mode == modeAuto:
		o.proto.(*autoProtocol).decide(major < 4, o.log, why)
	}
	if per != nil && (mode == modePerTable || major > 0 && major < 4) {
		per.learnLimit(ctx, o, version)
	}
	return nil
}

// probeMultiTable begins a multi-table transaction under a label of its own
// in db (rolled back at once when it began): a 3.x FE answers it
// NoMultiTable. decided is false when the answer says neither.
func (o *Output) probeMultiTable(ctx context.Context, db string) (threeX, decided bool) {
	txn := starrocks.Txn{DB: db, Label: starrocks.NewLabel(o.conf.labelPrefix+"-probe", db), Multi: true, Timeout: o.conf.txnTimeout}
	err := o.client.Begin(ctx, txn)
	if err == nil {
		rctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
		defer cancel()
		_ = o.client.Rollback(rctx, txn)
		return false, true
	}
	if starrocks.NoMultiTable(err, db) {
		return true, true
	}
	o.log.Debugf("A multi-table begin to learn the FE's transactions: %v", err)
	return false, false
}

// noMultiTable is what a worker does when the FE answered its multi-table
// begin as a 3.x FE does (starrocks.NoMultiTable): in auto mode the
// per-table protocol it decided for (the begin goes on with it); in
// multi_table mode the output stops (nil).
func (o *Output) noMultiTable(w *dbWorker, err error) protocol {
	if a, ok := o.proto.(*autoProtocol); ok {
		p := a.decide(true, o.log, fmt.Sprintf("the FE answered a multi-table begin in database %s as 3.x does: %v", w.db, err))
		p.(*perTable).learnLimit(o.ctx, o, "")
		return p
	}
	o.conn.mu.Lock()
	defer o.conn.mu.Unlock()
	if o.conn.stopped == nil {
		_ = o.conn.stopLocked(fmt.Errorf("%s multi_table needs StarRocks 4.0 or later, and the FE answered a multi-table begin in database %s as StarRocks 3.x does (%v): set %s: per_table (or auto), or upgrade StarRocks", fieldTransactionMode, w.db, err, fieldTransactionMode))
	}
	return nil
}
