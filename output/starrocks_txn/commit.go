package starrocks_txn

// Home of G10 (ARCHITECTURE.md §11.1): no nacks: a transient fault replays the cycle from its
// retained rows. Main test: TestTransientCommitFailureReplays.
//
// Home of G11 (ARCHITECTURE.md §11.1): a cycle that outlived txn_timeout is replayed in parts of
// whole source transactions, in order. Main test: TestCycleOutlivingTxnTimeoutIsReplayedInParts.
//
// Home of G12 (ARCHITECTURE.md §11.1): an ambiguous commit is decided by label state, replayed
// only once ABORTED is proven. Main test: TestAmbiguousCommitNeverReplayedWhilePrepare.
//
// Home of G16 (ARCHITECTURE.md §11.1): a commit whose label StarRocks forgot never stalls:
// settled by its rows, else after unknown_commit_timeout. Main test:
// TestForgottenCommitIsSettledByItsRows.
//
// Home of G18 (ARCHITECTURE.md §11.1): every request × every outcome of a remote call keeps the
// promises: nothing doubled, split, early or stalled. Main test: TestFaultMatrix.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// Delivering a cycle through its protocol (protocol.go): load what is
// pending, commit, and decide a commit's outcome by label state when the
// reply does not say (ARCHITECTURE.md §4.3 and §4.4); begin and rollback;
// and what a commit changes in the core (startCommit, endCommit, committed,
// beginRefused). A cycle that failed for some of its data is split in
// isolate.go.

// rollbackTimeout bounds a best-effort rollback.
const rollbackTimeout = 10 * time.Second

// errClosing ends a delivery that has no commit in flight when Close
// begins: its cycle is rolled back, not replayed.
var errClosing = errors.New("starrocks_txn output closing")

// errOutlived ends the delivery of a cycle of more than one source
// transaction whose label failed once it was older than the recycle age
// (80 % of txn_timeout): replayed at the same size it would outlive its
// transaction again, so deliver replays it in smaller parts.
var errOutlived = errors.New("the commit cycle outlived txn_timeout")

// deliver loads and commits c until it is committed (nil) or StarRocks
// reports a per-transaction failure at commit (the error; c.txns are then
// the transactions not committed). A cycle that outlived its transaction
// (errOutlived: under starvation its loads take longer than txn_timeout) is
// replayed in parts, whole source transactions in their order: each
// timeout-caused failure halves the part, down to one source transaction,
// and each committed part doubles it again, so the size is restored once
// the parts fit. The parts commit one after the other, so order per
// partition is kept; the worker's next cycle waits for all of them
// (ARCHITECTURE.md §4.4).
func (w *dbWorker) deliver(ctx context.Context, c *cycle) error {
	limit := 0 // 0: the whole rest at once
	for {
		if limit == 0 || limit >= len(c.txns) {
			err := w.deliverCycle(ctx, c)
			if !errors.Is(err, errOutlived) {
				return err
			}
			limit = max(1, len(c.txns)/2)
			w.logSplit(c.txns, limit)
			continue
		}
		part := &cycle{txns: c.txns[:limit:limit]}
		rest := c.txns[limit:]
		err := w.deliverCycle(ctx, part)
		switch {
		case errors.Is(err, errOutlived):
			limit = max(1, len(part.txns)/2)
			c.txns = append(part.txns[:len(part.txns):len(part.txns)], rest...)
			w.logSplit(c.txns, limit)
			continue
		case err != nil:
			// A per-transaction failure (isolate.go), the end of the output
			// or ctx: what is not committed is the part's and the rest.
			c.txns = append(part.txns[:len(part.txns):len(part.txns)], rest...)
			return err
		}
		c.txns = rest
		if len(c.txns) == 0 {
			return nil
		}
		limit *= 2
	}
}

// logSplit reports a cycle replayed in parts of limit source transactions.
func (w *dbWorker) logSplit(txns []*srcTxn, limit int) {
	w.log.Warnf("A commit cycle of %d source transactions outlived txn_timeout (%v) and is replayed in parts of %d source transactions: StarRocks is slower than the cycle needs; raise txn_timeout or lower commit_interval", len(txns), w.o.conf.txnTimeout, limit)
}

