package starrocks_txn

// Home of G75 (ARCHITECTURE.md §11.1): per-table: a part is done once COMMITTED, made visible
// in commit order per table, so a late publish never undoes a later cycle's rows. Main test:
// TestPerTableLateCommitNeverUndoesALaterCycle.
//
// Home of G46 (ARCHITECTURE.md §11.1): per-table mode: every part is prepared before the
// decision commits, and a cycle's labels end together. Main test:
// TestPerTableLoadsWholeSourceTransactions.
//
// Home of G48 (ARCHITECTURE.md §11.1): a per-table cycle decides within half the prepared
// timeout, else it is rolled back and replayed. Main test:
// TestPerTableCycleTooOldToDecideIsRolledBack.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The per-table protocol (ARCHITECTURE.md §15): StarRocks 3.x has no
// multi-table transactions, but its classic ones can be PREPARED. A cycle
// under number n (label c.label, starrocks.CycleLabel) is:
//
//   - with writer tracking, the decision: label c.label itself, a classic
//     transaction on the writers table begun with the cycle (eagerly, as a
//     multi-table cycle is, so that a take-over's rollback of it fences a
//     live writer's cycle: takeover.go), loaded with the writer row after
//     the data, and COMMITTED once every other label of the cycle is
//     PREPARED: the cycle's commit point;
//   - the parts: one classic transaction per data table, "<c.label>-<k>",
//     begun with the table's header at the table's first load and streamed
//     like a multi-table load; with exactly_once the progress table's
//     "<c.label>-p", begun at the progress rows.
//
// At the commit every part is PREPARED, the progress part first (so that a
// progress part still PREPARED proves that no data part of its cycle has
// expired: they were prepared after it, with the same timeout); then the
// decision is committed; then every data part is COMMITTED, the progress
// part last. A prepare that fails rolls the whole cycle back (replayed, or
// split by isolate for rows StarRocks refused); a decision that is not
// committed rolls the prepared parts back; once it is committed each part is
// committed whatever it takes (a commit of a PREPARED label is idempotent).
// Without writer tracking there is no decision: the parts are committed one
// by one after the prepares, and a crash between them leaves the replay from
// the Kafka offsets, which moved with nothing of the cycle, to complete it.

// perTable is the per-table protocol.
type perTable struct {
	// header is sent with each prepare as prepared_timeout (0: none).
	header time.Duration
	// limit is how long StarRocks keeps a prepared transaction waiting for
	// its commit (the header, or the FE's
	// prepared_transaction_default_timeout_second): a cycle decides within
	// half of it (tooOld).
	limit   atomic.Int64
	learned atomic.Bool
}

func newPerTable(c config) *perTable {
	p := &perTable{header: c.mode.preparedTimeout}
	limit := defaultPreparedLimit
	if p.header > 0 {
		limit = p.header
	}
	p.limit.Store(int64(limit))
	return p
}

// learnLimit learns, once, how long the FE keeps a prepared transaction: the
// prepared_timeout the output sends (read from 3.5.4), else the FE's config
// over mysql_address (when the account may read it), else its default.
// version is the FE's version when known ("" otherwise).
func (p *perTable) learnLimit(ctx context.Context, o *Output, version string) {
	if !p.learned.CompareAndSwap(false, true) {
		return
	}
	fe, src := defaultPreparedLimit, "prepared_transaction_default_timeout_second's default: the FE's config was not read"
	if o.meta != nil {
		v, found, err := o.meta.FEConfig(ctx, "prepared_transaction_default_timeout_second")
		switch s, perr := strconv.Atoi(v); {
		case err != nil:
			src = fmt.Sprintf("prepared_transaction_default_timeout_second's default: reading the FE's config failed: %v", err)
		case found && perr == nil && s > 0:
			fe, src = time.Duration(s)*time.Second, "the FE's prepared_transaction_default_timeout_second"
		}
	}
	limit := fe
	if p.header > 0 {
		switch {
		case version != "" && versionAtLeast(version, 3, 5, 4):
			limit, src = p.header, fieldPreparedTimeout
		case version != "":
			o.log.Warnf("%s is set, but StarRocks %s reads it only from 3.5.4: prepared transactions wait %s (%s)", fieldPreparedTimeout, version, fe, src)
			limit = min(p.header, fe)
		default:
			limit, src = min(p.header, fe), fieldPreparedTimeout+" or the FE's own, whichever is shorter (the FE's version is not known)"
		}
	}
	p.limit.Store(int64(limit))
	o.log.Infof("Per-table transactions: a prepared transaction waits %s for its commit (%s); a cycle is decided within %s of its first prepare, or rolled back and replayed", limit, src, limit/2)
}

