// Package kafka_txn is the kafka_txn output: a franz-go producer that writes
// each batch to Kafka and returns only once the brokers acknowledged every
// record, with the idempotent producer on by default and, with a
// transactional_id, every batch one Kafka transaction. Its main use is the
// starrocks_txn output's dead_letter: a poisoned source transaction is one
// batch, so it arrives in its topic whole, in order and atomically
// (ARCHITECTURE.md §4.1).
//
// The name is the kafka_txn input's, in the output namespace: Redpanda
// Connect has no kafka_txn output, so a custom binary can hold both projects'
// Kafka components.
package kafka_txn

// Home of G69 (ARCHITECTURE.md §11.5): a Kafka dead letter is written whole: one WriteBatch,
// with transactional_id one Kafka transaction. Main test: TestTransactionalBatchIsAtomic.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// Name is the registered name of the output.
const Name = "kafka_txn"

func init() {
	service.MustRegisterBatchOutput(Name, ConfigSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
		c, err := outputConfigFromParsed(conf)
		if err != nil {
			return nil, service.BatchPolicy{}, 0, err
		}
		return newOutput(c, mgr), c.batching, c.maxInFlight, nil
	})
}

// outputMetrics are the output's metrics, through the Benthos metrics API.
type outputMetrics struct {
	records    *service.MetricCounter
	errors     *service.MetricCounter
	txnCommits *service.MetricCounter
	txnAborts  *service.MetricCounter
}

func newOutputMetrics(m *service.Metrics) outputMetrics {
	return outputMetrics{
		records:    m.NewCounter("kafka_txn_output_records"),
		errors:     m.NewCounter("kafka_txn_output_errors"),
		txnCommits: m.NewCounter("kafka_txn_output_txn_commits"),
		txnAborts:  m.NewCounter("kafka_txn_output_txn_aborts"),
	}
}

// Output is the kafka_txn batch output.
type Output struct {
	conf   outputConfig
	log    *service.Logger
	logLim *kafka.LogLimiter
	m      outputMetrics
	// extraOpts are appended to the client options (tests: a dialer that
	// loses replies).
	extraOpts []kgo.Opt

	mu     sync.Mutex
	cl     *kgo.Client
	closed bool

	// txnMu runs one transaction at a time: a transactional producer has
	// at most one open transaction.
	txnMu sync.Mutex
}

func newOutput(c outputConfig, mgr *service.Resources, extra ...kgo.Opt) *Output {
	o := &Output{
		conf:      c,
		log:       mgr.Logger(),
		logLim:    kafka.NewLogLimiter(kafka.LogInterval),
		m:         newOutputMetrics(mgr.Metrics()),
		extraOpts: extra,
	}
	// Every counter exists from the start.
	o.m.records.Incr(0)
	o.m.errors.Incr(0)
	o.m.txnCommits.Incr(0)
	o.m.txnAborts.Incr(0)
	return o
}

// acls names what the sasl user must be allowed to do, for errors.
func (o *Output) acls() string {
	topic := "the topics written"
	if s, ok := o.conf.topic.Static(); ok {
		topic = fmt.Sprintf("topic %q", s)
	}
	if o.conf.transactionalID != "" {
		return fmt.Sprintf("writing %s and transactional_id %q", topic, o.conf.transactionalID)
	}
	return "writing " + topic
}

// Connect checks that the cluster answers (and that a topic without
// interpolation exists), then builds the producer.
func (o *Output) Connect(ctx context.Context) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return service.ErrEndOfInput
	}
	if o.cl != nil {
		o.mu.Unlock()
		return nil
	}
	o.mu.Unlock()

	logger := kafka.NewLogger(o.log, o.logLim)
	var topics []string
	if s, ok := o.conf.topic.Static(); ok {
		topics = []string{s}
	}
	if err := o.conf.client.CheckCluster(ctx, logger, fieldTopic, o.acls(), topics...); err != nil {
		return err
	}
	opts := append(o.conf.client.Opts(logger), o.conf.producerOpts()...)
	cl, err := kgo.NewClient(append(opts, o.extraOpts...)...)
	if err != nil {
		return fmt.Errorf("creating kafka producer: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		cl.Close()
		return service.ErrEndOfInput
	}
	o.cl = cl
	mode := "idempotent"
	switch {
	case o.conf.transactionalID != "":
		mode = fmt.Sprintf("one transaction per batch, transactional_id %q", o.conf.transactionalID)
	case !o.conf.idempotent:
		mode = "not idempotent"
	}
	o.log.Infof("Writing to kafka at seed_brokers [%s] (%s)", o.conf.client.BrokersString(), mode)
	return nil
}

func (o *Output) client() *kgo.Client {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cl
}

// dropClient closes a client whose transaction state is unknown; the next
// WriteBatch reports ErrNotConnected and Benthos connects a new one.
func (o *Output) dropClient(cl *kgo.Client) {
	o.mu.Lock()
	if o.cl == cl {
		o.cl = nil
	}
	o.mu.Unlock()
	cl.Close()
}

