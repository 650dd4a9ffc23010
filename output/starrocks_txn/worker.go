package starrocks_txn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

const (
	// retrySafeDelay is the wait before a load refused with
	// TXN_IN_PROCESSING (nothing ingested) is sent again.
	retrySafeDelay = 50 * time.Millisecond
	// retrySafeMax bounds those resends before the cycle is replayed.
	retrySafeMax = 20
	// rollbackTimeout bounds a best-effort rollback.
	rollbackTimeout = 10 * time.Second
)

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

	// Label numbering and the writer floor (writers.go). labelMu guards
	// them: labels are begun by the worker and by the commit goroutine.
	labelMu sync.Mutex
	nextN   int64
	// open holds the numbers of begun labels that may still be committed.
	open map[int64]bool
	// anchored is set once StarRocks holds this writer's row in the
	// database; held is what that row says (two candidates right after a
	// commit that followed its anchor), durableAt its updated_at.
	anchored  bool
	durableAt time.Time
	held      []heldRow
	// inDoubt counts commits sent whose outcome is unknown.
	inDoubt int
}

func newDBWorker(o *Output, db string) *dbWorker {
	return &dbWorker{o: o, db: db, wake: make(chan struct{}, 1)}
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

// take moves the database's frozen transactions into the cycle.
func (w *dbWorker) take(cut bool) (recent bool) {
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
	return now.Sub(w.lastTraffic) < w.recycleAge()
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

// commitCycle hands the current cycle to a commit goroutine, which settles
// it and resolves its transactions, and lets the worker begin the next cycle
// at once.
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
		if err := w.settle(ctx, c); err != nil && ctx.Err() == nil {
			// A per-transaction failure StarRocks reported at commit (rows
			// filtered, a table left with no rows): find the offenders by
			// committing the cycle's partitions separately, then prefixes
			// of a failing partition, in order.
			w.isolate(ctx, c.txns)
		}
	}()
}

// isolate commits txns in groups: one group per partition, a failing group
// split into a prefix and the rest, a failing single transaction poisoned.
func (w *dbWorker) isolate(ctx context.Context, txns []*srcTxn) {
	var groups [][]*srcTxn
	idx := map[*partition]int{}
	for _, t := range txns {
		i, ok := idx[t.p]
		if !ok {
			i = len(groups)
			idx[t.p] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], t)
	}
	for len(groups) > 0 && ctx.Err() == nil {
		g := w.live(groups[0])
		groups = groups[1:]
		if len(g) == 0 {
			continue
		}
		c := &cycle{txns: g}
		err := w.settle(ctx, c)
		if err == nil || ctx.Err() != nil {
			continue
		}
		if len(c.txns) == 1 {
			w.o.poisonFromCycle(c.txns[0], err)
			continue
		}
		half := len(c.txns) / 2
		groups = append([][]*srcTxn{c.txns[:half], c.txns[half:]}, groups...)
	}
}

// live filters out transactions dropped by a fence or a stall; the fenced
// ones are released.
func (w *dbWorker) live(txns []*srcTxn) []*srcTxn {
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	return w.o.liveTxnsLocked(txns)
}

