// Package kafka_txn is the kafka_txn input: a franz-go consumer-group reader
// of CDC source transactions that delivers each partition in offset order,
// keeps several batches of a partition in flight (bounded by checkpoint_limit),
// and commits offsets only at source-transaction boundaries that the
// starrocks_txn output has committed (ARCHITECTURE.md §4.6, §6).
package kafka_txn

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// Name is the registered name of the input.
const Name = "kafka_txn"

// Metadata keys set on every message.
const (
	MetaKey          = "kafka_key"
	MetaTopic        = "kafka_topic"
	MetaPartition    = "kafka_partition"
	MetaOffset       = "kafka_offset"
	MetaTimestampSec = "kafka_timestamp_unix"
	MetaTimestampMs  = "kafka_timestamp_ms"
	MetaTombstone    = "kafka_tombstone_message"
	MetaLag          = "kafka_lag"
)

const (
	// maxPollRecords bounds one poll so that the lock that spreads records
	// over partitions is held briefly.
	maxPollRecords = 10000
	// maxStallCheckInterval is the slowest tick of the checkpoint stall check.
	maxStallCheckInterval = time.Second
	// maxRevokeDrain bounds how long a revoke waits, after the last batch of
	// a revoked partition was delivered, before it fences the partition (see
	// release).
	maxRevokeDrain = 250 * time.Millisecond
	// periodDue is how close to its period deadline a partition's batch is
	// flushed; Batcher.UntilNext reports an elapsed period as 1ns.
	periodDue = time.Millisecond
)

func init() {
	service.MustRegisterBatchInput(Name, ConfigSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchInput, error) {
		return New(conf, mgr)
	})
}

// pendingBatch is a delivered batch of one partition, not yet acknowledged.
type pendingBatch struct {
	first, last int64
	n           int
	acked       bool
	nacked      bool
}

// partState is the state of one assigned partition. A new assignment gets a
// new partState, so an acknowledgement of an older assignment finds its
// partState gone from the map and marks nothing.
type partState struct {
	topic string
	part  int32
	id    string
	label string
	// epoch is the partition's assignment epoch in the registry, stamped
	// on every message of the assignment (contract.KeyPartitionEpoch).
	epoch uint64

	queue     []*kgo.Record // fetched, not yet handed to a batch
	batcher   *service.Batcher
	batching  []*kgo.Record // added to the batcher, not yet delivered
	batchMsgs service.MessageBatch
	pending   []*pendingBatch // delivered, in offset order

	unacked       int   // delivered and not acknowledged
	firstOffset   int64 // first offset fetched in this assignment
	nextFetch     int64 // offset after the last fetched record
	deliveredNext int64 // offset after the last delivered record
	ackedNext     int64 // offset after the contiguous acknowledged prefix
	committedThru int64 // END offset the output published as committed
	lastCommitted int64 // last offset committed to the group
	hwm           int64

	failed   error // set by a nack: the partition is stopped
	failedAt int64 // first offset of the nacked batch

	revoking        bool
	paused          bool
	lastDelivery    time.Time
	lastAck         time.Time
	limitSince      time.Time
	lastStallReport time.Time
}

func (ps *partState) atLimit(limit int) bool {
	return ps.unacked+len(ps.batching) >= limit
}

// commitTarget returns the offset to commit for the partition, or -1. With a
// tracking output it is the committed-through END offset plus one (the next
// position after the END; it may be a transaction marker), never past what
// was delivered in this assignment. Otherwise it is the end of the
// contiguous acknowledged prefix. Nothing at or past a nacked batch is ever
// committed.
func (ps *partState) commitTarget(tracking bool) int64 {
	t := int64(-1)
	if tracking {
		if ps.firstOffset >= 0 && ps.committedThru >= ps.firstOffset && ps.deliveredNext >= 0 {
			t = min(ps.committedThru+1, ps.deliveredNext)
		}
	} else {
		t = ps.ackedNext
	}
	if ps.failed != nil && t > ps.failedAt {
		t = ps.failedAt
	}
	return t
}

