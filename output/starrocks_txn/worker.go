package starrocks_txn

// Home of G2 (ARCHITECTURE.md §11.1): one multi-table transaction per database and cycle makes a
// commit atomic across tables. Main test: TestPipelineLoadsWholeSourceTransactions.
//
// Home of G3 (ARCHITECTURE.md §11.1): loads grow with tables × cycles, not with source
// transactions. Main test: TestNToOneMapping.
//
// Home of G7 (ARCHITECTURE.md §11.1): per-partition order per database: a later cycle is never
// visible before an earlier one. Main test: TestOrderingUnderMaxInFlight64.
//
// Home of G13 (ARCHITECTURE.md §11.1): an ambiguous load taints its label: rolled back and
// replayed under a new one. Main test: TestLostStreamedLoadReplyTaintsTheLabel.
//
// Home of G27 (ARCHITECTURE.md §11.1): a shared transaction is never loaded when too old to
// finish. Main test: TestCycleAgedByACommitWaitIsNeverLoaded.

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The database worker runs its commit cycles one at a time
// (ARCHITECTURE.md §4.3): step begins a cycle eagerly, takes what the
// switches froze, streams it (load.go) and, when the cycle is due, hands it
// to a commit goroutine that delivers it (commit.go), each through the
// cycle's protocol (protocol.go). What it reads and changes of its queue is
// the core's (take, stepState, idleDB, dropDB).

// cycle is one shared multi-table transaction of a database: its label and
// the source transactions retained in it until the commit resolves.
type cycle struct {
	label string
	// begun is when StarRocks began label: the cycle's age, which the
	// recycle age (80 % of txn_timeout) bounds.
	begun time.Time
	txns  []*srcTxn
	// sent counts, per table, the rows of txns already streamed under
	// label, so a later load sends only what froze since (load.go).
	sent map[string]int
	// loaded is set once anything was loaded under label: a transaction
	// dropped from the cycle after that forces a replay under a new label.
	loaded bool
	// progressLoaded is set once the progress rows went under label.
	progressLoaded bool
	// n is label's number (see SeqLabel); open lists the writer's other
	// open labels, as the writer row under label has them (exactly_once).
	n    int64
	open []int64
	// rowAt is the writer row's updated_at; rowTop its label_number: n, or
	// the highest label_number of the rows StarRocks holds when that is
	// higher (an anchor committed for the cycle, a row numbered so before).
	rowAt  time.Time
	rowTop int64
	// progress are the progress rows loaded under label (exactly_once).
	progress []progressRow
	// tainted is the failure of a load streamed under label between
	// commits: the label may hold that load's rows (a reply lost or late),
	// so nothing is sent under it again and the commit replays the cycle
	// under a new label (ARCHITECTURE.md §4.4).
	tainted error
	// pt is the per-table protocol's part of the cycle: its labels per
	// table, the decision (pertable.go; nil in multi-table mode).
	pt *ptCycle
	// isolating marks a cycle isolate.go commits to find the source
	// transactions a commit failed for: its own failures for data are steps
	// of that search, logged at debug (the poisoned transaction it ends at
	// gets the one error line, deadletter.go or partition.go).
	isolating bool
}

// reset forgets the label and what was loaded under it, for a replay.
func (c *cycle) reset() {
	c.label, c.sent, c.loaded, c.progressLoaded, c.n, c.open, c.rowAt, c.tainted = "", nil, false, false, 0, nil, time.Time{}, nil
	c.progress, c.rowTop = nil, 0
	c.pt = nil
}