// settle loads and commits c until it is committed (nil) or StarRocks
// reports a per-transaction failure at commit (the error). Transient
// failures replay the cycle from the retained rows under a new label, with
// capped backoff, forever; a commit of unknown outcome is resolved by label
// state, and replayed only once ABORTED is proven.
func (w *dbWorker) settle(ctx context.Context, c *cycle) error {
	o := w.o
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	replay := func(reason string, err error) bool {
		o.m.retries.Incr(1, w.db, reason)
		if starrocks.ClassOf(err) == starrocks.ClassFatal {
			o.log.Errorf("starrocks_txn: database %s: replaying the commit cycle of label %s after an error that needs an operator (%s): %v", w.db, c.label, reason, err)
		} else {
			o.log.Warnf("starrocks_txn: database %s: replaying the commit cycle of label %s (%s): %v", w.db, c.label, reason, err)
		}
		if c.label != "" {
			w.rollback(c.label)
		}
		c.reset()
		return sleepCtx(ctx, b.next())
	}
	for ctx.Err() == nil {
		// Drop what a fence or a stall took away; rows of it already loaded
		// under the label force a replay without them.
		before := len(c.txns)
		c.txns = w.live(c.txns)
		if len(c.txns) == 0 {
			if c.label != "" {
				w.rollback(c.label)
			}
			return nil
		}
		if len(c.txns) != before && c.loaded {
			if !replay("fenced", errors.New("rows of a dropped source transaction were loaded")) {
				return ctx.Err()
			}
			continue
		}
		if c.label == "" && !w.begin(ctx, c) {
			return ctx.Err()
		}
		if err := w.loadPending(ctx, c); err != nil {
			var le *loadError
			if errors.As(err, &le) && starrocks.ClassOf(le.err) == starrocks.ClassPerTxn && !tableWide(le.err) {
				// A failure caused by some rows: find their source
				// transactions by splitting the cycle.
				w.rollback(c.label)
				o.m.rollbacks.Incr(1, w.db)
				c.reset()
				return err
			}
			if errors.As(err, &le) && starrocks.ClassOf(le.err) == starrocks.ClassPerTxn {
				// The table is unusable for every transaction that writes
				// to it (unknown table, for one): poison exactly those.
				for _, t := range c.txns {
					if _, ok := t.rows[le.table]; ok {
						o.poisonFromCycle(t, fmt.Errorf("loading table %s.%s: %w", w.db, le.table, le.err))
					}
				}
				o.m.retries.Incr(1, w.db, "per_transaction")
				w.rollback(c.label)
				c.reset()
				continue
			}
			if !replay(reasonOf(err), err) {
				return ctx.Err()
			}
			continue
		}
		if err := w.loadProgress(ctx, c); err != nil {
			if !replay("progress", err) {
				return ctx.Err()
			}
			continue
		}
		if !w.awaitDeadLetters(ctx, c) {
			return ctx.Err()
		}
		if err := w.anchorIfNeeded(ctx, c); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !replay("progress", err) {
				return ctx.Err()
			}
			continue
		}
		// Commit. A fence waits while it is in flight.
		o.mu.Lock()
		liveNow := w.liveLocked(c)
		for _, t := range liveNow {
			t.inCommit = true
		}
		dropped := len(liveNow) != len(c.txns)
		o.mu.Unlock()
		if dropped {
			// A fence got in between: replay without its rows.
			w.clearCommitting(c)
			continue
		}
		start := o.now()
		committed, ok, err := w.commitLabel(ctx, c.label)
		o.log.Debugf("starrocks_txn: database %s: commit of label %s with %d source transactions took %v (err %v)", w.db, c.label, len(c.txns), o.now().Sub(start), err)
		if !ok {
			w.clearCommitting(c)
			return ctx.Err()
		}
		if committed {
			if c.progressLoaded {
				w.durable(c.n, c.open, c.rowAt)
			}
			w.committed(c, start)
			return nil
		}
		w.clearCommitting(c)
		o.m.rollbacks.Incr(1, w.db)
		if starrocks.ClassOf(err) == starrocks.ClassPerTxn {
			o.log.Errorf("starrocks_txn: database %s: commit of label %s failed for its data: %v; isolating the offending source transactions", w.db, c.label, err)
			c.reset()
			return err
		}
		if !replay(reasonOf(err), err) {
			return ctx.Err()
		}
	}
	return ctx.Err()
}

func (w *dbWorker) liveLocked(c *cycle) []*srcTxn {
	return w.o.liveTxnsLocked(c.txns)
}

func (w *dbWorker) clearCommitting(c *cycle) {
	w.o.mu.Lock()
	for _, t := range c.txns {
		t.inCommit = false
	}
	w.o.mu.Unlock()
}

// commitLabel commits label and, when the reply is not OK, decides the
// outcome by the label's state (resolve). It reports whether the
// transaction is committed and the commit's error; ok is false when ctx
// ended first, and then the outcome stays unknown (counted in inDoubt).
func (w *dbWorker) commitLabel(ctx context.Context, label string) (committed, ok bool, err error) {
	w.setInDoubt(1)
	err = w.o.client.Commit(ctx, w.txn(label))
	committed = err == nil
	if err != nil {
		if ctx.Err() != nil {
			return false, false, err
		}
		state, resolved := w.resolve(ctx, label, err)
		if !resolved {
			return false, false, err
		}
		committed = state.Committed()
	}
	w.setInDoubt(-1)
	w.done(label)
	return committed, true, err
}