// deliverCycle loads and commits c until it is committed (nil), StarRocks
// reports a per-transaction failure at commit (the error), or c, of more
// than one source transaction, outlived its transaction (errOutlived; c is
// rolled back). Transient failures replay the cycle from the retained rows
// under a new label, with capped backoff, forever; a commit of unknown
// outcome is resolved by label state, and replayed only once ABORTED is
// proven.
func (w *dbWorker) deliverCycle(ctx context.Context, c *cycle) error {
	o := w.o
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	outlived := false
	replay := func(reason string, err error) bool {
		// A failure once the label was older than the recycle age: the
		// cycle outlived its transaction (StarRocks aborts it at
		// txn_timeout), and a replay of the same size would again.
		// (Not a replay without a fenced transaction's rows: that one is
		// about the fence.)
		aged := reason != reasonFenced && c.label != "" && !c.begun.IsZero() && o.now().Sub(c.begun) >= w.recycleAge()
		if aged {
			reason = reasonOutlived
		}
		o.m.retries.Incr(1, w.metricDB(), reason)
		switch {
		case aged && len(c.txns) == 1:
			w.log.Errorf("Replaying the commit cycle of label %s, one source transaction (%q), which outlived txn_timeout (%v): %v; a source transaction is never split, so raise txn_timeout above the time StarRocks takes to load it", c.label, c.txns[0].id, o.conf.txnTimeout, err)
		case starrocks.ClassOf(err) == starrocks.ClassFatal:
			w.log.Errorf("Replaying the commit cycle of label %s after an error that needs an operator (%s): %v", c.label, reason, err)
		default:
			w.log.Warnf("Replaying the commit cycle of label %s (%s): %v", c.label, reason, err)
		}
		o.proto.rollback(w, c)
		c.reset()
		if aged && len(c.txns) > 1 {
			outlived = true
			return false
		}
		return sleepCtx(ctx, b.next())
	}
	// stop is what deliverCycle returns when replay said not to go on.
	stop := func() error {
		if outlived {
			return errOutlived
		}
		return ctx.Err()
	}
	for ctx.Err() == nil {
		if o.closing() {
			// Close waits only for commits in flight: this one sent none.
			o.proto.rollback(w, c)
			c.reset()
			return errClosing
		}
		// Drop what a fence or a stall took away; rows of it already loaded
		// under the label force a replay without them.
		before := len(c.txns)
		c.txns = w.live(c.txns)
		if len(c.txns) == 0 {
			o.proto.rollback(w, c)
			return nil
		}
		if len(c.txns) != before && c.loaded {
			if !replay(reasonFenced, errors.New("rows of a dropped source transaction were loaded")) {
				return stop()
			}
			continue
		}
		if c.label == "" && !o.proto.begin(ctx, w, c) {
			return ctx.Err()
		}
		// A load streamed under the label failed: it may hold those rows,
		// so the failure is handled as the commit's own load failure would
		// be, and nothing is sent under the label again.
		err := c.tainted
		c.tainted = nil
		if err == nil {
			err = o.proto.load(ctx, w, c)
		}
		if err != nil {
			switch outcome, le := classifyLoad(err); outcome {
			case loadBadRows:
				// A failure caused by some rows: find their source
				// transactions by splitting the cycle.
				w.failedForData(c, "Load", err)
				o.proto.rollback(w, c)
				o.m.rollbacks.Incr(1, w.metricDB())
				c.reset()
				return err
			case loadBadTable:
				if starrocks.IsUnknownDatabase(le.err) {
					// The database does not exist (per-table mode learns it
					// at a table's first begin): every transaction waiting
					// for it is poisoned, as a refused multi-table begin
					// poisons them.
					w.poisonWaiting(c, le.err)
					o.proto.rollback(w, c)
					c.reset()
					continue
				}
				// The table is unusable for every transaction that writes
				// to it (unknown table, for one): poison exactly those.
				// The table may be created (or fixed) by an operator: a
				// stall on it is tried again (ARCHITECTURE.md §14.4), and the
				// schema manager reads it afresh.
				if o.schemas != nil {
					o.schemas.Invalidate(w.db, le.table)
				}
				for _, t := range c.txns {
					if slices.Contains(t.tables, le.table) {
						o.poisonTableFromCycle(t, fmt.Errorf("loading table %s.%s: %w", w.db, le.table, le.err))
					}
				}
				o.m.retries.Incr(1, w.metricDB(), starrocks.ClassPerTxn.String())
				o.proto.rollback(w, c)
				c.reset()
			default:
				if !replay(reasonOf(err), err) {
					return stop()
				}
			}
			continue
		}
		// The anchor (beforeCommit) comes before the writer row of the
		// cycle (loadRows), which is then numbered at least as high as the
		// anchor's: merge_condition keeps it once the cycle commits, so the
		// row names the label if and only if it committed (tracker.settle).
		if err := o.track.beforeCommit(ctx, w, c); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, errClosing) {
				continue
			}
			if !replay(reasonProgress, err) {
				return stop()
			}
			continue
		}
		if err := o.track.loadRows(ctx, w, c); err != nil {
			if !replay(reasonProgress, err) {
				return stop()
			}
			continue
		}
		if !w.awaitLeases(ctx, c) {
			return ctx.Err()
		}
		if o.closing() {
			continue
		}
		if !w.startCommit(c) {
			// A fence got in between: replay without its rows.
			continue
		}
		start := o.now()
		committed, ok, err := o.proto.commit(ctx, w, c)
		w.log.Debugf("Commit of label %s with %d source transactions took %v (err %v)", c.label, len(c.txns), o.now().Sub(start), err)
		if !ok {
			w.endCommit(c)
			return ctx.Err()
		}
		if committed {
			if w.fencedMeanwhile(c) {
				// A fence gave up on this commit: the partition's progress
				// is read again only once the commit no longer holds its
				// transactions (fencedCommitInFlight), and a commit
				// acknowledged at COMMITTED is not in what a read sees
				// until it is published.
				_ = w.awaitPublished(ctx, c.label)
			}
			o.track.committed(w, c)
			w.committed(c, start)
			return nil
		}
		w.endCommit(c)
		o.m.rollbacks.Incr(1, w.metricDB())
		if starrocks.ClassOf(err) == starrocks.ClassPerTxn {
			w.failedForData(c, "Commit", err)
			c.reset()
			return err
		}
		if !replay(reasonOf(err), err) {
			return stop()
		}
	}
	return ctx.Err()
}