// dbWorker runs the commit cycles of one database: one cycle begins and
// streams its loads while the previous one commits, but a cycle commits only
// once the previous commit resolved. So there is never more than one
// unresolved commit per database (a begun transaction, the next cycle's, may
// be open beside it), and a later cycle is never committed before an
// earlier one.
type dbWorker struct {
	o  *Output
	db string
	// log names the database in every line.
	log *service.Logger

	// q is the database's queue in the core (core.go: dbQueue): what the
	// switches froze for the worker, and the worker's state admission and
	// the manager decide on. Guarded by o.mu, changed through the core.
	q *dbQueue
	// countedRows is committed's scratch for the rows per table of a
	// commit, kept between commits (guarded by o.mu).
	countedRows []tableCount

	// begun is set once StarRocks began a transaction in the database: it
	// exists. Until then the worker's metrics use notBegunDB, so a database
	// name that reached the output from data but does not exist never
	// becomes a metric series.
	begun atomic.Bool

	wake chan struct{}
	cyc  *cycle
	// committer is closed when the cycle handed to the commit goroutine is
	// resolved (nil: none). The next cycle begins and streams its loads
	// meanwhile, but commits only after it.
	committer chan struct{}
	// progressReady is set once the database's progress table is known to
	// exist (exactly_once).
	progressReady bool
	lastCommit    time.Time
	lastLoad      time.Time

	// labels numbers the worker's labels and knows which of them may still
	// be committed and what the writer row StarRocks holds says (ledger.go).
	// Labels are begun by the worker and by its commit goroutine. A retired
	// worker's ledger is kept (Output.retired) for the next worker of the
	// database, so that labels are never numbered twice.
	labels *labelLedger
}

// notBegunDB is the database label of the metrics of a worker whose
// database has not begun a transaction yet.
const notBegunDB = "(not begun)"

// newDBWorker returns the worker of q's database, continuing the ledger of
// a retired one when there is one.
func newDBWorker(o *Output, q *dbQueue, ledger *labelLedger) *dbWorker {
	w := &dbWorker{o: o, db: q.db, q: q, log: o.log.With("database", q.db), wake: make(chan struct{}, 1), labels: ledger}
	if w.labels == nil {
		w.labels = &labelLedger{}
	} else {
		w.begun.Store(true)
	}
	return w
}

