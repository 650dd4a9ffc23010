package starrocks_txn

// Home of G22 (ARCHITECTURE.md §11.1): a delete to a table without a primary key is poisoned.
// Main test: TestIntegrationDeleteToDuplicateKeyTableIsPoisoned.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The load path: a cycle's pending rows go to StarRocks one request per
// table, merged across partitions; what a failed load means for the cycle is
// decided in loadResult and classifyLoad.

const (
	// retrySafeDelay is the wait before a load refused with
	// TXN_IN_PROCESSING (nothing ingested) is sent again.
	retrySafeDelay = 50 * time.Millisecond
	// retrySafeMax bounds those resends before the cycle is replayed.
	retrySafeMax = 20
)

// loadError is a failed load of one table of a cycle.
type loadError struct {
	table string
	err   error
}

func (e *loadError) Error() string { return fmt.Sprintf("loading table %s: %v", e.table, e.err) }

func (e *loadError) Unwrap() error { return e.err }

// loadPending sends, for every table, the rows of the cycle's transactions
// not yet loaded under its label: one request per table, merging every
// partition's frozen chunks, at most one in flight per (label, table), the
// tables in parallel.
func (w *dbWorker) loadPending(ctx context.Context, c *cycle) error {
	if c.label == "" {
		return errors.New("no shared transaction")
	}
	w.checkModels(ctx, c)
	var jobs []loadJob
	tables := map[string]struct{}{}
	for _, t := range c.txns {
		for _, tbl := range t.tables {
			tables[tbl] = struct{}{}
		}
	}
	for _, tbl := range sortedKeys(tables) {
		from := c.sent[tbl]
		if from >= len(c.txns) {
			continue
		}
		size, n := loadBodySize(c.txns[from:], tbl)
		if n == 0 {
			// An empty chunk sends no load: a table loaded with 0 rows
			// fails the commit.
			c.sent[tbl] = len(c.txns)
			continue
		}
		body := newPooledBody(&w.o.bodies, fillLoadBody(w.o.bodies.Get(size), c.txns[from:], tbl))
		jobs = append(jobs, loadJob{table: tbl, body: body.buf, held: body, upto: len(c.txns)})
	}
	if len(jobs) == 0 {
		return nil
	}
	// The bodies go back to the pool once every load (and resend) of them
	// returned and net/http closed every reader it made of them.
	defer func() {
		for _, j := range jobs {
			j.held.Release()
		}
	}()
	errs := make([]error, len(jobs))
	loadStart := time.Now()
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// The table's label: the cycle's, or in per-table mode its own,
			// begun at its first load.
			label, err := w.o.proto.labelFor(ctx, w, c, jobs[i].table)
			if err != nil {
				errs[i] = err
				return
			}
			errs[i] = w.loadOne(ctx, label, jobs[i].table, jobs[i].body, jobs[i].held)
		}(i)
	}
	wg.Wait()
	w.log.Debugf("%d loads under %s took %v", len(jobs), c.label, time.Since(loadStart))
	var first error
	for i, j := range jobs {
		if le := w.loadResult(c, j, errs[i]); le != nil && (first == nil || starrocks.ClassOf(le.err) == starrocks.ClassPerTxn) {
			first = le
		}
	}
	return first
}

// loadBody is the JSON array of the rows of txns for table, and how many
// rows it holds. It is sized exactly before it is filled: one allocation of
// the body's size, where a growing buffer allocates about twice that in
// doublings (BenchmarkLoadBody). loadPending takes the buffer from a pool
// instead (loadBodySize, fillLoadBody).
func loadBody(txns []*srcTxn, table string) ([]byte, int) {
	size, n := loadBodySize(txns, table)
	if n == 0 {
		return nil, 0
	}
	return fillLoadBody(make([]byte, 0, size), txns, table), n
}

