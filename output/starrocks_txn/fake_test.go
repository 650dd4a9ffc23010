package starrocks_txn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// fakeSR is an in-memory StarRocks multi-table transaction server: it keeps
// each label's loaded rows apart until commit, applies a commit atomically,
// and lets tests inject faults per operation.
type fakeSR struct {
	mu        sync.Mutex
	txns      map[string]*fakeTxn
	committed map[string][]map[string]any // table -> rows in apply order
	commits   []fakeCommit
	loads     []fakeLoad
	inflight  map[string]bool
	overlap   int
	// unknownTables fail every load with a per-transaction error.
	unknownTables map[string]bool
	// hook may replace the outcome of an operation: return handled=true
	// with the error to report.
	hook func(op string, t *fakeTxn, table string) (error, bool)
	// loadDelay delays every load (random scheduling).
	loadDelay func() time.Duration
	// commitGate, when set, blocks every commit that carries rows other
	// than the progress and writers tables' (not the anchors) until it is
	// closed.
	commitGate chan struct{}
	// lastBodyHasBad is set, for the hook, when the load being handled
	// carries a row with "bad": true.
	lastBodyHasBad bool
	// evicted labels are forgotten as StarRocks forgets finished labels
	// (label_keep_max_num): get_load_state answers UNKNOWN, commit and
	// rollback "does not exist"; their commits and rows stay.
	evicted map[string]bool
	// errorLogs are the error logs ErrorLog serves, by URL.
	errorLogs map[string][]string
	// clock, when set, is the time the fake reads (the output's clock:
	// withClock(clock.now)), and the fake aborts a transaction older than
	// its txn_timeout at its next load or commit, as StarRocks does. Each
	// loaded row takes rowCost of it: a load takes time with its size.
	clock   *offsetClock
	rowCost time.Duration

	// observers run before every call (the outputs' lifecycle checks).
	omu       sync.Mutex
	observers []func()
}

// observe runs fn before every call the fake serves.
func (f *fakeSR) observe(fn func()) {
	f.omu.Lock()
	defer f.omu.Unlock()
	f.observers = append(f.observers, fn)
}

func (f *fakeSR) notify() {
	f.omu.Lock()
	obs := append([]func(){}, f.observers...)
	f.omu.Unlock()
	for _, fn := range obs {
		fn()
	}
}

type fakeTxn struct {
	label   string
	db      string
	state   starrocks.LabelState
	pending map[string][]map[string]any
	order   []string
	loaded  bool
	// begun and timeout are the transaction's begin (by the fake's clock)
	// and its txn_timeout.
	begun   time.Time
	timeout time.Duration
}

// offsetClock is the real time moved forward by what was added: a slow
// StarRocks without sleeping.
type offsetClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *offsetClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *offsetClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// expired aborts ft when the fake's clock says it outlived its timeout.
// Called with f.mu held.
func (f *fakeSR) expired(ft *fakeTxn) bool {
	if f.clock == nil || ft.timeout <= 0 || ft.state.Committed() || f.clock.now().Sub(ft.begun) <= ft.timeout {
		return false
	}
	ft.state = starrocks.StateAborted
	return true
}

type fakeCommit struct {
	label string
	rows  map[string][]map[string]any
	at    time.Time
}

type fakeLoad struct {
	label string
	table string
	rows  int
	txns  []string
	at    time.Time
}

func newFakeSR() *fakeSR {
	return &fakeSR{
		txns:          map[string]*fakeTxn{},
		committed:     map[string][]map[string]any{},
		inflight:      map[string]bool{},
		unknownTables: map[string]bool{},
		evicted:       map[string]bool{},
		errorLogs:     map[string][]string{},
	}
}

func srErr(op string, class starrocks.Class, msg string) error {
	return &starrocks.Error{Op: op, Class: class, Status: "FAILED", Message: msg, HTTPCode: 200}
}

func (f *fakeSR) Begin(ctx context.Context, t starrocks.Txn) error {
	f.notify()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !t.Multi {
		return srErr("begin", starrocks.ClassFatal, "not multi")
	}
	if _, ok := f.txns[t.Label]; ok {
		return srErr("begin", starrocks.ClassFatal, "Label ["+t.Label+"] has already been used.")
	}
	ft := &fakeTxn{label: t.Label, db: t.DB, state: starrocks.StateUnknown, pending: map[string][]map[string]any{}, timeout: t.Timeout}
	if f.clock != nil {
		ft.begun = f.clock.now()
	}
	if f.hook != nil {
		if err, ok := f.hook("begin", ft, ""); ok {
			return err
		}
	}
	f.txns[t.Label] = ft
	return nil
}