// fencedMeanwhile reports whether a fence took a transaction of c while its
// commit was in flight (multi-table mode: a per-table cycle has no label of
// its own to wait for).
func (w *dbWorker) fencedMeanwhile(c *cycle) bool {
	if w.o.proto.classic() {
		return false
	}
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	for _, t := range c.txns {
		if t.state == txnFenced {
			return true
		}
	}
	return false
}

// startCommit marks c's transactions as held by a commit in flight
// (core.startCommit).
func (w *dbWorker) startCommit(c *cycle) bool {
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	return w.o.core.startCommit(c.txns)
}

// startCommit marks txns as held by a commit in flight, which a fence waits
// for and which keeps them from being released. It reports false, marking
// nothing, when a fence or a stall took one of them since the delivery's
// loop head: the cycle is then replayed without it.
func (k *core) startCommit(txns []*srcTxn) bool {
	if len(k.liveTxns(txns)) != len(txns) {
		return false
	}
	for _, t := range txns {
		t.inCommit = true
	}
	return true
}

// endCommit marks the end of a commit request that held c and did not
// commit it (core.committed clears the mark itself).
func (w *dbWorker) endCommit(c *cycle) {
	w.o.mu.Lock()
	w.o.core.endCommit(c.txns)
	w.o.mu.Unlock()
}

// endCommit ends the hold of a commit request on txns that did not commit
// them.
func (k *core) endCommit(txns []*srcTxn) {
	for _, t := range txns {
		t.inCommit = false
	}
}

// carried is what a label carries besides its data: this writer's row
// (writerTop is its label_number; 0: none) and the progress rows of its
// cycle. They settle the label's outcome once StarRocks has forgotten its
// state.
type carried struct {
	writerTop int64
	progress  []progressRow
	// cycle is the cycle the label commits (nil for a writer-row anchor):
	// its partitions' leases are checked before a commit is sent again.
	cycle *cycle
}

