package debezium_txn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// Name is the registered name of the input.
const Name = "debezium_txn"

// Metadata keys set on every message besides the contract.
const (
	MetaKey          = "kafka_key"
	MetaTopic        = "kafka_topic"
	MetaPartition    = "kafka_partition"
	MetaOffset       = "kafka_offset"
	MetaTimestampMs  = "kafka_timestamp_ms"
	MetaTimestampSec = "kafka_timestamp_unix"
	MetaOp           = "debezium_op"
	MetaDB           = "debezium_db"
	MetaSchema       = "debezium_schema"
	MetaTable        = "debezium_table"
	MetaSnapshot     = "debezium_snapshot"
)

const (
	maxPollRecords = 10000
	// defaultBatchCap bounds a batch without a batching policy (whole
	// transactions only, so one large transaction can exceed it).
	defaultBatchCap = 1000
	// maxRevokeDrain bounds how long a revoke waits, after the last
	// emission, for a batch on its way to the output (see release).
	maxRevokeDrain = 250 * time.Millisecond
	periodDue      = time.Millisecond
)

func init() {
	service.MustRegisterBatchInput(Name, ConfigSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchInput, error) {
		return New(conf, mgr)
	})
}

// Input is the debezium_txn batch input.
type Input struct {
	conf      inputConfig
	mgr       *service.Resources
	log       *service.Logger
	reg       *registry.Registry
	m         inputMetrics
	lim       *kafka.LogLimiter
	reports   *kafka.LogLimiter
	seqSource string
	// dec decodes data values in the poll goroutine, outside mu.
	dec *decoder

	// commitMu serialises offset commits.
	commitMu sync.Mutex

	mu     sync.Mutex
	cl     *kgo.Client
	adm    *kadm.Client
	cancel context.CancelFunc
	loops  sync.WaitGroup
	closed bool
	notify chan struct{}

	// The current assignment; asm is nil while nothing is assigned.
	asm        *assembler
	gen        uint64
	dataParts  map[tp]bool
	partial    error
	revoking   bool
	epoch      uint64
	sideEpochs map[tp]uint64
	paused     map[tp]bool
	committed  map[tp]int64
	lastEmit   time.Time
	unacked    int
	stopped    error
	stats      assemblerStats

	// owned is the last assignment, for the balancer's stickiness.
	owned map[string][]int32

	seq int64
	// batcher holds messages of whole emissions until the policy flushes.
	batcher  *service.Batcher
	batchEms []*emission
}

// New builds the input from a parsed config.
func New(conf *service.ParsedConfig, mgr *service.Resources) (*Input, error) {
	c, err := inputConfigFromParsed(conf)
	if err != nil {
		return nil, err
	}
	return newInput(c, mgr)
}

func newInput(c inputConfig, mgr *service.Resources) (*Input, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generating the instance tag: %w", err)
	}
	in := &Input{
		conf:      c,
		mgr:       mgr,
		log:       mgr.Logger(),
		reg:       registry.Get(mgr),
		m:         newInputMetrics(mgr.Metrics()),
		lim:       kafka.NewLogLimiter(kafka.LogInterval),
		reports:   kafka.NewLogLimiter(c.missingEventsTimeout),
		seqSource: Name + "-" + hex.EncodeToString(b),
		notify:    make(chan struct{}),
		dec:       newDecoder(valueWriter{loc: c.loc}),
	}
	if !c.batching.IsNoop() {
		bt, err := c.batching.NewBatcher(mgr)
		if err != nil {
			return nil, fmt.Errorf("creating batching policy: %w", err)
		}
		in.batcher = bt
	}
	in.reg.OnCommitted(in.onCommitted)
	return in, nil
}

// ownedPartitions returns a copy of the last assignment.
func (in *Input) ownedPartitions() map[string][]int32 {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[string][]int32, len(in.owned))
	for t, ps := range in.owned {
		out[t] = append([]int32(nil), ps...)
	}
	return out
}

