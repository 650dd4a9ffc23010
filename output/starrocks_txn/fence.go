package starrocks_txn

import (
	"context"
	"fmt"
	"time"
)

// Fences (ARCHITECTURE.md §4.6): the partition registry calls fence when the
// input loses a partition; what is uncommitted of it is released, never
// committed, once no commit holding it is in flight.

// fence drops everything uncommitted of a partition (under every seq
// source), waits (bounded) for an in-flight commit that contains its rows,
// or for the write to dead_letter of one of its poisoned transactions, and
// releases its held WriteBatch calls with success: the new owner of the
// partition reads them again. A poisoned transaction still queued for
// dead_letter is released unwritten (its new owner dead-letters it); one
// whose write was in flight is dead-lettered, and that resolution is
// published before the fence returns, so the input commits past it and the
// new owner does not write it again. Its transactions move to fenced at once, so
// they stop counting as buffered and committable when the fence takes them;
// their messages are acknowledged when they are released.
func (o *Output) fence(ctx context.Context, part string) error {
	o.mu.Lock()
	var txns []*srcTxn
	var held []*item
	var fenced []*partition
	// The next message of the partition reads its durable progress again:
	// a new owner may have moved it on by then.
	delete(o.progress, part)
	o.progressGen[part]++
	// Messages waiting for the progress belong to the fenced assignment.
	held = append(held, o.progressWait[part]...)
	delete(o.progressWait, part)
	for k, p := range o.parts {
		if k.partition != part {
			continue
		}
		// p.fenced is set only once the wait below is over: a commit in
		// flight that resolves meanwhile still publishes its boundary, which
		// the input commits on revoke.
		fenced = append(fenced, p)
		mine := append([]*srcTxn{}, p.order...)
		if p.open != nil {
			mine = append(mine, p.open)
		}
		txns = append(txns, mine...)
		for _, t := range mine {
			if !t.state.over() {
				o.moveLocked(t, txnFenced)
			}
		}
		delete(o.parts, k)
		held = append(held, p.held...)
		for _, id := range sortedKeys(p.parked) {
			held = append(held, p.parked[id]...)
		}
		if p.stalled != nil {
			o.m.stalled.Set(0, o.partitionLabel(p))
		}
	}
	// Messages of the partition still waiting for a sequence gap.
	for _, s := range o.seqs {
		for _, it := range s.pending {
			if it.pk.partition == part {
				held = append(held, it)
			}
		}
	}
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		for _, p := range fenced {
			p.fenced = true
		}
		// A progress read during the wait may predate the commit that
		// was in flight: read it again.
		delete(o.progress, part)
		o.progressGen[part]++
		o.mu.Unlock()
	}()

	deadline := time.NewTimer(fenceWait)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		busy := false
		for _, t := range txns {
			if t.held() {
				busy = true
				break
			}
		}
		if !busy {
			for _, t := range txns {
				o.releaseFencedLocked(t)
			}
			for _, it := range held {
				o.itemDoneLocked(it)
			}
			o.mu.Unlock()
			return nil
		}
		o.mu.Unlock()
		select {
		case <-ctx.Done():
			return o.fenceGiveUp(txns, held, fmt.Errorf("fencing partition %s: waiting for an in-flight commit: %w", part, ctx.Err()))
		case <-deadline.C:
			return o.fenceGiveUp(txns, held, fmt.Errorf("fencing partition %s: an in-flight commit containing it did not resolve within %v", part, fenceWait))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// fenceGiveUp ends a fence that stopped waiting for an in-flight commit: what
// is not in that commit is released now; what is, is released by the commit
// goroutine once the commit resolves, either way (committed, or discarded
// from the replay as fenced).
func (o *Output) fenceGiveUp(txns []*srcTxn, held []*item, err error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range txns {
		if !t.held() {
			o.releaseFencedLocked(t)
		}
	}
	for _, it := range held {
		o.itemDoneLocked(it)
	}
	return err
}

// releaseFencedLocked releases the messages of a transaction a fence took:
// their WriteBatch calls return with success (the partition's new owner reads
// them again). Nothing is published as committed.
func (o *Output) releaseFencedLocked(t *srcTxn) {
	if t.state == txnFenced && !t.held() {
		o.moveLocked(t, txnReleased)
	}
}

// liveTxnsLocked returns txns without those a fence or a stall took out,
// releasing the fenced ones it discards.
func (o *Output) liveTxnsLocked(txns []*srcTxn) []*srcTxn {
	out := make([]*srcTxn, 0, len(txns))
	for _, t := range txns {
		o.releaseFencedLocked(t)
		if t.state.live() {
			out = append(out, t)
		}
	}
	return out
}
