package kafka_txn

import (
	"context"
	"errors"
	"fmt"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// clientOpts are the options that reach the cluster (internal/kafka).
func (in *Input) clientOpts() []kgo.Opt {
	return in.conf.client.Opts(kafka.NewLogger(in.log, in.logLim))
}

// consumerOpts are the consumer-group options (internal/kafka), the
// topics and the rebalance callbacks of rebalance.go; offsets are committed
// by the input itself (commit.go).
func (in *Input) consumerOpts() []kgo.Opt {
	return append(in.conf.ConsumerOpts(kafka.Rebalance{
		Assigned: in.onAssigned, Revoked: in.onRevoked, Lost: in.onLost,
		AdjustOffsets: in.adjustOffsets, Lease: in.lease,
	}), kgo.ConsumeTopics(in.conf.topics...))
}

// brokersString is seed_brokers for logs and errors.
func (in *Input) brokersString() string {
	return in.conf.client.BrokersString()
}

// acls names what the sasl user must be allowed to do, for errors.
func (in *Input) acls() string {
	return fmt.Sprintf("topics %v and consumer_group %q", in.conf.topics, in.conf.ConsumerGroup)
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
	in.log.Infof("Consuming topics %v as group %q from seed_brokers [%s]", in.conf.topics, in.conf.ConsumerGroup, in.brokersString())
	return nil
}

// logDue reports whether a log line with this key is due: the first time,
// then at most once per kafka.LogInterval.
func (in *Input) logDue(key string) bool {
	return in.logLim.Due(key)
}

// reportFetchError logs a fetch error once per kafka.LogInterval, naming
// what to fix.
func (in *Input) reportFetchError(topic string, part int32, err error) {
	if !in.logDue("fetch:" + contract.KafkaPartition(topic, part) + ":" + err.Error()) {
		return
	}
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		in.log.Errorf("Fetching %s: topic %q does not exist (deleted?): fix topics or recreate it: %v", contract.KafkaPartition(topic, part), topic, err)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.SaslAuthenticationFailed):
		in.log.Errorf("Fetching %s: not authorized, check sasl and the ACLs of topic %q and consumer_group %q: %v", contract.KafkaPartition(topic, part), topic, in.conf.ConsumerGroup, err)
	default:
		in.log.Errorf("Fetching %s from seed_brokers [%s]: %v", contract.KafkaPartition(topic, part), in.brokersString(), err)
	}
}