// Prepare: the fake has multi-table transactions only, which have no
// prepare (the per-table protocol is tested against the emulator in 3.x
// mode: pertable_test.go).
func (f *fakeSR) Prepare(ctx context.Context, t starrocks.Txn) error {
	f.notify()
	return srErr("prepare", starrocks.ClassFatal, "Unsupported operation: TXN_PREPARE")
}

func (f *fakeSR) Load(ctx context.Context, r starrocks.LoadRequest) error {
	f.notify()
	key := r.Label + "/" + r.Table
	f.mu.Lock()
	if f.inflight[key] {
		f.overlap++
	}
	f.inflight[key] = true
	delay := time.Duration(0)
	if f.loadDelay != nil {
		delay = f.loadDelay()
	}
	f.mu.Unlock()
	if delay > 0 {
		// Real time: a slow load is the fake's answer taking this long,
		// which the output awaits on the wall clock (its loads overlap,
		// its commit cycles cut while loads are in flight).
		time.Sleep(delay)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.inflight, key)
	ft, ok := f.txns[r.Label]
	if !ok || ft.state == starrocks.StateAborted {
		return srErr("load", starrocks.ClassTransient, "stream load task "+r.Label+" does not exist")
	}
	if r.Headers["format"] != "json" || r.Headers["strip_outer_array"] != "true" {
		return srErr("load", starrocks.ClassFatal, "bad headers")
	}
	f.lastBodyHasBad = bytes.Contains(r.Body, []byte(`"bad":true`))
	if f.hook != nil {
		if err, ok := f.hook("load", ft, r.Table); ok {
			if starrocks.ClassOf(err) != starrocks.ClassRetrySafe {
				ft.state = starrocks.StateAborted
			}
			return err
		}
	}
	if f.unknownTables[r.Table] {
		ft.state = starrocks.StateAborted
		return srErr("load", starrocks.ClassPerTxn, "Failed to find table "+r.Table+" in db "+r.DB)
	}
	var rows []map[string]any
	if err := json.Unmarshal(r.Body, &rows); err != nil {
		return srErr("load", starrocks.ClassFatal, "bad body: "+err.Error())
	}
	if f.clock != nil {
		f.clock.add(time.Duration(len(rows)) * f.rowCost)
		if f.expired(ft) {
			return srErr("load", starrocks.ClassTransient, "transaction "+r.Label+" aborted: timeout by txn manager")
		}
	}
	if _, seen := ft.pending[r.Table]; !seen {
		ft.order = append(ft.order, r.Table)
	}
	ft.pending[r.Table] = append(ft.pending[r.Table], rows...)
	ft.loaded = true
	ft.state = starrocks.StatePrepare
	var txns []string
	for _, row := range rows {
		txns = append(txns, fmt.Sprint(row["txn"]))
	}
	f.loads = append(f.loads, fakeLoad{label: r.Label, table: r.Table, rows: len(rows), txns: txns, at: time.Now()})
	return nil
}

func (f *fakeSR) Commit(ctx context.Context, t starrocks.Txn) error {
	f.notify()
	f.mu.Lock()
	gate := f.commitGate
	if ft, ok := f.txns[t.Label]; ok && gate != nil {
		anchor := true
		for tbl := range ft.pending {
			if tbl != defaultProgressTable && tbl != writersTable(defaultProgressTable) {
				anchor = false
			}
		}
		if anchor {
			gate = nil
		}
	}
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ft, ok := f.txns[t.Label]
	if !ok || f.evicted[t.Label] {
		return srErr("commit", starrocks.ClassAmbiguous, "stream load task "+t.Label+" does not exist")
	}
	if f.hook != nil {
		if err, ok := f.hook("commit", ft, ""); ok {
			return err
		}
	}
	if f.expired(ft) || ft.state == starrocks.StateAborted {
		return srErr("commit", starrocks.ClassTransient, "Can not commit CANCELLED transaction")
	}
	f.apply(ft)
	return nil
}

