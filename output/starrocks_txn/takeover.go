package starrocks_txn

// Home of G36 (ARCHITECTURE.md §11.1): a dead writer's transactions are final before a
// partition's progress is read. Main test: TestFinalizeLabelAnswers.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// Writers and their unresolved transactions (semantic exactly_once, and
// at_least_once with pipeline_id and mysql_address: config.trackWriters).
//
// A process that dies while the FE is still committing its last transaction
// leaves that transaction to land later, possibly after a successor has read
// the progress table and re-applied the same source transactions: older rows
// would overwrite newer ones and the events would double. So before a
// partition's progress is read, every transaction another writer of this
// pipeline may still commit is made final: rolled back while it can be, or
// waited for while the FE is committing it — or, for a writer that shows it
// is alive by committing again, left to it (takeoverlive.go).
//
// To find those transactions by label, each run of the output (a writer)
// numbers its labels per database — "<label_prefix>-<db>-<writer><n>",
// n = 1, 2, 3, … (starrocks.SeqLabel) — and keeps a writer row in the
// database's writers table (<progress_table>_writers, starrocks.WritersDDL; this
// writer's side is in writerrow.go and ledger.go): label_number the number T
// of the label that wrote the row (or of the anchor committed for it, when
// higher: tracker.go, settle), open_labels the numbers of the writer's
// other labels that were open then (begun and possibly committed later: the
// labels of at most a cycle being committed and the next one), and label the
// label that wrote it. Every label of the writer below T that is not listed
// is final or can never be committed. The row is loaded under every commit,
// and under an anchor transaction of its own before the writer's first
// commit in the database and before any commit of a label that is neither
// listed in the row StarRocks holds nor at most anchorGap above its T (labels
// burnt by failed begins and replays), or when that row is half
// writerRowStale old. So a successor that checks the listed labels and
// T+1 … T+anchorGap — and reads the rows again when one above T turns out
// committed (its row is then the newer one) — has seen every label the
// writer may have sent a commit for.

// takeOver is that check: it reads the other writers' rows and makes their
// labels final. Runs are serialised and coalesce (ticket, run).
type takeOver struct {
	o     *Output
	store progressStore
	// mu serialises runs; started and done number the runs started and the
	// last one completed.
	mu      sync.Mutex
	started int64
	done    int64
	// liveWait is how long a writer's row may go unchanged and the writer
	// still be taken for live (takeoverlive.go).
	liveWait time.Duration
	// markers counts the markers committed (takeoverlive.go).
	markers atomic.Int64
}

func newTakeOver(o *Output, store progressStore) *takeOver {
	return &takeOver{o: o, store: store, liveWait: o.conf.commitInterval + liveSlack}
}

const (
	// maxTakeOverPasses bounds the passes of a run while writers keep
	// landing commits (they are alive).
	maxTakeOverPasses = 10
	// takeOverParallel bounds the writer rows checked at once,
	// labelParallel the labels of one row.
	takeOverParallel = 4
	labelParallel    = 8
	// maxLabelFailures bounds the failed queries about one label before the
	// run is given up and started again (the databases listed afresh).
	maxLabelFailures = 20
)

// writerRow is one writer's row of a database's progress table.
type writerRow struct {
	writer string
	// top is the number of the label that wrote the row; open the numbers
	// of the writer's labels that were open then.
	top     int64
	open    []int64
	label   string
	updated time.Time
}

// run makes final every transaction another writer of the pipeline may
// still commit, in every database with a writers table, and waits until
// they are visible. Calls coalesce: a call returns at once when a run that
// started after its ticket was taken has completed. Multi-table writers are
// checked in one pass behind a marker (runMarked, takeoverlive.go);
// per-table ones, or when the FE has no multi-table transactions, in
// passes (runPasses).
func (k *takeOver) run(ctx context.Context, ticket int64) error {
	if k.store == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done > ticket {
		return nil
	}
	k.started++
	run := k.started
	var err error
	if k.o.proto.classic() {
		err = k.runPasses(ctx)
	} else {
		err = k.runMarked(ctx)
	}
	if err != nil {
		return err
	}
	k.done = run
	return nil
}

