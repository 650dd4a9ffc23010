// Package kafka_txn is the kafka_txn input: a franz-go consumer-group reader
// of CDC source transactions that delivers each partition in offset order,
// keeps several batches of a partition in flight (bounded by checkpoint_limit),
// and commits offsets only at source-transaction boundaries that the
// starrocks_txn output has committed (ARCHITECTURE.md §4.6, §6).
package kafka_txn

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

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
	// periodDue is how close to its period deadline a partition's batch is
	// flushed; Batcher.UntilNext reports an elapsed period as 1ns.
	periodDue = time.Millisecond
)

func init() {
	service.MustRegisterBatchInput(Name, ConfigSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchInput, error) {
		return New(conf, mgr)
	})
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
	// groupOffsets are the group's committed offsets as fetched at the last
	// assignment of each assigned partition (the base of the committed lag
	// until this input commits).
	groupOffsets map[string]int64
	order        []string
	rr           int
	notify       chan struct{}

	// logLim rate-limits repeating fetch and commit errors and franz-go's
	// own warnings.
	logLim *kafka.LogLimiter
	// lease is the group-membership lease of the assigned partitions
	// (lease.go).
	lease *kafka.GroupLease
	// warnedNoEnds is set once the input said it cannot tell where source
	// transactions end (read.go).
	warnedNoEnds bool
}

// New builds a kafka_txn input from a parsed config.
func New(conf *service.ParsedConfig, mgr *service.Resources) (*Input, error) {
	c, err := inputConfigFromParsed(conf)
	if err != nil {
		return nil, err
	}
	return newInput(c, mgr)
}

// newInput builds the input from a validated config and registers for the
// output's committed-through offsets.
func newInput(c inputConfig, mgr *service.Resources) (*Input, error) {
	if !c.batching.policy.IsNoop() {
		// Build one batcher now so that a bad policy fails at construction.
		b, err := c.batching.policy.NewBatcher(mgr)
		if err != nil {
			return nil, fmt.Errorf("creating batching policy: %w", err)
		}
		_ = b.Close(context.Background())
	}
	in := &Input{
		conf:         c,
		mgr:          mgr,
		log:          mgr.Logger(),
		reg:          registry.Get(mgr),
		m:            newInputMetrics(mgr.Metrics()),
		parts:        map[string]*partState{},
		groupOffsets: map[string]int64{},
		notify:       make(chan struct{}),
		logLim:       kafka.NewLogLimiter(kafka.LogInterval),
	}
	in.lease = kafka.NewGroupLease(c.SessionTimeout, in.renewLease)
	in.reg.OnCommitted(in.onCommitted)
	in.reg.OnUnclaimed(in.onUnclaimed)
	return in, nil
}

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

	cctx, ccancel := context.WithTimeout(ctx, in.conf.RebalanceTimeout)
	defer ccancel()
	if err := in.commit(cctx, cl, nil); err != nil {
		in.log.Warnf("Final offset commit: %v", err)
	}
	cl.AllowRebalance()
	if err := cl.LeaveGroupContext(cctx); err != nil {
		in.log.Warnf("Leaving consumer group %q: %v", in.conf.ConsumerGroup, err)
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
