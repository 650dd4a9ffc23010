package starrocks_txn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

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
	ft := &fakeTxn{label: t.Label, db: t.DB, state: starrocks.StateUnknown, pending: map[string][]map[string]any{}}
	if f.hook != nil {
		if err, ok := f.hook("begin", ft, ""); ok {
			return err
		}
	}
	f.txns[t.Label] = ft
	return nil
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
	if !ok {
		return srErr("commit", starrocks.ClassTransient, "stream load task "+t.Label+" does not exist")
	}
	if f.hook != nil {
		if err, ok := f.hook("commit", ft, ""); ok {
			return err
		}
	}
	if ft.state == starrocks.StateAborted {
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
	if !ok {
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
	if !ok {
		return starrocks.StateUnknown, nil
	}
	if f.hook != nil {
		if err, ok := f.hook("state", ft, ""); ok {
			return ft.state, err
		}
	}
	return ft.state, nil
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

// testOutput builds an output over the fake from YAML.
func testOutput(t *testing.T, yaml string, f txnClient, dl deadLetter) (*Output, *service.Resources) {
	t.Helper()
	pc, err := outputSpec().ParseYAML("load_urls: [ http://fake:8030 ]\n"+yaml, nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	var opts []service.MockResourcesOptFn
	if os.Getenv("STARROCKS_TXN_TEST_LOG") != "" {
		opts = append(opts, service.MockResourcesOptUseLogger(service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))))
	}
	res := service.MockResources(opts...)
	o := newOutput(c, f, dl, res)
	watchLifecycle(t, o, f)
	t.Cleanup(func() { checkLifecycle(t) })
	require.NoError(t, o.Connect(context.Background()))
	t.Cleanup(func() { _ = o.Close(context.Background()) })
	return o, res
}

// src numbers messages of one assembler instance densely, as the
// txn_assembler does.
type src struct {
	mu     sync.Mutex
	name   string
	seq    int64
	offset map[string]int64
}

func newSrc(name string) *src { return &src{name: name, offset: map[string]int64{}} }

// row returns a data row of partition p, source transaction txn.
func (s *src) row(p, txn, table string, body map[string]any, end bool) *service.Message {
	b, _ := json.Marshal(body)
	m := service.NewMessage(b)
	s.stamp(m, p, txn, "test", table, end, false)
	return m
}

// marker returns a body-less END (or abort) marker.
func (s *src) marker(p, txn string, abort bool) *service.Message {
	m := service.NewMessage(nil)
	s.stamp(m, p, txn, "", "", !abort, abort)
	return m
}

func (s *src) stamp(m *service.Message, p, txn, db, table string, end, abort bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.offset[p]++
	contract.Write(m, contract.Meta{
		Partition: p, Database: db, Table: table, TxnID: txn, TxnEnd: end, TxnAbort: abort,
		Marker: table == "", HasSeq: true, Seq: s.seq, SeqSource: s.name, HasOffset: true, SourceOffset: s.offset[p],
	})
}

// writeAsync runs WriteBatch in the background; the channel yields its
// result.
func writeAsync(o *Output, b service.MessageBatch) chan error {
	ch := make(chan error, 1)
	go func() { ch <- o.WriteBatch(context.Background(), b) }()
	return ch
}

func waitAll(t *testing.T, chs []chan error, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for i, ch := range chs {
		select {
		case err := <-ch:
			require.NoError(t, err, "batch %d", i)
		case <-deadline:
			t.Fatalf("batch %d of %d not acknowledged within %v", i, len(chs), d)
		}
	}
	checkLifecycle(t)
}

func idOf(r map[string]any) string {
	switch v := r["id"].(type) {
	case float64:
		return strconv.FormatInt(int64(v), 10)
	case string:
		return v
	}
	return fmt.Sprint(r["id"])
}
