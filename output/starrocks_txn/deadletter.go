package starrocks_txn

import (
	"context"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Poisoned source transactions: to dead_letter, whole and in order, or a
// stalled partition when there is none (ARCHITECTURE.md §4.1).

// deadLetterReasonKey is set on every message sent to dead_letter.
const deadLetterReasonKey = "starrocks_dead_letter_reason"

// deadLetter is where poisoned source transactions go: an *OwnedOutput in
// production.
type deadLetter interface {
	WriteBatch(ctx context.Context, b service.MessageBatch) error
	Close(ctx context.Context) error
}

// poisonLocked hands a poisoned source transaction to dead_letter, or stalls
// its partition when there is none.
func (o *Output) poisonLocked(t *srcTxn) {
	if o.dl != nil {
		if !o.moveLocked(t, txnPoisoned) {
			return
		}
		o.log.With("partition", t.p.key.String()).Errorf("Source transaction %q is poisoned and goes to dead_letter: %v", t.id, t.poison)
		o.dlQueue = append(o.dlQueue, t)
		select {
		case o.dlWake <- struct{}{}:
		default:
		}
		return
	}
	if !o.moveLocked(t, txnStalled) {
		return
	}
	o.stallLocked(t.p, t)
}

// poisonFromCycle poisons a transaction found bad while it was in a cycle;
// when the partition stalls, later transactions of the partition in the
// same cycle are dropped by stallLocked.
func (o *Output) poisonFromCycle(t *srcTxn, reason error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !t.state.live() {
		return
	}
	t.poison = reason
	o.poisonLocked(t)
}

// deadLetterLoop writes poisoned transactions, whole and in order, to
// dead_letter, retrying forever, and then resolves them. A transaction a
// fence took before its write began is not written: the partition's new
// owner reads it again and dead-letters it itself. A fence that comes
// during the write waits for it (srcTxn.inDeadLetter), as for a commit in
// flight; if it stops waiting first (its deadline), the transaction is
// released when the write ends, and the new owner may write it again:
// dead_letter is at-least-once either way.
func (o *Output) deadLetterLoop() {
	defer o.wg.Done()
	for {
		o.mu.Lock()
		var t *srcTxn
		for t == nil && len(o.dlQueue) > 0 {
			t = o.dlQueue[0]
			o.dlQueue = o.dlQueue[1:]
			if t.state != txnPoisoned {
				// Fenced (and released) while it waited in the queue.
				o.releaseFencedLocked(t)
				t = nil
				continue
			}
			o.dlWriting = t
			t.inDeadLetter = true
		}
		o.mu.Unlock()
		if t == nil {
			select {
			case <-o.ctx.Done():
				return
			case <-o.dlWake:
				continue
			}
		}
		batch := make(service.MessageBatch, 0, len(t.items))
		for _, it := range t.items {
			m := it.msg.Copy()
			m.MetaSetMut(deadLetterReasonKey, t.poison.Error())
			batch = append(batch, m)
		}
		b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
		written := false
		for {
			err := o.dl.WriteBatch(o.ctx, batch)
			if err == nil {
				written = true
				break
			}
			if o.ctx.Err() != nil {
				break
			}
			o.log.With("partition", t.p.key.String()).Errorf("Writing source transaction %q to dead_letter: %v; retrying", t.id, err)
			if !sleepCtx(o.ctx, b.next()) {
				break
			}
		}
		if written {
			o.m.deadLettered.Incr(1, o.partitionLabel(t.p))
		}
		o.mu.Lock()
		o.dlWriting = nil
		if written && (t.state == txnPoisoned || t.state == txnFenced) {
			// A fence that took it meanwhile waited for the write, or gave
			// up waiting: either way it is in dead_letter now. The write
			// still holds it here: that is what lets a fenced one be
			// dead-lettered (canMove).
			o.moveLocked(t, txnDeadLettered)
		}
		t.inDeadLetter = false
		if !written {
			// The output is closing: a fenced one is released, a poisoned
			// one stays unacknowledged and is read again after a restart.
			o.releaseFencedLocked(t)
		}
		o.mu.Unlock()
		if !written {
			return
		}
	}
}