type inputMetrics struct {
	lag             *service.MetricGauge
	inFlight        *service.MetricGauge
	paused          *service.MetricGauge
	committedOffset *service.MetricGauge
	commits         *service.MetricCounter
	commitErrors    *service.MetricCounter
	stalls          *service.MetricCounter
	nacks           *service.MetricCounter
	fences          *service.MetricCounter
}

// Input is the kafka_txn batch input.
type Input struct {
	conf inputConfig
	mgr  *service.Resources
	log  *service.Logger
	reg  *registry.Registry
	m    inputMetrics

	// commitMu serialises offset commits, so a revoke waits for a commit
	// that is already in flight.
	commitMu sync.Mutex

	mu     sync.Mutex
	cl     *kgo.Client
	cancel context.CancelFunc
	loops  sync.WaitGroup
	closed bool
	parts  map[string]*partState
	order  []string
	rr     int
	notify chan struct{}

	// logLim rate-limits repeating fetch and commit errors and franz-go's
	// own warnings.
	logLim *kafka.LogLimiter
}

// New builds a kafka_txn input from a parsed config.
func New(conf *service.ParsedConfig, mgr *service.Resources) (*Input, error) {
	c, err := inputConfigFromParsed(conf)
	if err != nil {
		return nil, err
	}
	return newInput(c, mgr)
}

func newInput(c inputConfig, mgr *service.Resources) (*Input, error) {
	if !c.batching.IsNoop() {
		// Build one batcher now so that a bad policy fails at construction.
		b, err := c.batching.NewBatcher(mgr)
		if err != nil {
			return nil, fmt.Errorf("creating batching policy: %w", err)
		}
		_ = b.Close(context.Background())
	}
	met := mgr.Metrics()
	in := &Input{
		conf: c,
		mgr:  mgr,
		log:  mgr.Logger(),
		reg:  registry.Get(mgr),
		m: inputMetrics{
			lag:             met.NewGauge("kafka_txn_lag", "topic", "partition"),
			inFlight:        met.NewGauge("kafka_txn_in_flight", "topic", "partition"),
			paused:          met.NewGauge("kafka_txn_paused", "topic", "partition"),
			committedOffset: met.NewGauge("kafka_txn_committed_offset", "topic", "partition"),
			commits:         met.NewCounter("kafka_txn_commits"),
			commitErrors:    met.NewCounter("kafka_txn_commit_errors"),
			stalls:          met.NewCounter("kafka_txn_checkpoint_stalls", "topic", "partition"),
			nacks:           met.NewCounter("kafka_txn_nacks", "topic", "partition"),
			fences:          met.NewCounter("kafka_txn_fences", "topic", "partition"),
		},
		parts:  map[string]*partState{},
		notify: make(chan struct{}),
		logLim: kafka.NewLogLimiter(kafka.LogInterval),
	}
	in.reg.OnCommitted(in.onCommitted)
	return in, nil
}

//------------------------------------------------------------------------------

func (in *Input) clientOpts() []kgo.Opt {
	return in.conf.client.Opts(kafka.NewLogger(in.log, in.logLim))
}

