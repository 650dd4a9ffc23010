package starrocks_txn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

const (
	// noContractPartition is the partition of messages without the contract:
	// each is its own source transaction, admitted in arrival order.
	noContractPartition = ""
	// fenceWait bounds how long a fence waits for an in-flight commit that
	// contains the fenced partition's rows.
	fenceWait = 30 * time.Second
	// reportEvery rate-limits repeated error logs (capacity, max_in_flight).
	reportEvery = 10 * time.Second
	// deadLetterReasonKey is set on every message sent to dead_letter.
	deadLetterReasonKey = "starrocks_dead_letter_reason"
)

// pkey identifies one ordered source stream: the assembler instance that
// numbered it and the partition.
type pkey struct{ source, partition string }

func (k pkey) String() string {
	if k.source == "" {
		return k.partition
	}
	return k.partition + "@" + k.source
}

// call is one WriteBatch: it returns once pending reaches zero.
type call struct {
	pending int
	done    chan struct{}
}

// item is one message of a WriteBatch.
type item struct {
	call     *call
	msg      *service.Message
	meta     contract.Meta
	pk       pkey
	db       string
	table    string
	body     []byte
	isRow    bool
	isDelete bool
	poison   error
	t0       time.Time
	finished bool
}

// partition is the state of one (seq source, partition): its open source
// transaction, the completed ones not yet frozen (the active chunks of its
// regions) and the order in which they must resolve.
type partition struct {
	key          pkey
	hwm          int64
	hasHWM       bool
	open         *srcTxn
	active       []*srcTxn
	order        []*srcTxn
	lastSwitch   time.Time
	lastActivity time.Time
	stalled      error
	stalledTxn   string
	// held are messages admitted after the partition stalled.
	held   []*item
	fenced bool
	// published is the last committed-through offset published for it.
	published    int64
	hasPublished bool
	// replayNoted is set once a dropped replay of the partition was logged.
	replayNoted bool
}

// sequencer restores the emission order of one assembler instance.
type sequencer struct {
	next     int64
	pending  map[int64]*item
	gapSince time.Time
	// held counts the seqs carried by WriteBatch calls that wait before
	// admission for buffer space: a gap they fill is not a dropped message
	// and is never skipped.
	held map[int64]int
}

// deadLetter is where poisoned source transactions go: an *OwnedOutput in
// production.
type deadLetter interface {
	WriteBatch(ctx context.Context, b service.MessageBatch) error
	Close(ctx context.Context) error
}

// Output is the starrocks_txn output.
type Output struct {
	conf   config
	client txnClient
	dl     deadLetter
	models *tableModels
	// prog creates and reads the progress table (exactly_once).
	prog progressStore
	// parseHook, when set (tests), runs before each message body is parsed.
	parseHook func()
	// writer names this run of the output in its labels and its writer
	// rows (writers.go).
	writer string
	// settleMu serialises settleWriters runs; settleStarted and settleDone
	// number the runs started and the last one completed.
	settleMu      sync.Mutex
	settleStarted int64
	settleDone    int64
	log           *service.Logger
	reg           *registry.Registry
	m             *metrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	seqs  map[string]*sequencer
	parts map[pkey]*partition
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
	dlQueue         []*srcTxn
	// dlWriting is the poisoned transaction being written to dead_letter.
	dlWriting   *srcTxn
	dlWake      chan struct{}
	buffered    int64
	committable int
	waiting     int
	warnedMIF   bool
	lastCapErr  time.Time
	lastMIFErr  time.Time
	now         func() time.Time
	started     bool

	// lastStaleWarn rate-limits the warning about stale-epoch messages.
	lastStaleWarn time.Time

	// onLifecycleError, when set (tests), is told of every transition the
	// lifecycle refused (lifecycle.go).
	onLifecycleError func(error)
}