// versionAtLeast reports whether a "x.y.z" version is at least
// major.minor.patch (a missing part is 0).
func versionAtLeast(v string, major, minor, patch int) bool {
	parts := strings.SplitN(v, ".", 3)
	want := []int{major, minor, patch}
	for i := range want {
		n := 0
		if i < len(parts) {
			n, _ = strconv.Atoi(strings.TrimFunc(parts[i], func(r rune) bool { return r < '0' || r > '9' }))
		}
		if n != want[i] {
			return n > want[i]
		}
	}
	return true
}

// tooOld reports whether the cycle's first prepare is half the prepared
// timeout old: deciding it now could let a part expire before its commit.
func (p *perTable) tooOld(c *cycle, now time.Time) bool {
	return c != nil && c.pt != nil && !c.pt.preparedAt.IsZero() && now.Sub(c.pt.preparedAt) >= time.Duration(p.limit.Load())/2
}

// ptCycle is the per-table part of a cycle (cycle.pt).
type ptCycle struct {
	// mu guards parts and next: the loads of a cycle's tables begin their
	// transactions concurrently.
	mu    sync.Mutex
	parts map[string]*ptPart
	next  int
	// progress is the progress table's part (exactly_once), decision the
	// cycle's decision (writer tracking; nil without).
	progress *ptPart
	decision *ptPart
	// preparedAt is when the first prepare was sent.
	preparedAt time.Time
	// done is set once every label of the cycle is committed or rolled
	// back: a rollback has nothing left to do.
	done bool
}

// ptPart is one classic transaction of a cycle.
type ptPart struct {
	label, table string
	// sent: a begin was sent (the label may exist); begun: it answered OK.
	sent, begun bool
	prepared    bool
}

// part returns the part of c that loads table, making it at its first use.
func (pt *ptCycle) part(o *Output, c *cycle, table string) *ptPart {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	switch {
	case pt.decision != nil && table == writersTable(o.conf.progressTable):
		return pt.decision
	case o.conf.exactlyOnce && table == o.conf.progressTable:
		if pt.progress == nil {
			pt.progress = &ptPart{label: starrocks.PartLabel(c.label, "p"), table: table}
		}
		return pt.progress
	}
	if pt.parts == nil {
		pt.parts = map[string]*ptPart{}
	}
	x := pt.parts[table]
	if x == nil {
		pt.next++
		x = &ptPart{label: starrocks.PartLabel(c.label, strconv.Itoa(pt.next)), table: table}
		pt.parts[table] = x
	}
	return x
}

// dataParts are the begun parts of the data tables, by label.
func (pt *ptCycle) dataParts() []*ptPart {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	out := make([]*ptPart, 0, len(pt.parts))
	for _, x := range pt.parts {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].label < out[j].label })
	return out
}

// all are every part a begin was sent for, the decision last.
func (pt *ptCycle) all() []*ptPart {
	out := pt.dataParts()
	if pt.progress != nil {
		out = append(out, pt.progress)
	}
	if pt.decision != nil {
		out = append(out, pt.decision)
	}
	kept := out[:0]
	for _, x := range out {
		if x.sent {
			kept = append(kept, x)
		}
	}
	return kept
}

func (*perTable) classic() bool { return true }

