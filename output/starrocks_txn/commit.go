package starrocks_txn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// Delivering a cycle: load what is pending, commit, and decide a commit's
// outcome by label state when the reply does not say (ARCHITECTURE.md
// §4.3 and §4.4); begin, rollback, and the split of a cycle that failed for
// some of its data.

// rollbackTimeout bounds a best-effort rollback.
const rollbackTimeout = 10 * time.Second

// deliver loads and commits c until it is committed (nil) or StarRocks
// reports a per-transaction failure at commit (the error). Transient
// failures replay the cycle from the retained rows under a new label, with
// capped backoff, forever; a commit of unknown outcome is resolved by label
// state, and replayed only once ABORTED is proven.
func (w *dbWorker) deliver(ctx context.Context, c *cycle) error {
	o := w.o
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	replay := func(reason string, err error) bool {
		o.m.retries.Incr(1, w.db, reason)
		if starrocks.ClassOf(err) == starrocks.ClassFatal {
			w.log.Errorf("Replaying the commit cycle of label %s after an error that needs an operator (%s): %v", c.label, reason, err)
		} else {
			w.log.Warnf("Replaying the commit cycle of label %s (%s): %v", c.label, reason, err)
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
			switch outcome, le := classifyLoad(err); outcome {
			case loadBadRows:
				// A failure caused by some rows: find their source
				// transactions by splitting the cycle.
				w.rollback(c.label)
				o.m.rollbacks.Incr(1, w.db)
				c.reset()
				return err
			case loadBadTable:
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
			default:
				if !replay(reasonOf(err), err) {
					return ctx.Err()
				}
			}
			continue
		}
		if err := o.track.loadRows(ctx, w, c); err != nil {
			if !replay("progress", err) {
				return ctx.Err()
			}
			continue
		}
		if err := o.track.beforeCommit(ctx, w, c); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !replay("progress", err) {
				return ctx.Err()
			}
			continue
		}
		if !w.startCommit(c) {
			// A fence got in between: replay without its rows.
			continue
		}
		start := o.now()
		committed, ok, err := w.commitLabel(ctx, c.label)
		w.log.Debugf("Commit of label %s with %d source transactions took %v (err %v)", c.label, len(c.txns), o.now().Sub(start), err)
		if !ok {
			w.endCommit(c)
			return ctx.Err()
		}
		if committed {
			o.track.committed(w, c)
			w.committed(c, start)
			return nil
		}
		w.endCommit(c)
		o.m.rollbacks.Incr(1, w.db)
		if starrocks.ClassOf(err) == starrocks.ClassPerTxn {
			w.log.Errorf("Commit of label %s failed for its data: %v; isolating the offending source transactions", c.label, err)
			c.reset()
			return err
		}
		if !replay(reasonOf(err), err) {
			return ctx.Err()
		}
	}
	return ctx.Err()
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
		err := w.deliver(ctx, c)
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

// startCommit marks c's transactions as held by a commit in flight, which a
// fence waits for and which keeps them from being released. It reports
// false, marking nothing, when a fence or a stall took one of them since the
// loop head: the cycle is then replayed without it.
func (w *dbWorker) startCommit(c *cycle) bool {
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	if len(w.o.liveTxnsLocked(c.txns)) != len(c.txns) {
		return false
	}
	for _, t := range c.txns {
		t.inCommit = true
	}
	return true
}

// endCommit marks the end of a commit request that held c and did not
// commit it (committed clears the mark itself).
func (w *dbWorker) endCommit(c *cycle) {
	w.o.mu.Lock()
	for _, t := range c.txns {
		t.inCommit = false
	}
	w.o.mu.Unlock()
}

// commitLabel commits label and, when the reply is not OK, decides the
// outcome by the label's state (resolve): the one place a commit's outcome
// is decided, for cycles and anchors alike. It reports whether the
// transaction is committed and the commit's error; ok is false when ctx
// ended first, and then the outcome stays unknown (the ledger keeps it in
// doubt).
func (w *dbWorker) commitLabel(ctx context.Context, label string) (committed, ok bool, err error) {
	w.labels.commitSent()
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
	w.labels.commitResolved()
	w.labelDone(label)
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
		w.log.Warnf("Commit of label %s has no final state yet (state %q, commit error: %v, poll error: %v); waiting, never replaying before ABORTED is proven", label, state, commitErr, err)
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
			w.labels.opened(n)
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
		w.log.Errorf("Beginning a shared transaction: %v; retrying", err)
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

// rollback rolls label back, best effort: rolled back or not, the label is
// never committed now.
func (w *dbWorker) rollback(label string) {
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	if err := w.o.client.Rollback(ctx, w.txn(label)); err != nil {
		w.log.Debugf("Rollback of label %s: %v", label, err)
	}
	w.labelDone(label)
}

// reasonOf is the cycle_retries reason of a failure: its class.
func reasonOf(err error) string {
	return starrocks.ClassOf(err).String()
}