// WriteBatch writes the batch and returns once every record is acknowledged
// by the brokers (and, with transactional_id, the transaction committed).
func (o *Output) WriteBatch(ctx context.Context, batch service.MessageBatch) error {
	cl := o.client()
	if cl == nil {
		return service.ErrNotConnected
	}
	recs, err := o.records(batch)
	if err != nil {
		o.m.errors.Incr(1)
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.conf.timeout)
	defer cancel()
	if o.conf.transactionalID != "" {
		err = o.writeTxn(ctx, cl, recs)
	} else {
		err = o.write(ctx, cl, batch, recs)
	}
	if err != nil {
		o.m.errors.Incr(1)
		return err
	}
	o.m.records.Incr(int64(len(recs)))
	return nil
}

// write produces the records; a batch that partly failed is a BatchError
// naming the failed messages.
func (o *Output) write(ctx context.Context, cl *kgo.Client, batch service.MessageBatch, recs []*kgo.Record) error {
	index := make(map[*kgo.Record]int, len(recs))
	for i, r := range recs {
		index[r] = i
	}
	var berr *service.BatchError
	for _, res := range cl.ProduceSync(ctx, recs...) {
		if res.Err == nil {
			continue
		}
		if berr == nil {
			berr = service.NewBatchError(batch, o.describe(fmt.Sprintf("writing a batch of %d records", len(recs)), res.Err))
		}
		berr.Failed(index[res.Record], res.Err)
	}
	if berr != nil {
		return berr
	}
	return nil
}

// writeTxn writes the records as one transaction: committed whole, or
// aborted whole and reported failed.
func (o *Output) writeTxn(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) error {
	o.txnMu.Lock()
	defer o.txnMu.Unlock()
	if err := cl.BeginTransaction(); err != nil {
		o.dropClient(cl)
		return fmt.Errorf("beginning a kafka transaction (transactional_id %q): %w", o.conf.transactionalID, err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		o.abort(cl)
		return o.describe(fmt.Sprintf("writing a transaction of %d records (aborted)", len(recs)), err)
	}
	// ProduceSync waited for every record's acknowledgement: nothing is
	// left buffered, so the commit covers exactly these records.
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		// A refused or unconfirmed commit: abort (for an unconfirmed one
		// this bumps the producer epoch and fences whatever the broker
		// still holds open). The batch is retried in a new transaction.
		o.abort(cl)
		return o.describe(fmt.Sprintf("committing a transaction of %d records (aborted)", len(recs)), err)
	}
	o.m.txnCommits.Incr(1)
	return nil
}

// abort ends the open transaction with an abort, on its own deadline (the
// write's may be over). If that fails too the client's transaction state is
// unknown, so the client is replaced.
func (o *Output) abort(cl *kgo.Client) {
	o.m.txnAborts.Incr(1)
	ctx, cancel := context.WithTimeout(context.Background(), o.conf.timeout)
	defer cancel()
	err := cl.AbortBufferedRecords(ctx)
	if err == nil {
		err = cl.EndTransaction(ctx, kgo.TryAbort)
	}
	if err != nil {
		o.log.Errorf("Aborting the kafka transaction of transactional_id %q failed, reconnecting: %v", o.conf.transactionalID, err)
		o.dropClient(cl)
	}
}

// describe wraps a produce error with what to check.
func (o *Output) describe(doing string, err error) error {
	switch {
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return fmt.Errorf("%s: a record is larger than max_message_bytes (%d) or the broker's message.max.bytes: %w", doing, o.conf.maxMessageBytes, err)
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("%s: the topic does not exist at seed_brokers [%s]: create it or fix topic: %w", doing, o.conf.client.BrokersString(), err)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed), errors.Is(err, kerr.SaslAuthenticationFailed):
		return o.conf.client.ClusterError(doing, o.acls(), err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: not acknowledged within timeout (%s): %w", doing, o.conf.timeout, err)
	default:
		return fmt.Errorf("%s to seed_brokers [%s]: %w", doing, o.conf.client.BrokersString(), err)
	}
}

// Close closes the producer. Every batch that returned was acknowledged, so
// nothing is left to flush.
func (o *Output) Close(ctx context.Context) error {
	o.mu.Lock()
	cl := o.cl
	o.cl, o.closed = nil, true
	o.mu.Unlock()
	if cl == nil {
		return nil
	}
	closeClient := sync.OnceFunc(cl.Close)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Wait for a transaction in flight (bounded by timeout) rather
		// than close under it.
		o.txnMu.Lock()
		o.txnMu.Unlock()
		closeClient()
	}()
	timer := time.NewTimer(2 * o.conf.timeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		closeClient()
	case <-timer.C:
		closeClient()
	}
	return nil
}