// begin starts a cycle: a number and its label and, with writer tracking,
// the decision's transaction on the writers table (created first when
// missing). It retries until it succeeds or ctx ends, as a multi-table
// begin does; a database that does not exist poisons what waits for it.
func (p *perTable) begin(ctx context.Context, w *dbWorker, c *cycle) bool {
	o := w.o
	wt := writerTrackingOf(o.track)
	if wt == nil {
		label, n := w.nextLabel()
		w.labels.opened(n)
		c.reset()
		c.label, c.n, c.begun, c.sent = label, n, o.now(), map[string]int{}
		c.pt = &ptCycle{}
		return true
	}
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	for {
		err := wt.ensureTables(ctx, w)
		if err == nil {
			label, n := w.nextLabel()
			sentAt := o.now() // as a multi-table begin (w.begin)
			if err = o.client.Begin(ctx, w.txn(label)); err == nil {
				w.labels.opened(n)
				w.began()
				c.reset()
				c.label, c.n, c.begun, c.sent = label, n, sentAt, map[string]int{}
				c.pt = &ptCycle{decision: &ptPart{label: label, table: writersTable(o.conf.progressTable), sent: true, begun: true}}
				return true
			}
			if ctx.Err() != nil {
				return false
			}
			// The label may exist (a begin whose reply was lost): it holds
			// nothing and expires; a new one is taken.
			o.m.retries.Incr(1, w.metricDB(), reasonBegin)
			switch {
			case starrocks.ClassOf(err) == starrocks.ClassPerTxn && starrocks.IsUnknownDatabase(err):
				w.poisonWaiting(c, err)
				if len(c.txns) == 0 {
					w.log.Errorf("Beginning the decision transaction of a cycle: %v; its source transactions are poisoned, and a begin is tried again only for the next one", err)
					return false
				}
			case starrocks.ClassOf(err) == starrocks.ClassPerTxn:
				// The writers table went away: created again first.
				w.progressReady = false
			}
			err = fmt.Errorf("beginning the decision transaction %s: %w", label, err)
		}
		if ctx.Err() != nil {
			return false
		}
		w.log.Errorf("Beginning a per-table cycle: %v; retrying", err)
		if !sleepCtx(ctx, b.next()) {
			return false
		}
	}
}

// labelFor returns the label table's rows of c go under, beginning its
// transaction at the table's first load (with the table's header and the
// transaction timeout). A failed begin is returned; its label is never used
// again (c is replayed under a new number).
func (p *perTable) labelFor(ctx context.Context, w *dbWorker, c *cycle, table string) (string, error) {
	if c.label == "" || c.pt == nil {
		return "", errors.New("no per-table cycle begun")
	}
	x := c.pt.part(w.o, c, table)
	if x.begun {
		return x.label, nil
	}
	x.sent = true
	err := w.o.client.Begin(ctx, starrocks.Txn{DB: w.db, Label: x.label, Table: table, Timeout: w.o.conf.txnTimeout})
	if err != nil {
		return "", fmt.Errorf("beginning the transaction %s of table %s.%s: %w", x.label, w.db, table, err)
	}
	x.begun = true
	w.began()
	return x.label, nil
}

func (p *perTable) load(ctx context.Context, w *dbWorker, c *cycle) error {
	return w.loadPending(ctx, c)
}

// errPreparedTooOld replays a cycle whose prepares aged past half the
// prepared timeout before it was decided.
var errPreparedTooOld = errors.New("the cycle's prepared transactions are half their prepared timeout old: rolled back rather than decided, so none of them can expire between the decision and its commit")

// commit prepares every part of c, decides, and commits the parts
// (ARCHITECTURE.md §15.1). committed is true once every data part and the
// progress part are committed; ok is false when ctx ended after the
// decision was sent: the outcome is then a successor's to settle
// (takeover.go), and the ledger keeps the cycle in doubt.
func (p *perTable) commit(ctx context.Context, w *dbWorker, c *cycle) (bool, bool, error) {
	o := w.o
	pt := c.pt
	if pt == nil {
		return false, true, errors.New("no per-table cycle begun")
	}
	data := pt.dataParts()
	pt.preparedAt = o.now()
	if pt.progress != nil && pt.progress.begun {
		if err := p.prepare(ctx, w, pt.progress); err != nil {
			return p.fail(w, c, err)
		}
	}
	if err := p.prepareAll(ctx, w, data); err != nil {
		return p.fail(w, c, err)
	}
	if p.tooOld(c, o.now()) {
		return p.fail(w, c, errPreparedTooOld)
	}
	if part := w.expiredLeaseOfCommit(c); part != "" {
		return p.fail(w, c, fmt.Errorf("the consumer group membership of partition %s is not confirmed: the cycle is rolled back rather than decided, and replayed once it is", part))
	}
	if pt.decision != nil {
		committed, ok, err := w.commitLabel(ctx, c.label, carried{writerTop: c.rowTop, progress: c.progress, cycle: c})
		if !ok {
			return false, false, err
		}
		if !committed {
			return p.fail(w, c, fmt.Errorf("the decision %s did not commit: %w", c.label, err))
		}
	}
	return p.commitParts(ctx, w, c, data)
}

