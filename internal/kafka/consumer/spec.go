package consumer

// Home of G72 (ARCHITECTURE.md §11.6): both consumer inputs refuse the same values, and a fetch
// error names the field to fix. Main test: TestTopicsEntriesAreSplitOnCommas.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	// The lint rules use parse_duration and re_find_object, Bloblang
	// methods of the pure components.
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// FieldTopics is the name of the topics field of every consumer input.
const FieldTopics = "topics"

// TopicsField is the topics field, with the input's own description: each
// entry may hold several comma-separated topics, as in Benthos's own Kafka
// inputs (ParseTopics).
func TopicsField(description string, example []string) *service.ConfigField {
	return service.NewStringListField(FieldTopics).
		Description(description + " An entry may hold several comma-separated topics.").
		Example(example).
		LintRule(topicsLintRule)
}

// NoTopicsText is what lint says of a topics list that names no topic (an
// empty list, as `create` leaves it, or only empty entries).
const NoTopicsText = "topics must name at least one topic"

// topicsLintRule reports a list with no topic left after ParseTopics's
// splitting. Benthos runs a list field's rule on the list and on each
// element; only the list is judged.
var topicsLintRule = fmt.Sprintf(`root = if this.type() == "array" {
  if this.map_each(t -> t.string().split(",").map_each(s -> s.trim()).filter(s -> s != "")).flatten().length() == 0 { [ %q ] }
}`, NoTopicsText)

// EmptyConsumerGroupText is what lint and the start say of an empty
// consumer_group (kafka.GroupConfigFromParsed).
const EmptyConsumerGroupText = "consumer_group must not be empty"

// ParseTopics reads the topics field: every entry split on commas, each
// topic trimmed, empty ones dropped. none is the error when no topic is
// left.
func ParseTopics(conf *service.ParsedConfig, none string) ([]string, error) {
	entries, err := conf.FieldStringList(FieldTopics)
	if err != nil {
		return nil, err
	}
	var topics []string
	for _, entry := range entries {
		for _, t := range strings.Split(entry, ",") {
			if t = strings.TrimSpace(t); t != "" {
				topics = append(topics, t)
			}
		}
	}
	if len(topics) == 0 {
		return nil, errors.New(none)
	}
	return topics, nil
}

// GroupFields are the consumer-group fields of every consumer input, each
// declared once here with its description, default, example and lint rule,
// so that what `lint` refuses is the same under every input
// (kafka.GroupConfigFromParsed and ConfigFromParsed read them).
// consumer_group comes first; the rest are the input's tuning.
func GroupFields() []*service.ConfigField {
	return []*service.ConfigField{
		service.NewStringField(kafka.FieldConsumerGroup).
			Description("The consumer group the input joins and commits its offsets to.").
			Example("starrocks-loader").
			Example("${KAFKA_GROUP:shop-cdc-to-starrocks}").
			LintRule(fmt.Sprintf(`root = if this.string() == "" { [ %q ] }`, EmptyConsumerGroupText)),
		service.NewStringAnnotatedEnumField(kafka.FieldIsolationLevel, map[string]string{
			kafka.IsolationReadCommitted:   "Only records of committed producer transactions are read (Kafka Connect's `exactly.once.source.support` writes transactionally); an open producer transaction holds its partition at the last stable offset.",
			kafka.IsolationReadUncommitted: "Every record is read, including those of aborted and still-open producer transactions.",
		}).
			Description("Which records of transactional producers are read.").
			Default(kafka.IsolationReadCommitted).
			Example(kafka.IsolationReadUncommitted),
		service.NewBoolField(kafka.FieldStartFromOldest).
			Description("Where a partition with no committed offset starts: the oldest record (true) or the next new one (false).").
			Default(true).
			Example(false),
		durationField(kafka.FieldCommitPeriod, kafka.DefaultCommitPeriod, "5s",
			"How often the committable offsets are committed to the consumer group. Offsets are also committed on revoke and on close."),
		durationField(kafka.FieldRevokeTimeout, kafka.DefaultRevokeTimeout, "20s",
			"How long a revoke waits for the output to fence the released partitions (and for commits already in flight) before the offset commit. Must be below `rebalance_timeout`; the commit itself gets the rest of the rebalance timeout."),
		durationField(kafka.FieldSessionTimeout, kafka.DefaultSessionTimeout, "30s",
			"The group session timeout: a member that sends no heartbeat for this long is removed from the group and its partitions go to another member. A member that stopped without leaving (killed) holds its partitions this long, and a restarted member waits for them meanwhile.").
			Advanced(),
		durationField(kafka.FieldRebalanceTimeout, kafka.DefaultRebalanceTimeout, "2m",
			"How long members may take to finish revoking partitions during a rebalance.").
			Advanced(),
		durationField(kafka.FieldHeartbeatInterval, kafka.DefaultHeartbeatInterval, "1s",
			"How often the member sends heartbeats: below half of `session_timeout` (refused from half on), at most a quarter of it to keep commits from waiting. A commit starts only while the membership was confirmed within half of `session_timeout`, and a heartbeat confirms the one before it.").
			Advanced(),
		durationField(kafka.FieldFetchMaxWait, kafka.DefaultFetchMaxWait, "100ms",
			"How long a broker may wait for new records before answering a fetch.").
			Advanced(),
		service.NewStringField(kafka.FieldFetchMaxPartitionBytes).
			Description("The maximum number of bytes fetched from one partition per request.").
			Default(kafka.DefaultFetchMaxPartitionBytes).
			Example("4MiB").
			Example("512KiB").
			LintRule(kafka.ByteSizeLintRule(kafka.FieldFetchMaxPartitionBytes)).
			Advanced(),
		service.NewDurationField(kafka.FieldMetadataMaxAge).
			Description("How often the cluster's metadata is read again (at most every hour): a new topic that the subscription matches, or a partition added to a consumed topic, is read within this period.").
			Default(kafka.DefaultMetadataMaxAge).
			Example("30s").
			LintRule(kafka.DurationMaxLintRule(kafka.FieldMetadataMaxAge, maxMetadataMaxAge)).
			Advanced(),
	}
}

// durationField is a positive duration field with its lint rule.
func durationField(name, def, example, description string) *service.ConfigField {
	return service.NewDurationField(name).
		Description(description).
		Default(def).
		Example(example).
		LintRule(kafka.DurationLintRule(name))
}

// maxMetadataMaxAge is franz-go's bound on MetadataMaxAge.
const maxMetadataMaxAge = time.Hour
