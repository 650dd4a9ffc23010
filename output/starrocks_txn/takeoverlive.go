package starrocks_txn

// Home of G76 (ARCHITECTURE.md §11.1): a take-over leaves a live member's transactions
// alone, in one pass. Main test: TestTakeOverLeavesALiveWritersTransactionsAlone.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The take-over of multi-table writers in one pass, which leaves live
// writers' transactions alone (ARCHITECTURE.md §7, "Live writers"; the
// reasoning is there, in short here).
//
// A partition's new owner needs final only the transactions another writer
// sent a commit for before the partition was assigned to it: a writer sends
// no commit carrying a partition once its input revoked it (the fence takes
// its transactions out of every cycle, and a cycle that loaded their rows
// is rolled back and replayed without them) or once its membership lease of
// it is over (awaitLeases, resolve), and the broker assigns the partition
// to another member only after one or the other. A writer has at most one
// commit unresolved per database, and sends the next only once it is
// resolved (ARCHITECTURE.md §10.2). So:
//
//   - A marker first: a transaction of this output into the database's
//     writers table, committed after the assignment and waited for until
//     VISIBLE. StarRocks publishes a partition's versions in commit order,
//     and every commit of a writer loads its row into that table, so every
//     commit decided before the marker is visible when the rows are read
//     after it: the row read names, or is newer than, the row the writer
//     held when it sent its last commit before the assignment — one pass
//     finds that commit, no pass has to read the rows again.
//   - A writer whose row changes after that read has made another commit
//     visible: either the one it had in flight (visible, then) or one it
//     sent after that one was resolved. Either way nothing it sent before
//     the assignment can still land, and its labels are left alone — its
//     open cycles are its own partitions', and rolling them back only made
//     it replay them (and roll back this output's in turn when it took
//     partitions at the same time).
//   - A writer whose row does not change within liveWait — a dead one, a
//     starved one, one idle in the database — has its labels made final as
//     before (probeWriter): rolled back, or waited for while the FE commits
//     them. A row already older than liveWait (by its updated_at) is not
//     watched at all. Both checks are only about speed: waiting for the row
//     and rolling back are each safe on their own, so a clock that is off
//     costs time, never a duplicate.

const (
	// liveSlack is added to commit_interval to make liveWait: a writer
	// with traffic rewrites its row at each commit, once per
	// commit_interval; updated_at is taken before the commit is sent, and
	// kept to the second.
	liveSlack = 3 * time.Second
	// livePoll is how often a watched writer's row is read again.
	livePoll = 50 * time.Millisecond
)

// errNoMultiTable ends a marker the FE refused as a 3.x FE does: the writers
// are checked in passes instead.
var errNoMultiTable = errors.New("the FE has no multi-table transactions")