// commitParts commits every data part of a decided cycle, then its progress
// part, and measures the window between the first commit and the last data
// commit's answer (starrocks_txn_commit_window_ns).
func (p *perTable) commitParts(ctx context.Context, w *dbWorker, c *cycle, data []*ptPart) (bool, bool, error) {
	o := w.o
	pt := c.pt
	// In doubt until every part is final: a clean close keeps the writer
	// row, so that a successor finds the parts left prepared.
	w.labels.commitSent()
	o.mu.Lock()
	o.core.commitSent(c.label, w.db)
	o.mu.Unlock()
	settled := func() {
		w.labels.commitResolved()
		o.mu.Lock()
		o.core.commitDecided(c.label)
		o.mu.Unlock()
		w.labelDone(c.label)
		pt.done = true
	}
	start := o.now()
	results := make([]partOutcome, len(data))
	var wg sync.WaitGroup
	for i, x := range data {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = p.commitPart(ctx, w, x)
		}()
	}
	wg.Wait()
	window := o.now().Sub(start)
	measured := len(data) > 0
	var aborted []string
	for i, r := range results {
		switch r {
		case partUnknown:
			return false, false, ctx.Err()
		case partAborted:
			aborted = append(aborted, data[i].table)
		}
	}
	if measured {
		o.m.commitWindow.Timing(int64(window), w.metricDB())
	}
	if len(aborted) > 0 {
		if pt.progress != nil && pt.progress.prepared {
			p.rollbackParts(w, []*ptPart{pt.progress})
		}
		settled()
		return false, true, p.broken(w, c, data, aborted)
	}
	if pt.progress != nil && pt.progress.prepared {
		switch p.commitPart(ctx, w, pt.progress) {
		case partUnknown:
			return false, false, ctx.Err()
		case partAborted:
			settled()
			o.m.brokenCycles.Incr(1, w.metricDB())
			err := fmt.Errorf("cycle %s: every table committed, but the progress table's prepared transaction %s was aborted (its prepared timeout passed): the cycle is loaded again, so a DUPLICATE KEY table gets its rows twice; raise %s (or the FE's prepared_transaction_default_timeout_second)", c.label, pt.progress.label, fieldPreparedTimeout)
			w.log.Errorf("%v", err)
			return false, true, err
		}
	}
	settled()
	w.log.Debugf("Cycle %s: %d tables committed within %v", c.label, len(data), window)
	return true, true, nil
}

