package starrocks_txn

import (
	"context"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Poisoned source transactions: to dead_letter, whole and in order, or a
// stalled partition when there is none (ARCHITECTURE.md §4.1); the
// dead-letter loop writes them, the core keeps their queue.

// deadLetterReasonKey is set on every message sent to dead_letter.
const deadLetterReasonKey = "starrocks_dead_letter_reason"

// deadLetter is where poisoned source transactions go: an *OwnedOutput in
// production.
type deadLetter interface {
	WriteBatch(ctx context.Context, b service.MessageBatch) error
	Close(ctx context.Context) error
}

// poison hands a poisoned source transaction to dead_letter, or stalls
// its partition when there is none.
func (k *core) poison(t *srcTxn) {
	if k.deadLetter {
		if !k.move(t, txnPoisoned) {
			return
		}
		k.fx.logf(logError, t.p.key.String(), "Source transaction %q is poisoned and goes to dead_letter: %v", t.id, t.poison)
		k.dlQueue = append(k.dlQueue, t)
		k.fx.wakeDeadLetter()
		return
	}
	if !k.move(t, txnStalled) {
		return
	}
	k.stall(t.p, t)
}

// poisonFromCycle poisons a transaction found bad while it was in a cycle;
// when the partition stalls, later transactions of the partition in the
// same cycle are dropped by stall.
func (o *Output) poisonFromCycle(t *srcTxn, reason error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.core.poisonLive(t, reason)
}

// poisonTableFromCycle is poisonFromCycle for a failure of the table as a
// whole (it does not exist, say): a stall it causes is tried again every
// stall_retry_interval (ARCHITECTURE.md §14.4).
func (o *Output) poisonTableFromCycle(t *srcTxn, reason error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if t.state.live() {
		t.schemaStall = true
	}
	o.core.poisonLive(t, reason)
}

// poisonLive poisons t for reason unless a fence or a stall took it first.
func (k *core) poisonLive(t *srcTxn, reason error) {
	if !t.state.live() {
		return
	}
	t.poison = reason
	k.poison(t)
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
		t := o.core.nextDeadLetter()
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
			o.m.deadLettered.Incr(1, partitionLabel(t.p))
		}
		o.mu.Lock()
		o.core.deadLetterEnded(t, written)
		o.mu.Unlock()
		if !written {
			return
		}
	}
}

// nextDeadLetter takes the next poisoned transaction to write to
// dead_letter from the queue and marks its write in flight
// (srcTxn.inDeadLetter); nil when none is queued. One a fence took while it
// waited in the queue is released instead, unwritten.
func (k *core) nextDeadLetter() *srcTxn {
	for len(k.dlQueue) > 0 {
		t := k.dlQueue[0]
		k.dlQueue = k.dlQueue[1:]
		if t.state != txnPoisoned {
			k.releaseFenced(t)
			continue
		}
		k.dlWriting = t
		t.inDeadLetter = true
		return t
	}
	return nil
}

// deadLetterEnded ends the write of t to dead_letter. Written, it is
// dead-lettered, even when a fence took it meanwhile (the fence waited for
// the write, or gave up waiting: either way it is in dead_letter now; the
// write still holds it here, which is what lets a fenced one be
// dead-lettered, canMove). Not written (the output is closing), a fenced one
// is released and a poisoned one stays unacknowledged, read again after a
// restart.
func (k *core) deadLetterEnded(t *srcTxn, written bool) {
	k.dlWriting = nil
	if written && (t.state == txnPoisoned || t.state == txnFenced) {
		k.move(t, txnDeadLettered)
	}
	t.inDeadLetter = false
	if !written {
		k.releaseFenced(t)
	}
}

// deadLetterPending reports whether a poisoned transaction of one of the
// partitions of txns is on its way to dead_letter: queued or being written.
func (k *core) deadLetterPending(txns []*srcTxn) bool {
	parts := make(map[*partition]bool, len(txns))
	for _, t := range txns {
		parts[t.p] = true
	}
	if k.dlWriting != nil && parts[k.dlWriting.p] {
		return true
	}
	for _, t := range k.dlQueue {
		if parts[t.p] {
			return true
		}
	}
	return false
}
