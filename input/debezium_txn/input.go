package debezium_txn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// Name is the registered name of the input.
const Name = "debezium_txn"

// Metadata keys set on every message besides the contract and those of
// every consumer input (internal/kafka/consumer consumer.MetaKey, …): the event's.
const (
	MetaOp       = "debezium_op"
	MetaDB       = "debezium_db"
	MetaSchema   = "debezium_schema"
	MetaTable    = "debezium_table"
	MetaSnapshot = "debezium_snapshot"
)

const (
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

// Input is the debezium_txn batch input: the consumer shell
// (internal/kafka/consumer) with the assembler of this input.
type Input struct {
	// The shell: Connect, ReadBatch, Close, ClaimLocked, SignalLocked.
	*consumer.Consumer
	conf      inputConfig
	mgr       *service.Resources
	log       *service.Logger
	reg       *registry.Registry
	m         inputMetrics
	reports   *kafka.LogLimiter
	seqSource string
	// cw writes the contract of every emitted message, mb makes the
	// messages (both under mu).
	cw contract.Writer
	mb *msgBuilder
	// dec decodes data values in the poll goroutine, outside mu, into
	// the decodedBufs of decodedPool.
	dec         *decoder
	decodedPool sync.Pool

	// mu is the input's lock, shared with the shell.
	mu  sync.Mutex
	cl  *kgo.Client
	adm *kadm.Client

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
	// readAhead bounds the ready transactions (readahead.go);
	// pollWaiting is set while the poll loop waits for room.
	readAhead   readAheadLimit
	pollWaiting bool
	stopped     error
	stats       assemblerStats

	// owned is the last assignment, for the balancer's stickiness.
	owned map[string][]int32

	// What outlives an assignment for the next one's read-back
	// (readcache.go, ARCHITECTURE.md §13.7): the ENDs already read, the
	// transaction topic's id, the bounds of the read-back's pieces and of
	// the listing of offsets.
	ends       endCache
	txnTopicID [16]byte
	readBound  growBound
	listBound  growBound

	seq int64
	// batcher holds messages of whole emissions until the policy flushes.
	batcher  *service.Batcher
	batchEms []*emission
}

var _ consumer.Input = (*Input)(nil)

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
		reports:   kafka.NewLogLimiter(c.missingEventsTimeout),
		seqSource: Name + "-" + hex.EncodeToString(b),
		dec:       newDecoder(valueWriter{loc: c.loc}),
		mb:        newMsgBuilder(),
		readAhead: defaultReadAhead,
	}
	if !c.batching.IsNoop() {
		bt, err := c.batching.NewBatcher(mgr)
		if err != nil {
			return nil, fmt.Errorf("creating batching policy: %w", err)
		}
		in.batcher = bt
	}
	in.Consumer = consumer.New(in.shellConfig(), mgr, &in.mu, in)
	return in, nil
}

// shellConfig is what the shell runs: the data topics and the transaction
// topic, with the input's balancer and its check of the transaction topic.
func (in *Input) shellConfig() consumer.Config {
	c := in.conf
	sc := c.Config
	sc.Name = Name
	sc.Regexp = c.regexpTopics
	txnTopic := c.transactionTopic
	if c.regexpTopics {
		txnTopic = consumer.QuoteTopic(c.transactionTopic)
	}
	sc.Topics = append(append([]string{}, c.Topics...), txnTopic)
	sc.CheckTopics = []string{c.transactionTopic}
	if !c.regexpTopics {
		sc.CheckTopics = append(sc.CheckTopics, c.Topics...)
	}
	sc.CheckField = "topics or transaction_topic"
	sc.TopicField = func(topic string) string {
		if topic == c.transactionTopic {
			return fieldTransactionTopic
		}
		return consumer.FieldTopics
	}
	sc.ACLs = in.acls()
	sc.Describe = fmt.Sprintf("Debezium topics %v and transaction topic %q", c.Topics, c.transactionTopic)
	sc.Opts = []kgo.Opt{
		kgo.Balancers(singleOwnerBalancer{owned: in.ownedPartitions}),
		// Transaction markers advance a partition's position: the input
		// knows when it has read a partition to its end.
		kgo.KeepControlRecords(),
		// Fetched gives every record back once the assembler has copied
		// what it keeps.
		kgo.WithPools(newFetchPools()),
	}
	sc.Check = in.checkTransactionTopic
	sc.Commits = kafka.CommitCounters{Commits: in.m.commits, Errors: in.m.commitErrors}
	return sc
}

// StartLocked takes the client and returns the report of what holds the
// stream (loops.go).
func (in *Input) StartLocked(cl *kgo.Client) func(context.Context) {
	in.cl, in.adm = cl, kadm.NewClient(cl)
	return in.reportLoop
}

// Closed closes the batcher.
func (in *Input) Closed(ctx context.Context) {
	if in.batcher != nil {
		_ = in.batcher.Close(ctx)
	}
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
	return fmt.Sprintf("topics %v, transaction_topic %q and consumer_group %q", in.conf.Topics, in.conf.transactionTopic, in.conf.ConsumerGroup)
}

// checkTransactionTopic refuses a transaction topic with more than one
// partition: its single partition is the commit order. No retry fixes that
// (the topic must be recreated), so the input stops, and the pipeline with
// it (consumer.Stop).
func (in *Input) checkTransactionTopic(ctx context.Context, logger kgo.Logger) error {
	cl, err := kgo.NewClient(in.conf.Client.Opts(logger)...)
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
		return in.conf.Client.ClusterError("reading the transaction topic's metadata", in.acls(), err)
	}
	err = transactionTopicError(in.conf.transactionTopic, details)
	if errors.As(err, new(partitionedTxnTopic)) {
		return consumer.Stop(err)
	}
	return err
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
		return partitionedTxnTopic{topic, n}
	}
	return nil
}

// partitionedTxnTopic is the error of a transaction topic with n != 1
// partitions.
type partitionedTxnTopic struct {
	topic string
	n     int
}

func (e partitionedTxnTopic) Error() string {
	return fmt.Sprintf("transaction_topic %q has %d partitions: its single partition is the source's commit order, with several the order of the transactions is lost; recreate it with one partition", e.topic, e.n)
}