// resolve decides the outcome of a commit that did not reply OK from the
// label's state: COMMITTED/VISIBLE is success, ABORTED (or a rollback that
// succeeds on a label StarRocks has no state for) proves the abort. While
// the state is PREPARE the same commit is sent again: commit is idempotent
// ("already committed" is OK, "already committing" fails and is polled
// again), so this never loads anything twice, and a commit that never
// reached the server is not left to expire. It never gives up.
func (w *dbWorker) resolve(ctx context.Context, label string, commitErr error) (starrocks.LabelState, bool) {
	o := w.o
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	for {
		state, err := o.client.WaitFinal(ctx, w.db, label, o.conf.labelStateWait)
		if ctx.Err() != nil {
			return state, false
		}
		if err == nil && state.Final() {
			return state, true
		}
		if err == nil {
			switch state {
			case starrocks.StateUnknown, "":
				// No record of the label: a rollback that succeeds proves
				// nothing was committed under it.
				rctx, cancel := context.WithTimeout(ctx, rollbackTimeout)
				rerr := o.client.Rollback(rctx, w.txn(label))
				cancel()
				if rerr == nil {
					return starrocks.StateAborted, true
				}
			default:
				if cerr := o.client.Commit(ctx, w.txn(label)); cerr == nil {
					return starrocks.StateVisible, true
				} else if ctx.Err() != nil {
					return state, false
				}
			}
		}
		o.log.Warnf("starrocks_txn: database %s: commit of label %s has no final state yet (state %q, commit error: %v, poll error: %v); waiting, never replaying before ABORTED is proven", w.db, label, state, commitErr, err)
		if !sleepCtx(ctx, b.next()) {
			return state, false
		}
	}
}

// committed resolves every transaction of a committed cycle.
func (w *dbWorker) committed(c *cycle, start time.Time) {
	o := w.o
	now := o.now()
	o.m.commits.Incr(1, w.db)
	o.m.commitLatency.Timing(int64(now.Sub(start)), w.db)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range c.txns {
		if !t.state.over() {
			for _, tbl := range t.tables {
				o.m.rows.Incr(int64(len(t.rows[tbl])), w.db, tbl)
			}
			o.m.srcTxns.Incr(1, w.db)
			o.m.visibility.Timing(int64(now.Sub(t.t0)), w.db)
			// A fence or a stall may have taken it while the commit was
			// in flight: it is committed all the same.
			o.moveLocked(t, txnCommitted)
		}
		t.inCommit = false
	}
}