func (in *Input) consumerOpts() []kgo.Opt {
	iso := kgo.ReadUncommitted()
	if in.conf.readCommitted {
		iso = kgo.ReadCommitted()
	}
	reset := kgo.NewOffset().AtEnd()
	if in.conf.startFromOldest {
		reset = kgo.NewOffset().AtStart()
	}
	return []kgo.Opt{
		kgo.ConsumerGroup(in.conf.consumerGroup),
		kgo.ConsumeTopics(in.conf.topics...),
		kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(reset),
		kgo.DisableAutoCommit(),
		// Rebalance callbacks never run between a poll and the moment its
		// records are spread over the partitions' queues, so a revoked
		// partition never receives records of its old assignment.
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
}

func (in *Input) brokersString() string {
	return in.conf.client.BrokersString()
}

// acls names what the sasl user must be allowed to do, for errors.
func (in *Input) acls() string {
	return fmt.Sprintf("topics %v and consumer_group %q", in.conf.topics, in.conf.consumerGroup)
}

// checkCluster verifies that a broker answers and that every topic exists.
func (in *Input) checkCluster(ctx context.Context) error {
	return in.conf.client.CheckCluster(ctx, kafka.NewLogger(in.log, in.logLim), fieldTopics, in.acls(), in.conf.topics...)
}

// Connect checks the cluster and joins the consumer group.
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

	if err := in.checkCluster(ctx); err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(in.clientOpts(), in.consumerOpts()...)...)
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
	in.cl = cl
	in.cancel = cancel
	in.mu.Unlock()

	in.loops.Add(3)
	go in.pollLoop(loopCtx, cl)
	go in.commitLoop(loopCtx, cl)
	go in.stallLoop(loopCtx)
	in.log.Infof("Consuming topics %v as group %q from seed_brokers [%s]", in.conf.topics, in.conf.consumerGroup, in.brokersString())
	return nil
}

//------------------------------------------------------------------------------

func (in *Input) signalLocked() {
	close(in.notify)
	in.notify = make(chan struct{})
}

func (in *Input) rebuildOrderLocked() {
	in.order = in.order[:0]
	for id := range in.parts {
		in.order = append(in.order, id)
	}
	sort.Strings(in.order)
	in.rr = 0
}

// updatePauseLocked pauses fetching of a partition that holds checkpoint_limit
// messages (fetched, batching or unacknowledged) or is stopped by a nack, and
// resumes it otherwise.
func (in *Input) updatePauseLocked(ps *partState) {
	if in.cl == nil || ps.revoking {
		return
	}
	want := ps.failed != nil || ps.unacked+len(ps.batching)+len(ps.queue) >= in.conf.checkpointLimit
	if want == ps.paused {
		return
	}
	ps.paused = want
	tp := map[string][]int32{ps.topic: {ps.part}}
	if want {
		in.cl.PauseFetchPartitions(tp)
		in.m.paused.Set(1, ps.topic, ps.label)
	} else {
		in.cl.ResumeFetchPartitions(tp)
		in.m.paused.Set(0, ps.topic, ps.label)
	}
}

func (in *Input) updateLagLocked(ps *partState) {
	next := ps.deliveredNext
	if next < 0 {
		next = ps.firstOffset
	}
	if ps.hwm < 0 || next < 0 {
		return
	}
	in.m.lag.Set(max(ps.hwm-next, 0), ps.topic, ps.label)
}

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
			in.reportFetchError(topic, part, err)
		})
		in.mu.Lock()
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			ps := in.parts[contract.KafkaPartition(fp.Topic, fp.Partition)]
			if ps == nil || ps.revoking {
				return
			}
			if fp.HighWatermark >= 0 {
				ps.hwm = fp.HighWatermark
			}
			for _, r := range fp.Records {
				if r.Offset < ps.nextFetch {
					// Never deliver a partition backwards.
					continue
				}
				if ps.firstOffset < 0 {
					ps.firstOffset = r.Offset
				}
				ps.nextFetch = r.Offset + 1
				ps.queue = append(ps.queue, r)
			}
			in.updatePauseLocked(ps)
			in.updateLagLocked(ps)
		})
		in.signalLocked()
		in.mu.Unlock()
		cl.AllowRebalance()
	}
}

// logDue reports whether a log line with this key is due: the first time,
// then at most once per kafka.LogInterval.
func (in *Input) logDue(key string) bool {
	return in.logLim.Due(key)
}

