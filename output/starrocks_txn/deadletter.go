package starrocks_txn

// Home of G35 (ARCHITECTURE.md §11.1): dead letters go in one lane per partition: one that
// cannot be written holds only its own partition. Main test:
// TestOneRefusedDeadLetterHoldsOnlyItsPartition.
//
// Home of G42 (ARCHITECTURE.md §11.1): a fence waits for its partition's dead-letter write in
// flight and leaves the queue to the new owner. Main test:
// TestFenceWaitsForADeadLetterWriteAndDropsTheQueue.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Poisoned source transactions: to dead_letter, whole and in order within
// their partition, or a stalled partition when there is none
// (ARCHITECTURE.md §4.1); the dead-letter loop writes them, the core keeps
// their lanes, one per partition.

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
		lane := k.dlLanes[t.p]
		if lane == nil {
			lane = &dlLane{}
			k.dlLanes[t.p] = lane
		}
		lane.queue = append(lane.queue, t)
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

// dlLane is one partition's way to dead_letter: its poisoned transactions in
// order, the first of them being written while writing is set. Order
// matters only within a partition (ARCHITECTURE.md §4.1), so a dead letter
// that cannot be written holds only its own partition's later ones.
type dlLane struct {
	queue   []*srcTxn
	writing *srcTxn
}

// deadLetterLoop starts the writes of poisoned transactions to dead_letter:
// at most one per partition at a time, in the partition's order, each in a
// goroutine of its own (writeDeadLetter), so that a write that keeps
// failing holds back only its partition's later dead letters (and, with
// exactly_once, its later commits: switchPartition), never another
// partition's.
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
		o.wg.Add(1)
		go o.writeDeadLetter(t)
	}
}

// closeDeadLetter closes dead_letter, once the loops have stopped (Close).
// A Benthos output owned through a config field (service.OwnedOutput)
// starts at its first write, and its Close waits for the loop that start
// runs: one never written to waited for ever (Benthos closes an output
// without a deadline), and the stream hung at its stop. Such a one is
// started first, so that its Close has a loop to stop.
func (o *Output) closeDeadLetter(ctx context.Context) error {
	if o.dl == nil {
		return nil
	}
	if p, ok := o.dl.(interface{ Prime() error }); ok && !o.dlStarted.Load() {
		if err := p.Prime(); err != nil {
			return fmt.Errorf("starting dead_letter to close it: %w", err)
		}
	}
	return o.dl.Close(ctx)
}

// writeDeadLetter writes poisoned transaction t, whole, to dead_letter,
// retrying with backoff (retry_backoff) until it is written, the output
// closes, or a fence takes t between two attempts, and then resolves it. A
// transaction a fence took before its write began is not written at all
// (nextDeadLetter): the partition's new owner reads it again and
// dead-letters it itself. A fence that comes during an attempt waits for it
// (srcTxn.inDeadLetter), as for a commit in flight; if it stops waiting
// first (its deadline), the transaction is released when the write ends,
// and the new owner may write it again: dead_letter is at-least-once either
// way.
//
// The first failure is logged at error level with the transaction, its
// partition and what to do (deadLetterAdvice); a write that goes on failing
// is reported again every reportEvery. Nothing of t is acknowledged until
// it is written.
func (o *Output) writeDeadLetter(t *srcTxn) {
	defer o.wg.Done()
	batch := make(service.MessageBatch, 0, len(t.items))
	for _, it := range t.items {
		m := it.msg.Copy()
		m.MetaSetMut(deadLetterReasonKey, t.poison.Error())
		batch = append(batch, m)
	}
	log := o.log.With("partition", t.p.key.String(), "txn_id", t.id)
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	written := false
	var reported time.Time
	o.dlStarted.Store(true)
	for attempt := 1; ; attempt++ {
		err := o.dl.WriteBatch(o.ctx, batch)
		if err == nil {
			written = true
			break
		}
		if o.ctx.Err() != nil {
			break
		}
		now := o.now()
		switch {
		case attempt == 1:
			reported = now
			log.Errorf("Writing source transaction %q of partition %s (%d messages) to dead_letter: %v; %s. It stays unacknowledged and is retried with backoff (retry_backoff); only the later dead letters of this partition wait behind it (with exactly_once, its later commits too), other partitions go on", t.id, t.p.key, len(batch), err, deadLetterAdvice(err))
		case now.Sub(reported) >= reportEvery:
			reported = now
			log.Warnf("Source transaction %q of partition %s is still not in dead_letter after %d attempts: %v", t.id, t.p.key, attempt, err)
		}
		if !sleepCtx(o.ctx, b.next()) {
			break
		}
		o.mu.Lock()
		taken := t.state != txnPoisoned
		o.mu.Unlock()
		if taken {
			// A fence took it meanwhile: its new owner writes it.
			break
		}
	}
	if written {
		o.m.deadLettered.Incr(1, partitionLabel(t.p))
	}
	o.mu.Lock()
	o.core.deadLetterEnded(t, written)
	o.mu.Unlock()
	// The partition's next dead letter may go now.
	o.wakeDeadLetter()
}