// commitLabel commits label and, when the reply is not OK, decides the
// outcome by the label's state (resolve): the one place a commit's outcome
// is decided, for cycles and anchors alike. It reports whether the
// transaction is committed and the commit's error; ok is false when ctx
// ended first, and then the outcome stays unknown (the ledger keeps it in
// doubt).
func (w *dbWorker) commitLabel(ctx context.Context, label string, rows carried) (committed, ok bool, err error) {
	w.labels.commitSent()
	w.o.mu.Lock()
	w.o.core.commitSent(label, w.db)
	w.o.mu.Unlock()
	defer func() {
		if ok {
			w.o.mu.Lock()
			w.o.core.commitDecided(label)
			w.o.mu.Unlock()
		}
	}()
	err = w.o.client.Commit(ctx, w.txn(label))
	committed = err == nil
	if err != nil {
		if ctx.Err() != nil {
			return false, false, err
		}
		state, resolved := w.resolve(ctx, label, err, rows)
		if !resolved {
			return false, false, err
		}
		committed = state.Committed()
	}
	w.labels.commitResolved()
	w.labelDone(label)
	return committed, true, err
}

const (
	// resolveFirstPoll is how long the first label-state poll of an
	// ambiguous commit waits for a final state before the commit is sent
	// again; each later poll waits twice as long, up to label_state_wait.
	resolveFirstPoll = time.Second
)