func (in *Input) reportFetchError(topic string, part int32, err error) {
	if !in.logDue("fetch:" + contract.KafkaPartition(topic, part) + ":" + err.Error()) {
		return
	}
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		in.log.Errorf("Fetching %s: topic %q does not exist (deleted?): fix topics or recreate it: %v", contract.KafkaPartition(topic, part), topic, err)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.SaslAuthenticationFailed):
		in.log.Errorf("Fetching %s: not authorized, check sasl and the ACLs of topic %q and consumer_group %q: %v", contract.KafkaPartition(topic, part), topic, in.conf.consumerGroup, err)
	default:
		in.log.Errorf("Fetching %s from seed_brokers [%s]: %v", contract.KafkaPartition(topic, part), in.brokersString(), err)
	}
}

//------------------------------------------------------------------------------

// ReadBatch returns the next batch of one partition.
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
		var timer *time.Timer
		var timeout <-chan time.Time
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

// nextBatchLocked visits the partitions round-robin and returns the first
// batch that is due, or the time until a batching period ends.
func (in *Input) nextBatchLocked(ctx context.Context) (service.MessageBatch, service.AckFunc, time.Duration) {
	var wait time.Duration
	n := len(in.order)
	for i := 0; i < n; i++ {
		ps := in.parts[in.order[(in.rr+i)%n]]
		if ps == nil || ps.failed != nil || ps.revoking {
			continue
		}
		ready := in.fillLocked(ps)
		if !ready && len(ps.batching) > 0 && ps.batcher != nil {
			if d, timed := ps.batcher.UntilNext(); timed {
				if d <= periodDue {
					ready = true
				} else if wait == 0 || d < wait {
					wait = d
				}
			}
		}
		if !ready {
			continue
		}
		in.rr = (in.rr + i + 1) % n
		if batch, ack := in.flushLocked(ctx, ps); batch != nil {
			return batch, ack, 0
		}
	}
	return nil, nil, wait
}

// fillLocked moves fetched records into the partition's batch while the
// partition is below checkpoint_limit, and reports whether the batch is due.
func (in *Input) fillLocked(ps *partState) bool {
	room := in.conf.checkpointLimit - ps.unacked - len(ps.batching)
	for room > 0 && len(ps.queue) > 0 {
		rec := ps.queue[0]
		ps.queue[0] = nil
		ps.queue = ps.queue[1:]
		msg := recordToMessage(rec)
		msg.MetaSetMut(contract.KeyPartitionEpoch, strconv.FormatUint(ps.epoch, 10))
		if ps.hwm >= 0 {
			msg.MetaSetMut(MetaLag, max(ps.hwm-rec.Offset-1, 0))
		}
		ps.batching = append(ps.batching, rec)
		room--
		if ps.batcher == nil {
			ps.batchMsgs = append(ps.batchMsgs, msg)
			continue
		}
		if ps.batcher.Add(msg) {
			return true
		}
	}
	if len(ps.queue) == 0 {
		ps.queue = nil
	}
	if len(ps.batching) == 0 {
		return false
	}
	// Without a policy a batch is what was fetched; at the limit the batch
	// must go out, or the partition would wait for itself.
	return ps.batcher == nil || room <= 0
}

func (in *Input) flushLocked(ctx context.Context, ps *partState) (service.MessageBatch, service.AckFunc) {
	recs := ps.batching
	batch := ps.batchMsgs
	ps.batching, ps.batchMsgs = nil, nil
	if len(recs) == 0 {
		return nil, nil
	}
	if ps.batcher != nil {
		var err error
		if batch, err = ps.batcher.Flush(ctx); err != nil {
			in.log.Errorf("Batching processors failed on %s offsets %d-%d: %v", ps.id, recs[0].Offset, recs[len(recs)-1].Offset, err)
		}
	}
	pb := &pendingBatch{first: recs[0].Offset, last: recs[len(recs)-1].Offset, n: len(recs)}
	ps.pending = append(ps.pending, pb)
	wasAtLimit := ps.unacked >= in.conf.checkpointLimit
	ps.unacked += pb.n
	ps.deliveredNext = pb.last + 1
	ps.lastDelivery = time.Now()
	if !wasAtLimit && ps.unacked >= in.conf.checkpointLimit {
		ps.limitSince = time.Now()
	}
	in.m.inFlight.Set(int64(ps.unacked), ps.topic, ps.label)
	in.updateLagLocked(ps)
	in.updatePauseLocked(ps)
	if len(batch) == 0 {
		// The batching processors left nothing: the records are handled.
		in.ackLocked(ps, pb, nil)
		return nil, nil
	}
	return batch, func(_ context.Context, err error) error {
		in.mu.Lock()
		defer in.mu.Unlock()
		in.ackLocked(ps, pb, err)
		return nil
	}
}

