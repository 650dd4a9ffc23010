package starrocks_txn

// Home of G47 (ARCHITECTURE.md §11.1): a dead writer's open per-table parts are settled together
// by their cycle's decision. Main test:
// TestPerTableTakeOverSettlesADeadWritersCycleByItsDecision.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The per-table take-over (ARCHITECTURE.md §15.2): after probeWriter made
// another writer's numbered labels final (its cycles' decisions and
// anchors, takeover.go), the parts of its cycles that StarRocks still holds
// open are found by label prefix among the FE's running transactions
// (SHOW PROC '/transactions/<db>/running') and each cycle's parts are
// committed or rolled back together, by its decision:
//
//   - decision VISIBLE or COMMITTED: every PREPARED part is committed (data
//     parts first, the progress part last) and waited for until visible;
//   - decision ABORTED, or still open: it is rolled back (which proves it
//     never commits; a refusal because it committed proves the opposite),
//     and every part is rolled back;
//   - decision forgotten by the FE (its state evicted, UNKNOWN): the
//     writer's row decides: it names the decision if and only if the
//     decision committed, since the writer commits no later cycle while
//     this one has a part left open (§10.2).
//
// A decided cycle whose progress part the FE aborted (expired) gets its data
// parts rolled back instead: nothing of the cycle's progress holds, so the
// cycle is replayed whole, and committing only some of it would double what
// the replay loads again.

// runningLister lists a database's running transactions by label prefix
// (metaProgress over SHOW PROC; a fake store in tests).
type runningLister interface {
	running(ctx context.Context, db, prefix string) ([]starrocks.RunningTxn, error)
}

func (s metaProgress) running(ctx context.Context, db, prefix string) ([]starrocks.RunningTxn, error) {
	txns, err := s.meta.RunningTransactions(ctx, db, prefix)
	if err != nil {
		return nil, fmt.Errorf("%w (the per-table take-over lists a dead writer's prepared transactions with SHOW PROC, which needs the OPERATE privilege)", err)
	}
	return txns, nil
}

// settleParts commits or rolls back, per cycle, the open parts of writer r's
// cycles in db. stem is the writer's label stem (SplitSeqLabel).
func (k *takeOver) settleParts(ctx context.Context, db, stem string, r writerRow) error {
	o := k.o
	lister, ok := k.store.(runningLister)
	if !ok {
		return nil
	}
	txns, err := lister.running(ctx, db, stem)
	if err != nil {
		return err
	}
	cycles := map[string][]starrocks.RunningTxn{}
	for _, t := range txns {
		if cyc, _, ok := starrocks.SplitPartLabel(t.Label); ok {
			cycles[cyc] = append(cycles[cyc], t)
		}
	}
	if len(cycles) == 0 {
		return nil
	}
	log := o.log.With("database", db)
	for _, cyc := range sortedKeys(cycles) {
		parts := cycles[cyc]
		committed, err := k.decideCycle(ctx, db, cyc, r)
		if err != nil {
			return err
		}
		if committed && k.progressAborted(ctx, db, cyc, parts) {
			log.Errorf("Cycle %s of writer %s was decided, but its progress transaction expired before its commit: its %d open parts are rolled back and the cycle is replayed from the progress table", cyc, r.writer, len(parts))
			committed = false
		}
		if err := k.finishParts(ctx, db, parts, committed); err != nil {
			return err
		}
		verb := map[bool]string{true: "committed", false: "rolled back"}[committed]
		log.Infof("Per-table cycle %s of writer %s of pipeline %s: its %d open transactions %s with their decision", cyc, r.writer, o.conf.pipelineID, len(parts), verb)
	}
	return nil
}

