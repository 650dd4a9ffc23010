package starrocks_txn

// Home of G23 (ARCHITECTURE.md §11.1): database workers are bounded by max_databases; idle ones
// retire, their labels never repeat. Main test: TestMaxDatabasesBoundsTheWorkers.

import (
	"time"

	"github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn/schemasync"
)

// core is the output's state machine: the sequencers, the partitions and
// their source transactions, the databases' queues, the dead-letter lanes,
// the progress maps and the counters admission decides on. It has no lock,
// no goroutine, no clock and no I/O of its own: every method runs under
// Output.mu, which its owner holds (ARCHITECTURE.md §10.1), takes the time
// as an argument, and does what reaches beyond its state through fx.
// Its methods live beside the concern they serve: admission.go (sequencing,
// the caps), partition.go (applying a message, switches, stalls),
// lifecycle.go (transitions, acknowledgements, committed-through),
// deadletter.go, fence.go, progress.go, manager.go (the manager's checks and
// gauges), worker.go and commit.go (what a database worker and its commit
// goroutine change); core.go has the type, its effects and the calls
// Output's goroutines make into it. Tests step it with an explicit time and
// a recording effects (core_test.go).
type core struct {
	conf *config
	fx   effects
	// deadLetter is whether dead_letter is set: a poisoned transaction goes
	// there, or else stalls its partition (deadletter.go).
	deadLetter bool
	// learns is whether a partition's messages wait for the tracker before
	// they are applied (tracker.learnsPartitions).
	learns bool
	// schemas checks the rows' schemas against StarRocks (schema.go); nil
	// when the output does not (schema_evolution: ignore without
	// mysql_address). Its fast path, Known, takes only its own lock.
	schemas *schemasync.Book
	// knownLast caches the book's last yes (schema.go: known).
	knownLast knownCache
	// schemaReady is, per database, when each table's columns were last
	// seen to change (schema.go: noteReady): a transaction with rows of
	// such a table goes only into a cycle begun after it (takeBegunAt).
	schemaReady map[string]*tableReadiness
	readySeq    uint64

	seqs map[string]*sequencer[*item]
	// retiredSeqs and lastPrune: manager.go, prune; sourceIdle is the
	// constant of that name (tests shorten it).
	retiredSeqs retiredSources
	lastPrune   time.Time
	sourceIdle  time.Duration
	parts       map[pkey]*partition
	// dbs are the queues of the databases with a worker, at most
	// max_databases (Output.workers has their goroutines).
	dbs map[string]*dbQueue
	// progress is the durable progress of each partition, read before its
	// first message is admitted (at start, and after a fence).
	progress map[string]*progressEntry
	// progressWait holds a partition's admitted messages while its progress
	// is read; progressLoading marks the partitions being read, and
	// progressGen counts their fences.
	progressWait    map[string][]*item
	progressLoading map[string]bool
	progressGen     map[string]int
	// progressClaimed marks the partitions a reader holds: read together
	// by it, each until its progress is kept or no longer wanted
	// (readProgressLoop).
	progressClaimed map[string]bool
	// fencedInCommit holds, per partition, the transactions a fence that
	// gave up left to a commit in flight (fenceGiveUp); progressBehind
	// marks the partitions whose progress read waits until none is held
	// (fencedCommitInFlight).
	fencedInCommit map[string][]*srcTxn
	progressBehind map[string]bool
	// dlLanes are the poisoned transactions on their way to dead_letter,
	// one lane per partition: written in order within a lane, the lanes
	// independently of each other (deadletter.go). A lane exists while it
	// holds a transaction, queued or being written.
	dlLanes map[*partition]*dlLane
	// buffered is the bytes of the rows of live source transactions (open,
	// active, queued, in cycle): what a commit may still load. At
	// buffer_size the workers commit early, at twice it admission waits.
	// committable counts the active, queued and in-cycle ones: while it is
	// 0 nothing buffered can be committed, so admission over the cap goes
	// on rather than wait forever. Both are kept by move only
	// (lifecycle.go), buffered with addRow.
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
	// unresolved counts the commits whose outcome is being resolved
	// (commit.go: resolve); inFlight maps the label of every commit request
	// sent and not resolved to its database, for Close to name what it
	// leaves in doubt.
	unresolved int
	inFlight   map[string]string
	warnedMIF  bool
	lastCapErr time.Time
	lastMIFErr time.Time
	// lastStaleWarn rate-limits the warning about stale-epoch messages.
	lastStaleWarn time.Time

	// onLifecycleError, when set (tests), is told of every transition the
	// lifecycle refused (lifecycle.go).
	onLifecycleError func(error)
}

// effects is what the core does beyond its own state. Each is called under
// Output.mu, so none may block or take a lock the output's callers hold
// while they call into it (ARCHITECTURE.md §10.1); the Output's are in
// effects.go, the tests' record them (core_test.go).
type effects interface {
	// startWorker starts the worker of a database the core began a queue
	// for; wakeWorker wakes it (a switch queued for it, the soft cap).
	startWorker(q *dbQueue)
	wakeWorker(q *dbQueue)
	// readProgress starts reading what StarRocks holds of a partition and
	// what other writers may still commit (the tracker's learn); the
	// reader hands it back through progressRead.
	readProgress(part string)
	// wakeDeadLetter tells the dead-letter loop a poisoned transaction is
	// queued.
	wakeDeadLetter()
	// resolveSchemas runs the schema manager for the needs of a gated
	// transaction (schema.go); the verdict comes back through
	// core.schemasResolved.
	resolveSchemas(p *partition, t *srcTxn, needs []schemaNeed)
	// staleEpoch asks the partition registry whether a message belongs to
	// an assignment that is over; currentEpoch is the partition's epoch
	// now, for the log.
	staleEpoch(it *item) bool
	currentEpoch(part string) uint64
	// publishCommitted tells the registry that every source transaction
	// of the partition ending at or below end is resolved.
	publishCommitted(part string, end int64)
	// callDone returns a WriteBatch call: all of its messages are done.
	callDone(c *call)
	// logf logs at level lvl, naming the partition when part is not empty.
	logf(lvl logLevel, part string, format string, args ...any)
	// count adds n to a counter, gauge sets a gauge; label is the series'
	// partition for the per-partition ones, empty otherwise.
	count(c counterID, n int64, label string)
	gauge(g gaugeID, v int64, label string)
}