// ackLocked records the outcome of a delivered batch. Acknowledgements of a
// partition that is being revoked, or of an earlier assignment, mark nothing.
func (in *Input) ackLocked(ps *partState, pb *pendingBatch, err error) {
	if in.parts[ps.id] != ps || ps.revoking {
		in.log.Debugf("Ignoring the acknowledgement of %s offsets %d-%d: the partition was revoked", ps.id, pb.first, pb.last)
		return
	}
	if pb.acked || pb.nacked {
		return
	}
	if err != nil {
		pb.nacked = true
		in.m.nacks.Incr(1, ps.topic, ps.label)
		if ps.failed == nil {
			ps.failed = fmt.Errorf("partition %s is stopped: the batch at offsets %d-%d was rejected by the output: %w", ps.id, pb.first, pb.last, err)
			ps.failedAt = pb.first
			ps.lastStallReport = time.Now()
			in.log.Errorf("%v; nothing at or past offset %d is committed and the partition is not replayed: fix the cause and restart the stream", ps.failed, pb.first)
			in.updatePauseLocked(ps)
		}
		return
	}
	pb.acked = true
	ps.unacked -= pb.n
	ps.lastAck = time.Now()
	for len(ps.pending) > 0 && ps.pending[0].acked {
		ps.ackedNext = ps.pending[0].last + 1
		ps.pending[0] = nil
		ps.pending = ps.pending[1:]
	}
	in.m.inFlight.Set(int64(ps.unacked), ps.topic, ps.label)
	in.updatePauseLocked(ps)
	in.signalLocked()
}

// onCommitted receives the output's committed-through offsets.
func (in *Input) onCommitted(id string, offset int64) {
	in.mu.Lock()
	if ps := in.parts[id]; ps != nil && offset > ps.committedThru {
		ps.committedThru = offset
	}
	in.mu.Unlock()
}

//------------------------------------------------------------------------------

// commit commits the committable offsets of the given partitions (all
// assigned, non-revoking partitions when ids is nil).
func (in *Input) commit(ctx context.Context, cl *kgo.Client, ids []string) error {
	in.commitMu.Lock()
	defer in.commitMu.Unlock()

	tracking := in.reg.Tracking()
	type target struct {
		ps  *partState
		off int64
	}
	var targets []target
	offsets := map[string]map[int32]kgo.EpochOffset{}
	in.mu.Lock()
	add := func(ps *partState) {
		t := ps.commitTarget(tracking)
		if t < 0 || t <= ps.lastCommitted {
			return
		}
		if offsets[ps.topic] == nil {
			offsets[ps.topic] = map[int32]kgo.EpochOffset{}
		}
		offsets[ps.topic][ps.part] = kgo.EpochOffset{Epoch: -1, Offset: t}
		targets = append(targets, target{ps: ps, off: t})
	}
	if ids == nil {
		for _, ps := range in.parts {
			if !ps.revoking {
				add(ps)
			}
		}
	} else {
		for _, id := range ids {
			if ps := in.parts[id]; ps != nil {
				add(ps)
			}
		}
	}
	in.mu.Unlock()
	if len(targets) == 0 {
		return nil
	}

	var commitErr error
	failed := map[string]error{}
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			commitErr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil {
					failed[contract.KafkaPartition(t.Topic, p.Partition)] = perr
				}
			}
		}
	})
	if commitErr != nil {
		in.m.commitErrors.Incr(1)
		return fmt.Errorf("committing offsets of group %q: %w", in.conf.consumerGroup, commitErr)
	}
	in.mu.Lock()
	for _, t := range targets {
		if _, bad := failed[t.ps.id]; bad {
			continue
		}
		if t.off > t.ps.lastCommitted {
			t.ps.lastCommitted = t.off
			in.m.committedOffset.Set(t.off, t.ps.topic, t.ps.label)
		}
	}
	in.mu.Unlock()
	if len(failed) > 0 {
		in.m.commitErrors.Incr(1)
		var errs []error
		for id, err := range failed {
			if errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.UnknownTopicOrPartition) {
				err = fmt.Errorf("the topic no longer exists (deleted?), fix topics or recreate it: %w", err)
			}
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		}
		return fmt.Errorf("committing offsets of group %q: %w", in.conf.consumerGroup, errors.Join(errs...))
	}
	in.m.commits.Incr(1)
	return nil
}