// loadBodySize is the size of the JSON array of the rows of txns for table,
// and how many rows it holds.
func loadBodySize(txns []*srcTxn, table string) (size, n int) {
	size = 1
	for _, t := range txns {
		for _, r := range t.rowsOf(table) {
			size += len(r) + 1
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return size, n
}

// fillLoadBody appends the JSON array of the rows of txns for table to body.
func fillLoadBody(body []byte, txns []*srcTxn, table string) []byte {
	body = append(body, '[')
	first := true
	for _, t := range txns {
		for _, r := range t.rowsOf(table) {
			if !first {
				body = append(body, ',')
			}
			first = false
			body = append(body, r...)
		}
	}
	return append(body, ']')
}

// loadJob is one table's load of a cycle: the rows of c.txns[sent:upto].
type loadJob struct {
	table string
	body  []byte
	// held is body's hold on its pooled buffer, released when the cycle's
	// loads returned.
	held *pooledBody
	upto int
}

// loadResult applies the outcome of one load to the cycle: the one place
// where a load's reply is taken to mean something. Success moves the
// table's loaded mark; a failure leaves the rows pending and is returned as
// a loadError for classifyLoad.
func (w *dbWorker) loadResult(c *cycle, j loadJob, err error) *loadError {
	if err != nil {
		return &loadError{table: j.table, err: err}
	}
	c.sent[j.table] = j.upto
	c.loaded = true
	w.o.m.loads.Incr(1, w.metricDB(), j.table)
	w.o.m.loadBytes.Incr(int64(len(j.body)), w.metricDB(), j.table)
	return nil
}

// loadOutcome is what a failed loadPending means for its cycle.
type loadOutcome int

const (
	// loadReplay: roll back and replay the cycle under a new label.
	loadReplay loadOutcome = iota
	// loadBadRows: some rows made StarRocks abort: split the cycle to find
	// their source transactions.
	loadBadRows
	// loadBadTable: the table is unusable for every source transaction that
	// writes to it (it does not exist, for one).
	loadBadTable
)

// classifyLoad decides what a failed loadPending means; the loadError, when
// there is one, names the table.
func classifyLoad(err error) (loadOutcome, *loadError) {
	var le *loadError
	if !errors.As(err, &le) || starrocks.ClassOf(le.err) != starrocks.ClassPerTxn {
		return loadReplay, le
	}
	if starrocks.IsTableWide(le.err) {
		return loadBadTable, le
	}
	return loadBadRows, le
}

// loadOne loads body into table under label.
func (w *dbWorker) loadOne(ctx context.Context, label, table string, body []byte, refs starrocks.BodyRefs) error {
	req := starrocks.LoadRequest{
		Txn:     starrocks.Txn{DB: w.db, Label: label, Table: table, Multi: !w.o.proto.classic(), Timeout: w.o.conf.txnTimeout},
		Headers: w.o.conf.headersFor(w.db, table),
		Body:    body,
		Refs:    refs,
	}
	return w.send(ctx, req)
}

// send sends one load, resending it while StarRocks answers
// TXN_IN_PROCESSING (nothing was ingested).
func (w *dbWorker) send(ctx context.Context, req starrocks.LoadRequest) error {
	for attempt := 0; ; attempt++ {
		err := w.o.client.Load(ctx, req)
		if err == nil || starrocks.ClassOf(err) != starrocks.ClassRetrySafe || attempt >= retrySafeMax {
			return err
		}
		if !sleepCtx(ctx, retrySafeDelay) {
			return ctx.Err()
		}
	}
}

// checkModels poisons the cycle's new transactions that delete from a table
// without a primary key. New transactions are at the tail of the cycle and
// not loaded yet, so taking them out leaves the load offsets valid.
func (w *dbWorker) checkModels(ctx context.Context, c *cycle) {
	o := w.o
	first := len(c.txns)
	for i := len(c.txns) - 1; i >= 0 && !c.txns[i].modelChecked; i-- {
		first = i
	}
	if first == len(c.txns) {
		return
	}
	removed := false
	for _, t := range c.txns[first:] {
		t.modelChecked = true
		if o.meta == nil || len(t.deletes) == 0 {
			continue
		}
		for _, tbl := range sortedKeys(t.deletes) {
			pk, known, err := o.meta.PrimaryKey(ctx, w.db, tbl)
			if err != nil {
				w.log.Warnf("%v; deletes to %s.%s are not checked", err, w.db, tbl)
				continue
			}
			if known && !pk {
				o.poisonFromCycle(t, fmt.Errorf("source transaction %q deletes (\"__op\": 1) from %s.%s, which has no primary key: StarRocks would load the delete as an appended row; deletes need a PRIMARY KEY table", t.id, w.db, tbl))
				removed = true
				break
			}
		}
	}
	if removed {
		o.mu.Lock()
		c.txns = append(c.txns[:first], o.core.liveTxns(c.txns[first:])...)
		o.mu.Unlock()
	}
}