// dbPartition is the starrocks_partition of every transaction event: the
// transaction topic's name, one per connector (ARCHITECTURE.md §13.4).
func (in *Input) dbPartition() string { return in.conf.transactionTopic }

func (in *Input) acls() string {
	return fmt.Sprintf("topics %v, transaction_topic %q and consumer_group %q", in.conf.topics, in.conf.transactionTopic, in.conf.consumerGroup)
}

func (in *Input) logger() kgo.Logger { return kafka.NewLogger(in.log, in.lim) }

func (in *Input) consumerOpts() []kgo.Opt {
	iso := kgo.ReadUncommitted()
	if in.conf.readCommitted {
		iso = kgo.ReadCommitted()
	}
	reset := kgo.NewOffset().AtEnd()
	if in.conf.startFromOldest {
		reset = kgo.NewOffset().AtStart()
	}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(in.conf.consumerGroup),
		kgo.Balancers(singleOwnerBalancer{owned: in.ownedPartitions}),
		kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(reset),
		kgo.DisableAutoCommit(),
		// Transaction markers advance a partition's position: the input
		// knows when it has read a partition to its end.
		kgo.KeepControlRecords(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(in.onAssigned),
		kgo.OnPartitionsRevoked(in.onRevoked),
		kgo.OnPartitionsLost(in.onLost),
		kgo.AdjustFetchOffsetsFn(in.adjustOffsets),
		kgo.SessionTimeout(in.conf.sessionTimeout),
		kgo.RebalanceTimeout(in.conf.rebalanceTimeout),
		kgo.HeartbeatInterval(in.conf.heartbeatInterval),
		kgo.FetchMaxWait(in.conf.fetchMaxWait),
		kgo.FetchMaxPartitionBytes(in.conf.fetchMaxPartitionBytes),
	}
	if in.conf.regexpTopics {
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(append(append([]string{}, in.conf.topics...), "^"+regexp.QuoteMeta(in.conf.transactionTopic)+"$")...))
	} else {
		opts = append(opts, kgo.ConsumeTopics(append(append([]string{}, in.conf.topics...), in.conf.transactionTopic)...))
	}
	return opts
}

// Connect checks the cluster and the transaction topic, and joins the
// consumer group.
func (in *Input) Connect(ctx context.Context) error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return service.ErrEndOfInput
	}
	if in.cl != nil {
		in.mu.Unlock()
		return nil
	}
	in.mu.Unlock()

	check := []string{in.conf.transactionTopic}
	if !in.conf.regexpTopics {
		check = append(check, in.conf.topics...)
	}
	if err := in.conf.client.CheckCluster(ctx, in.logger(), "topics or transaction_topic", in.acls(), check...); err != nil {
		return err
	}
	if err := in.checkTransactionTopic(ctx); err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(in.conf.client.Opts(in.logger()), in.consumerOpts()...)...)
	if err != nil {
		return fmt.Errorf("creating kafka consumer: %w", err)
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		cancel()
		cl.Close()
		return service.ErrEndOfInput
	}
	in.cl, in.adm, in.cancel = cl, kadm.NewClient(cl), cancel
	in.mu.Unlock()
	in.loops.Add(3)
	go in.pollLoop(loopCtx, cl)
	go in.commitLoop(loopCtx, cl)
	go in.reportLoop(loopCtx)
	in.log.Infof("Consuming Debezium topics %v and transaction topic %q as group %q from seed_brokers [%s]", in.conf.topics, in.conf.transactionTopic, in.conf.consumerGroup, in.conf.client.BrokersString())
	return nil
}