// apply makes a transaction's rows visible at once.
func (f *fakeSR) apply(ft *fakeTxn) {
	for _, tbl := range ft.order {
		f.committed[tbl] = append(f.committed[tbl], ft.pending[tbl]...)
	}
	ft.state = starrocks.StateVisible
	f.commits = append(f.commits, fakeCommit{label: ft.label, rows: ft.pending, at: time.Now()})
}

func (f *fakeSR) Rollback(ctx context.Context, t starrocks.Txn) error {
	f.notify()
	f.mu.Lock()
	defer f.mu.Unlock()
	ft, ok := f.txns[t.Label]
	if !ok || f.evicted[t.Label] {
		return srErr("rollback", starrocks.ClassPerTxn, "stream load task"+t.Label+"does not exist")
	}
	if ft.state.Committed() {
		return srErr("rollback", starrocks.ClassFatal, "Can not abort VISIBLE transaction")
	}
	ft.state = starrocks.StateAborted
	return nil
}

func (f *fakeSR) Cancel(ctx context.Context, db, label string) error {
	return f.Rollback(ctx, starrocks.Txn{DB: db, Label: label, Multi: true})
}

func (f *fakeSR) WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (starrocks.LabelState, error) {
	f.notify()
	f.mu.Lock()
	defer f.mu.Unlock()
	ft, ok := f.txns[label]
	if !ok || f.evicted[label] {
		return starrocks.StateUnknown, nil
	}
	if f.hook != nil {
		if err, ok := f.hook("state", ft, ""); ok {
			return ft.state, err
		}
	}
	return ft.state, nil
}

// ErrorLog serves the lines of errorLogs[url].
func (f *fakeSR) ErrorLog(ctx context.Context, url string, maxLines int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lines, ok := f.errorLogs[url]
	if !ok {
		return nil, fmt.Errorf("no error log at %s", url)
	}
	return lines[:min(maxLines, len(lines))], nil
}

// knows reports whether label was begun through the fake.
func (f *fakeSR) knows(label string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.txns[label]
	return ok
}

func (f *fakeSR) rows(table string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.committed[table]...)
}

func (f *fakeSR) commitCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.commits)
}

// fakeDL records dead-lettered batches.
type fakeDL struct {
	mu      sync.Mutex
	batches []service.MessageBatch
}

func (d *fakeDL) WriteBatch(ctx context.Context, b service.MessageBatch) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.batches = append(d.batches, b)
	return nil
}

func (d *fakeDL) Close(ctx context.Context) error { return nil }

func (d *fakeDL) txnIDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ids []string
	for _, b := range d.batches {
		id, _ := b[0].MetaGet(contract.KeyTxnID)
		ids = append(ids, id)
	}
	return ids
}

// gatedDL blocks dead-letter writes until released.
type gatedDL struct {
	fakeDL
	gate chan struct{}
}