func (w *dbWorker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run is the worker's goroutine: a step at every wake-up (a switch queued
// for it, the soft cap) and at every tick (a quarter of miniInterval, or of
// commit_interval when shorter), until the output closes or the worker
// retires; the eager cycle it leaves is rolled back.
func (w *dbWorker) run() {
	defer w.o.wg.Done()
	tick := w.o.conf.miniInterval() / 4
	if ci := w.o.conf.commitInterval / 4; ci < tick {
		tick = ci
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	defer w.rollbackOnClose()
	for {
		select {
		case <-w.o.ctx.Done():
			return
		case <-w.wake:
		case <-t.C:
		}
		w.step(w.o.ctx)
		if w.retire() {
			return
		}
	}
}

// retire removes the worker when it is idle: nothing queued, no cycle, no
// commit in flight, and — once its database began a transaction — no
// traffic for the recycle age (80 % of txn_timeout; its eager cycle is
// rolled back by then) and no label open or in doubt. A worker whose
// database never began a transaction (it does not exist) retires as soon as
// the source transactions that wanted it are poisoned. The ledger of a
// database that began transactions is kept for its next worker: those
// databases exist in StarRocks, so the kept ledgers are bounded by the
// cluster's databases, whatever database names the data carries.
func (w *dbWorker) retire() bool {
	if w.cyc != nil {
		return false
	}
	if w.committer != nil {
		select {
		case <-w.committer:
			w.committer = nil
		default:
			return false
		}
	}
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.core.idleDB(w.q) || o.workers[w.db] != w {
		return false
	}
	if w.begun.Load() {
		if o.now().Sub(w.q.lastTraffic) < w.recycleAge() || !w.labels.idle() {
			return false
		}
		o.retired[w.db] = w.labels
	}
	o.core.dropDB(w.q)
	delete(o.workers, w.db)
	w.log.Debugf("The database worker is idle and retires")
	return true
}

func (w *dbWorker) rollbackOnClose() {
	if w.cyc != nil {
		w.o.proto.rollback(w, w.cyc)
	}
}

// txn is the transaction of one of the worker's labels as its begin,
// commit and rollback send it: multi-table, or in per-table mode a classic
// one on the writers table (a cycle's decision, an anchor: the parts are
// begun with their own tables, pertable.go).
func (w *dbWorker) txn(label string) starrocks.Txn {
	if w.o.proto.classic() {
		return starrocks.Txn{DB: w.db, Label: label, Table: writersTable(w.o.conf.progressTable), Timeout: w.o.conf.txnTimeout}
	}
	return starrocks.Txn{DB: w.db, Label: label, Multi: true, Timeout: w.o.conf.txnTimeout}
}

// take moves the database's frozen transactions into the cycle; with cut,
// every partition's complete transactions are frozen first.
func (w *dbWorker) take(cut bool) (fresh bool) {
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	w.cyc.txns, fresh = o.core.takeBegunAt(w.q, w.cyc.txns, cut, o.now(), w.cyc.begun)
	return fresh
}

// take moves what the switches froze for q's database into a cycle that
// holds txns and returns them; with cut, every partition's complete
// transactions are frozen first (the commit cut). A transaction a fence or
// a stall took out while it was queued is left out, a fenced one released.
// Which cycle may take a transaction is decided here (a schema gate's
// transaction only a cycle begun after its change: partition.go, activate).
func (k *core) take(q *dbQueue, txns []*srcTxn, cut bool, now time.Time) []*srcTxn {
	txns, _ = k.takeBegunAt(q, txns, cut, now, time.Time{})
	return txns
}

// takeBegunAt is take into a cycle whose StarRocks transaction began at
// begun (zero: not begun yet, so it begins after now). A transaction whose
// rows need a schema change that became visible at or after begun
// (srcTxn.notBefore) would lose what the change added (a StarRocks
// transaction keeps the schema it began with, ARCHITECTURE.md §14.3): it
// and everything queued after it stay queued, and fresh reports that the
// database needs a cycle begun after it.
func (k *core) takeBegunAt(q *dbQueue, txns []*srcTxn, cut bool, now, begun time.Time) (_ []*srcTxn, fresh bool) {
	if cut {
		k.cut(now)
	}
	for i, t := range q.queue {
		k.releaseFenced(t)
		if t.state != txnQueued {
			continue
		}
		if nb := k.notBefore(t, begun); !begun.IsZero() && !nb.IsZero() && !begun.After(nb) {
			q.queue = append(q.queue[:0:0], q.queue[i:]...)
			return txns, true
		}
		if !k.move(t, txnInCycle) {
			continue
		}
		txns = append(txns, t)
	}
	q.queue = nil
	return txns, false
}

// stepState is what a worker's step decides on, read at its start: whether
// something is queued, whether the database had traffic within recycleAge
// (then a transaction is begun eagerly), whether the cycle is urgent (the
// soft cap; the request is consumed) and whether StarRocks refused the
// last begin.
func (k *core) stepState(q *dbQueue, now time.Time, recycleAge time.Duration) (hasWork, recent, urgent, refused bool) {
	hasWork = len(q.queue) > 0
	recent = now.Sub(q.lastTraffic) < recycleAge
	urgent = q.urgent || k.buffered >= k.conf.bufferSize
	q.urgent = false
	return hasWork, recent, urgent, q.refused != nil
}

// idleDB reports whether q's worker has nothing to do: nothing queued, no
// step running, no commit goroutine, and q still the database's queue.
func (k *core) idleDB(q *dbQueue) bool {
	return len(q.queue) == 0 && !q.busy && q.committing == 0 && k.dbs[q.db] == q
}

// dropDB forgets q when its worker retires: a switch that queues for the
// database later starts a new one.
func (k *core) dropDB(q *dbQueue) {
	if k.dbs[q.db] == q {
		delete(k.dbs, q.db)
	}
}

func (w *dbWorker) recycleAge() time.Duration {
	return time.Duration(recycleFraction * float64(w.o.conf.txnTimeout))
}

// step advances the worker's cycle by what is due now: it begins the
// shared transaction eagerly (while the database has traffic), takes what
// the switches froze, rolls an idle cycle back at the recycle age, streams
// the frozen rows at most once per miniInterval, and when the cycle is due
// (commit_interval since the last commit, or the soft cap) waits for the
// previous commit to resolve — rolling the cycle's transaction back if the
// wait made it too old — and hands the cycle to a commit goroutine.
func (w *dbWorker) step(ctx context.Context) {
	o := w.o
	o.mu.Lock()
	hasWork, recent, urgent, refused := o.core.stepState(w.q, o.now(), w.recycleAge())
	o.mu.Unlock()
	if w.cyc == nil {
		if !hasWork && (!recent || refused) {
			// No eager begin into a database StarRocks said does not exist.
			return
		}
		w.cyc = &cycle{}
	}
	w.setBusy(true)
	defer w.setBusy(false)
	// Eager begin: the shared transaction is open before the rows arrive.
	if w.cyc.label == "" && !o.proto.begin(ctx, w, w.cyc) {
		if len(w.cyc.txns) == 0 {
			w.cyc = nil
		}
		return
	}
	fresh := w.take(urgent)
	now := o.now()
	if fresh && len(w.cyc.txns) == 0 {
		// What is queued needs a StarRocks transaction begun after a
		// schema change: this one began before it.
		o.proto.rollback(w, w.cyc)
		w.cyc = nil
		w.signal()
		return
	}
	if now.Sub(w.cyc.begun) >= w.recycleAge() && len(w.cyc.txns) == 0 {
		// Idle and old: re-begin early, so a transaction is never loaded
		// into when it is too old to finish before its timeout.
		o.proto.rollback(w, w.cyc)
		w.cyc = nil
		return
	}
	if len(w.cyc.txns) == 0 {
		return
	}
	// The cycle began after the last commit was handed over, and
	// commit_interval is at most half of txn_timeout (validate), below the
	// recycle age: a cycle is due by commit_interval before it is too old.
	// A transaction held for a cycle begun after a schema change makes
	// this one due: the next cycle takes it.
	due := now.Sub(w.lastCommit) >= o.conf.commitInterval || urgent || fresh
	if !due {
		// Stream what froze under the shared label, at most once per
		// miniInterval, so that the frozen chunks of every partition of a
		// table go in one request and loads grow with tables × time, not
		// with partitions or source transactions. A failure taints the
		// label and is handled by the commit, which replays the cycle under
		// a new one.
		if now.Sub(w.lastLoad) < o.conf.miniInterval() {
			return
		}
		w.lastLoad = now
		err := o.proto.load(ctx, w, w.cyc)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		w.cyc.tainted = err
	}
	// A later cycle never commits before the earlier one is resolved.
	if !w.waitCommitter(ctx) {
		return
	}
	if w.cyc.label != "" && o.now().Sub(w.cyc.begun) >= w.recycleAge() {
		// The wait aged the cycle's transaction past the recycle age: it
		// is rolled back, and the commit goroutine begins a new one and
		// loads the cycle's rows again, so that nothing is loaded into a
		// transaction too old to finish before its timeout.
		o.proto.rollback(w, w.cyc)
		w.cyc.reset()
	}
	if w.take(true) {
		w.signal()
	}
	w.commitCycle(ctx)
}

// waitCommitter waits for the cycle in the commit goroutine to resolve.
func (w *dbWorker) waitCommitter(ctx context.Context) bool {
	if w.committer == nil {
		return true
	}
	select {
	case <-w.committer:
		w.committer = nil
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *dbWorker) setBusy(b bool) {
	w.o.mu.Lock()
	w.q.busy = b
	w.o.mu.Unlock()
}

// commitCycle hands the current cycle to a commit goroutine, which delivers
// it (commit.go) and resolves its transactions, and lets the worker begin
// the next cycle at once.
func (w *dbWorker) commitCycle(ctx context.Context) {
	c := w.cyc
	w.cyc = nil
	w.lastCommit = w.o.now()
	done := make(chan struct{})
	w.committer = done
	w.o.mu.Lock()
	w.q.committing++
	w.o.mu.Unlock()
	// The commit runs on commitCtx: Close waits for it (output.go).
	ctx = w.o.commitCtx
	w.o.commits.Add(1)
	go func() {
		defer w.o.commits.Done()
		defer close(done)
		defer func() {
			w.o.mu.Lock()
			w.q.committing--
			w.o.mu.Unlock()
		}()
		if err := w.deliver(ctx, c); err != nil && ctx.Err() == nil && !errors.Is(err, errClosing) {
			// A per-transaction failure StarRocks reported at commit (rows
			// filtered, a table left with no rows): find the offenders by
			// committing the cycle's partitions separately, then prefixes
			// of a failing partition, in order.
			w.isolate(ctx, c.txns)
		}
	}()
}

// live filters out transactions dropped by a fence or a stall; the fenced
// ones are released.
func (w *dbWorker) live(txns []*srcTxn) []*srcTxn {
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	return w.o.core.liveTxns(txns)
}

// metricDB is the database label of the worker's metrics: notBegunDB until
// StarRocks began a transaction in the database.
func (w *dbWorker) metricDB() string {
	if w.begun.Load() {
		return w.db
	}
	return notBegunDB
}
