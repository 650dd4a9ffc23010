package starrocks_txn

// The output's files, one concern each, and the tests beside them:
// ARCHITECTURE.md §9.1.

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/bufpool"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
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
	// meta asks StarRocks over its MySQL port (mysql_address): table
	// models, and the progress and writers tables.
	meta *starrocks.Meta
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

	mu   sync.Mutex
	seqs map[string]*sequencer[*item]
	// retiredSeqs and lastPrune: manager.go, pruneLocked; sourceIdle is
	// the constant of that name (tests shorten it).
	retiredSeqs retiredSources
	lastPrune   time.Time
	sourceIdle  time.Duration
	parts       map[pkey]*partition
	// progress is the durable progress of each partition, read before its
	// first message is admitted (at start, and after a fence).
	progress map[string]*progressEntry
	// progressWait holds a partition's admitted messages while its progress
	// is read; progressLoading marks the partitions being read, and
	// progressGen counts their fences.
	progressWait    map[string][]*item
	progressLoading map[string]bool
	progressGen     map[string]int
	workers         map[string]*dbWorker
	// retired keeps the ledgers of retired workers whose database began
	// transactions (worker.go: retire).
	retired map[string]*labelLedger
	dlQueue []*srcTxn
	// dlWriting is the poisoned transaction being written to dead_letter.
	dlWriting *srcTxn
	dlWake    chan struct{}
	// buffered is the bytes of the rows of live source transactions (open,
	// active, queued, in cycle): what a commit may still load. At
	// buffer_size the workers commit early, at twice it admission waits.
	// committable counts the active, queued and in-cycle ones: while it is
	// 0 nothing buffered can be committed, so admission over the cap goes
	// on rather than wait forever. Both are kept by moveLocked only
	// (lifecycle.go).
	buffered    int64
	committable int
	// waiting counts the WriteBatch calls in flight, for the
	// starrocks_txn_waiting_write_batches gauge.
	waiting int
	// held counts the WriteBatch calls whose messages are all sequenced
	// (in their partitions) and not all done: the calls the max_in_flight
	// starvation check counts. A call still parsing, held at the hard cap
	// or returning is in waiting but not here.
	held int
	// starvedSince is when the starvation check first found every slot
	// held on open transactions, zero while it does not (manager.go).
	starvedSince time.Time
	// regionScratch is the manager tick's set of open regions, kept between
	// ticks (manager.go).
	regionScratch map[regionKey]struct{}
	// bodies keeps load bodies for reuse (bodypool.go).
	bodies bufpool.FreeList
	// unresolved counts the commits whose outcome is being resolved
	// (commit.go: resolve); inFlight maps the label of every commit request
	// sent and not resolved to its database, for Close to name what it
	// leaves in doubt.
	unresolved int
	inFlight   map[string]string
	warnedMIF  bool
	lastCapErr time.Time
	lastMIFErr time.Time
	now        func() time.Time
	started    bool

	// lastStaleWarn rate-limits the warning about stale-epoch messages.
	lastStaleWarn time.Time

	// onLifecycleError, when set (tests), is told of every transition the
	// lifecycle refused (lifecycle.go).
	onLifecycleError func(error)
}

func newOutput(c config, cl txnClient, dl deadLetter, mgr *service.Resources) *Output {
	ctx, cancel := context.WithCancel(context.Background())
	commitCtx, commitCancel := context.WithCancel(context.Background())
	o := &Output{
		commitCtx:       commitCtx,
		commitCancel:    commitCancel,
		closed:          make(chan struct{}),
		inFlight:        map[string]string{},
		conf:            c,
		client:          cl,
		dl:              dl,
		log:             mgr.Logger(),
		reg:             registry.Get(mgr),
		m:               newMetrics(mgr.Metrics()),
		ctx:             ctx,
		cancel:          cancel,
		seqs:            map[string]*sequencer[*item]{},
		parts:           map[pkey]*partition{},
		progress:        map[string]*progressEntry{},
		progressWait:    map[string][]*item{},
		progressLoading: map[string]bool{},
		progressGen:     map[string]int{},
		workers:         map[string]*dbWorker{},
		sourceIdle:      sourceIdle,
		retired:         map[string]*labelLedger{},
		dlWake:          make(chan struct{}, 1),
		now:             time.Now,
		track:           noTracking{},
		writer:          starrocks.NewWriterID(),
	}
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
	o.wg.Add(2)
	go o.manager()
	go o.deadLetterLoop()
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
	if o.dl != nil {
		return o.dl.Close(ctx)
	}
	return nil
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
	limit := time.NewTimer(closeCommitWait)
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
		for _, label := range sortedKeys(o.inFlight) {
			o.log.With("database", o.inFlight[label]).Warnf("Closing while the commit of label %s is unresolved: its outcome is left to StarRocks (nothing of it was acknowledged; with writer rows a successor waits for it)", label)
		}
		o.mu.Unlock()
	}
	o.commitCancel()
	<-done
	o.closeOnce.Do(func() { close(o.closed) })
}

// workerLocked returns the worker of db, starting one when there is none;
// nil when max_databases workers run already.
func (o *Output) workerLocked(db string) *dbWorker {
	w := o.workers[db]
	if w == nil {
		if len(o.workers) >= o.conf.maxDatabases {
			return nil
		}
		w = newDBWorker(o, db, o.retired[db])
		delete(o.retired, db)
		o.workers[db] = w
		o.wg.Add(1)
		go w.run()
	}
	return w
}

func (o *Output) wakeWorkers(urgent bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, w := range o.workers {
		if urgent {
			w.urgent = true
		}
		w.signal()
	}
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