// checkTransactionTopic refuses a transaction topic with more than one
// partition: its single partition is the commit order.
func (in *Input) checkTransactionTopic(ctx context.Context) error {
	cl, err := kgo.NewClient(in.conf.client.Opts(in.logger())...)
	if err != nil {
		return fmt.Errorf("creating kafka client: %w", err)
	}
	defer cl.Close()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, kafka.ConnectTimeout)
		defer cancel()
	}
	details, err := kadm.NewClient(cl).ListTopics(ctx, in.conf.transactionTopic)
	if err != nil {
		return in.conf.client.ClusterError("reading the transaction topic's metadata", in.acls(), err)
	}
	return transactionTopicError(in.conf.transactionTopic, details)
}

func transactionTopicError(topic string, details kadm.TopicDetails) error {
	d, ok := details[topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("transaction_topic %q does not exist: set provide.transaction.metadata=true on the connector, or fix transaction_topic", topic)
	}
	if d.Err != nil {
		return fmt.Errorf("reading the metadata of transaction_topic %q: %w", topic, d.Err)
	}
	if n := len(d.Partitions); n != 1 {
		return fmt.Errorf("transaction_topic %q has %d partitions: its single partition is the source's commit order, with several the order of the transactions is lost; recreate it with one partition", topic, n)
	}
	return nil
}

func (in *Input) signalLocked() {
	close(in.notify)
	in.notify = make(chan struct{})
}

//------------------------------------------------------------------------------

func (in *Input) pollLoop(ctx context.Context, cl *kgo.Client) {
	defer in.loops.Done()
	for {
		fetches := cl.PollRecords(ctx, maxPollRecords)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			cl.AllowRebalance()
			return
		}
		fetches.EachError(func(topic string, part int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			if in.lim.Due("fetch:" + topic + strconv.Itoa(int(part)) + err.Error()) {
				in.log.Errorf("Fetching %s/%d from seed_brokers [%s]: %v", topic, part, in.conf.client.BrokersString(), err)
			}
		})
		now := time.Now()
		// Values are decoded before the lock is taken, so ReadBatch and
		// acknowledgements are not held up by the decoding.
		var parts []fetchedPartition
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			parts = append(parts, in.decodePartition(fp))
		})
		in.mu.Lock()
		if a := in.asm; a != nil && !in.revoking {
			for _, fp := range parts {
				in.feedLocked(a, fp, now)
			}
			in.afterFeedLocked()
		}
		in.signalLocked()
		in.mu.Unlock()
		cl.AllowRebalance()
	}
}

// fetchedPartition is one partition's fetched records, data values decoded.
type fetchedPartition struct {
	kgo.FetchTopicPartition
	decoded []decoded
}

// decodePartition decodes the values of a data partition's records. Only
// the poll goroutine uses in.dec.
func (in *Input) decodePartition(fp kgo.FetchTopicPartition) fetchedPartition {
	out := fetchedPartition{FetchTopicPartition: fp}
	if fp.Topic == in.conf.transactionTopic {
		return out
	}
	out.decoded = make([]decoded, len(fp.Records))
	for i, r := range fp.Records {
		if !r.Attrs.IsControl() {
			out.decoded[i] = decodeRecord(in.dec, r.Value)
		}
	}
	return out
}

// feedLocked hands one partition's fetched records to the assembler.
func (in *Input) feedLocked(a *assembler, fp fetchedPartition, now time.Time) {
	txnTopic := fp.Topic == in.conf.transactionTopic
	if txnTopic && fp.HighWatermark >= 0 {
		a.txnHighWatermark(fp.HighWatermark)
	}
	if !txnTopic && !in.dataParts[tp{fp.Topic, fp.Partition}] {
		return
	}
	for i, r := range fp.Records {
		if r.Attrs.IsControl() {
			a.controlRecord(tp{r.Topic, r.Partition}, r.Offset)
			continue
		}
		var err error
		if txnTopic {
			err = a.addTxnMeta(r.Offset, r.Value, now)
		} else {
			err = a.addDecoded(fp.decoded[i], recMeta{tp: tp{r.Topic, r.Partition}, offset: r.Offset, key: r.Key, ts: r.Timestamp}, now)
		}
		if err != nil && !errors.Is(err, errPartitionStopped) {
			in.log.Errorf("%v; the partition is stopped there: nothing at or after it is emitted or committed", err)
		}
	}
}

