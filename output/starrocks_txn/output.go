package starrocks_txn

// Home of G41 (ARCHITECTURE.md §11.1): shutdown acknowledges nothing uncommitted and abandons no
// commit in flight. Main test: TestCloseWaitsForTheCommitInFlight.

// The output's files, one concern each, and the tests beside them:
// ARCHITECTURE.md §9.1.

import (
	"context"
	"github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn/schemasync"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/bufpool"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/internal/shutdown"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

const (
	// fenceWait bounds how long a fence waits for an in-flight commit that
	// contains the fenced partition's rows.
	fenceWait = 30 * time.Second
	// reportEvery rate-limits repeated error logs (capacity, max_in_flight).
	reportEvery = 10 * time.Second
	// closeCommitWait bounds how long Close waits for commits in flight when
	// its context has no deadline (Benthos closes an output with none).
	closeCommitWait = 30 * time.Second
)

// Output is the starrocks_txn output.
type Output struct {
	conf   config
	client txnClient
	dl     deadLetter
	// schemas checks the rows' schemas against StarRocks and applies what
	// they need (schema.go, output/starrocks_txn/schemasync); nil when off.
	schemas *schemasync.Book
	// meta asks StarRocks over its MySQL port (mysql_address): table
	// models, and the progress and writers tables.
	meta *starrocks.Meta
	// proto is how a cycle reaches StarRocks (protocol.go).
	proto protocol
	// track keeps, in StarRocks, what a successor needs (tracker.go): none,
	// writer rows, or writer rows and the partitions' progress.
	track tracker
	// parseHook, when set (tests), runs before each message body is parsed.
	parseHook func()
	// writer names this run of the output in its labels and its writer
	// rows (writerrow.go).
	writer string
	log    *service.Logger
	reg    *registry.Registry
	m      *metrics
	// conn is whether StarRocks answers: Connect's probes (connect.go).
	conn *connection

	// ctx ends when Close begins: admission, the background loops and the
	// workers' cycles stop. commitCtx ends when Close stops waiting for the
	// commits in flight, which run on it (commits, commitWG); closed is
	// closed then, and releases the WriteBatch calls still waiting.
	ctx          context.Context
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	commitCtx    context.Context
	commitCancel context.CancelFunc
	commits      sync.WaitGroup
	closed       chan struct{}
	closeOnce    sync.Once
	// stopping is closed once the process is asked to stop
	// (internal/shutdown): the output then says what the stop waits for
	// (stopwait.go).
	stopping <-chan struct{}

	mu sync.Mutex
	// core is the state machine Output.mu guards (core.go).
	core *core
	// workers are the database workers, one per queue of the core
	// (core.dbs), under Output.mu; retired keeps the ledgers of retired
	// workers whose database began transactions (worker.go: retire).
	workers map[string]*dbWorker
	retired map[string]*labelLedger
	// dlWake wakes the dead-letter loop (deadletter.go).
	dlWake chan struct{}
	// dlStarted is set before the first write to dl (closeDeadLetter).
	dlStarted atomic.Bool
	// bodies keeps load bodies for reuse (bodypool.go).
	bodies  bufpool.FreeList
	now     func() time.Time
	started bool
}

func newOutput(c config, cl txnClient, dl deadLetter, mgr *service.Resources) *Output {
	ctx, cancel := context.WithCancel(context.Background())
	commitCtx, commitCancel := context.WithCancel(context.Background())
	o := &Output{
		commitCtx:    commitCtx,
		commitCancel: commitCancel,
		closed:       make(chan struct{}),
		conf:         c,
		client:       cl,
		dl:           dl,
		log:          mgr.Logger(),
		reg:          registry.Get(mgr),
		m:            newMetrics(mgr.Metrics()),
		ctx:          ctx,
		cancel:       cancel,
		workers:      map[string]*dbWorker{},
		retired:      map[string]*labelLedger{},
		dlWake:       make(chan struct{}, 1),
		now:          time.Now,
		proto:        newProtocol(c),
		track:        noTracking{},
		writer:       starrocks.NewWriterID(),
		stopping:     shutdown.Signalled(),
	}
	o.core = newCore(&o.conf, o, dl != nil)
	o.m.startAtZero(c)
	o.conn = newConnection(c, o.log, o.m.connected)
	if c.batching.Count > 0 || c.batching.ByteSize > 0 || c.batching.Period != "" || c.batching.Check != "" {
		o.log.Warn("Output-level batching is set: it couples the acknowledgements of partitions and delays every batch until the whole merged batch is committed; batch at the input instead")
	}
	o.reg.EnableTracking()
	o.reg.AddFencer(o.fence)
	return o
}

// enableProgress keeps writer rows, and with exactly_once the partitions'
// progress, over the MySQL connection, when the configuration asks for them
// (config.trackWriters).
func (o *Output) enableProgress() {
	if !o.conf.trackWriters() || o.meta == nil {
		return
	}
	o.setProgressStore(metaProgress{meta: o.meta, table: o.conf.progressTable, partitions: o.conf.exactlyOnce})
}

// setProgressStore keeps progress (exactly_once) or writer rows in ps.
func (o *Output) setProgressStore(ps progressStore) {
	o.track = newTracker(o, ps)
	o.mu.Lock()
	o.core.learns = o.track.learnsPartitions()
	o.mu.Unlock()
}

// Connect probes StarRocks (connect.go), then starts the background loops
// once.
func (o *Output) Connect(ctx context.Context) error {
	if err := o.connect(ctx); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started {
		return nil
	}
	o.started = true
	o.wg.Add(3)
	go o.manager()
	go o.deadLetterLoop()
	go o.stopWaitLoop()
	return nil
}

// Close stops admission and the loops, rolls back the open shared
// transactions that sent no commit, and waits — until ctx ends, at most
// closeCommitWait — for every commit in flight to resolve, so that a commit
// StarRocks is carrying out is neither abandoned nor left unknown when it
// could be known (ARCHITECTURE.md §4.5). A cycle whose commit fails
// meanwhile is not replayed. What is still unresolved when the wait ends is
// logged by label and left to StarRocks (the writer rows keep it findable).
// Nothing uncommitted was acknowledged, so nothing is lost.
func (o *Output) Close(ctx context.Context) error {
	o.cancel()
	o.wg.Wait()
	o.awaitCommits(ctx)
	o.track.close(ctx)
	if o.meta != nil {
		_ = o.meta.Close()
	}
	return o.closeDeadLetter(ctx)
}

// closing reports whether Close has begun.
func (o *Output) closing() bool { return o.ctx.Err() != nil }

// awaitCommits waits for the commit goroutines until ctx ends or
// closeCommitWait passes, then names the commits left in doubt and stops
// them.
func (o *Output) awaitCommits(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		o.commits.Wait()
		close(done)
	}()
	deadline, hasDeadline := ctx.Deadline()
	bound := closeWaitBound(deadline, hasDeadline, time.Now())
	o.mu.Lock()
	if labels := sortedKeys(o.core.inFlight); len(labels) > 0 {
		o.log.Infof("Closing: waiting at most %v for the commits of labels %s to resolve", bound.Round(time.Millisecond), strings.Join(labels, ", "))
	}
	o.mu.Unlock()
	limit := time.NewTimer(bound)
	defer limit.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-limit.C:
	}
	select {
	case <-done:
	default:
		o.mu.Lock()
		for _, label := range sortedKeys(o.core.inFlight) {
			o.log.With("database", o.core.inFlight[label]).Warnf("Closing while the commit of label %s is unresolved: its outcome is left to StarRocks (nothing of it was acknowledged; with writer rows a successor waits for it)", label)
		}
		o.mu.Unlock()
	}
	o.commitCancel()
	<-done
	o.closeOnce.Do(func() { close(o.closed) })
}

// wakeWorkers wakes every database worker; with urgent, each commits its
// cycle now.
func (o *Output) wakeWorkers(urgent bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.core.wakeAll(urgent)
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

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
