package starrocks_txn

// Home of G29 (ARCHITECTURE.md §11.1): a fence drops uncommitted rows, waits (bounded) for the
// commit in flight and publishes what it resolved. Main test:
// TestCoreFenceWaitsForTheCommitInFlight.

import (
	"context"
	"fmt"
	"time"
)

// Fences (ARCHITECTURE.md §4.6): the partition registry calls fence when the
// input loses a partition; what is uncommitted of it is released, never
// committed, once no commit holding it is in flight. The fence waits here;
// what it changes is the core's steps (fenceTake, fenceRelease,
// fenceGiveUp, fenceEnd).

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
	f := o.core.fenceTake(part)
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.core.fenceEnd(f)
		o.mu.Unlock()
	}()

	deadline := time.NewTimer(fenceWait)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		released := o.core.fenceRelease(f)
		o.mu.Unlock()
		if released {
			return nil
		}
		select {
		case <-ctx.Done():
			return o.fenceGiveUp(f, fmt.Errorf("fencing partition %s: waiting for an in-flight commit: %w", part, ctx.Err()))
		case <-deadline.C:
			return o.fenceGiveUp(f, fmt.Errorf("fencing partition %s: an in-flight commit containing it did not resolve within %v", part, fenceWait))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// fenceGiveUp ends a fence that stopped waiting for an in-flight commit
// (core.fenceGiveUp) with err.
func (o *Output) fenceGiveUp(f *fencing, err error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.core.fenceGiveUp(f)
	return err
}

// fencing is what a fence took of its partition: its transactions (moved
// to fenced), the messages of it that were never in one (held behind a
// stall, parked, waiting for a sequence gap or for the progress), and the
// partition states it removed.
type fencing struct {
	part  string
	txns  []*srcTxn
	held  []*item
	parts []*partition
}

// fenceTake is the first step of a fence: it takes everything uncommitted
// of the partition, under every seq source, out of the core. Its
// transactions move to fenced at once, so they stop counting as buffered and
// committable; their messages are acknowledged when they are released
// (fenceRelease). The next message of the partition reads its durable
// progress again: a new owner may have moved it on by then.
func (k *core) fenceTake(part string) *fencing {
	f := &fencing{part: part}
	delete(k.progress, part)
	k.progressGen[part]++
	// Messages waiting for the progress belong to the fenced assignment.
	f.held = append(f.held, k.progressWait[part]...)
	delete(k.progressWait, part)
	for key, p := range k.parts {
		if key.partition != part {
			continue
		}
		// p.fenced is set only once the fence's wait is over (fenceEnd): a
		// commit in flight that resolves meanwhile still publishes its
		// boundary, which the input commits on revoke.
		f.parts = append(f.parts, p)
		mine := append([]*srcTxn{}, p.order...)
		if p.open != nil {
			mine = append(mine, p.open)
		}
		f.txns = append(f.txns, mine...)
		for _, t := range mine {
			if !t.state.over() {
				k.move(t, txnFenced)
			}
		}
		delete(k.parts, key)
		f.held = append(f.held, p.held...)
		for _, id := range sortedKeys(p.parked) {
			f.held = append(f.held, p.parked[id]...)
		}
		if p.stalled != nil {
			k.fx.gauge(gaugeStalledPartition, 0, partitionLabel(p))
		}
	}
	// Messages of the partition still waiting for a sequence gap.
	for _, s := range k.seqs {
		for _, it := range s.pending {
			if it.pk.partition == part {
				f.held = append(f.held, it)
			}
		}
	}
	return f
}

// fenceRelease releases everything the fence took, once no commit request
// and no dead-letter write holds any of its transactions; it reports
// whether it did (else the fence waits and asks again).
func (k *core) fenceRelease(f *fencing) bool {
	for _, t := range f.txns {
		if t.held() {
			return false
		}
	}
	for _, t := range f.txns {
		k.releaseFenced(t)
	}
	for _, it := range f.held {
		k.itemDone(it)
	}
	return true
}

// fenceGiveUp ends a fence that stopped waiting for an in-flight commit: what
// is not in that commit is released now; what is, is released by the commit
// goroutine once the commit resolves, either way (committed, or discarded
// from the replay as fenced).
//
// The partition's progress is not read again while that commit is
// unresolved (fencedCommitInFlight): the FE may still apply it, and a read
// that misses it would let the partition's next assignment here apply its
// source transactions a second time.
func (k *core) fenceGiveUp(f *fencing) {
	for _, t := range f.txns {
		if !t.held() {
			k.releaseFenced(t)
		} else {
			k.fencedInCommit[f.part] = append(k.fencedInCommit[f.part], t)
		}
	}
	for _, it := range f.held {
		k.itemDone(it)
	}
}

// fenceEnd is the last step of a fence, however it ended: nothing is
// published for the partition states it took any more, and a progress read
// during the wait, which may predate the commit that was in flight, is read
// again.
func (k *core) fenceEnd(f *fencing) {
	for _, p := range f.parts {
		p.fenced = true
	}
	delete(k.progress, f.part)
	k.progressGen[f.part]++
}

// releaseFenced releases the messages of a transaction a fence took:
// their WriteBatch calls return with success (the partition's new owner reads
// them again). Nothing is published as committed.
func (k *core) releaseFenced(t *srcTxn) {
	if t.state == txnFenced && !t.held() {
		k.move(t, txnReleased)
	}
}

// liveTxns returns txns without those a fence or a stall took out,
// releasing the fenced ones it discards.
func (k *core) liveTxns(txns []*srcTxn) []*srcTxn {
	out := make([]*srcTxn, 0, len(txns))
	for _, t := range txns {
		k.releaseFenced(t)
		if t.state.live() {
			out = append(out, t)
		}
	}
	return out
}