// runPasses makes every other writer's labels final, and repeats while a
// pass sees a writer's label above its row committed (the row it read is
// then behind).
func (k *takeOver) runPasses(ctx context.Context) error {
	o := k.o
	for pass := 1; ; pass++ {
		rows, err := k.store.writers(ctx, o.conf.pipelineID)
		if err != nil {
			return err
		}
		var jobs []writerJob
		now := o.now()
		for _, db := range sortedKeys(rows) {
			for _, r := range k.others(rows[db], now) {
				jobs = append(jobs, writerJob{db: db, row: r})
			}
		}
		start := time.Now()
		again, err := k.probeAll(ctx, jobs)
		if err != nil {
			return err
		}
		if len(jobs) > 0 {
			o.log.Infof("Checked the transactions of %d other writers of pipeline %s in %v", len(jobs), o.conf.pipelineID, time.Since(start).Round(time.Millisecond))
		}
		if !again {
			return nil
		}
		if pass == maxTakeOverPasses {
			o.log.Warnf("Other writers of pipeline %s kept committing through %d checks: taking them as alive", o.conf.pipelineID, pass)
			return nil
		}
	}
}

// others returns the rows of rs that belong to another writer and are not
// older than writerRowStale at now.
func (k *takeOver) others(rs []writerRow, now time.Time) []writerRow {
	var out []writerRow
	for _, r := range rs {
		if r.writer != k.o.writer && (r.updated.IsZero() || now.Sub(r.updated) <= writerRowStale) {
			out = append(out, r)
		}
	}
	return out
}

// ticket is what a caller of run passes: the runs started before it was
// taken do not count.
func (k *takeOver) ticket() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.started
}

type writerJob struct {
	db  string
	row writerRow
}

// probeAll runs probeWriter for every job, takeOverParallel at a time. It
// reports whether one found its row behind.
func (k *takeOver) probeAll(ctx context.Context, jobs []writerJob) (bool, error) {
	return anyOf(ctx, len(jobs), takeOverParallel, func(ctx context.Context, i int) (bool, error) {
		return k.probeWriter(ctx, jobs[i].db, jobs[i].row)
	})
}

// anyOf runs fn for 0 … n-1, at most limit at once, and reports whether any
// returned true. The first error cancels the rest and is returned.
func anyOf(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) (bool, error)) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		result   bool
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, limit)
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			ok, err := fn(ctx, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
				cancel()
			}
			result = result || ok
		}(i)
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return result, firstErr
}

// probeWriter makes final every label of one writer that may still be
// committed: the ones its row lists as open and the anchorGap labels above
// the row's own. It reports whether one above the row's own is committed:
// the row read is then behind, and the writer's rows must be read again.
func (k *takeOver) probeWriter(ctx context.Context, db string, r writerRow) (advanced bool, err error) {
	o := k.o
	stem, _, ok := starrocks.SplitSeqLabel(r.label)
	if !ok {
		o.log.With("database", db).Warnf("The row of writer %s in %s.%s holds the label %q, which is not a numbered label: its transactions are not checked", r.writer, db, writersTable(o.conf.progressTable), r.label)
		return false, nil
	}
	ns := make([]int64, 0, len(r.open)+anchorGap)
	for _, n := range r.open {
		if n != r.top && (n < r.top || n > r.top+anchorGap) {
			ns = append(ns, n)
		}
	}
	for n := r.top + 1; n <= r.top+anchorGap; n++ {
		ns = append(ns, n)
	}
	advanced, err = anyOf(ctx, len(ns), labelParallel, func(ctx context.Context, i int) (bool, error) {
		committed, err := k.finalizeLabel(ctx, db, starrocks.StemLabel(stem, ns[i]), r.writer)
		return committed && ns[i] > r.top, err
	})
	if err == nil && o.proto.classic() {
		// Per-table cycles: their parts, by their decisions
		// (pertable_takeover.go).
		err = k.settleParts(ctx, db, stem, r)
	}
	return advanced, err
}

