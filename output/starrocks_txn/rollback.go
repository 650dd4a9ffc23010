// This file holds the rollback of a cycle's label: best effort when it is
// abandoned, and the rollback whose answer decides a commit in doubt
// (commit.go: resolve).

package starrocks_txn

import (
	"context"
	"fmt"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// tryRollback rolls label back within rollbackTimeout and returns the
// refusal, if any.
func (w *dbWorker) tryRollback(ctx context.Context, label string) error {
	rctx, cancel := context.WithTimeout(ctx, rollbackTimeout)
	defer cancel()
	return w.o.client.Rollback(rctx, w.txn(label))
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

// rollbackDecides rolls back a PREPARE label: a rollback that succeeds
// proves it aborted, one refused because the label finished proves it
// committed. A rollback that finds no task for it (an FE restart or a
// leader change lost the load task, the transaction stays PREPARE) is
// followed by a cancel, which aborts it through the transaction manager,
// as the take-over does (takeOver.finalizeLabel): the caller's next label
// query sees ABORTED instead of waiting for the FE's own transaction
// timeout. decided is false, with the error, when neither is proven.
func (w *dbWorker) rollbackDecides(ctx context.Context, label string) (state starrocks.LabelState, decided bool, err error) {
	err = w.tryRollback(ctx, label)
	switch refusal := starrocks.RollbackRefusalOf(err); {
	case err == nil:
		return starrocks.StateAborted, true, nil
	case refusal == starrocks.RefusalFinished:
		return starrocks.StateVisible, true, nil
	case refusal == starrocks.RefusalNotFound:
		cctx, cancel := context.WithTimeout(ctx, rollbackTimeout)
		cerr := w.o.client.Cancel(cctx, w.db, label)
		cancel()
		return "", false, fmt.Errorf("%w; cancel: %v", err, cerr)
	}
	return "", false, err
}