func (in *Input) commitLoop(ctx context.Context, cl *kgo.Client) {
	defer in.loops.Done()
	ticker := time.NewTicker(in.conf.commitPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		cctx, cancel := context.WithTimeout(ctx, max(in.conf.commitPeriod*5, 10*time.Second))
		if err := in.commit(cctx, cl, nil); err != nil && ctx.Err() == nil && in.logDue("commit:"+err.Error()) {
			in.log.Warnf("%v (retried every %s; repeats of this error are logged every %s)", err, in.conf.commitPeriod, kafka.LogInterval)
		}
		cancel()
	}
}

// stallLoop reports partitions that sit at checkpoint_limit with no
// acknowledgement for checkpoint_stall_timeout, and repeats the error of a
// partition stopped by a nack.
func (in *Input) stallLoop(ctx context.Context) {
	defer in.loops.Done()
	ticker := time.NewTicker(min(max(in.conf.checkpointStallTimeout/4, time.Millisecond), maxStallCheckInterval))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		now := time.Now()
		in.mu.Lock()
		for _, ps := range in.parts {
			if ps.revoking {
				continue
			}
			if ps.failed != nil {
				if now.Sub(ps.lastStallReport) >= in.conf.checkpointStallTimeout {
					ps.lastStallReport = now
					in.log.Errorf("%v; nothing at or past offset %d is committed", ps.failed, ps.failedAt)
				}
				continue
			}
			if ps.unacked < in.conf.checkpointLimit {
				continue
			}
			since := ps.limitSince
			if ps.lastAck.After(since) {
				since = ps.lastAck
			}
			if now.Sub(since) < in.conf.checkpointStallTimeout || now.Sub(ps.lastStallReport) < in.conf.checkpointStallTimeout {
				continue
			}
			ps.lastStallReport = now
			in.m.stalls.Incr(1, ps.topic, ps.label)
			first := ps.deliveredNext - 1
			if len(ps.pending) > 0 {
				first = ps.pending[0].first
			}
			open := ""
			if ps.committedThru >= ps.firstOffset && ps.firstOffset >= 0 {
				open = fmt.Sprintf("; the output has committed through offset %d, so the open source transaction spans up to %d offsets (%d-%d)",
					ps.committedThru, ps.deliveredNext-1-ps.committedThru, ps.committedThru+1, ps.deliveredNext-1)
			}
			in.log.Errorf("Partition %s has sat at checkpoint_limit (%d unacknowledged messages, offsets %d-%d) for %s with no acknowledgement%s: a source transaction larger than checkpoint_limit cannot complete while the output holds its acknowledgements until it commits; raise checkpoint_limit above the largest source transaction size (in messages)",
				ps.id, ps.unacked, first, ps.deliveredNext-1, now.Sub(since).Round(time.Millisecond), open)
		}
		in.mu.Unlock()
	}
}