// afterFeedLocked updates what depends on the assembler's state: pauses,
// the end-offsets listing of the snapshot gate, the metrics.
func (in *Input) afterFeedLocked() {
	a := in.asm
	if a == nil {
		return
	}
	in.updatePausesLocked()
	if after, last, ok := a.wantEnds(); ok {
		go in.listEnds(in.gen, after, last)
	}
	in.syncMetricsLocked()
}

func (in *Input) syncMetricsLocked() {
	a := in.asm
	if a == nil {
		return
	}
	in.m.addStats(a.stats, in.stats)
	in.stats = a.stats
	in.m.bufferedBytes.Set(a.buffered)
	in.m.bufferedTxns.Set(int64(len(a.txns)))
	in.m.inFlight.Set(int64(in.unacked))
}

// updatePausesLocked pauses stopped partitions and, at max_buffered_bytes,
// every data partition the oldest transaction by END order does not need
// to be emitted (assembler.mustRead); the transaction topic is always read.
// A transaction larger than the bound still completes: the partitions it
// needs stay read however much is buffered (ARCHITECTURE.md §13.8).
func (in *Input) updatePausesLocked() {
	a := in.asm
	want := map[tp]bool{}
	full := a.cfg.maxBufferedBytes > 0 && a.buffered >= a.cfg.maxBufferedBytes
	var keep map[tp]bool
	known := false
	if full {
		keep, known = a.mustRead()
	}
	for p := range in.dataParts {
		if ps := a.parts[p]; ps != nil && ps.failed != nil {
			want[p] = true
			continue
		}
		if full && (!known || !keep[p]) {
			want[p] = true
		}
	}
	if full {
		in.m.bufferFull.Set(1)
	} else {
		in.m.bufferFull.Set(0)
	}
	pause, resume := map[string][]int32{}, map[string][]int32{}
	for p := range want {
		if !in.paused[p] {
			pause[p.topic] = append(pause[p.topic], p.part)
			in.paused[p] = true
		}
	}
	for p := range in.paused {
		if !want[p] {
			resume[p.topic] = append(resume[p.topic], p.part)
			delete(in.paused, p)
		}
	}
	if len(pause) > 0 {
		in.cl.PauseFetchPartitions(pause)
	}
	if len(resume) > 0 {
		in.cl.ResumeFetchPartitions(resume)
	}
}

// listEnds lists the data partitions' end offsets for the snapshot gate.
func (in *Input) listEnds(gen uint64, after int64, last bool) {
	in.mu.Lock()
	adm := in.adm
	topics := map[string]bool{}
	for p := range in.dataParts {
		topics[p.topic] = true
	}
	in.mu.Unlock()
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), in.conf.revokeTimeout)
	res, err := adm.ListEndOffsets(ctx, names...)
	cancel()
	var ends map[tp]int64
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		in.log.Warnf("Listing the data partitions' end offsets for the snapshot gate (retried): %v", err)
		time.Sleep(time.Second)
	} else {
		ends = map[tp]int64{}
		res.Each(func(o kadm.ListedOffset) { ends[tp{o.Topic, o.Partition}] = o.Offset })
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.gen != gen || in.asm == nil {
		return
	}
	in.asm.endsListed(after, last, ends)
	in.afterFeedLocked()
	in.signalLocked()
}

//------------------------------------------------------------------------------