// runMarked makes final every transaction another multi-table writer of the
// pipeline may still commit, in one pass: a marker in every database where
// another writer has a row, the rows read after it, the writers whose row
// changes within liveWait left alone, the others' labels made final.
func (k *takeOver) runMarked(ctx context.Context) error {
	o := k.o
	rows, err := k.store.writers(ctx, o.conf.pipelineID)
	if err != nil {
		return err
	}
	// A database where no other writer has a row needs nothing: a writer
	// commits data there only once its first anchor is VISIBLE
	// (anchorIfNeeded), so one with a commit sent before the assignment has
	// its row visible by now.
	now := o.now()
	var dbs []string
	for _, db := range sortedKeys(rows) {
		if len(k.others(rows[db], now)) > 0 {
			dbs = append(dbs, db)
		}
	}
	if len(dbs) == 0 {
		return nil
	}
	start := time.Now()
	if _, err := anyOf(ctx, len(dbs), takeOverParallel, func(ctx context.Context, i int) (bool, error) {
		return false, k.mark(ctx, dbs[i])
	}); err != nil {
		if errors.Is(err, errNoMultiTable) {
			return k.runPasses(ctx)
		}
		return err
	}
	if rows, err = k.store.writers(ctx, o.conf.pipelineID); err != nil {
		return err
	}
	now = o.now()
	var live, rest []writerJob
	var until []time.Duration
	for _, db := range dbs {
		for _, r := range k.others(rows[db], now) {
			j := writerJob{db: db, row: r}
			if d := k.liveFor(r, now); d > 0 {
				live, until = append(live, j), append(until, d)
			} else {
				rest = append(rest, j)
			}
		}
	}
	// The live-looking writers are watched while the others are checked.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	moved := make([]bool, len(live))
	var wg sync.WaitGroup
	for i := range live {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			moved[i] = k.watch(wctx, live[i], until[i])
		}(i)
	}
	_, err = k.probeAll(ctx, rest)
	if err != nil {
		cancel()
	}
	wg.Wait()
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var still []writerJob
	for i, j := range live {
		if !moved[i] {
			still = append(still, j)
		}
	}
	if _, err := k.probeAll(ctx, still); err != nil {
		return err
	}
	o.log.Infof("Checked the transactions of %d other writers of pipeline %s in %v: %d committed meanwhile and were left alone, %d had theirs made final",
		len(live)+len(rest), o.conf.pipelineID, time.Since(start).Round(time.Millisecond), len(live)-len(still), len(rest)+len(still))
	return nil
}

// liveFor is how long the row r, read at now, is watched for a change: up
// to liveWait after its updated_at, and never longer than liveWait (a clock
// ahead of this one's); 0 when that is over, or the row has no time.
func (k *takeOver) liveFor(r writerRow, now time.Time) time.Duration {
	if r.updated.IsZero() {
		return 0
	}
	return min(k.liveWait, r.updated.Add(k.liveWait).Sub(now))
}

// watch reads the row of job's writer every livePoll for up to d (real
// time: the output's clock only dates the rows) and reports whether it
// changed: another label of the writer committed, or its clean close
// deleted the row. A read that fails counts as no change.
func (k *takeOver) watch(ctx context.Context, j writerJob, d time.Duration) bool {
	o := k.o
	deadline := time.Now().Add(d)
	for {
		r, found, err := k.store.writerRow(ctx, j.db, o.conf.pipelineID, j.row.writer)
		if ctx.Err() != nil {
			return false
		}
		if err == nil && (!found || r.top != j.row.top || r.label != j.row.label) {
			return true
		}
		if err != nil {
			o.log.With("database", j.db).Debugf("Reading the row of writer %s: %v", j.row.writer, err)
		}
		left := time.Until(deadline)
		if left <= 0 || !sleepCtx(ctx, min(livePoll, left)) {
			return false
		}
	}
}

// mark commits a marker in db and waits until it is VISIBLE, trying again
// under a new label until one is (maxLabelFailures attempts). A marker is a
// multi-table transaction that deletes the writers table's row of no
// writer (the empty one): it changes nothing, and its commit comes after
// every commit decided before it in the table's order of versions. A
// database that no longer exists needs none.
func (k *takeOver) mark(ctx context.Context, db string) error {
	o := k.o
	log := o.log.With("database", db)
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	for failures := 1; ; failures++ {
		err := k.markOnce(ctx, db, starrocks.NewLabel(o.conf.labelPrefix+"-takeover", db))
		switch {
		case err == nil:
			k.markers.Add(1)
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case starrocks.NoMultiTable(err, db):
			return errNoMultiTable
		case starrocks.IsUnknownDatabase(err):
			return nil
		case failures >= maxLabelFailures:
			return fmt.Errorf("committing the take-over marker in database %s: %d attempts failed, the last: %w", db, failures, err)
		}
		log.Warnf("The take-over marker in database %s did not become visible (%v); trying again under a new label", db, err)
		if !sleepCtx(ctx, b.next()) {
			return ctx.Err()
		}
	}
}

