package consumer

import (
	"context"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// Config is the part of an input's configuration that the shell runs: the
// connection, the group, the topics and what the input adds to them.
type Config struct {
	// Name is the input's registered name, for logs.
	Name   string
	Client kafka.ClientConfig
	// The consumer-group settings (internal/kafka).
	kafka.GroupConfig
	MetadataMaxAge time.Duration

	// Topics are the topics to consume: regular expressions when Regexp.
	Topics []string
	Regexp bool
	// CheckTopics must exist at Connect; CheckField is the field that
	// lists them, for the error.
	CheckTopics []string
	CheckField  string
	// TopicField names the field that lists a topic, for a fetch error
	// (FieldTopics when nil).
	TopicField func(topic string) string
	// ACLs names what the sasl user must be allowed to do, for errors.
	ACLs string
	// Describe is what Connect logs that the input consumes.
	Describe string
	// Opts are the input's own kgo options (a balancer, control records).
	Opts []kgo.Opt
	// Check runs at Connect once the cluster answered, with the client's
	// logger; an error made with Stop stops the pipeline.
	Check func(context.Context, kgo.Logger) error
	// Commits count the offset commits.
	Commits kafka.CommitCounters
}

// ConfigFromParsed reads the connection fields, the topics and the group
// fields (GroupFields); noTopics is the error when topics names none. The
// input sets the rest.
func ConfigFromParsed(conf *service.ParsedConfig, noTopics string) (c Config, err error) {
	if c.Client, err = kafka.ClientConfigFromParsed(conf); err != nil {
		return
	}
	if c.Topics, err = ParseTopics(conf, noTopics); err != nil {
		return
	}
	if c.GroupConfig, err = kafka.GroupConfigFromParsed(conf); err != nil {
		return
	}
	if c.MetadataMaxAge, err = kafka.DurationMaxField(conf, kafka.FieldMetadataMaxAge, maxMetadataMaxAge); err != nil {
		return
	}
	return c, nil
}