// broken reports a decided cycle of which some part was aborted (its
// prepared timeout passed before its commit): the cycle is replayed whole.
func (p *perTable) broken(w *dbWorker, c *cycle, data []*ptPart, aborted []string) error {
	o := w.o
	o.m.brokenCycles.Incr(1, w.metricDB())
	var committed []string
	for _, x := range data {
		if !containsString(aborted, x.table) {
			committed = append(committed, x.table)
		}
	}
	err := fmt.Errorf("cycle %s was decided, but the prepared transactions of tables %s were aborted before their commit (their prepared timeout passed): tables %s committed, so until the replay a reader sees part of its source transactions; the cycle is replayed, and a DUPLICATE KEY table among the committed ones gets its rows twice. Raise %s (or the FE's prepared_transaction_default_timeout_second) well above the time a commit takes",
		c.label, strings.Join(aborted, ", "), strings.Join(committed, ", "), fieldPreparedTimeout)
	w.log.Errorf("%v", err)
	return err
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// partOutcome is how the commit of a prepared part ended.
type partOutcome int

const (
	partCommitted partOutcome = iota
	partAborted
	// partUnknown: ctx ended first.
	partUnknown
)

// commitPart commits a prepared part until it is final: COMMITTED or
// VISIBLE is done; ABORTED means it expired; a state StarRocks no longer
// knows is a final one it evicted, which after a prepare the output saw
// answered is a commit (nothing but its commit or its expiry ends a part of
// a decided cycle, and a cycle decides within half the prepared timeout).
// A PREPARED part is committed again, with backoff, forever: the decision
// is made.
func (p *perTable) commitPart(ctx context.Context, w *dbWorker, x *ptPart) partOutcome {
	o := w.o
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	for {
		err := o.client.Commit(ctx, w.txn(x.label))
		if err == nil {
			return partCommitted
		}
		if ctx.Err() != nil {
			return partUnknown
		}
		state, serr := o.client.WaitFinal(ctx, w.db, x.label, min(resolveFirstPoll, o.conf.labelStateWait))
		if ctx.Err() != nil {
			return partUnknown
		}
		switch {
		case serr == nil && state.Committed():
			return partCommitted
		case serr == nil && state == starrocks.StateAborted:
			return partAborted
		case serr == nil && state == starrocks.StateUnknown:
			w.log.Warnf("StarRocks no longer knows the prepared transaction %s of table %s (its final state was evicted); it was prepared and its cycle decided, so it is taken as committed", x.label, x.table)
			return partCommitted
		}
		w.log.Warnf("Committing the prepared transaction %s of table %s of a decided cycle: %v (state %q, %v); committing again", x.label, x.table, err, state, serr)
		if !sleepCtx(ctx, b.next()) {
			return partUnknown
		}
	}
}

// prepare prepares one part, sending it again while StarRocks answers
// TXN_IN_PROCESSING (nothing done yet). A failure caused by the part's rows
// names its table (rejection.go).
func (p *perTable) prepare(ctx context.Context, w *dbWorker, x *ptPart) error {
	txn := starrocks.Txn{DB: w.db, Label: x.label, Table: x.table, PreparedTimeout: p.header}
	for attempt := 0; ; attempt++ {
		err := w.o.client.Prepare(ctx, txn)
		if err == nil {
			x.prepared = true
			return nil
		}
		if starrocks.ClassOf(err) != starrocks.ClassRetrySafe || attempt >= retrySafeMax {
			return &loadError{table: x.table, err: fmt.Errorf("preparing %s: %w", x.label, err)}
		}
		if !sleepCtx(ctx, retrySafeDelay) {
			return ctx.Err()
		}
	}
}

// prepareAll prepares the parts in parallel; the first failure (a
// per-transaction one first) is returned.
func (p *perTable) prepareAll(ctx context.Context, w *dbWorker, parts []*ptPart) error {
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, x := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.prepare(ctx, w, x)
		}()
	}
	wg.Wait()
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || starrocks.ClassOf(err) == starrocks.ClassPerTxn) {
			first = err
		}
	}
	return first
}

// fail rolls every label of c back and reports the cycle not committed
// with err: nothing of it was decided, so nothing of it commits.
func (p *perTable) fail(w *dbWorker, c *cycle, err error) (bool, bool, error) {
	p.rollback(w, c)
	return false, true, err
}

// rollback rolls back every label of c a begin was sent for, best effort:
// none of them is committed now (the decision, when there is one, is rolled
// back with them, or was not committed). A PREPARED part whose rollback
// fails is tried again a few times: it would otherwise wait for its prepared
// timeout, holding a running-transaction slot.
func (p *perTable) rollback(w *dbWorker, c *cycle) {
	if c.label == "" {
		return
	}
	if c.pt != nil && !c.pt.done {
		p.rollbackParts(w, c.pt.all())
		c.pt.done = true
	}
	w.labelDone(c.label)
}

// rollbackParts rolls parts back in parallel.
func (p *perTable) rollbackParts(w *dbWorker, parts []*ptPart) {
	var wg sync.WaitGroup
	for _, x := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tries := 1
			if x.prepared {
				tries = 3
			}
			for i := 0; i < tries; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
				err := w.o.client.Rollback(ctx, w.txn(x.label))
				cancel()
				if err == nil || starrocks.RollbackRefusalOf(err) == starrocks.RefusalNotFound {
					return
				}
				if i == tries-1 {
					if x.prepared {
						w.log.Warnf("Rolling back the prepared transaction %s of table %s: %v; it is never committed, and StarRocks aborts it at its prepared timeout", x.label, x.table, err)
					} else {
						w.log.Debugf("Rollback of label %s: %v", x.label, err)
					}
					return
				}
				time.Sleep(time.Duration(i+1) * 100 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
}
