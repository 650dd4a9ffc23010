package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// pollLoop fetches records and hands each poll to the input (Fetched).
// franz-go holds rebalances between a poll and AllowRebalance
// (kafka.GroupConfig.ConsumerOpts), so a released partition never receives
// records of its old assignment.
func (c *Consumer) pollLoop(ctx context.Context, cl *kgo.Client) {
	defer c.loops.Done()
	for {
		if !c.waitForRoom(ctx) {
			return
		}
		fetches := cl.PollRecords(ctx, maxPollRecords)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			cl.AllowRebalance()
			return
		}
		fetches.EachError(func(topic string, part int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			c.reportFetchError(topic, part, err)
		})
		apply := c.in.Fetched(fetches)
		c.mu.Lock()
		if apply != nil {
			apply()
		}
		c.SignalLocked()
		c.mu.Unlock()
		cl.AllowRebalance()
	}
}

// readAheadRecheck is how often a poll loop waiting for room asks the
// input again without a signal.
const readAheadRecheck = 10 * time.Millisecond

// waitForRoom waits while the input holds as many fetched records as it
// reads ahead (ReadAheadLimiter); it reports false once ctx ends.
func (c *Consumer) waitForRoom(ctx context.Context) bool {
	ra, ok := c.in.(ReadAheadLimiter)
	if !ok {
		return true
	}
	for {
		c.mu.Lock()
		full := !c.closed && ra.ReadAheadFullLocked()
		signal := c.notify
		c.mu.Unlock()
		if !full {
			return true
		}
		t := time.NewTimer(readAheadRecheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-signal:
		case <-t.C:
		}
		t.Stop()
	}
}

// topicField is the field that lists topic, for errors.
func (c *Consumer) topicField(topic string) string {
	if c.conf.TopicField != nil {
		return c.conf.TopicField(topic)
	}
	return FieldTopics
}

// reportFetchError logs a fetch error once per kafka.LogInterval, naming
// what to fix: the field that lists a topic that does not exist, the ACLs
// of a refused one, else the brokers.
func (c *Consumer) reportFetchError(topic string, part int32, err error) {
	p := kafka.TopicPartition{Topic: topic, Partition: part}.String()
	if !c.lim.Due("fetch:" + p + ":" + err.Error()) {
		return
	}
	switch {
	case topic == "":
		// franz-go reports an error of the client, not of a partition
		// (the group session ended), as a fetch of no topic.
		c.log.Errorf("Polling records from seed_brokers [%s]: %v", c.conf.Client.BrokersString(), err)
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		c.log.Errorf("Fetching %s: topic %q does not exist (deleted?): fix %s or recreate it: %v", p, topic, c.topicField(topic), err)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.SaslAuthenticationFailed):
		c.log.Errorf("Fetching %s: not authorized, check sasl and the ACLs of topic %q and consumer_group %q: %v", p, topic, c.conf.ConsumerGroup, err)
	default:
		c.log.Errorf("Fetching %s from seed_brokers [%s]: %v", p, c.conf.Client.BrokersString(), err)
	}
}
