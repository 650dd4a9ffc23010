package starrocks_txn

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
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
// waited for while the FE is committing it.
//
// To find those transactions by label, each run of the output (a writer)
// numbers its labels per database — "<label_prefix>-<db>-<writer><n>",
// n = 1, 2, 3, … (starrocks.SeqLabel) — and keeps a writer row in the
// database's writers table (<progress_table>_writers, writersDDL):
// label_number the number T of the label that wrote the row, open_labels the
// numbers of the writer's other labels that were open then (begun and
// possibly committed later: the labels of at most a cycle being committed
// and the next one), and label the label that wrote it. Every label of the writer below T that is not listed
// is final or can never be committed. The row is loaded under every commit,
// and under an anchor transaction of its own before the writer's first
// commit in the database and before any commit of a label that is neither
// listed in the row StarRocks holds nor at most anchorGap above its T (labels
// burnt by failed begins and replays), or when that row is half
// writerRowStale old. So a successor that checks the listed labels and
// T+1 … T+anchorGap — and reads the rows again when one above T turns out
// committed (its row is then the newer one) — has seen every label the
// writer may have sent a commit for.

const (
	// anchorGap bounds how far above its row's label a writer may commit
	// without an anchor: a successor checks the anchorGap labels above it.
	anchorGap = 16
	// writerRowStale is the age of a writer row (its updated_at) past which
	// a successor skips it: a writer anchors again before committing when
	// its row is half that old, so a row that old cannot belong to a writer
	// with a commit in flight (clocks may differ by up to half of it).
	writerRowStale = 24 * time.Hour
	// maxSettlePasses bounds the passes of settleWriters while writers keep
	// landing commits (they are alive).
	maxSettlePasses = 10
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

// progressTimeLayout is how updated_at is written and read back (UTC).
const progressTimeLayout = "2006-01-02 15:04:05"

// parseUpdated reads a writer row's updated_at; zero when it is not a
// time (then the row is never taken as stale).
func parseUpdated(s string) time.Time {
	t, err := time.ParseInLocation(progressTimeLayout, strings.TrimSpace(s), time.UTC)
	if err != nil {
		return time.Time{}
	}
	return t
}

// formatOpen and parseOpen write and read the open label numbers of a
// writer row ("12,15").
func formatOpen(ns []int64) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, ",")
}