// logLevel is the level of a line the core logs.
type logLevel uint8

const (
	logDebug logLevel = iota
	logInfo
	logWarn
	logError
)

// counterID and gaugeID name the metrics the core reports (metrics.go has
// them all).
type (
	counterID uint8
	gaugeID   uint8
)

const (
	ctrDeadLettered   counterID = iota // per partition; the core only seeds it at 0
	ctrStaleEpoch                      // per partition
	ctrReplaysDropped                  // per partition
	ctrPartitionStalls
	ctrLifecycleErrors
	ctrSeqGaps
	ctrMaxInFlightStarved
)

const (
	gaugeStalledPartition gaugeID = iota // per partition
	gaugeStalledPartitions
	gaugeBuffered
	gaugeOpenRegions
	gaugeWaiting
	gaugeUnresolved
)

// dbQueue is a database's part of the core: the source transactions the
// switches froze for its worker and the worker's state that admission and
// the manager decide on. The worker (dbWorker.q) changes it only through the
// core, under Output.mu.
type dbQueue struct {
	db          string
	queue       []*srcTxn
	lastTraffic time.Time
	// urgent asks the worker to commit its cycle now (the soft cap).
	urgent bool
	// busy is set while the worker runs a step; committing counts its
	// commit goroutines.
	busy       bool
	committing int
	// refused is the last definite refusal of a begin in the database (it
	// does not exist): while it stands, no transaction is begun eagerly,
	// only for source transactions that wait for one.
	refused error
}

func newCore(c *config, fx effects, deadLetter bool) *core {
	return &core{
		conf:            c,
		fx:              fx,
		deadLetter:      deadLetter,
		seqs:            map[string]*sequencer[*item]{},
		parts:           map[pkey]*partition{},
		dbs:             map[string]*dbQueue{},
		progress:        map[string]*progressEntry{},
		progressWait:    map[string][]*item{},
		progressLoading: map[string]bool{},
		progressGen:     map[string]int{},
		progressClaimed: map[string]bool{},
		fencedInCommit:  map[string][]*srcTxn{},
		progressBehind:  map[string]bool{},
		dlLanes:         map[*partition]*dlLane{},
		sourceIdle:      sourceIdle,
		inFlight:        map[string]string{},
	}
}

// The calls Output's goroutines make into the core, each one step under
// Output.mu.

// callEntered counts a WriteBatch call in flight, and holds its seqs while
// it parses its bodies and waits for buffer space (admission.go).
func (k *core) callEntered(items []*item, now time.Time) {
	k.waiting++
	k.fx.gauge(gaugeWaiting, int64(k.waiting), "")
	k.holdSeqs(items, 1, now)
}

// callLeft counts a WriteBatch call out as it returns, and out of held too
// when it returns before its last message is done (its context ended or the
// output closed).
func (k *core) callLeft(c *call) {
	k.waiting--
	k.fx.gauge(gaugeWaiting, int64(k.waiting), "")
	k.releaseCall(c)
}

// admit admits a WriteBatch call's messages, in seq order of their
// assembler instances: its seqs are no longer held, each message goes to
// the sequencer (and from there to its partition), the call counts in held
// while any of its messages is not done, and the workers commit early past
// the soft cap.
func (k *core) admit(c *call, items []*item, now time.Time) {
	k.holdSeqs(items, -1, now)
	for _, it := range items {
		k.sequence(it, now)
	}
	if c.pending > 0 {
		c.held = true
		k.held++
	}
	k.wakeAtSoftCap()
}

// tick is the manager's step (manager.go): the source-idle switch, the
// sequence-gap and parked-message timeouts, the max_in_flight starvation
// check, the pruning of idle seq sources and the gauges.
func (k *core) tick(now time.Time) {
	k.switchIdle(now)
	k.checkGaps(now)
	k.checkParked(now)
	k.checkInFlight(now)
	k.retryStalls(now)
	k.prune(now)
	k.updateGauges()
}

// wakeAll wakes every database worker; with urgent, each commits its cycle
// now.
func (k *core) wakeAll(urgent bool) {
	for _, q := range k.dbs {
		if urgent {
			q.urgent = true
		}
		k.fx.wakeWorker(q)
	}
}

// db returns the queue of database name, starting its worker when there is
// none; nil when max_databases workers run already.
func (k *core) db(name string) *dbQueue {
	q := k.dbs[name]
	if q == nil {
		if len(k.dbs) >= k.conf.maxDatabases {
			return nil
		}
		q = &dbQueue{db: name}
		k.dbs[name] = q
		k.fx.startWorker(q)
	}
	return q
}

// countUnresolved adds delta to the commits being resolved, shown by
// starrocks_txn_unresolved_commits.
func (k *core) countUnresolved(delta int) {
	k.unresolved += delta
	k.fx.gauge(gaugeUnresolved, int64(k.unresolved), "")
}