// finalizeLabel makes another writer's label final and, when it is committed,
// visible. A transaction in PREPARE is rolled back, and so is one whose
// label is UNKNOWN (an FE that registers a multi-table transaction only at
// its commit reports UNKNOWN for a loaded one); a rollback refused because
// the FE is committing it is waited for, one refused because it is
// committed counts as committed, and a PREPARE transaction the rollback
// does not find is cancelled (/api/{db}/{label}/_cancel). It reports whether
// the label ends committed. After maxLabelFailures failed queries it
// returns an error.
func (k *takeOver) finalizeLabel(ctx context.Context, db, label, writer string) (bool, error) {
	o := k.o
	log := o.log.With("database", db)
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	txn := starrocks.Txn{DB: db, Label: label, Multi: true, Timeout: o.conf.txnTimeout}
	waited, evicted := false, false
	failures := 0
	for {
		state, err := o.client.WaitFinal(ctx, db, label, 0)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		var note error
		switch {
		case err != nil && starrocks.IsUnknownDatabase(err):
			return false, nil
		case err != nil:
			failures++
			note = err
		case state == starrocks.StateVisible:
			if waited {
				log.Infof("Transaction %s of writer %s became visible while this output waited for it", label, writer)
			}
			return true, nil
		case state == starrocks.StateAborted:
			return false, nil
		case state == starrocks.StateCommitted:
			// Committed, not published yet: a query does not see it.
			waited = true
			note = errors.New("committed, not visible yet")
		default:
			rctx, cancel := context.WithTimeout(ctx, rollbackTimeout)
			rerr := o.client.Rollback(rctx, txn)
			cancel()
			// What the refusal says (docs/notes/starrocks-protocol.md §4.4,
			// §5.6).
			refusal := starrocks.RollbackRefusalOf(rerr)
			switch {
			case rerr == nil:
				if state != starrocks.StateUnknown {
					log.Infof("Rolled back transaction %s, left open by writer %s of pipeline %s", label, writer, o.conf.pipelineID)
				}
				return false, nil
			case refusal == starrocks.RefusalFinished && state == starrocks.StateUnknown && evicted:
				// UNKNOWN on both sides of a second refusal: published
				// long ago, its label state evicted.
				return true, nil
			case refusal == starrocks.RefusalFinished && state == starrocks.StateUnknown:
				// Evicted, or committed (not yet published) just now:
				// ask again.
				evicted, waited, note = true, true, rerr
			case refusal == starrocks.RefusalFinished, refusal == starrocks.RefusalCommitting:
				waited = true
				note = rerr
			case refusal == starrocks.RefusalNotFound && state == starrocks.StateUnknown:
				return false, nil
			case refusal == starrocks.RefusalNotFound:
				// PREPARE without a task (an FE restart or a leader
				// change): the cancel API aborts it through the
				// transaction manager.
				failures++
				cctx, cancel := context.WithTimeout(ctx, rollbackTimeout)
				cerr := o.client.Cancel(cctx, db, label)
				cancel()
				note = fmt.Errorf("rollback: %v; cancel: %v", rerr, cerr)
			default:
				failures++
				note = rerr
			}
		}
		if failures >= maxLabelFailures {
			return false, fmt.Errorf("making transaction %s of writer %s in database %s final: %d attempts failed, the last: %w", label, writer, db, failures, note)
		}
		log.Warnf("Transaction %s of writer %s of pipeline %s is not final (state %q: %v); the progress is read once it is", label, writer, o.conf.pipelineID, state, note)
		if !sleepCtx(ctx, b.next()) {
			return false, ctx.Err()
		}
	}
}