func (d *gatedDL) WriteBatch(ctx context.Context, b service.MessageBatch) error {
	select {
	case <-d.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return d.fakeDL.WriteBatch(ctx, b)
}

// fakeProgress is the progress store over the fake server: it reads the
// committed rows of the progress table, per database of the label that
// committed them.
type fakeProgress struct {
	f     *fakeSR
	table string

	mu      sync.Mutex
	ensured []string
	// reads counts the reads of the progress, readSizes the partitions
	// each asked for: a read is one statement per database (per
	// starrocks.ProgressReadChunk partitions) over the MySQL port.
	reads     int
	readSizes []int
	// hide, when set, reports the labels committed and not yet published:
	// a read of the progress does not see their rows.
	hide func(label string) bool
}

func (fp *fakeProgress) ensure(ctx context.Context, db string) error {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.ensured = append(fp.ensured, db)
	return nil
}

func (fp *fakeProgress) read(ctx context.Context, pipelineID string, partitions []string) (map[string]progressEntry, error) {
	fp.mu.Lock()
	fp.reads++
	fp.readSizes = append(fp.readSizes, len(partitions))
	fp.mu.Unlock()
	fp.f.mu.Lock()
	defer fp.f.mu.Unlock()
	want := map[string]bool{}
	for _, p := range partitions {
		want[p] = true
	}
	out := map[string]progressEntry{}
	for _, c := range fp.f.commits {
		if fp.hide != nil && fp.hide(c.label) {
			continue
		}
		db := fp.f.txns[c.label].db
		for _, r := range c.rows[fp.table] {
			part, _ := r["source_partition"].(string)
			if r["pipeline_id"] != pipelineID || !want[part] {
				continue
			}
			e := out[part]
			e.merge(db, int64(r["committed_offset"].(float64)), int64(r["txn_end_offset"].(float64)))
			out[part] = e
		}
	}
	return out, nil
}

// writers reads the writer rows the fake server committed, in commit order:
// a later row of a writer replaces the earlier one, a delete (__op 1)
// removes it.
func (fp *fakeProgress) writers(ctx context.Context, pipelineID string) (map[string][]writerRow, error) {
	fp.f.mu.Lock()
	defer fp.f.mu.Unlock()
	last := map[string]map[string]writerRow{}
	for _, c := range fp.f.commits {
		db := fp.f.txns[c.label].db
		for _, r := range c.rows[writersTable(fp.table)] {
			if r["pipeline_id"] != pipelineID {
				continue
			}
			w := r["writer"].(string)
			if last[db] == nil {
				last[db] = map[string]writerRow{}
			}
			if op, _ := r["__op"].(float64); op == 1 {
				delete(last[db], w)
				continue
			}
			open, err := starrocks.ParseOpenLabels(r["open_labels"].(string))
			if err != nil {
				return nil, err
			}
			top := int64(r["label_number"].(float64))
			if prev, ok := last[db][w]; ok && top < prev.top {
				continue // merge_condition: label_number
			}
			updated, _ := r["updated_at"].(string)
			last[db][w] = writerRow{writer: w, top: top, open: open, label: r["label"].(string), updated: starrocks.ParseRowTime(updated)}
		}
	}
	out := map[string][]writerRow{}
	for db, m := range last {
		for _, k := range sortedKeys(m) {
			out[db] = append(out[db], m[k])
		}
	}
	return out, nil
}

// writerRow is the row of one writer in db, as writers reads them.
func (fp *fakeProgress) writerRow(ctx context.Context, db, pipelineID, writer string) (writerRow, bool, error) {
	rows, err := fp.writers(ctx, pipelineID)
	if err != nil {
		return writerRow{}, false, err
	}
	for _, r := range rows[db] {
		if r.writer == writer {
			return r, true, nil
		}
	}
	return writerRow{}, false, nil
}

// progressRow is the committed progress row of a partition in db: a later
// row replaces an earlier one unless its committed_offset is lower
// (merge_condition).
func (fp *fakeProgress) progressRow(ctx context.Context, db, pipelineID, partition string) (heldProgress, bool, error) {
	fp.f.mu.Lock()
	defer fp.f.mu.Unlock()
	var held heldProgress
	found := false
	for _, c := range fp.f.commits {
		if fp.f.txns[c.label].db != db {
			continue
		}
		for _, r := range c.rows[fp.table] {
			if r["pipeline_id"] != pipelineID || r["source_partition"] != partition {
				continue
			}
			through := int64(r["committed_offset"].(float64))
			if found && through < held.through {
				continue
			}
			held, found = heldProgress{through: through, label: r["label"].(string)}, true
		}
	}
	return held, found, nil
}

// gatedProgress blocks reads of one partition until released (a read of
// several partitions with it among them included).
type gatedProgress struct {
	*fakeProgress
	part string
	gate chan struct{}
}

func (g *gatedProgress) read(ctx context.Context, pipelineID string, partitions []string) (map[string]progressEntry, error) {
	if slices.Contains(partitions, g.part) {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.fakeProgress.read(ctx, pipelineID, partitions)
}

// staticWriters is a progress store with fixed writer rows.
type staticWriters struct {
	fakeProgress
	rows map[string][]writerRow
}

func (s *staticWriters) writers(context.Context, string) (map[string][]writerRow, error) {
	return s.rows, nil
}

// writerRow is the fixed row of one writer in db: it never changes.
func (s *staticWriters) writerRow(_ context.Context, db, _, writer string) (writerRow, bool, error) {
	for _, r := range s.rows[db] {
		if r.writer == writer {
			return r, true, nil
		}
	}
	return writerRow{}, false, nil
}
