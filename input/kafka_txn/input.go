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
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// Name is the registered name of the input.
const Name = "kafka_txn"

// Metadata keys set on every message besides those of every consumer input
// (internal/kafka/consumer consumer.MetaKey, …): the tombstone flag and the
// partition's lag.
const (
	MetaTombstone = "kafka_tombstone_message"
	MetaLag       = "kafka_lag"
)

const (
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

// Input is the kafka_txn batch input: the consumer shell
// (internal/kafka/consumer) with this input's partitions, batching and
// commit points.
type Input struct {
	// The shell: Connect, ReadBatch, Close, ClaimLocked, SignalLocked.
	*consumer.Consumer
	conf inputConfig
	mgr  *service.Resources
	log  *service.Logger
	reg  *registry.Registry
	m    inputMetrics

	// mu is the input's lock, shared with the shell.
	mu    sync.Mutex
	cl    *kgo.Client
	parts map[string]*partState
	// groupOffsets are the group's committed offsets as fetched at the last
	// assignment of each assigned partition (the base of the committed lag
	// until this input commits).
	groupOffsets map[string]int64
	order        []string
	rr           int

	// logLim rate-limits the input's own repeating lines.
	logLim *kafka.LogLimiter
	// warnedNoEnds is set once the input said it cannot tell where source
	// transactions end (read.go).
	warnedNoEnds bool

	// readAhead bounds the fetched records the input holds before they
	// are delivered (readahead.go); pollWaiting is set while the poll loop
	// waits for room, readAheadWaits counts how often it found none.
	readAhead      readAheadLimit
	queued         queuedCount
	pollWaiting    bool
	readAheadWaits int
}

var (
	_ consumer.Input            = (*Input)(nil)
	_ consumer.ReadAheadLimiter = (*Input)(nil)
)

// New builds a kafka_txn input from a parsed config.
func New(conf *service.ParsedConfig, mgr *service.Resources) (*Input, error) {
	c, err := inputConfigFromParsed(conf)
	if err != nil {
		return nil, err
	}
	return newInput(c, mgr)
}

// newInput builds the input from a validated config, with its shell.
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
		logLim:       kafka.NewLogLimiter(kafka.LogInterval),
		readAhead:    defaultReadAhead,
	}
	sc := c.Config
	sc.Name = Name
	sc.CheckTopics, sc.CheckField = c.Topics, consumer.FieldTopics
	sc.ACLs = fmt.Sprintf("topics %v and consumer_group %q", c.Topics, c.ConsumerGroup)
	sc.Describe = fmt.Sprintf("topics %v", c.Topics)
	sc.Commits = kafka.CommitCounters{Commits: in.m.commits, Errors: in.m.commitErrors}
	sc.Opts = append(sc.Opts, kgo.FetchMaxBytes(fetchMaxBytes(sc.FetchMaxPartitionBytes)))
	in.Consumer = consumer.New(sc, mgr, &in.mu, in)
	return in, nil
}

// StartLocked takes the client and returns the input's background work:
// the stall reports and the high watermarks of paused partitions.
func (in *Input) StartLocked(cl *kgo.Client) func(context.Context) {
	in.cl = cl
	return func(ctx context.Context) {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			kafka.Every(ctx, in.conf.CommitPeriod, func() {
				rctx, cancel := context.WithTimeout(ctx, max(in.conf.CommitPeriod*5, 10*time.Second))
				defer cancel()
				in.refreshPausedHWM(rctx, cl)
			})
		}()
		in.stallLoop(ctx)
		wg.Wait()
	}
}

// Closed drops what is left once the group was left (every partition was
// released already) and closes the batchers.
func (in *Input) Closed(ctx context.Context) {
	in.mu.Lock()
	var batchers []*service.Batcher
	for _, ps := range in.parts {
		if ps.batcher != nil {
			batchers = append(batchers, ps.batcher)
		}
	}
	in.parts = map[string]*partState{}
	in.order = nil
	in.queued = queuedCount{}
	in.mu.Unlock()
	for _, b := range batchers {
		_ = b.Close(ctx)
	}
}
