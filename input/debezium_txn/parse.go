// This file holds the parsed configuration of the input and its parsing
// from the ConfigSpec's fields, with the checks across fields.

package debezium_txn

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
)

// inputConfig is the parsed configuration.
type inputConfig struct {
	// The connection, data topics and consumer-group settings
	// (internal/kafka/consumer).
	consumer.Config
	regexpTopics         bool
	topicRegexps         []*regexp.Regexp
	transactionTopic     string
	topicPrefix          string
	collectionTopics     map[string]string
	database, table      *service.InterpolatedString
	loc                  *time.Location
	checkpointLimit      int
	maxBufferedBytes     int64
	missingEventsTimeout time.Duration
	resendWindow         int
	skipTransactions     map[string]bool
	untransacted         string
	truncate             string
	batching             service.BatchPolicy
}

// naming maps Debezium data collections to topics: collection_topics, else
// <topic_prefix>.<collection> as Debezium sanitizes it (naming.go).
func (c *inputConfig) naming() topicNaming {
	return newTopicNaming(c.topicPrefix, c.collectionTopics)
}

// topicOf maps a Debezium data collection to its topic.
func (c *inputConfig) topicOf(collection string) string { return c.naming().topicOf(collection) }

// consumes reports whether a topic is one of the data topics.
func (c *inputConfig) consumes(topic string) bool {
	if topic == c.transactionTopic {
		return false
	}
	if c.regexpTopics {
		for _, re := range c.topicRegexps {
			if re.MatchString(topic) {
				return true
			}
		}
		return false
	}
	for _, t := range c.Topics {
		if t == topic {
			return true
		}
	}
	return false
}

func inputConfigFromParsed(conf *service.ParsedConfig) (c inputConfig, err error) {
	if c.Config, err = consumer.ConfigFromParsed(conf, "topics must name at least one data topic"); err != nil {
		return
	}
	if c.regexpTopics, err = conf.FieldBool(fieldRegexpTopics); err != nil {
		return
	}
	if c.regexpTopics {
		for _, t := range c.Topics {
			re, rerr := regexp.Compile(t)
			if rerr != nil {
				return c, fmt.Errorf("topics entry %q is not a regular expression: %w", t, rerr)
			}
			c.topicRegexps = append(c.topicRegexps, re)
		}
	}
	if c.transactionTopic, err = conf.FieldString(fieldTransactionTopic); err != nil {
		return
	}
	if c.transactionTopic = strings.TrimSpace(c.transactionTopic); c.transactionTopic == "" {
		return c, errors.New(noTransactionTopicText)
	}
	for _, t := range c.Topics {
		if t == c.transactionTopic {
			return c, fmt.Errorf("transaction_topic %q must not be listed in topics", t)
		}
	}
	if c.topicPrefix, err = conf.FieldString(fieldTopicPrefix); err != nil {
		return
	}
	if c.topicPrefix == "" {
		p, ok := strings.CutSuffix(c.transactionTopic, transactionTopicSuffix)
		if !ok {
			return c, fmt.Errorf("transaction_topic %q does not end in %q: set topic_prefix to the connector's topic.prefix", c.transactionTopic, transactionTopicSuffix)
		}
		c.topicPrefix = p
	}
	if c.collectionTopics, err = conf.FieldStringMap(fieldCollectionTopics); err != nil {
		return
	}
	// An empty database or table is the same as none: the event's source.
	if raw, _ := conf.FieldString(fieldDatabase); conf.Contains(fieldDatabase) && raw != "" {
		if c.database, err = conf.FieldInterpolatedString(fieldDatabase); err != nil {
			return
		}
	}
	if raw, _ := conf.FieldString(fieldTable); conf.Contains(fieldTable) && raw != "" {
		if c.table, err = conf.FieldInterpolatedString(fieldTable); err != nil {
			return
		}
	}
	var tz string
	if tz, err = conf.FieldString(fieldTimezone); err != nil {
		return
	}
	if c.loc, err = time.LoadLocation(tz); err != nil {
		return c, fmt.Errorf("timezone %q: %w", tz, err)
	}
	if c.checkpointLimit, err = conf.FieldInt(fieldCheckpointLimit); err != nil {
		return
	}
	if err = kafka.IntRangeError(fieldCheckpointLimit, c.checkpointLimit, 1, 0); err != nil {
		return
	}
	var mbb string
	if mbb, err = conf.FieldString(fieldMaxBufferedBytes); err != nil {
		return
	}
	if c.maxBufferedBytes, err = kafka.ParseByteSizeMax(mbb, 1<<50); err != nil {
		return c, fmt.Errorf("parsing max_buffered_bytes: %w", err)
	}
	if c.missingEventsTimeout, err = kafka.DurationField(conf, fieldMissingEventsTimeout); err != nil {
		return
	}
	var skip []string
	if skip, err = conf.FieldStringList(fieldSkipTransactions); err != nil {
		return
	}
	c.skipTransactions = map[string]bool{}
	for _, id := range skip {
		c.skipTransactions[id] = true
	}
	if c.resendWindow, err = conf.FieldInt(fieldResendWindow); err != nil {
		return
	}
	if err = kafka.IntRangeError(fieldResendWindow, c.resendWindow, 1, 0); err != nil {
		return
	}
	if c.untransacted, err = conf.FieldString(fieldEventsWithoutTransaction); err != nil {
		return
	}
	if c.untransacted != untransactedError && c.untransacted != untransactedSingleRow {
		return c, fmt.Errorf("events_without_transaction %q is not one of %s, %s", c.untransacted, untransactedError, untransactedSingleRow)
	}
	if c.truncate, err = conf.FieldString(fieldOnTruncate); err != nil {
		return
	}
	if c.truncate != truncateError && c.truncate != truncateSkip {
		return c, fmt.Errorf("on_truncate %q is not one of %s, %s", c.truncate, truncateError, truncateSkip)
	}
	if c.batching, err = conf.FieldBatchPolicy(fieldBatching); err != nil {
		return
	}
	return c, nil
}