func newOutput(c config, cl txnClient, dl deadLetter, mgr *service.Resources) *Output {
	ctx, cancel := context.WithCancel(context.Background())
	o := &Output{
		conf:            c,
		client:          cl,
		dl:              dl,
		log:             mgr.Logger(),
		reg:             registry.Get(mgr),
		m:               newMetrics(mgr.Metrics()),
		ctx:             ctx,
		cancel:          cancel,
		seqs:            map[string]*sequencer{},
		parts:           map[pkey]*partition{},
		progress:        map[string]*progressEntry{},
		progressWait:    map[string][]*item{},
		progressLoading: map[string]bool{},
		progressGen:     map[string]int{},
		workers:         map[string]*dbWorker{},
		dlWake:          make(chan struct{}, 1),
		now:             time.Now,
		writer:          starrocks.NewWriterID(),
	}
	if c.batching.Count > 0 || c.batching.ByteSize > 0 || c.batching.Period != "" || c.batching.Check != "" {
		o.log.Warn("starrocks_txn: output-level batching is set: it couples the acknowledgements of partitions and delays every batch until the whole merged batch is committed; batch at the input instead")
	}
	o.reg.EnableTracking()
	o.reg.AddFencer(o.fence)
	return o
}

// enableProgress sets up exactly_once over the MySQL connection: the
// progress store, and the progress reader in the partition registry, through
// which the kafka_txn input seeks a newly assigned partition after what
// StarRocks already holds (an optimisation: the output drops replays itself).
func (o *Output) enableProgress() {
	if !o.conf.trackWriters() || o.models == nil {
		return
	}
	if !o.conf.exactlyOnce {
		o.log.Infof("starrocks_txn: at_least_once with pipeline_id %q and mysql_address: keeping writer rows in %s and checking other writers' transactions before applying a partition's messages", o.conf.pipelineID, writersTable(o.conf.progressTable))
	}
	o.setProgressStore(sqlProgress{db: o.models.db, table: o.conf.progressTable, partitions: o.conf.exactlyOnce, mu: &o.models.infoMu})
}

func (o *Output) setProgressStore(ps progressStore) {
	o.prog = ps
	if !o.conf.exactlyOnce {
		return
	}
	o.reg.SetProgress(func(ctx context.Context, partition string) (int64, bool, error) {
		e, err := ps.read(ctx, o.conf.pipelineID, partition)
		if err != nil {
			return 0, false, err
		}
		return e.through, e.hasThrough, nil
	})
}

// Connect starts the background loops once.
func (o *Output) Connect(ctx context.Context) error {
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

// Close stops the loops and rolls back open shared transactions. Nothing
// uncommitted was acknowledged, so nothing is lost.
func (o *Output) Close(ctx context.Context) error {
	o.cancel()
	o.wg.Wait()
	o.forgetWriter(ctx)
	if o.models != nil {
		_ = o.models.close()
	}
	if o.dl != nil {
		return o.dl.Close(ctx)
	}
	return nil
}

// WriteBatch admits the batch's messages in sequence order and returns once
// every one of them is committed, abandoned by its source or dead-lettered.
// It never reports a failure of StarRocks: those are retried inside. It
// returns ctx.Err() when ctx is cancelled, and then nothing uncommitted has
// been acknowledged.
func (o *Output) WriteBatch(ctx context.Context, batch service.MessageBatch) error {
	if len(batch) == 0 {
		return nil
	}
	now := o.now()
	c := &call{pending: len(batch), done: make(chan struct{})}
	items := make([]*item, len(batch))
	// One executor per batch: batch.TryInterpolatedString copies the whole
	// batch on every call, which made parsing quadratic in the batch size.
	targets := batchTargets{db: batch.InterpolationExecutor(o.conf.database), table: batch.InterpolationExecutor(o.conf.table)}
	for i := range batch {
		items[i] = o.parseContract(batch[i], c, now)
	}
	// The call's seqs are held before the bodies are parsed: a gap they
	// leave is a call on its way, not a dropped message, however long the
	// parse takes (sequence_gap_timeout).
	o.mu.Lock()
	o.waiting++
	o.m.waiting.Set(int64(o.waiting))
	o.holdSeqsLocked(items, 1)
	o.mu.Unlock()
	for i := range batch {
		o.parseBody(batch, i, items[i], targets)
	}
	defer func() {
		o.mu.Lock()
		o.waiting--
		o.m.waiting.Set(int64(o.waiting))
		o.mu.Unlock()
	}()

	// Messages of an assignment that is over are released at admission,
	// unapplied: they need no buffer space.
	fresh := false
	for _, it := range items {
		if !o.staleEpoch(it) {
			fresh = true
			break
		}
	}
	if fresh {
		if err := o.waitForCapacity(ctx); err != nil {
			o.unholdSeqs(items)
			return err
		}
	}

	o.mu.Lock()
	o.holdSeqsLocked(items, -1)
	for _, it := range items {
		o.sequenceLocked(it, now)
	}
	soft := o.buffered >= o.conf.bufferSize
	o.mu.Unlock()
	if soft {
		o.wakeWorkers(true)
	}

	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the StarRocks commit: %w", ctx.Err())
	case <-o.ctx.Done():
		return errors.New("starrocks_txn output closed before the batch was committed")
	}
}

