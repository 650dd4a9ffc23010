// This file holds the begin of a multi-table cycle: its retries, what a
// refused begin poisons, and the core's step for a database StarRocks says
// does not exist (ARCHITECTURE.md §4.3).

package starrocks_txn

import (
	"context"
	"fmt"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// begin opens the cycle's shared transaction under a new label, retrying
// with backoff until it succeeds or ctx is done (or a per-transaction refusal
// poisoned every transaction of the cycle).
func (w *dbWorker) begin(ctx context.Context, c *cycle) bool {
	o := w.o
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	for {
		label, n := w.nextLabel()
		// The cycle began no later than its begin was sent: a schema change
		// visible after that is newer than it (takeBegunAt), however late
		// the reply.
		sentAt := o.now()
		err := o.client.Begin(ctx, w.txn(label))
		if err == nil {
			w.labels.opened(n)
			w.began()
			if a, ok := o.proto.(*autoProtocol); ok {
				// transaction_mode auto, not decided at Connect: the FE has
				// multi-table transactions.
				a.decide(false, o.log, "a multi-table begin in database "+w.db+" succeeded")
			}
			c.reset()
			c.label, c.n, c.begun, c.sent = label, n, sentAt, map[string]int{}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if starrocks.NoMultiTable(err, w.db) {
			// A StarRocks 3.x FE (docs/notes/starrocks-protocol.md §12.1):
			// nothing was begun. transaction_mode auto goes on per table;
			// multi_table stops the output (mode.go).
			if p := o.noMultiTable(w, err); p != nil {
				return p.begin(ctx, w, c)
			}
			if !sleepCtx(ctx, b.next()) {
				return false
			}
			continue
		}
		o.m.retries.Incr(1, w.metricDB(), reasonBegin)
		if starrocks.ClassOf(err) == starrocks.ClassPerTxn {
			w.poisonWaiting(c, err)
			if len(c.txns) == 0 {
				// Nothing of the cycle is left to begin for: no retry until
				// a source transaction wants the database again.
				w.log.Errorf("Beginning a shared transaction: %v; its source transactions are poisoned, and a begin is tried again only for the next one", err)
				return false
			}
		}
		w.log.Errorf("Beginning a shared transaction: %v; retrying", err)
		if !sleepCtx(ctx, b.next()) {
			return false
		}
	}
}

// began records that StarRocks began a transaction in the worker's
// database: it exists (its metrics are seeded, a refusal of an earlier
// begin is over).
func (w *dbWorker) began() {
	o := w.o
	if !w.begun.Swap(true) {
		o.m.seedDatabase(w.db)
	}
	o.mu.Lock()
	w.q.refused = nil
	o.mu.Unlock()
}

// poisonWaiting handles a begin that StarRocks refused for the request
// itself (the database does not exist): every source transaction waiting for
// the database, in c and in the queue, is poisoned (dead_letter, or its
// partition stalls) instead of holding its WriteBatch calls and the buffer
// forever. Transactions that come while the begin keeps failing are poisoned
// at the next attempt.
func (w *dbWorker) poisonWaiting(c *cycle, err error) {
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	c.txns = o.core.beginRefused(w.q, c.txns, err)
}

// beginRefused poisons every live transaction of a cycle (txns) and of q's
// queue after StarRocks refused a begin in the database for the request
// itself (err), and returns the cycle's transactions still live (none, once
// each is poisoned). While the refusal stands the worker begins nothing
// eagerly (stepState).
func (k *core) beginRefused(q *dbQueue, txns []*srcTxn, err error) []*srcTxn {
	reason := fmt.Errorf("beginning a StarRocks transaction in database %s: %w", q.db, err)
	q.refused = err
	for _, t := range append(append([]*srcTxn{}, txns...), q.queue...) {
		if !t.state.live() {
			continue
		}
		t.poison = reason
		k.poison(t)
	}
	q.queue = k.liveTxns(q.queue)
	return k.liveTxns(txns)
}