//------------------------------------------------------------------------------

func (in *Input) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	var ids []string
	in.mu.Lock()
	for topic, parts := range assigned {
		for _, p := range parts {
			id := contract.KafkaPartition(topic, p)
			if _, exists := in.parts[id]; exists {
				continue
			}
			ps := &partState{
				topic: topic, part: p, id: id, label: strconv.Itoa(int(p)),
				firstOffset: -1, nextFetch: -1, deliveredNext: -1, ackedNext: -1,
				committedThru: -1, lastCommitted: -1, hwm: -1, failedAt: -1,
			}
			if !in.conf.batching.IsNoop() {
				b, err := in.conf.batching.NewBatcher(in.mgr)
				if err != nil {
					// The policy was built once in the constructor, so this
					// cannot fail; fall back to fetch-sized batches.
					in.log.Errorf("Creating the batching policy of %s: %v", id, err)
				} else {
					ps.batcher = b
				}
			}
			// A new assignment epoch: a batch of an earlier assignment that
			// reaches the assembler or the output late is dropped there.
			ps.epoch = in.reg.Assign(id)
			in.parts[id] = ps
			ids = append(ids, id)
			// The output publishes only for rows it received in this
			// assignment.
			in.reg.Forget(id)
		}
	}
	in.rebuildOrderLocked()
	in.signalLocked()
	in.mu.Unlock()
	if len(ids) > 0 {
		sort.Strings(ids)
		in.log.Infof("Assigned partitions %v", ids)
	}
}

// adjustOffsets starts a newly assigned partition after the output's durable
// progress (exactly-once mode: the END offset through which StarRocks holds
// the partition's source transactions) when that is ahead of the group's
// committed offset, so that a crash between a StarRocks commit and the next
// offset commit re-reads nothing. Without progress the group offset stands.
func (in *Input) adjustOffsets(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	if !in.conf.startAfterProgress {
		return offsets, nil
	}
	for topic, parts := range offsets {
		for p, o := range parts {
			id := contract.KafkaPartition(topic, p)
			pctx, cancel := context.WithTimeout(ctx, in.conf.revokeTimeout)
			end, ok, err := in.reg.Progress(pctx, id)
			cancel()
			if err != nil {
				in.log.Warnf("Reading the output's progress of %s failed, starting at the group's offset (replays are dropped by the output): %v", id, err)
				continue
			}
			if !ok {
				continue
			}
			if cur := o.EpochOffset().Offset; end+1 > cur {
				parts[p] = kgo.NewOffset().At(end + 1)
				in.log.Infof("Starting %s at offset %d after the output's committed progress (group offset %d)", id, end+1, cur)
			}
		}
	}
	return offsets, nil
}

func (in *Input) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	in.release(ctx, cl, revoked, true)
}

func (in *Input) onLost(ctx context.Context, cl *kgo.Client, lost map[string][]int32) {
	in.release(ctx, cl, lost, false)
}