// resolve decides the outcome of a commit that did not reply OK, by the
// label's state (docs/notes/starrocks-protocol.md §5.5, §5.6, §6.1, §7):
//
//   - COMMITTED or VISIBLE is success, ABORTED proves the abort.
//   - PREPARE (loaded, not final): the same commit is sent again — commit is
//     idempotent ("already committed" is OK, "already committing" fails and
//     is polled again), so this never loads anything twice, and a commit
//     that never reached the server is not left to expire. Except when a
//     partition of the cycle lost its membership lease or was fenced
//     (expiredLeaseOfCommit): another member may own it, so the label is
//     rolled back instead and the cycle replayed (rollbackDecides).
//   - UNKNOWN: a rollback that succeeds proves nothing was committed; one
//     refused because the transaction is committed proves the commit. One
//     that finds no transaction means StarRocks has forgotten the label
//     (label_keep_max_num): the rows the label carried settle it when the
//     tracker keeps them (tracker.settle).
//
// Nothing waits without bound: once unknown_commit_timeout has passed, a
// PREPARE label whose commits keep failing is rolled back (a rollback that
// succeeds proves the abort; one refused because the FE is committing it
// keeps the wait), and a forgotten label the rows cannot settle is taken as
// not committed, with a warning naming it and starrocks_txn_unknown_commits
// (at-least-once allows the duplicate a replay may bring, never a loss or a
// stall). Only an FE that answers no query at all keeps the database
// waiting, with a warning at every poll and starrocks_txn_unresolved_commits
// showing it.
func (w *dbWorker) resolve(ctx context.Context, label string, commitErr error, rows carried) (starrocks.LabelState, bool) {
	o := w.o
	o.countUnresolved(1)
	defer o.countUnresolved(-1)
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	start := o.now()
	poll := min(resolveFirstPoll, o.conf.labelStateWait)
	for {
		state, err := o.client.WaitFinal(ctx, w.db, label, poll)
		poll = min(2*poll, o.conf.labelStateWait)
		if ctx.Err() != nil {
			return state, false
		}
		if err == nil && state.Final() {
			return state, true
		}
		overdue := o.now().Sub(start) >= o.conf.unknownCommit
		note := err
		if err == nil {
			switch state {
			case starrocks.StateUnknown, "":
				rerr := w.tryRollback(ctx, label)
				switch refusal := starrocks.RollbackRefusalOf(rerr); {
				case rerr == nil:
					return starrocks.StateAborted, true
				case refusal == starrocks.RefusalFinished:
					return starrocks.StateVisible, true
				case refusal == starrocks.RefusalNotFound:
					committed, known, serr := o.track.settle(ctx, w, label, rows)
					if ctx.Err() != nil {
						return state, false
					}
					if serr == nil && known {
						w.log.Warnf("StarRocks no longer knows label %s (its state was evicted); the rows it carried show it %s", label, map[bool]string{true: "committed", false: "did not commit"}[committed])
						if committed {
							return starrocks.StateVisible, true
						}
						return starrocks.StateAborted, true
					}
					if overdue {
						o.m.unknownCommits.Incr(1, w.metricDB())
						w.log.Warnf("StarRocks no longer knows label %s (its state was evicted, rollback: %v) and nothing it holds tells whether it committed (%v); after unknown_commit_timeout (%v) it is taken as not committed and its cycle replayed: a DUPLICATE KEY table may get its rows twice", label, rerr, settleNote(serr), o.conf.unknownCommit)
						return starrocks.StateAborted, true
					}
					note = fmt.Errorf("rollback: %v; settling from the rows it carried: %v", rerr, serr)
				default:
					note = fmt.Errorf("rollback: %w", rerr)
				}
			default:
				if p := perTableOf(o.proto); p != nil && p.tooOld(rows.cycle, o.now()) {
					// A per-table decision whose cycle's prepares are half
					// their prepared timeout old: sending it again could let
					// a part expire after it commits (ARCHITECTURE.md
					// §15.1). Rolled back instead; the cycle is replayed.
					st, decided, rerr := w.rollbackDecides(ctx, label)
					if decided {
						if st == starrocks.StateAborted {
							w.log.Warnf("The decision %s is %s after a commit without reply, and its cycle's prepared transactions are half their prepared timeout old: rolled back rather than committed again; the cycle is replayed", label, state)
						}
						return st, true
					}
					note = fmt.Errorf("the cycle's prepares are too old to send the decision again; rollback: %w", rerr)
					break
				}
				if part := w.expiredLeaseOfCommit(rows.cycle); part != "" {
					// Sending the commit again could race the new owner of
					// part, which loads the same source transactions under
					// its own label: roll this one back instead (which
					// proves it did not commit); its cycle is replayed, and
					// the replay's commit waits for the lease like any
					// commit (awaitLeases).
					st, decided, rerr := w.rollbackDecides(ctx, label)
					if decided {
						if st == starrocks.StateAborted {
							w.log.Warnf("Label %s is %s after a commit without reply, and the consumer group membership of partition %s is no longer confirmed: rolled back rather than committed again; its cycle is replayed once the membership is", label, state, part)
						}
						return st, true
					}
					note = fmt.Errorf("the lease of partition %s is over, so the commit is not sent again; rollback: %w", part, rerr)
					break
				}
				cerr := o.client.Commit(ctx, w.txn(label))
				if cerr == nil {
					return starrocks.StateVisible, true
				}
				if ctx.Err() != nil {
					return state, false
				}
				note = fmt.Errorf("commit sent again: %w", cerr)
				if overdue {
					st, decided, rerr := w.rollbackDecides(ctx, label)
					if decided {
						if st == starrocks.StateAborted {
							w.log.Warnf("Label %s stayed %s for unknown_commit_timeout (%v) while its commits failed (%v); rolled back, its cycle is replayed", label, state, o.conf.unknownCommit, cerr)
						}
						return st, true
					}
					note = fmt.Errorf("%v; rollback: %v", note, rerr)
				}
			}
		}
		w.log.Warnf("Commit of label %s has no final state after %v (state %q, commit error: %v, last: %v); the database commits nothing else until it has", label, o.now().Sub(start).Round(time.Millisecond), state, commitErr, note)
		if !sleepCtx(ctx, b.next()) {
			return state, false
		}
	}
}

// settleNote says why the rows a label carried did not settle it.
func settleNote(err error) string {
	if err != nil {
		return "reading its rows: " + err.Error()
	}
	return "it carried no writer or progress rows, or they cannot tell"
}

// countUnresolved adds delta to the commits being resolved
// (core.countUnresolved).
func (o *Output) countUnresolved(delta int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.core.countUnresolved(delta)
}

// commitSent records a commit request of label in db, which Close names if
// it is still in doubt when Close stops waiting; commitDecided forgets it
// once its outcome is known.
func (k *core) commitSent(label, db string) { k.inFlight[label] = db }

func (k *core) commitDecided(label string) { delete(k.inFlight, label) }
