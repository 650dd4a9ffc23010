package debezium_txn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

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
	periodDue       = time.Millisecond
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
	// lease is the group-membership lease of the partitions the input
	// writes (lease.go).
	lease *kafka.GroupLease

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
	in.lease = kafka.NewGroupLease(c.SessionTimeout, in.renewLease)
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
	return fmt.Sprintf("topics %v, transaction_topic %q and consumer_group %q", in.conf.topics, in.conf.transactionTopic, in.conf.ConsumerGroup)
}

func (in *Input) logger() kgo.Logger { return kafka.NewLogger(in.log, in.lim) }

func (in *Input) consumerOpts() []kgo.Opt {
	opts := append(in.conf.ConsumerOpts(kafka.Rebalance{
		Assigned: in.onAssigned, Revoked: in.onRevoked, Lost: in.onLost,
		AdjustOffsets: in.adjustOffsets, Lease: in.lease,
	}),
		kgo.Balancers(singleOwnerBalancer{owned: in.ownedPartitions}),
		// Transaction markers advance a partition's position: the input
		// knows when it has read a partition to its end.
		kgo.KeepControlRecords(),
	)
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
	in.log.Infof("Consuming Debezium topics %v and transaction topic %q as group %q from seed_brokers [%s]", in.conf.topics, in.conf.transactionTopic, in.conf.ConsumerGroup, in.conf.client.BrokersString())
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
	in.conf.Leave(ctx, in.log, cl, func(ctx context.Context) error { return in.commit(ctx, cl) })
	if in.batcher != nil {
		_ = in.batcher.Close(ctx)
	}
	return nil
}