// decideCycle makes the cycle's decision final and reports whether it
// committed (see the file's comment).
func (k *takeOver) decideCycle(ctx context.Context, db, decision string, r writerRow) (bool, error) {
	o := k.o
	state, err := o.client.WaitFinal(ctx, db, decision, 0)
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err == nil && state == starrocks.StateUnknown {
		rctx, cancel := context.WithTimeout(ctx, rollbackTimeout)
		rerr := o.client.Rollback(rctx, starrocks.Txn{DB: db, Label: decision, Table: writersTable(o.conf.progressTable)})
		cancel()
		switch starrocks.RollbackRefusalOf(rerr) {
		case starrocks.RefusalNotFound:
			row, found, err := k.store.writerRow(ctx, db, o.conf.pipelineID, r.writer)
			if err != nil {
				return false, fmt.Errorf("reading the row of writer %s to settle its decision %s: %w", r.writer, decision, err)
			}
			return found && row.label == decision, nil
		case starrocks.RefusalFinished:
			return true, nil
		}
		if rerr == nil {
			return false, nil
		}
	}
	return k.finalizeLabel(ctx, db, decision, r.writer)
}

// progressAborted reports whether the cycle's progress part, when it is not
// among the open parts, is ABORTED.
func (k *takeOver) progressAborted(ctx context.Context, db, cycle string, parts []starrocks.RunningTxn) bool {
	label := starrocks.PartLabel(cycle, "p")
	for _, p := range parts {
		if p.Label == label {
			return false
		}
	}
	state, err := k.o.client.WaitFinal(ctx, db, label, 0)
	return err == nil && state == starrocks.StateAborted
}

// finishParts commits (data parts first, in parallel, then the progress
// part) or rolls back a cycle's open parts, each until it is final.
func (k *takeOver) finishParts(ctx context.Context, db string, parts []starrocks.RunningTxn, commit bool) error {
	sort.Slice(parts, func(i, j int) bool {
		_, a, _ := starrocks.SplitPartLabel(parts[i].Label)
		_, b, _ := starrocks.SplitPartLabel(parts[j].Label)
		if (a == "p") != (b == "p") {
			return b == "p"
		}
		return parts[i].Label < parts[j].Label
	})
	var data, last []starrocks.RunningTxn
	for _, p := range parts {
		if _, part, _ := starrocks.SplitPartLabel(p.Label); part == "p" && commit {
			last = append(last, p)
		} else {
			data = append(data, p)
		}
	}
	for _, group := range [][]starrocks.RunningTxn{data, last} {
		errs := make([]error, len(group))
		var wg sync.WaitGroup
		for i, p := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = k.finishPart(ctx, db, p.Label, commit)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// finishPart commits or rolls back one part until it is final; committed
// ones are waited for until visible, so that the progress read after the
// take-over sees them.
func (k *takeOver) finishPart(ctx context.Context, db, label string, commit bool) error {
	o := k.o
	log := o.log.With("database", db)
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	txn := starrocks.Txn{DB: db, Label: label}
	for failures := 0; ; failures++ {
		state, err := o.client.WaitFinal(ctx, db, label, 0)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var note error
		switch {
		case err != nil:
			note = err
		case state == starrocks.StateVisible, state == starrocks.StateUnknown:
			// UNKNOWN: final and evicted, or never begun.
			return nil
		case state == starrocks.StateAborted:
			if commit {
				log.Errorf("The prepared transaction %s of a decided cycle was aborted before the take-over committed it (its prepared timeout passed): that table misses the cycle's rows until the cycle is replayed", label)
			}
			return nil
		case state == starrocks.StateCommitted:
			note = errors.New("committed, not visible yet")
		case commit && state == starrocks.StatePrepared:
			note = o.client.Commit(ctx, txn)
			if note == nil {
				continue
			}
		default:
			// Not prepared: never part of a decision, whatever it says.
			if commit && state == starrocks.StatePrepare {
				log.Warnf("Transaction %s of a decided cycle is open but was never prepared: it is rolled back", label)
			}
			rctx, cancel := context.WithTimeout(ctx, rollbackTimeout)
			note = o.client.Rollback(rctx, txn)
			cancel()
			if note == nil || starrocks.RollbackRefusalOf(note) == starrocks.RefusalNotFound {
				return nil
			}
		}
		if failures >= maxLabelFailures {
			return fmt.Errorf("making transaction %s in database %s final: %d attempts failed, the last: %w", label, db, failures, note)
		}
		log.Warnf("Transaction %s of a per-table cycle left by another writer is not final (state %q: %v); the progress is read once it is", label, state, note)
		if !sleepCtx(ctx, b.next()) {
			return ctx.Err()
		}
	}
}