func parseOpen(s string) ([]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int64
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("open label list %q: %w", s, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// writerStore reads the writer rows of every database with a progress table.
type writerStore interface {
	writers(ctx context.Context, pipelineID string) (map[string][]writerRow, error)
}

func (s sqlProgress) writers(ctx context.Context, pipelineID string) (map[string][]writerRow, error) {
	ctx, cancel := context.WithTimeout(ctx, progressQueryTimeout)
	defer cancel()
	defer s.lock()()
	table := writersTable(s.table)
	dbs, err := s.databasesWith(ctx, table)
	if err != nil {
		return nil, err
	}
	out := map[string][]writerRow{}
	for _, d := range dbs {
		q := fmt.Sprintf("SELECT `writer`, `label_number`, `open_labels`, `label`, `updated_at` FROM `%s`.`%s` WHERE `pipeline_id` = ?", d, table)
		rows, err := s.db.QueryContext(ctx, q, pipelineID)
		if err != nil {
			return nil, fmt.Errorf("reading the writer rows of %s.%s: %w", d, table, err)
		}
		for rows.Next() {
			var writer string
			var top int64
			var open, lbl, updated sql.NullString
			if err := rows.Scan(&writer, &top, &open, &lbl, &updated); err != nil {
				_ = rows.Close()
				return nil, fmt.Errorf("reading the writer rows of %s.%s: %w", d, table, err)
			}
			ns, err := parseOpen(open.String)
			if err != nil {
				_ = rows.Close()
				return nil, fmt.Errorf("reading the row of writer %s in %s.%s: %w", writer, d, table, err)
			}
			out[d] = append(out[d], writerRow{writer: writer, top: top, open: ns, label: lbl.String, updated: parseUpdated(updated.String)})
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("reading the writer rows of %s.%s: %w", d, table, err)
		}
	}
	return out, nil
}

// settleWriters makes final every transaction another writer of the
// pipeline may still commit, in every database with a progress table, and
// waits until they are visible. It repeats while a pass sees a writer's
// label above its row committed (the row it read is then behind). Calls
// coalesce: a call returns at once when a run that started after it was
// asked for has completed.
func (o *Output) settleWriters(ctx context.Context, asked int64) error {
	ws, ok := o.prog.(writerStore)
	if !ok {
		return nil
	}
	o.settleMu.Lock()
	defer o.settleMu.Unlock()
	if o.settleDone > asked {
		return nil
	}
	o.settleStarted++
	run := o.settleStarted
	for pass := 1; ; pass++ {
		rows, err := ws.writers(ctx, o.conf.pipelineID)
		if err != nil {
			return err
		}
		var jobs []writerJob
		now := o.now()
		for _, db := range sortedKeys(rows) {
			for _, r := range rows[db] {
				if r.writer != o.writer && (r.updated.IsZero() || now.Sub(r.updated) <= writerRowStale) {
					jobs = append(jobs, writerJob{db: db, row: r})
				}
			}
		}
		start := time.Now()
		again, err := o.probeAll(ctx, jobs)
		if err != nil {
			return err
		}
		if len(jobs) > 0 {
			o.log.Infof("starrocks_txn: checked the transactions of %d other writers of pipeline %s in %v", len(jobs), o.conf.pipelineID, time.Since(start).Round(time.Millisecond))
		}
		if !again {
			break
		}
		if pass == maxSettlePasses {
			o.log.Warnf("starrocks_txn: other writers of pipeline %s kept committing through %d checks: taking them as alive", o.conf.pipelineID, pass)
			break
		}
	}
	o.settleDone = run
	return nil
}

// settleParallel bounds the writer rows checked at once, labelParallel the
// labels of one row.
const (
	settleParallel = 4
	labelParallel  = 8
)

type writerJob struct {
	db  string
	row writerRow
}

// probeAll runs probeWriter for every job, settleParallel at a time. It
// reports whether one found its row behind.
func (o *Output) probeAll(ctx context.Context, jobs []writerJob) (bool, error) {
	return anyOf(ctx, len(jobs), settleParallel, func(ctx context.Context, i int) (bool, error) {
		return o.probeWriter(ctx, jobs[i].db, jobs[i].row)
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

// settleTicket is what a caller of settleWriters passes: the runs started
// before it asked do not count.
func (o *Output) settleTicket() int64 {
	o.settleMu.Lock()
	defer o.settleMu.Unlock()
	return o.settleStarted
}

// probeWriter makes final every label of one writer that may still be
// committed: the ones its row lists as open and the anchorGap labels above
// the row's own. It reports whether one above the row's own is committed:
// the row read is then behind, and the writer's rows must be read again.
func (o *Output) probeWriter(ctx context.Context, db string, r writerRow) (advanced bool, err error) {
	stem, _, ok := starrocks.SplitSeqLabel(r.label)
	if !ok {
		o.log.Warnf("starrocks_txn: the row of writer %s in %s.%s holds the label %q, which is not a numbered label: its transactions are not checked", r.writer, db, writersTable(o.conf.progressTable), r.label)
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
	return anyOf(ctx, len(ns), labelParallel, func(ctx context.Context, i int) (bool, error) {
		committed, err := o.settleLabel(ctx, db, starrocks.StemLabel(stem, ns[i]), r.writer)
		return committed && ns[i] > r.top, err
	})
}

// Answers that decide what another writer's label is (docs/notes/starrocks-protocol.md §5.6, §4.4,
// §6.1).
var (
	// notExistRe: no transaction under the label.
	notExistRe = regexp.MustCompile(`(?i)does\s*not\s*exist|not exists|no transaction found`)
	// committingRe: the FE is committing it; its outcome comes.
	committingRe = regexp.MustCompile(`(?i)during committing|is committing|already committing`)
	// finishedRe: committed and published (also when the label's state
	// was evicted and get_load_state says UNKNOWN).
	finishedRe = regexp.MustCompile(`(?i)can ?not abort (visible|committed|commited|finished)|has already been commit|already committed`)
	// unknownDBRe: the database is gone; nothing can commit in it.
	unknownDBRe = regexp.MustCompile(`(?i)unknown database|database\[[^\]]*\] does not exist`)
)

// maxSettleFailures bounds the failed queries about one label before the
// check is given up and started again (the databases listed afresh).
const maxSettleFailures = 20

// settleLabel makes another writer's label final and, when it is committed,
// visible. A transaction in PREPARE is rolled back, and so is one whose
// label is UNKNOWN (an FE that registers a multi-table transaction only at
// its commit reports UNKNOWN for a loaded one); a rollback refused because
// the FE is committing it is waited for, one refused because it is
// committed counts as committed, and a PREPARE transaction the rollback
// does not find is cancelled (/api/{db}/{label}/_cancel). It reports whether
// the label ends committed. After maxSettleFailures failed queries it
// returns an error.
func (o *Output) settleLabel(ctx context.Context, db, label, writer string) (bool, error) {
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
		case err != nil && unknownDBRe.MatchString(err.Error()):
			return false, nil
		case err != nil:
			failures++
			note = err
		case state == starrocks.StateVisible:
			if waited {
				o.log.Infof("starrocks_txn: database %s: transaction %s of writer %s became visible while this output waited for it", db, label, writer)
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
			switch {
			case rerr == nil:
				if state != starrocks.StateUnknown {
					o.log.Infof("starrocks_txn: database %s: rolled back transaction %s, left open by writer %s of pipeline %s", db, label, writer, o.conf.pipelineID)
				}
				return false, nil
			case finishedRe.MatchString(rerr.Error()) && state == starrocks.StateUnknown && evicted:
				// UNKNOWN on both sides of a second refusal: published
				// long ago, its label state evicted.
				return true, nil
			case finishedRe.MatchString(rerr.Error()) && state == starrocks.StateUnknown:
				// Evicted, or committed (not yet published) just now:
				// ask again.
				evicted, waited, note = true, true, rerr
			case finishedRe.MatchString(rerr.Error()), committingRe.MatchString(rerr.Error()):
				waited = true
				note = rerr
			case notExistRe.MatchString(rerr.Error()) && state == starrocks.StateUnknown:
				return false, nil
			case notExistRe.MatchString(rerr.Error()):
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
		if failures >= maxSettleFailures {
			return false, fmt.Errorf("making transaction %s of writer %s in database %s final: %d attempts failed, the last: %w", label, writer, db, failures, note)
		}
		o.log.Warnf("starrocks_txn: database %s: transaction %s of writer %s of pipeline %s is not final (state %q: %v); the progress is read once it is", db, label, writer, o.conf.pipelineID, state, note)
		if !sleepCtx(ctx, b.next()) {
			return false, ctx.Err()
		}
	}
}

// --- the writer's own side -------------------------------------------------

// nextLabel returns the worker's next label and its number.
func (w *dbWorker) nextLabel() (string, int64) {
	w.labelMu.Lock()
	defer w.labelMu.Unlock()
	w.nextN++
	return starrocks.SeqLabel(w.o.conf.labelPrefix, w.db, w.o.writer, w.nextN), w.nextN
}

// opened records a begun label: it may be committed until done is called.
func (w *dbWorker) opened(n int64) {
	w.labelMu.Lock()
	defer w.labelMu.Unlock()
	if w.open == nil {
		w.open = map[int64]bool{}
	}
	w.open[n] = true
}

// done records that a label is final or will never be committed.
func (w *dbWorker) done(label string) {
	_, n, ok := starrocks.SplitSeqLabel(label)
	if !ok {
		return
	}
	w.labelMu.Lock()
	defer w.labelMu.Unlock()
	delete(w.open, n)
}

// openExcept returns the numbers of the worker's open labels other than m,
// in order: what a row loaded under label m lists.
func (w *dbWorker) openExcept(m int64) []int64 {
	w.labelMu.Lock()
	defer w.labelMu.Unlock()
	var out []int64
	for n := range w.open {
		if n != m {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// writerRecord is one row of the writers table as loaded.
type writerRecord struct {
	Pipeline string `json:"pipeline_id"`
	Writer   string `json:"writer"`
	Number   int64  `json:"label_number"`
	Open     string `json:"open_labels"`
	Label    string `json:"label"`
	Updated  string `json:"updated_at"`
}

// writerRow is the worker's row in the writers table, loaded under the
// label numbered n with the other open labels.
func (w *dbWorker) writerRow(label string, n int64, open []int64, at time.Time) writerRecord {
	return writerRecord{Pipeline: w.o.conf.pipelineID, Writer: w.o.writer, Number: n, Open: formatOpen(open),
		Label: label, Updated: at.UTC().Format(progressTimeLayout)}
}

// heldRow is what a writer row committed by this writer says.
type heldRow struct {
	top  int64
	open map[int64]bool
}

// finds reports whether a successor reading r checks label m.
func (r heldRow) finds(m int64) bool {
	return r.open[m] || (m > r.top && m-r.top <= anchorGap)
}

// covered reports whether a successor reading the writer row StarRocks
// holds would check label m — listed as open, or at most anchorGap above
// the row's own label — and the row is less than half writerRowStale old.
// When a commit's row has a lower number than an anchor committed just
// before it, merge_condition keeps the anchor's row; should the FE ignore
// merge_condition the commit's row replaces it, so m must be found from
// either.
func (w *dbWorker) covered(m int64) bool {
	now := w.o.now()
	w.labelMu.Lock()
	defer w.labelMu.Unlock()
	if !w.anchored || now.Sub(w.durableAt) >= writerRowStale/2 {
		// A row that old may be skipped as stale by a successor.
		return false
	}
	for _, r := range w.held {
		if !r.finds(m) {
			return false
		}
	}
	return true
}

// durable records the writer row of a committed label; at is the row's
// updated_at, from which successors measure its age.
func (w *dbWorker) durable(n int64, open []int64, at time.Time) {
	w.labelMu.Lock()
	defer w.labelMu.Unlock()
	r := heldRow{top: n, open: make(map[int64]bool, len(open))}
	for _, x := range open {
		r.open[x] = true
	}
	if w.anchored && len(w.held) > 0 && n < w.held[0].top {
		// The anchor's row, or this one if merge_condition is ignored.
		w.held = append(w.held, r)
		if at.Before(w.durableAt) {
			w.durableAt = at
		}
		return
	}
	w.anchored = true
	w.durableAt = at
	w.held = []heldRow{r}
}

// tableHeaders are the load headers of the progress and writers tables:
// JSON rows, nothing filtered, and, with mergeCol, a row never replaced by
// one with a lower mergeCol.
func tableHeaders(mergeCol string) map[string]string {
	h := map[string]string{"format": "json", "strip_outer_array": "true"}
	if mergeCol != "" {
		h["merge_condition"] = mergeCol
	}
	return h
}

// loadRows loads rows into table under label, a row never replacing one
// with a higher mergeCol (none when empty).
func (w *dbWorker) loadRows(ctx context.Context, label, table, mergeCol string, body []byte) error {
	req := starrocks.LoadRequest{
		Txn:     starrocks.Txn{DB: w.db, Label: label, Table: table, Multi: true, Timeout: w.o.conf.txnTimeout},
		Headers: tableHeaders(mergeCol),
		Body:    body,
	}
	return w.send(ctx, req)
}

// loadWriterRow loads the worker's writer row under label.
func (w *dbWorker) loadWriterRow(ctx context.Context, label string, r writerRecord) error {
	body, _ := json.Marshal([]writerRecord{r})
	table := writersTable(w.o.conf.progressTable)
	if err := w.loadRows(ctx, label, table, writersNumberCol, body); err != nil {
		return fmt.Errorf("loading the writer row into %s.%s: %w", w.db, table, err)
	}
	w.o.m.loads.Incr(1, w.db, table)
	w.o.m.loadBytes.Incr(int64(len(body)), w.db, table)
	return nil
}

// anchorIfNeeded commits the writer row on its own before the commit of c
// when a successor would not find c's label from the row StarRocks holds
// (the writer's first commit in the database, or labels burnt since).
func (w *dbWorker) anchorIfNeeded(ctx context.Context, c *cycle) error {
	o := w.o
	if o.prog == nil || w.covered(c.n) {
		return nil
	}
	label, n := w.nextLabel()
	if err := o.client.Begin(ctx, w.txn(label)); err != nil {
		return fmt.Errorf("beginning the anchor transaction %s: %w", label, err)
	}
	w.opened(n)
	open, at := w.openExcept(n), o.now()
	if err := w.loadWriterRow(ctx, label, w.writerRow(label, n, open, at)); err != nil {
		w.rollback(label)
		return fmt.Errorf("anchor transaction %s: %w", label, err)
	}
	committed, ok, err := w.commitLabel(ctx, label)
	if !ok {
		return ctx.Err()
	}
	if !committed {
		w.rollback(label)
		return fmt.Errorf("committing the anchor transaction %s: %w", label, err)
	}
	w.durable(n, open, at)
	o.m.commits.Incr(1, w.db)
	return nil
}

// setInDoubt counts commits sent whose outcome is not known.
func (w *dbWorker) setInDoubt(d int) {
	w.labelMu.Lock()
	w.inDoubt += d
	w.labelMu.Unlock()
}

// forgetWriter deletes the writer's rows on a clean close: nothing it began
// can be committed any more, so no successor needs to probe its labels. A
// commit whose outcome is unknown keeps the row.
func (o *Output) forgetWriter(ctx context.Context) {
	if o.prog == nil {
		return
	}
	for _, w := range o.workerList() {
		w.labelMu.Lock()
		skip := w.inDoubt > 0 || !w.anchored
		w.labelMu.Unlock()
		if skip {
			continue
		}
		if err := w.deleteWriterRow(ctx); err != nil {
			o.log.Debugf("starrocks_txn: database %s: deleting the row of writer %s: %v (successors check its labels instead)", w.db, o.writer, err)
		}
	}
}

func (w *dbWorker) deleteWriterRow(ctx context.Context) error {
	o := w.o
	label, _ := w.nextLabel()
	if err := o.client.Begin(ctx, w.txn(label)); err != nil {
		return err
	}
	type delRow struct {
		writerRecord
		Op int `json:"__op"`
	}
	body, _ := json.Marshal([]delRow{{writerRecord: w.writerRow(label, 0, nil, o.now()), Op: 1}})
	// No merge_condition: it does not apply to deletes.
	if err := w.loadRows(ctx, label, writersTable(o.conf.progressTable), "", body); err != nil {
		w.rollback(label)
		return err
	}
	if err := o.client.Commit(ctx, w.txn(label)); err != nil {
		return errors.Join(err, o.client.Rollback(ctx, w.txn(label)))
	}
	return nil
}

// workerList returns the database workers.
func (o *Output) workerList() []*dbWorker {
	o.mu.Lock()
	defer o.mu.Unlock()
	ws := make([]*dbWorker, 0, len(o.workers))
	for _, db := range sortedKeys(o.workers) {
		ws = append(ws, o.workers[db])
	}
	return ws
}