// deadLetterAdvice says what to do about a dead_letter write that failed
// with err. A record the Kafka dead letter refuses as too large is refused
// for good: no retry fixes it until the limit is raised.
func deadLetterAdvice(err error) string {
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		strings.Contains(err.Error(), kerr.MessageTooLarge.Message) || strings.Contains(err.Error(), kerr.RecordListTooLarge.Message) {
		return "the dead_letter output refuses it for good (a record over its size limit): no retry fixes that; raise the dead_letter output's max_message_bytes and the topic's max.message.bytes above the largest message of your source transactions (or send dead letters to an output without that limit), and the retries then get it through"
	}
	return "check the dead_letter output (the error says why it refused)"
}

// nextDeadLetter takes the next poisoned transaction to write to
// dead_letter, the head of a partition's lane with no write in flight, and
// marks its write in flight (srcTxn.inDeadLetter); nil when there is none.
// One a fence took while it waited in its lane is released instead,
// unwritten.
func (k *core) nextDeadLetter() *srcTxn {
	parts := slices.Collect(maps.Keys(k.dlLanes))
	slices.SortFunc(parts, func(a, b *partition) int { return strings.Compare(a.key.String(), b.key.String()) })
	for _, p := range parts {
		lane := k.dlLanes[p]
		if lane.writing != nil {
			continue
		}
		for len(lane.queue) > 0 {
			t := lane.queue[0]
			lane.queue[0] = nil // not held by the array once written
			lane.queue = lane.queue[1:]
			if t.state != txnPoisoned {
				k.releaseFenced(t)
				continue
			}
			lane.writing = t
			t.inDeadLetter = true
			return t
		}
		delete(k.dlLanes, p)
	}
	return nil
}

// deadLetterEnded ends the write of t to dead_letter. Written, it is
// dead-lettered, even when a fence took it meanwhile (the fence waited for
// the write, or gave up waiting: either way it is in dead_letter now; the
// write still holds it here, which is what lets a fenced one be
// dead-lettered, canMove). Not written (the output is closing, or a fence
// took it between attempts), a fenced one is released and a poisoned one
// stays unacknowledged, read again after a restart.
func (k *core) deadLetterEnded(t *srcTxn, written bool) {
	if lane := k.dlLanes[t.p]; lane != nil && lane.writing == t {
		lane.writing = nil
		if len(lane.queue) == 0 {
			delete(k.dlLanes, t.p)
		}
	}
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
	for _, t := range txns {
		if k.dlLanes[t.p] != nil {
			return true
		}
	}
	return false
}

// deadLetterHolds reports whether partition p's complete transactions must
// stay out of commit cycles (switchPartition): with exactly_once, while an
// earlier poisoned transaction of p is on its way to dead_letter. Its commit
// would have to wait for that write anyway (exactlyOnceTracking:
// awaitDeadLetters), and frozen into a cycle with other partitions'
// transactions it would hold their commit too, for as long as the write
// fails.
func (k *core) deadLetterHolds(p *partition) bool {
	return k.conf.exactlyOnce && k.dlLanes[p] != nil
}

// dlQueued returns the poisoned transactions on their way to dead_letter,
// by partition, each lane in order (the one being written first).
func (k *core) dlQueued() []*srcTxn {
	parts := slices.Collect(maps.Keys(k.dlLanes))
	slices.SortFunc(parts, func(a, b *partition) int { return strings.Compare(a.key.String(), b.key.String()) })
	var out []*srcTxn
	for _, p := range parts {
		lane := k.dlLanes[p]
		if lane.writing != nil {
			out = append(out, lane.writing)
		}
		out = append(out, lane.queue...)
	}
	return out
}