// markOnce begins, loads and commits one marker under label and waits until
// it is VISIBLE. Whatever the commit's reply, the label's state decides; a
// marker that did not become visible is rolled back (best effort: one that
// lands later changes nothing).
func (k *takeOver) markOnce(ctx context.Context, db, label string) error {
	o := k.o
	txn := starrocks.Txn{DB: db, Label: label, Multi: true, Timeout: o.conf.txnTimeout}
	if err := o.client.Begin(ctx, txn); err != nil {
		return err
	}
	type delRow struct {
		writerRecord
		Op int `json:"__op"`
	}
	body, _ := json.Marshal([]delRow{{writerRecord: writerRecord{Pipeline: o.conf.pipelineID, Label: label,
		Updated: o.now().UTC().Format(starrocks.RowTimeLayout)}, Op: 1}})
	load := starrocks.LoadRequest{Txn: txn, Headers: tableHeaders(""), Body: body}
	load.Table = writersTable(o.conf.progressTable)
	err := o.client.Load(ctx, load)
	if err == nil {
		if err = o.client.Commit(ctx, txn); err != nil && ctx.Err() == nil {
			o.log.With("database", db).Debugf("Commit of the take-over marker %s: %v; its state decides", label, err)
		}
		if ctx.Err() == nil {
			err = k.awaitVisible(ctx, txn)
		}
	}
	if err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
		_ = o.client.Rollback(rctx, txn)
		cancel()
	}
	return err
}

// markerPolls bounds the label-state queries of a marker that is neither
// VISIBLE nor ABORTED (each waits up to label_state_wait, and the commit is
// sent again after each): then it is given up for a new one.
const markerPolls = 6

// awaitVisible polls the marker's state until it is VISIBLE (nil) or
// ABORTED (an error). COMMITTED is waited for: the marker counts only once
// published. While it is neither, its commit is sent again (a commit is
// idempotent: one the FE is committing is refused, one it committed
// answered OK), up to markerPolls queries; then an error (the caller rolls
// it back and tries a new one).
func (k *takeOver) awaitVisible(ctx context.Context, txn starrocks.Txn) error {
	o := k.o
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	var lag publishLag
	for polls := 1; ; {
		state, err := o.client.WaitFinal(ctx, txn.DB, txn.Label, o.conf.labelStateWait)
		switch {
		case err != nil:
			return err
		case state == starrocks.StateVisible:
			return nil
		case state == starrocks.StateAborted:
			return fmt.Errorf("the marker %s was aborted", txn.Label)
		case state == starrocks.StateCommitted:
			if d, report := lag.committed(o.conf.labelStateWait); report {
				o.log.With("database", txn.DB).Warnf("The take-over marker %s has been COMMITTED and not VISIBLE for %v: StarRocks is not publishing in database %s; the partitions being taken over wait for it", txn.Label, d.Round(time.Millisecond), txn.DB)
			}
			if !sleepCtx(ctx, b.next()) {
				return ctx.Err()
			}
			continue
		}
		if polls++; polls > markerPolls {
			return fmt.Errorf("the marker %s is %s, not visible", txn.Label, state)
		}
		if err := o.client.Commit(ctx, txn); err != nil && ctx.Err() == nil {
			o.log.With("database", txn.DB).Debugf("Commit of the take-over marker %s sent again: %v", txn.Label, err)
		}
	}
}

// publishLag times a wait for a COMMITTED label to be published, so that a
// publish that lags past label_state_wait is reported (at most every
// reportEvery), not waited for in silence.
type publishLag struct {
	since, warned time.Time
}

// committed records one COMMITTED answer; it returns how long the label has
// been COMMITTED and whether to report it now.
func (l *publishLag) committed(after time.Duration) (time.Duration, bool) {
	now := time.Now()
	if l.since.IsZero() {
		l.since = now
	}
	d := now.Sub(l.since)
	if d < after || (!l.warned.IsZero() && now.Sub(l.warned) < reportEvery) {
		return d, false
	}
	l.warned = now
	return d, true
}