// batchTargets resolves the database and table fields for the messages of one
// batch.
type batchTargets struct {
	db, table *service.MessageBatchInterpolationExecutor
}

// parseContract reads the contract of one message. Problems that poison the
// message's source transaction are recorded, not returned.
func (o *Output) parseContract(msg *service.Message, c *call, now time.Time) *item {
	it := &item{call: c, msg: msg, t0: sourceTime(msg, now)}
	meta, err := contract.Read(msg)
	it.meta = meta
	if err != nil {
		it.poison = fmt.Errorf("reading the metadata contract: %w", err)
	}
	if meta.HasContract() {
		it.pk = pkey{source: meta.SeqSource, partition: meta.Partition}
	} else {
		it.pk = pkey{partition: noContractPartition}
	}
	if perr := msg.GetError(); perr != nil && it.poison == nil {
		it.poison = fmt.Errorf("processing error on the message: %w", perr)
	}
	return it
}

// parseBody reads the row and the target of the message of item it: the
// expensive part of parsing. Problems are recorded as for parseContract.
func (o *Output) parseBody(batch service.MessageBatch, i int, it *item, targets batchTargets) {
	if o.parseHook != nil {
		o.parseHook()
	}
	msg, meta := batch[i], it.meta
	var err error
	body, berr := msg.AsBytes()
	if berr != nil && it.poison == nil {
		it.poison = fmt.Errorf("reading the message body: %w", berr)
	}
	trimmed := bytes.TrimSpace(body)
	if meta.Marker || meta.TxnAbort || (len(trimmed) == 0 && meta.TxnEnd) {
		return
	}
	it.isRow = true
	it.body = trimmed
	if it.poison != nil {
		return
	}
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		it.poison = errors.New("the message body is not a JSON object")
		return
	}
	if it.db, err = targets.db.TryString(i); err != nil {
		it.poison = fmt.Errorf("interpolating database: %w", err)
		return
	}
	if it.table, err = targets.table.TryString(i); err != nil {
		it.poison = fmt.Errorf("interpolating table: %w", err)
		return
	}
	if err := starrocks.ValidateName("database", it.db); err != nil {
		it.poison = err
		return
	}
	if err := starrocks.ValidateName("table", it.table); err != nil {
		it.poison = err
		return
	}
	it.isDelete = isDelete(trimmed)
}

// sourceTime is the creation time of the message for the visibility latency:
// the Kafka record timestamp when there is one, else its arrival.
func sourceTime(msg *service.Message, now time.Time) time.Time {
	if v, ok := msg.MetaGet("kafka_timestamp_ms"); ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			return time.UnixMilli(ms)
		}
	}
	if v, ok := msg.MetaGet("kafka_timestamp_unix"); ok {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
			return time.Unix(s, 0)
		}
	}
	return now
}