// release gives up partitions: it stops their delivery, fences them in the
// output (bounded by revoke_timeout), commits them (on a revoke, not on a
// loss) and forgets them.
func (in *Input) release(ctx context.Context, cl *kgo.Client, tps map[string][]int32, commit bool) {
	var ids []string
	var lastDelivery time.Time
	in.mu.Lock()
	for topic, parts := range tps {
		for _, p := range parts {
			id := contract.KafkaPartition(topic, p)
			ps := in.parts[id]
			if ps == nil {
				continue
			}
			// From here on acknowledgements of the partition mark nothing,
			// and nothing more of it is delivered.
			ps.revoking = true
			ps.queue, ps.batching, ps.batchMsgs = nil, nil, nil
			ids = append(ids, id)
			if ps.lastDelivery.After(lastDelivery) {
				lastDelivery = ps.lastDelivery
			}
		}
	}
	in.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	sort.Strings(ids)

	// A batch delivered an instant ago may still be on its way through the
	// pipeline to the output. If it reached the output after the fence, the
	// output would take the tail of a source transaction whose head the
	// fence dropped. Give such batches a moment to arrive so that the fence
	// drops them too.
	if wait := time.Until(lastDelivery.Add(min(maxRevokeDrain, in.conf.revokeTimeout/4))); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}

	fctx, cancel := context.WithTimeout(ctx, in.conf.revokeTimeout)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			if err := in.reg.Fence(fctx, id); err != nil {
				in.log.Warnf("Fencing %s in the output: %v", id, err)
			}
		}(id)
	}
	wg.Wait()
	cancel()
	in.mu.Lock()
	for _, id := range ids {
		if ps := in.parts[id]; ps != nil {
			in.m.fences.Incr(1, ps.topic, ps.label)
		}
	}
	in.mu.Unlock()

	if commit {
		cctx, cancel := context.WithTimeout(ctx, in.conf.rebalanceTimeout-in.conf.revokeTimeout)
		if err := in.commit(cctx, cl, ids); err != nil {
			in.log.Warnf("Committing revoked partitions %v: %v", ids, err)
		}
		cancel()
	}

	var batchers []*service.Batcher
	in.mu.Lock()
	for _, id := range ids {
		ps := in.parts[id]
		if ps == nil {
			continue
		}
		if ps.batcher != nil {
			batchers = append(batchers, ps.batcher)
		}
		in.m.inFlight.Set(0, ps.topic, ps.label)
		in.m.paused.Set(0, ps.topic, ps.label)
		in.m.lag.Set(0, ps.topic, ps.label)
		delete(in.parts, id)
		if ps.paused && in.cl != nil {
			in.cl.ResumeFetchPartitions(map[string][]int32{ps.topic: {ps.part}})
		}
	}
	in.rebuildOrderLocked()
	in.signalLocked()
	in.mu.Unlock()
	for _, b := range batchers {
		_ = b.Close(context.Background())
	}
	if commit {
		in.log.Infof("Revoked partitions %v (fenced, committed, released)", ids)
	} else {
		in.log.Warnf("Lost partitions %v (fenced, not committed)", ids)
	}
}

//------------------------------------------------------------------------------

// Close commits what is committable, leaves the group (which revokes, fences
// and commits every partition) and closes the client.
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
	if err := in.commit(cctx, cl, nil); err != nil {
		in.log.Warnf("Final offset commit: %v", err)
	}
	cl.AllowRebalance()
	if err := cl.LeaveGroupContext(cctx); err != nil {
		in.log.Warnf("Leaving consumer group %q: %v", in.conf.consumerGroup, err)
	}
	cl.Close()

	in.mu.Lock()
	var batchers []*service.Batcher
	for _, ps := range in.parts {
		if ps.batcher != nil {
			batchers = append(batchers, ps.batcher)
		}
	}
	in.parts = map[string]*partState{}
	in.order = nil
	in.mu.Unlock()
	for _, b := range batchers {
		_ = b.Close(ctx)
	}
	return nil
}

//------------------------------------------------------------------------------

func recordToMessage(r *kgo.Record) *service.Message {
	msg := service.NewMessage(r.Value)
	// Headers first, so that a header never overwrites a kafka_ key.
	for _, h := range r.Headers {
		msg.MetaSetMut(h.Key, string(h.Value))
	}
	msg.MetaSetMut(MetaKey, string(r.Key))
	msg.MetaSetMut(MetaTopic, r.Topic)
	msg.MetaSetMut(MetaPartition, int(r.Partition))
	msg.MetaSetMut(MetaOffset, int(r.Offset))
	msg.MetaSetMut(MetaTimestampSec, r.Timestamp.Unix())
	msg.MetaSetMut(MetaTimestampMs, r.Timestamp.UnixMilli())
	msg.MetaSetMut(MetaTombstone, r.Value == nil)
	return msg
}