// begin opens the cycle's shared transaction under a new label, retrying
// with backoff until it succeeds or ctx is done (or a per-transaction refusal
// poisoned every transaction of the cycle).
func (w *dbWorker) begin(ctx context.Context, c *cycle) bool {
	o := w.o
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	for {
		label, n := w.nextLabel()
		err := o.client.Begin(ctx, w.txn(label))
		if err == nil {
			w.opened(n)
			c.reset()
			c.label, c.n, c.begun, c.sent = label, n, o.now(), map[string]int{}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		o.m.retries.Incr(1, w.db, "begin")
		if starrocks.ClassOf(err) == starrocks.ClassPerTxn {
			had := len(c.txns) > 0
			w.poisonWaiting(c, err)
			if had && len(c.txns) == 0 {
				// Nothing of the cycle is left to begin for.
				return false
			}
		}
		o.log.Errorf("starrocks_txn: database %s: beginning a shared transaction: %v; retrying", w.db, err)
		if !sleepCtx(ctx, b.next()) {
			return false
		}
	}
}

// poisonWaiting handles a begin that StarRocks refused for the request
// itself (the database does not exist): every source transaction waiting for
// the database, in c and in the queue, is poisoned (dead_letter, or its
// partition stalls) instead of holding its WriteBatch calls and the buffer
// forever. Transactions that come while the begin keeps failing are poisoned
// at the next attempt.
func (w *dbWorker) poisonWaiting(c *cycle, err error) {
	o := w.o
	reason := fmt.Errorf("beginning a StarRocks transaction in database %s: %w", w.db, err)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range append(append([]*srcTxn{}, c.txns...), w.queue...) {
		if !t.state.live() {
			continue
		}
		t.poison = reason
		o.poisonLocked(t)
	}
	c.txns = o.liveTxnsLocked(c.txns)
	w.queue = o.liveTxnsLocked(w.queue)
}

func (w *dbWorker) rollback(label string) {
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	if err := w.o.client.Rollback(ctx, w.txn(label)); err != nil {
		w.o.log.Debugf("starrocks_txn: database %s: rollback of label %s: %v", w.db, label, err)
	}
	// Rolled back or not, it is never committed now.
	w.done(label)
}

type loadError struct {
	table string
	err   error
}

func (e *loadError) Error() string { return fmt.Sprintf("loading table %s: %v", e.table, e.err) }
func (e *loadError) Unwrap() error { return e.err }

// loadPending sends, for every table, the rows of the cycle's transactions
// not yet loaded under its label: one request per table, merging every
// partition's frozen chunks, at most one in flight per (label, table), the
// tables in parallel.
func (w *dbWorker) loadPending(ctx context.Context, c *cycle) error {
	if c.label == "" {
		return errors.New("no shared transaction")
	}
	w.checkModels(ctx, c)
	type job struct {
		table string
		body  []byte
		upto  int
		rows  int
	}
	var jobs []job
	tables := map[string]struct{}{}
	for _, t := range c.txns {
		for _, tbl := range t.tables {
			tables[tbl] = struct{}{}
		}
	}
	for _, tbl := range sortedKeys(tables) {
		from := c.sent[tbl]
		if from >= len(c.txns) {
			continue
		}
		var buf bytes.Buffer
		n := 0
		buf.WriteByte('[')
		for _, t := range c.txns[from:] {
			for _, r := range t.rows[tbl] {
				if n > 0 {
					buf.WriteByte(',')
				}
				buf.Write(r)
				n++
			}
		}
		buf.WriteByte(']')
		if n == 0 {
			// An empty chunk sends no load: a table loaded with 0 rows
			// fails the commit.
			c.sent[tbl] = len(c.txns)
			continue
		}
		jobs = append(jobs, job{table: tbl, body: buf.Bytes(), upto: len(c.txns), rows: n})
	}
	if len(jobs) == 0 {
		return nil
	}
	errs := make([]error, len(jobs))
	loadStart := time.Now()
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = w.loadOne(ctx, c.label, jobs[i].table, jobs[i].body)
		}(i)
	}
	wg.Wait()
	w.o.log.Debugf("starrocks_txn: database %s: %d loads under %s took %v", w.db, len(jobs), c.label, time.Since(loadStart))
	var first error
	for i, j := range jobs {
		if errs[i] != nil {
			if first == nil || starrocks.ClassOf(errs[i]) == starrocks.ClassPerTxn {
				first = &loadError{table: j.table, err: errs[i]}
			}
			continue
		}
		c.sent[j.table] = j.upto
		c.loaded = true
		w.o.m.loads.Incr(1, w.db, j.table)
		w.o.m.loadBytes.Incr(int64(len(j.body)), w.db, j.table)
	}
	return first
}

// loadOne loads body into table under label.
func (w *dbWorker) loadOne(ctx context.Context, label, table string, body []byte) error {
	req := starrocks.LoadRequest{
		Txn:     starrocks.Txn{DB: w.db, Label: label, Table: table, Multi: true, Timeout: w.o.conf.txnTimeout},
		Headers: w.o.conf.headersFor(w.db, table),
		Body:    body,
	}
	return w.send(ctx, req)
}

// send sends one load, resending it while StarRocks answers
// TXN_IN_PROCESSING (nothing was ingested).
func (w *dbWorker) send(ctx context.Context, req starrocks.LoadRequest) error {
	for attempt := 0; ; attempt++ {
		err := w.o.client.Load(ctx, req)
		if err == nil || starrocks.ClassOf(err) != starrocks.ClassRetrySafe || attempt >= retrySafeMax {
			return err
		}
		if !sleepCtx(ctx, retrySafeDelay) {
			return ctx.Err()
		}
	}
}

// awaitDeadLetters holds the commit of c (exactly_once) while a poisoned
// transaction of one of its partitions is on its way to dead_letter. The
// progress rows of c claim, per database, the partition's last transaction
// in c; a restart skips every transaction of the partition at or below it
// into this database, so an earlier poisoned one must be in dead_letter
// before c can be visible, or a crash in between would lose its delivery.
func (w *dbWorker) awaitDeadLetters(ctx context.Context, c *cycle) bool {
	o := w.o
	if !o.conf.exactlyOnce || o.dl == nil {
		return true
	}
	for {
		o.mu.Lock()
		parts := make(map[*partition]bool, len(c.txns))
		for _, t := range c.txns {
			parts[t.p] = true
		}
		pending := o.dlWriting != nil && parts[o.dlWriting.p]
		for _, t := range o.dlQueue {
			if parts[t.p] {
				pending = true
			}
		}
		o.mu.Unlock()
		if !pending {
			return true
		}
		if !sleepCtx(ctx, 5*time.Millisecond) {
			return false
		}
	}
}