// waitForCapacity blocks admission at twice buffer_size while something
// buffered is committable; when nothing is (only open source transactions
// fill the buffer) it admits anyway with an error naming buffer_size, since
// waiting could never end.
func (o *Output) waitForCapacity(ctx context.Context) error {
	for {
		o.mu.Lock()
		if o.buffered < 2*o.conf.bufferSize {
			o.mu.Unlock()
			return nil
		}
		if o.committable == 0 {
			if o.now().Sub(o.lastCapErr) >= reportEvery {
				o.lastCapErr = o.now()
				o.log.Errorf("starrocks_txn: %d bytes buffered, over twice buffer_size (%d), and nothing buffered is committable (only open source transactions): admitting anyway; raise buffer_size above the largest source transactions in flight", o.buffered, o.conf.bufferSize)
			}
			o.mu.Unlock()
			return nil
		}
		o.mu.Unlock()
		o.wakeWorkers(true)
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for buffer space: %w", ctx.Err())
		case <-o.ctx.Done():
			return errors.New("starrocks_txn output closed")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sequenceLocked admits it in seq order of its assembler instance; messages
// without the contract are admitted at once.
func (o *Output) sequenceLocked(it *item, now time.Time) {
	if it.pk.partition == noContractPartition {
		if o.conf.maxInFlight > 1 && !o.warnedMIF {
			o.warnedMIF = true
			o.log.Warnf("starrocks_txn: messages without the metadata contract (starrocks_partition and starrocks_seq) are admitted in arrival order, each its own transaction, and with max_in_flight %d arrival order is not emission order; use the txn_assembler processor or max_in_flight: 1", o.conf.maxInFlight)
		}
		o.applyLocked(it, now)
		return
	}
	s := o.sequencerLocked(it.pk.source)
	seq := it.meta.Seq
	if seq < s.next {
		// Late after a skipped gap, or a duplicate: the offset check decides.
		o.log.Warnf("starrocks_txn: starrocks_seq %d of %s arrived after admission moved past it (next %d); admitting it out of order", seq, it.pk, s.next)
		o.applyLocked(it, now)
		return
	}
	if _, dup := s.pending[seq]; dup {
		o.log.Errorf("starrocks_txn: starrocks_seq %d of source %q seen twice; the second copy is treated as a replay", seq, it.pk.source)
		it.poison = fmt.Errorf("duplicate starrocks_seq %d", seq)
		o.applyLocked(it, now)
		return
	}
	s.pending[seq] = it
	o.drainLocked(s, now)
}

func (o *Output) sequencerLocked(source string) *sequencer {
	s := o.seqs[source]
	if s == nil {
		s = &sequencer{next: 1, pending: map[int64]*item{}, held: map[int64]int{}}
		o.seqs[source] = s
	}
	return s
}

// holdSeqsLocked records (delta 1) or forgets (delta -1) the seqs of a
// WriteBatch call that waits before admission.
func (o *Output) holdSeqsLocked(items []*item, delta int) {
	for _, it := range items {
		if it.pk.partition == noContractPartition {
			continue
		}
		s := o.sequencerLocked(it.pk.source)
		if s.held[it.meta.Seq] += delta; s.held[it.meta.Seq] <= 0 {
			delete(s.held, it.meta.Seq)
		}
	}
}

func (o *Output) unholdSeqs(items []*item) {
	o.mu.Lock()
	o.holdSeqsLocked(items, -1)
	o.mu.Unlock()
}

// heldBelow reports whether a seq in [next, below) is held by a WriteBatch
// call that waits before admission.
func (s *sequencer) heldBelow(below int64) bool {
	for k := range s.held {
		if k >= s.next && k < below {
			return true
		}
	}
	return false
}

func (o *Output) drainLocked(s *sequencer, now time.Time) {
	for {
		it, ok := s.pending[s.next]
		if !ok {
			break
		}
		delete(s.pending, s.next)
		s.next++
		o.applyLocked(it, now)
	}
	if len(s.pending) == 0 {
		s.gapSince = time.Time{}
	} else if s.gapSince.IsZero() {
		s.gapSince = now
	}
}

// checkGapsLocked skips a sequence gap that lasted sequence_gap_timeout.
func (o *Output) checkGapsLocked(now time.Time) {
	for src, s := range o.seqs {
		if len(s.pending) == 0 || s.gapSince.IsZero() || now.Sub(s.gapSince) < o.conf.sequenceGapTimeout {
			continue
		}
		lowest := int64(-1)
		for k := range s.pending {
			if lowest < 0 || k < lowest {
				lowest = k
			}
		}
		if s.heldBelow(lowest) {
			// The gap is a call waiting for buffer space, not a dropped
			// message: the timer starts again.
			s.gapSince = now
			continue
		}
		o.m.seqGaps.Incr(lowest-s.next, src)
		o.log.Errorf("starrocks_txn: starrocks_seq %d to %d of assembler %q never arrived within sequence_gap_timeout (%v): skipping them; something between the txn_assembler and this output dropped messages (a filtering processor, a switch or reject_errored)", s.next, lowest-1, src, o.conf.sequenceGapTimeout)
		s.next = lowest
		s.gapSince = time.Time{}
		o.drainLocked(s, now)
	}
}

func (o *Output) partitionLocked(k pkey) *partition {
	p := o.parts[k]
	if p == nil {
		p = &partition{key: k}
		o.parts[k] = p
	}
	return p
}

// staleEpoch reports whether a message belongs to an assignment of its
// partition that is over (contract.KeyPartitionEpoch older than the current
// one, or fenced). Without the key nothing is checked.
func (o *Output) staleEpoch(it *item) bool {
	return it.meta.HasEpoch && it.meta.Partition != "" && o.reg.Stale(it.meta.Partition, it.meta.Epoch)
}

// releaseStaleLocked acknowledges a message of an assignment that is over
// without applying it: the fence dropped the rest of its source transaction,
// and the partition's owner reads it again.
func (o *Output) releaseStaleLocked(it *item) {
	o.m.staleEpoch.Incr(1, it.meta.Partition)
	o.log.Debugf("starrocks_txn: partition %s: message at offset %d of assignment epoch %d arrived after the partition was fenced or re-assigned (epoch %d): released without being applied", it.meta.Partition, it.meta.SourceOffset, it.meta.Epoch, o.reg.Epoch(it.meta.Partition))
	if now := o.now(); now.Sub(o.lastStaleWarn) >= reportEvery {
		o.lastStaleWarn = now
		o.log.Warnf("starrocks_txn: partition %s: messages of assignment epoch %d arrived after a rebalance took the partition; they are acknowledged without being applied (the partition's owner reads them again)", it.meta.Partition, it.meta.Epoch)
	}
	o.itemDoneLocked(it)
}

// applyLocked applies one admitted message to its partition.
func (o *Output) applyLocked(it *item, now time.Time) {
	if it.finished {
		// Released by a fence while it waited for a sequence gap.
		return
	}
	if o.staleEpoch(it) {
		// Never applied, and never recreates a fenced partition.
		o.releaseStaleLocked(it)
		return
	}
	if o.prog != nil && it.pk.partition != noContractPartition && it.meta.HasOffset && o.waitProgressLocked(it) {
		return
	}
	p := o.partitionLocked(it.pk)
	p.lastActivity = now
	if p.stalled != nil {
		// Held until the partition is fenced or the output stops.
		p.held = append(p.held, it)
		return
	}
	noContract := it.pk.partition == noContractPartition
	var prog *progressEntry
	if o.conf.exactlyOnce && !noContract {
		prog = o.progress[it.pk.partition]
	}
	if prog.coversMessage(it.meta.SourceOffset) && it.meta.HasOffset && p.open == nil {
		// exactly_once: StarRocks already holds every source transaction
		// at or below the partition's durable progress. A replay: it is
		// acknowledged without being loaded.
		if !p.hasHWM || it.meta.SourceOffset > p.hwm {
			p.hwm, p.hasHWM = it.meta.SourceOffset, true
		}
		o.noteReplayLocked(p, it.meta.SourceOffset)
		o.m.replaysDropped.Incr(1, it.pk.partition)
		o.itemDoneLocked(it)
		return
	}
	if !noContract && it.meta.HasOffset {
		if p.hasHWM && it.meta.SourceOffset <= p.hwm {
			o.log.Errorf("starrocks_txn: partition %s: starrocks_source_offset %d is not above %d already admitted: a replay or a reorder, never applied", it.pk, it.meta.SourceOffset, p.hwm)
			t := newTxnLocked(p, it.meta.TxnID, it.t0)
			t.items = []*item{it}
			t.poison = fmt.Errorf("starrocks_source_offset %d at or below the partition's high-water mark %d", it.meta.SourceOffset, p.hwm)
			p.order = append(p.order, t)
			o.poisonLocked(t)
			return
		}
		p.hwm, p.hasHWM = it.meta.SourceOffset, true
	}
	if it.meta.TxnAbort {
		if t := p.open; t != nil {
			p.open = nil
			t.hasEnd, t.endOffset = it.meta.HasOffset, it.meta.SourceOffset
			t.items = append(t.items, it)
			p.order = append(p.order, t)
			o.moveLocked(t, txnSkipped)
			return
		}
		t := newTxnLocked(p, it.meta.TxnID, time.Time{})
		t.items = []*item{it}
		t.hasEnd, t.endOffset = it.meta.HasOffset, it.meta.SourceOffset
		p.order = append(p.order, t)
		o.moveLocked(t, txnSkipped)
		return
	}
	t := p.open
	if t == nil {
		t = newTxnLocked(p, it.meta.TxnID, it.t0)
		p.open = t
	}
	t.items = append(t.items, it)
	if it.t0.Before(t.t0) {
		t.t0 = it.t0
	}
	if it.poison != nil && t.poison == nil {
		t.poison = it.poison
	}
	if it.isRow && it.poison == nil {
		switch {
		case t.db == "":
			t.db = it.db
		case t.db != it.db && t.poison == nil:
			t.poison = fmt.Errorf("source transaction %q writes to two databases, %s and %s; a StarRocks transaction spans one", t.id, t.db, it.db)
		}
		o.addRowLocked(t, it)
	}
	if !it.meta.TxnEnd && !noContract {
		return
	}
	// The source transaction is complete.
	p.open = nil
	t.hasEnd, t.endOffset = it.meta.HasOffset, it.meta.SourceOffset
	p.order = append(p.order, t)
	if t.hasEnd && prog.covers(t.db, t.endOffset) {
		// exactly_once: this database already holds the transaction (a
		// replay after a restart or a re-assignment): acknowledged, not
		// loaded again.
		o.noteReplayLocked(p, t.endOffset)
		o.m.replaysDropped.Incr(int64(len(t.items)), it.pk.partition)
		o.moveLocked(t, txnSkipped)
		return
	}
	if t.poison != nil {
		o.poisonLocked(t)
		return
	}
	if len(t.rows) == 0 {
		o.moveLocked(t, txnSkipped)
		return
	}
	if !o.moveLocked(t, txnActive) {
		return
	}
	p.active = append(p.active, t)
	if now.Sub(p.lastSwitch) >= o.conf.miniInterval() {
		o.switchLocked(p, now)
	}
}

// noteReplayLocked logs, once per partition state, that replays are being
// acknowledged without loading.
func (o *Output) noteReplayLocked(p *partition, offset int64) {
	if p.replayNoted {
		return
	}
	p.replayNoted = true
	o.log.Infof("starrocks_txn: partition %s: dropping replays StarRocks already holds (exactly_once, pipeline %s): offset %d and the rest at or below the progress are acknowledged without loading", p.key, o.conf.pipelineID, offset)
}

// switchLocked freezes the active chunks of every region of the partition at
// once. Only complete source transactions are ever in them, so a switch is
// always at a clean boundary: a transaction whose END is on one table has
// its rows on every other table frozen with it.
func (o *Output) switchLocked(p *partition, now time.Time) {
	p.lastSwitch = now
	if len(p.active) == 0 {
		return
	}
	for _, t := range p.active {
		if !o.moveLocked(t, txnQueued) {
			continue
		}
		w := o.workerLocked(t.db)
		w.queue = append(w.queue, t)
		w.lastTraffic = now
		w.signal()
	}
	p.active = nil
}

// switchIdleLocked is the manager's source-idle fallback: a partition whose
// completed transactions wait in active chunks is switched once miniInterval
// has passed since its last switch.
func (o *Output) switchIdleLocked(now time.Time) {
	mini := o.conf.miniInterval()
	for _, p := range o.parts {
		if len(p.active) > 0 && now.Sub(p.lastSwitch) >= mini {
			o.switchLocked(p, now)
		}
	}
}

// cutLocked is the commit cut: every completed transaction is frozen.
func (o *Output) cutLocked(now time.Time) {
	for _, p := range o.parts {
		if len(p.active) > 0 {
			o.switchLocked(p, now)
		}
	}
}

// poisonLocked hands a poisoned source transaction to dead_letter, or stalls
// its partition when there is none.
func (o *Output) poisonLocked(t *srcTxn) {
	if o.dl != nil {
		if !o.moveLocked(t, txnPoisoned) {
			return
		}
		o.log.Errorf("starrocks_txn: partition %s: source transaction %q is poisoned and goes to dead_letter: %v", t.p.key, t.id, t.poison)
		o.dlQueue = append(o.dlQueue, t)
		select {
		case o.dlWake <- struct{}{}:
		default:
		}
		return
	}
	if !o.moveLocked(t, txnStalled) {
		return
	}
	o.stallLocked(t.p, t)
}

// stallLocked stops a partition at a poisoned transaction: it and every later
// transaction of the partition are held (their WriteBatch calls do not
// return) until the partition is fenced or the output stops.
func (o *Output) stallLocked(p *partition, t *srcTxn) {
	if p.stalled != nil {
		return
	}
	p.stalled, p.stalledTxn = t.poison, t.id
	o.log.Errorf("starrocks_txn: partition %s stalled at source transaction %q: %v; set dead_letter to divert poisoned transactions, or fix the cause and restart", p.key, t.id, t.poison)
	o.m.stalled.Set(1, p.key.String(), t.id)
	o.m.stalledCount.Incr(1)
	drop := func(x *srcTxn) {
		if x != t && x.state.live() {
			o.moveLocked(x, txnStalled)
		}
	}
	// Everything after t in the partition is held back with it.
	after := false
	for _, x := range p.order {
		if x == t {
			after = true
			continue
		}
		if after {
			drop(x)
		}
	}
	for _, x := range p.active {
		drop(x)
	}
	p.active = nil
	if p.open != nil {
		drop(p.open)
		p.open = nil
	}
}

// poisonFromCycle poisons a transaction found bad while it was in a cycle;
// when the partition stalls, later transactions of the partition in the
// same cycle are dropped by stallLocked.
func (o *Output) poisonFromCycle(t *srcTxn, reason error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !t.state.live() {
		return
	}
	t.poison = reason
	o.poisonLocked(t)
}

func (o *Output) workerLocked(db string) *dbWorker {
	w := o.workers[db]
	if w == nil {
		w = newDBWorker(o, db)
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

// manager runs the source-idle switch, the sequence-gap timeout and the
// capacity checks.
func (o *Output) manager() {
	defer o.wg.Done()
	tick := o.conf.miniInterval() / 4
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-o.ctx.Done():
			return
		case <-t.C:
		}
		now := o.now()
		o.mu.Lock()
		o.switchIdleLocked(now)
		o.checkGapsLocked(now)
		o.checkInFlightLocked(now)
		o.updateGaugesLocked()
		o.mu.Unlock()
	}
}

// checkInFlightLocked reports when every WriteBatch slot waits on open source
// transactions: nothing can commit, and nothing new can arrive to end them.
func (o *Output) checkInFlightLocked(now time.Time) {
	if o.waiting < o.conf.maxInFlight || o.committable > 0 {
		return
	}
	if len(o.progressWait) > 0 {
		// Waiting for a progress read, which reports its own errors.
		return
	}
	for _, sq := range o.seqs {
		if len(sq.pending) > 0 {
			// Waiting for a sequence gap, which is reported on its own.
			return
		}
	}
	for _, w := range o.workers {
		if len(w.queue) > 0 || w.busy || w.committing > 0 {
			return
		}
	}
	if now.Sub(o.lastMIFErr) < reportEvery {
		return
	}
	o.lastMIFErr = now
	o.log.Errorf("starrocks_txn: all max_in_flight (%d) WriteBatch calls wait on open source transactions whose END is in a batch that cannot be delivered: raise max_in_flight to at least (batches per commit cycle + batches one source transaction spans) × partitions", o.conf.maxInFlight)
	o.m.mifStarved.Incr(1)
}

func (o *Output) updateGaugesLocked() {
	o.m.buffered.Set(o.buffered)
	regions := map[string]struct{}{}
	for _, p := range o.parts {
		add := func(t *srcTxn) {
			for tbl := range t.rows {
				regions[p.key.String()+"\x00"+t.db+"\x00"+tbl] = struct{}{}
			}
		}
		for _, t := range p.active {
			add(t)
		}
		if p.open != nil {
			add(p.open)
		}
	}
	o.m.openRegions.Set(int64(len(regions)))
	n := 0
	for _, p := range o.parts {
		if p.stalled != nil {
			n++
		}
	}
	o.m.stalledPartitions.Set(int64(n))
}

// deadLetterLoop writes poisoned transactions, whole and in order, to
// dead_letter, retrying forever, and then resolves them.
func (o *Output) deadLetterLoop() {
	defer o.wg.Done()
	for {
		o.mu.Lock()
		var t *srcTxn
		if len(o.dlQueue) > 0 {
			t = o.dlQueue[0]
			o.dlQueue = o.dlQueue[1:]
			o.dlWriting = t
		}
		o.mu.Unlock()
		if t == nil {
			select {
			case <-o.ctx.Done():
				return
			case <-o.dlWake:
				continue
			}
		}
		batch := make(service.MessageBatch, 0, len(t.items))
		for _, it := range t.items {
			m := it.msg.Copy()
			m.MetaSetMut(deadLetterReasonKey, t.poison.Error())
			batch = append(batch, m)
		}
		b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
		for {
			err := o.dl.WriteBatch(o.ctx, batch)
			if err == nil {
				break
			}
			if o.ctx.Err() != nil {
				return
			}
			o.log.Errorf("starrocks_txn: writing source transaction %q of partition %s to dead_letter: %v; retrying", t.id, t.p.key, err)
			if !sleepCtx(o.ctx, b.next()) {
				return
			}
		}
		o.m.deadLettered.Incr(1, t.p.key.String())
		o.mu.Lock()
		o.dlWriting = nil
		if !t.state.over() {
			// Released already when a fence took its partition meanwhile:
			// the write happened all the same (dead_letter is at least
			// once), and nothing is left to resolve.
			o.moveLocked(t, txnDeadLettered)
		}
		o.mu.Unlock()
	}
}

// fence drops everything uncommitted of a partition (under every seq
// source), waits (bounded) for an in-flight commit that contains its rows,
// and releases its held WriteBatch calls with success: the new owner of the
// partition reads them again.
func (o *Output) fence(ctx context.Context, part string) error {
	o.mu.Lock()
	var txns []*srcTxn
	var held []*item
	var fenced []*partition
	// The next message of the partition reads its durable progress again:
	// a new owner may have moved it on by then.
	delete(o.progress, part)
	o.progressGen[part]++
	// Messages waiting for the progress belong to the fenced assignment.
	held = append(held, o.progressWait[part]...)
	delete(o.progressWait, part)
	for k, p := range o.parts {
		if k.partition != part {
			continue
		}
		// p.fenced is set only once the wait below is over: a commit in
		// flight that resolves meanwhile still publishes its boundary, which
		// the input commits on revoke.
		fenced = append(fenced, p)
		mine := append([]*srcTxn{}, p.order...)
		if p.open != nil {
			mine = append(mine, p.open)
		}
		txns = append(txns, mine...)
		for _, t := range mine {
			if !t.state.over() {
				o.moveLocked(t, txnFenced)
			}
		}
		delete(o.parts, k)
		held = append(held, p.held...)
		if p.stalled != nil {
			o.m.stalled.Set(0, k.String(), p.stalledTxn)
		}
	}
	// Messages of the partition still waiting for a sequence gap.
	for _, s := range o.seqs {
		for _, it := range s.pending {
			if it.pk.partition == part {
				held = append(held, it)
			}
		}
	}
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		for _, p := range fenced {
			p.fenced = true
		}
		// A progress read during the wait may predate the commit that
		// was in flight: read it again.
		delete(o.progress, part)
		o.progressGen[part]++
		o.mu.Unlock()
	}()

	deadline := time.NewTimer(fenceWait)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		busy := false
		for _, t := range txns {
			if t.inCommit {
				busy = true
				break
			}
		}
		if !busy {
			for _, t := range txns {
				o.releaseFencedLocked(t)
			}
			for _, it := range held {
				o.itemDoneLocked(it)
			}
			o.mu.Unlock()
			return nil
		}
		o.mu.Unlock()
		select {
		case <-ctx.Done():
			return o.fenceGiveUp(txns, held, fmt.Errorf("fencing partition %s: waiting for an in-flight commit: %w", part, ctx.Err()))
		case <-deadline.C:
			return o.fenceGiveUp(txns, held, fmt.Errorf("fencing partition %s: an in-flight commit containing it did not resolve within %v", part, fenceWait))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// fenceGiveUp ends a fence that stopped waiting for an in-flight commit: what
// is not in that commit is released now; what is, is released by the commit
// goroutine once the commit resolves, either way (committed, or discarded
// from the replay as fenced).
func (o *Output) fenceGiveUp(txns []*srcTxn, held []*item, err error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range txns {
		if !t.inCommit {
			o.releaseFencedLocked(t)
		}
	}
	for _, it := range held {
		o.itemDoneLocked(it)
	}
	return err
}

// releaseFencedLocked releases the messages of a transaction a fence took:
// their WriteBatch calls return with success (the partition's new owner reads
// them again). Nothing is published as committed.
func (o *Output) releaseFencedLocked(t *srcTxn) {
	if t.state == txnFenced && !t.inCommit {
		o.moveLocked(t, txnReleased)
	}
}

// liveTxnsLocked returns txns without those a fence or a stall took out,
// releasing the fenced ones it discards.
func (o *Output) liveTxnsLocked(txns []*srcTxn) []*srcTxn {
	out := make([]*srcTxn, 0, len(txns))
	for _, t := range txns {
		o.releaseFencedLocked(t)
		if t.state.live() {
			out = append(out, t)
		}
	}
	return out
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
