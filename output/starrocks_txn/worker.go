package starrocks_txn

import (
	"context"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The database worker runs its commit cycles one at a time
// (ARCHITECTURE.md §4.3): step begins a cycle eagerly, takes what the
// switches froze, streams it (load.go) and, when the cycle is due, hands it
// to a commit goroutine that delivers it (commit.go).

// cycle is one shared multi-table transaction of a database: its label and
// the source transactions retained in it until the commit resolves.
type cycle struct {
	label  string
	begun  time.Time
	txns   []*srcTxn
	sent   map[string]int
	loaded bool
	// progressLoaded is set once the progress rows went under label.
	progressLoaded bool
	// n is label's number (see SeqLabel); open lists the writer's other
	// open labels, as the writer row under label has them (exactly_once).
	n    int64
	open []int64
	// rowAt is the writer row's updated_at.
	rowAt time.Time
}

// reset forgets the label and what was loaded under it, for a replay.
func (c *cycle) reset() {
	c.label, c.sent, c.loaded, c.progressLoaded, c.n, c.open, c.rowAt = "", nil, false, false, 0, nil, time.Time{}
}

// dbWorker runs the commit cycles of one database, one at a time: so there
// is never more than one unresolved transaction per database, and a later
// cycle is never committed before an earlier one resolved.
type dbWorker struct {
	o  *Output
	db string
	// log names the database in every line.
	log *service.Logger

	// Guarded by o.mu.
	queue       []*srcTxn
	lastTraffic time.Time
	urgent      bool
	busy        bool
	committing  int

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
	// Labels are begun by the worker and by its commit goroutine.
	labels labelLedger
}

func newDBWorker(o *Output, db string) *dbWorker {
	return &dbWorker{o: o, db: db, log: o.log.With("database", db), wake: make(chan struct{}, 1)}
}

func (w *dbWorker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

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
	}
}

func (w *dbWorker) rollbackOnClose() {
	if w.cyc == nil || w.cyc.label == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	_ = w.o.client.Rollback(ctx, w.txn(w.cyc.label))
}

func (w *dbWorker) txn(label string) starrocks.Txn {
	return starrocks.Txn{DB: w.db, Label: label, Multi: true, Timeout: w.o.conf.txnTimeout}
}

// take moves the database's frozen transactions into the cycle; with cut,
// every partition's complete transactions are frozen first.
func (w *dbWorker) take(cut bool) {
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	if cut {
		o.cutLocked(now)
	}
	for _, t := range w.queue {
		o.releaseFencedLocked(t)
		if t.state != txnQueued || !o.moveLocked(t, txnInCycle) {
			continue
		}
		w.cyc.txns = append(w.cyc.txns, t)
	}
	w.queue = nil
}

func (w *dbWorker) recycleAge() time.Duration {
	return time.Duration(recycleFraction * float64(w.o.conf.txnTimeout))
}

func (w *dbWorker) step(ctx context.Context) {
	o := w.o
	o.mu.Lock()
	hasWork := len(w.queue) > 0
	recent := o.now().Sub(w.lastTraffic) < w.recycleAge()
	// The soft cap: a full buffer commits the cycle early.
	urgent := w.urgent || o.buffered >= o.conf.bufferSize
	w.urgent = false
	o.mu.Unlock()
	if w.cyc == nil {
		if !hasWork && !recent {
			return
		}
		w.cyc = &cycle{}
	}
	w.setBusy(true)
	defer w.setBusy(false)
	// Eager begin: the shared transaction is open before the rows arrive.
	if w.cyc.label == "" && !w.begin(ctx, w.cyc) {
		return
	}
	w.take(urgent)
	now := o.now()
	if now.Sub(w.cyc.begun) >= w.recycleAge() && len(w.cyc.txns) == 0 {
		// Idle and old: re-begin early, so a transaction is never loaded
		// into when it is too old to finish before its timeout.
		w.rollback(w.cyc.label)
		w.cyc = nil
		return
	}
	if len(w.cyc.txns) == 0 {
		return
	}
	due := now.Sub(w.lastCommit) >= o.conf.commitInterval ||
		now.Sub(w.cyc.begun) >= w.recycleAge() || urgent
	if !due {
		// Stream what froze under the shared label, at most once per
		// miniInterval, so that the frozen chunks of every partition of a
		// table go in one request and loads grow with tables × time, not
		// with partitions or source transactions. A failure is handled by
		// the commit, which replays the cycle.
		if now.Sub(w.lastLoad) < o.conf.miniInterval() {
			return
		}
		w.lastLoad = now
		if err := w.loadPending(ctx, w.cyc); err == nil {
			return
		}
	}
	// A later cycle never commits before the earlier one is resolved.
	if !w.waitCommitter(ctx) {
		return
	}
	w.take(true)
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
	w.busy = b
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
	w.committing++
	w.o.mu.Unlock()
	w.o.wg.Add(1)
	go func() {
		defer w.o.wg.Done()
		defer close(done)
		defer func() {
			w.o.mu.Lock()
			w.committing--
			w.o.mu.Unlock()
		}()
		if err := w.deliver(ctx, c); err != nil && ctx.Err() == nil {
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
	return w.o.liveTxnsLocked(txns)
}