// loadProgress writes the committed-through offsets of the cycle's
// partitions (exactly_once) and the writer row into the progress table,
// under the cycle's label, so they become visible with the rows.
func (w *dbWorker) loadProgress(ctx context.Context, c *cycle) error {
	o := w.o
	if o.prog == nil || c.progressLoaded {
		return nil
	}
	if !w.progressReady {
		// Created before the database's first commit. The transaction was
		// begun already; its loads wait for the table, not for the label.
		if err := o.prog.ensure(ctx, w.db); err != nil {
			return err
		}
		w.progressReady = true
	}
	if o.conf.exactlyOnce {
		if rows := w.progressRows(c); len(rows) > 0 {
			body, _ := json.Marshal(rows)
			if err := w.loadRows(ctx, c.label, o.conf.progressTable, progressOffsetCol, body); err != nil {
				if tableWide(err) {
					// Dropped while running: create it again before the replay.
					w.progressReady = false
				}
				return fmt.Errorf("loading the progress table %s.%s: %w", w.db, o.conf.progressTable, err)
			}
			o.m.loads.Incr(1, w.db, o.conf.progressTable)
			o.m.loadBytes.Incr(int64(len(body)), w.db, o.conf.progressTable)
		}
	}
	c.open, c.rowAt = w.openExcept(c.n), o.now()
	if err := w.loadWriterRow(ctx, c.label, w.writerRow(c.label, c.n, c.open, c.rowAt)); err != nil {
		if tableWide(err) {
			w.progressReady = false
		}
		return err
	}
	c.progressLoaded = true
	c.loaded = true
	return nil
}

// checkModels poisons the cycle's new transactions that delete from a table
// without a primary key. New transactions are at the tail of the cycle and
// not loaded yet, so taking them out leaves the load offsets valid.
func (w *dbWorker) checkModels(ctx context.Context, c *cycle) {
	o := w.o
	first := len(c.txns)
	for i := len(c.txns) - 1; i >= 0 && !c.txns[i].modelChecked; i-- {
		first = i
	}
	if first == len(c.txns) {
		return
	}
	removed := false
	for _, t := range c.txns[first:] {
		t.modelChecked = true
		if o.models == nil || len(t.deletes) == 0 {
			continue
		}
		for _, tbl := range sortedKeys(t.deletes) {
			pk, known, err := o.models.primaryKey(ctx, w.db, tbl)
			if err != nil {
				o.log.Warnf("starrocks_txn: %v; deletes to %s.%s are not checked", err, w.db, tbl)
				continue
			}
			if known && !pk {
				o.poisonFromCycle(t, fmt.Errorf("source transaction %q deletes (\"__op\": 1) from %s.%s, which has no primary key: StarRocks would load the delete as an appended row; deletes need a PRIMARY KEY table", t.id, w.db, tbl))
				removed = true
				break
			}
		}
	}
	if removed {
		o.mu.Lock()
		c.txns = append(c.txns[:first], o.liveTxnsLocked(c.txns[first:])...)
		o.mu.Unlock()
	}
}

// tableWideRe matches per-transaction load failures that concern the table
// itself rather than some of its rows: every source transaction writing to
// the table fails the same way.
var tableWideRe = regexp.MustCompile(`(?i)failed to find table|unknown table|unknown database|does not exist|not an olap table|only primary key table support`)

func tableWide(err error) bool {
	return tableWideRe.MatchString(err.Error())
}

func reasonOf(err error) string {
	return starrocks.ClassOf(err).String()
}

// backoff is a capped exponential backoff.
type backoff struct {
	cur, max time.Duration
}

func newBackoff(initial, max time.Duration) *backoff {
	return &backoff{cur: initial, max: max}
}

func (b *backoff) next() time.Duration {
	d := b.cur
	b.cur *= 2
	if b.cur > b.max {
		b.cur = b.max
	}
	return d
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