// ReadBatch returns the next batch of whole emitted transactions.
func (in *Input) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	for {
		in.mu.Lock()
		if in.closed {
			in.mu.Unlock()
			return nil, nil, service.ErrEndOfInput
		}
		if in.cl == nil {
			in.mu.Unlock()
			return nil, nil, service.ErrNotConnected
		}
		batch, ack, wait := in.nextBatchLocked(ctx)
		notify := in.notify
		in.mu.Unlock()
		if batch != nil {
			return batch, ack, nil
		}
		var timeout <-chan time.Time
		var timer *time.Timer
		if wait > 0 {
			timer = time.NewTimer(wait)
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil, nil, ctx.Err()
		case <-notify:
		case <-timeout:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// nextBatchLocked collects ready emissions into a batch, whole emissions
// only, within checkpoint_limit (one emission always goes when nothing is
// in flight, so a transaction larger than the limit never deadlocks).
func (in *Input) nextBatchLocked(ctx context.Context) (service.MessageBatch, service.AckFunc, time.Duration) {
	a := in.asm
	if a == nil || in.revoking || in.stopped != nil || in.partial != nil {
		return nil, nil, 0
	}
	capMsgs := defaultBatchCap
	if in.batcher != nil && in.conf.batching.Count > 0 {
		capMsgs = in.conf.batching.Count
	}
	var ems []*emission
	var msgs service.MessageBatch
	inBatcher := 0
	for _, em := range in.batchEms {
		inBatcher += len(em.msgs)
	}
	full := false
	for !full {
		n := in.unacked + len(msgs) + inBatcher
		if n >= in.conf.checkpointLimit && n > 0 {
			break
		}
		if in.batcher == nil && len(msgs) >= capMsgs {
			break
		}
		em := a.next(max(capMsgs-len(msgs)-inBatcher, 1))
		if em == nil {
			break
		}
		in.lastEmit = time.Now()
		for _, om := range em.msgs {
			msg := in.messageLocked(om)
			if in.batcher != nil {
				if in.batcher.Add(msg) {
					full = true
				}
				continue
			}
			msgs = append(msgs, msg)
		}
		if in.batcher != nil {
			in.batchEms = append(in.batchEms, em)
			inBatcher += len(em.msgs)
		} else {
			ems = append(ems, em)
		}
	}
	for _, n := range a.notes {
		in.log.Errorf("%s", n)
	}
	a.notes = nil
	in.syncMetricsLocked()
	var wait time.Duration
	if in.batcher != nil {
		if len(in.batchEms) == 0 {
			return nil, nil, 0
		}
		if !full {
			if d, timed := in.batcher.UntilNext(); timed && d > periodDue {
				return nil, nil, d
			}
		}
		flushed, err := in.batcher.Flush(ctx)
		if err != nil {
			in.log.Errorf("Batching processors failed on transaction %s: %v", in.batchEms[0].msgs[0].txnID, err)
		}
		msgs, ems, in.batchEms = flushed, in.batchEms, nil
	}
	if len(ems) == 0 {
		return nil, nil, wait
	}
	n := 0
	for _, em := range ems {
		n += len(em.msgs)
	}
	for _, msg := range msgs {
		in.seq++
		msg.MetaSetMut(contract.KeySeq, strconv.FormatInt(in.seq, 10))
	}
	in.unacked += n
	in.m.inFlight.Set(int64(in.unacked))
	if len(msgs) == 0 {
		// The batching processors left nothing: nothing to wait for.
		in.ackLocked(in.gen, ems, n, nil)
		return nil, nil, 0
	}
	gen := in.gen
	return msgs, func(_ context.Context, err error) error {
		in.mu.Lock()
		defer in.mu.Unlock()
		in.ackLocked(gen, ems, n, err)
		return nil
	}, 0
}

// messageLocked renders one emitted row with its metadata and the contract
// (the sequence number is stamped when the batch goes out).
func (in *Input) messageLocked(om outMsg) *service.Message {
	msg := service.NewMessage(om.ev.row)
	msg.MetaSetMut(MetaKey, string(om.rec.key))
	msg.MetaSetMut(MetaTopic, om.rec.tp.topic)
	msg.MetaSetMut(MetaPartition, int(om.rec.tp.part))
	msg.MetaSetMut(MetaOffset, int(om.rec.offset))
	if !om.rec.ts.IsZero() {
		msg.MetaSetMut(MetaTimestampMs, om.rec.ts.UnixMilli())
		msg.MetaSetMut(MetaTimestampSec, om.rec.ts.Unix())
	}
	msg.MetaSetMut(MetaOp, string(om.ev.op))
	msg.MetaSetMut(MetaDB, om.ev.db)
	msg.MetaSetMut(MetaSchema, om.ev.schema)
	msg.MetaSetMut(MetaTable, om.ev.table)
	msg.MetaSetMut(MetaSnapshot, om.ev.snapshot)
	db, table := om.ev.defaultDatabase(), om.ev.table
	if in.conf.database != nil {
		s, err := in.conf.database.TryString(msg)
		if err != nil {
			msg.SetError(fmt.Errorf("interpolating database: %w", err))
		}
		db = s
	}
	if in.conf.table != nil {
		s, err := in.conf.table.TryString(msg)
		if err != nil {
			msg.SetError(fmt.Errorf("interpolating table: %w", err))
		}
		table = s
	}
	epoch := in.epoch
	if om.side {
		epoch = in.sideEpochLocked(om.rec.tp)
	}
	contract.Write(msg, contract.Meta{
		Partition: om.partition, Database: db, Table: table, TxnID: om.txnID, TxnEnd: om.end,
		HasSeq: true, SeqSource: in.seqSource,
		HasOffset: true, SourceOffset: om.sourceOffset,
		HasEpoch: true, Epoch: epoch,
	})
	return msg
}

// sideEpochLocked returns the assignment epoch of a side partition, taking
// one from the registry at its first row of the assignment.
func (in *Input) sideEpochLocked(p tp) uint64 {
	if e, ok := in.sideEpochs[p]; ok {
		return e
	}
	id := p.String()
	in.reg.Forget(id)
	e := in.reg.Assign(id)
	in.sideEpochs[p] = e
	return e
}

// ackLocked records the outcome of a delivered batch. Acknowledgements of an
// earlier assignment, or during a revoke, mark nothing: they are the output
// releasing fenced batches, not commits.
func (in *Input) ackLocked(gen uint64, ems []*emission, n int, err error) {
	if gen != in.gen || in.revoking || in.asm == nil {
		return
	}
	in.unacked -= n
	in.m.inFlight.Set(int64(in.unacked))
	if err != nil {
		if in.stopped == nil {
			in.stopped = fmt.Errorf("the output rejected the batch starting with transaction %q: %w; nothing past it is emitted or committed: fix the cause and restart the stream", ems[0].msgs[0].txnID, err)
			in.m.stopped.Set(1)
			in.log.Errorf("%v", in.stopped)
		}
		return
	}
	if !in.reg.Tracking() {
		for _, em := range ems {
			in.asm.acked(em)
		}
	}
	in.afterFeedLocked()
	in.signalLocked()
}

// onCommitted receives the output's committed-through offsets.
func (in *Input) onCommitted(partition string, offset int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.asm == nil {
		return
	}
	in.asm.committed(partition, offset)
	in.afterFeedLocked()
	in.signalLocked()
}

// Close commits the floors, leaves the group (which revokes and fences
// everything) and closes the client.
func (in *Input) Close(ctx context.Context) error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil
	}
	in.closed = true
	cl, cancel := in.cl, in.cancel
	in.signalLocked()
	in.mu.Unlock()
	if cl == nil {
		return nil
	}
	cancel()
	in.loops.Wait()
	cctx, ccancel := context.WithTimeout(ctx, in.conf.rebalanceTimeout)
	defer ccancel()
	if err := in.commit(cctx, cl); err != nil {
		in.log.Warnf("Final offset commit: %v", err)
	}
	cl.AllowRebalance()
	if err := cl.LeaveGroupContext(cctx); err != nil {
		in.log.Warnf("Leaving consumer group %q: %v", in.conf.consumerGroup, err)
	}
	cl.Close()
	if in.batcher != nil {
		_ = in.batcher.Close(ctx)
	}
	return nil
}
