package starrocks_txn

import (
	"context"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// txnClient is the part of the StarRocks client the output uses. Production
// uses *starrocks.Client through srClient; unit tests use a fake. Every error
// is classified with starrocks.ClassOf.
type txnClient interface {
	Begin(ctx context.Context, t starrocks.Txn) error
	Load(ctx context.Context, r starrocks.LoadRequest) error
	// Prepare prepares a classic transaction (per-table mode).
	Prepare(ctx context.Context, t starrocks.Txn) error
	Commit(ctx context.Context, t starrocks.Txn) error
	Rollback(ctx context.Context, t starrocks.Txn) error
	// WaitFinal polls the label's state until it is final (COMMITTED,
	// VISIBLE or ABORTED) or maxWait has passed, and returns the last state
	// seen.
	WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (starrocks.LabelState, error)
	// Cancel aborts a transaction through the FE cancel API.
	Cancel(ctx context.Context, db, label string) error
	// ErrorLog reads the first lines of a rejected load's error log (a
	// tracking_url).
	ErrorLog(ctx context.Context, url string, maxLines int) ([]string, error)
}

// validPrefix reports whether a label prefix keeps labels within the FE rule
// ^[-\w]{1,128}$.
func validPrefix(prefix string) bool {
	return starrocks.ValidateLabel(prefix) == nil && len(prefix) <= 64
}
