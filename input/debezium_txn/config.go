package debezium_txn

import (
	"fmt"

	// The lint rules use parse_duration, a Bloblang method of the pure
	// components.
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
	"github.com/starrocks-txn/benthos-starrocks/internal/specfields"
)

// noTransactionTopicText is what lint and the start say of an empty
// transaction_topic.
const noTransactionTopicText = "transaction_topic must name the connector's transaction topic"

// Field names of the debezium_txn input. The connection fields
// (seed_brokers, client_id, tls, sasl), topics and the consumer-group
// fields (consumer_group, isolation_level, start_from_oldest, commit_period,
// the timeouts, the fetch and metadata settings) are internal/kafka's and
// internal/kafka/consumer's, the same as kafka_txn's.
const (
	fieldRegexpTopics             = "regexp_topics"
	fieldTransactionTopic         = "transaction_topic"
	fieldTopicPrefix              = "topic_prefix"
	fieldCollectionTopics         = "collection_topics"
	fieldDatabase                 = "database"
	fieldTable                    = "table"
	fieldTimezone                 = "timezone"
	fieldCheckpointLimit          = "checkpoint_limit"
	fieldMaxBufferedBytes         = "max_buffered_bytes"
	fieldMissingEventsTimeout     = "missing_events_timeout"
	fieldResendWindow             = "resend_window"
	fieldSkipTransactions         = "skip_transactions"
	fieldEventsWithoutTransaction = "events_without_transaction"
	fieldOnTruncate               = "on_truncate"
	fieldBatching                 = "batching"
)

const (
	defaultCheckpointLimit      = 100000
	defaultMaxBufferedBytes     = "256MiB"
	defaultMissingEventsTimeout = "60s"
	defaultResendWindow         = 100000
	transactionTopicSuffix      = ".transaction"
)

// ConfigSpec returns the configuration spec of the debezium_txn input.
func ConfigSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Beta().
		Categories("Services").
		Version("0.1.0").
		Summary("Reads the topics of a Debezium connector (one per table, and its transaction topic), assembles every source transaction across all partitions and emits it whole, in commit order, stamped for the starrocks_txn output.").
		Description(`
Built on franz-go with the conventions of `+"`kafka_txn`"+`. The connector must
run with `+"`provide.transaction.metadata=true`"+`: its BEGIN/END events on the
single-partition transaction topic give each transaction's commit order and its
event count per table. A transaction is emitted once its END was read and, for
every table whose topic this input consumes, that many events arrived; tables
this pipeline does not read are ignored. Events are sorted by `+"`total_order`"+`;
re-sent events and transactions re-sent after they committed are dropped.

Each message is the row to load (`+"`after`"+`, or `+"`before`"+` with `+"`\"__op\": 1`"+`
for a delete), values decoded from the JsonConverter's schema when present
(decimals, Debezium and Kafka Connect dates and times, JSON). It carries the
metadata contract of the `+"`starrocks_txn`"+` output: one `+"`starrocks_partition`"+`
for the connector (the transaction topic's name), `+"`starrocks_source_offset`"+`
= END offset × 2^24 + position, `+"`starrocks_txn_end`"+` on the last row. Do not
put a `+"`txn_assembler`"+` behind it. Snapshot rows (`+"`op: r`"+`, no transaction) are
one-row transactions of the partition `+"`<topic>/<partition>`"+`; no streamed
transaction is emitted on top of a partial snapshot.

### Offsets and restarts

Offsets are committed per data partition and for the transaction topic only up
to the lowest offset still held by something StarRocks has not committed, so a
restart re-reads every transaction StarRocks lacks. With `+"`starrocks_txn`"+`
`+"`semantic: exactly_once`"+`, transactions at or below the output's progress are
skipped after a restart.

### Deployment

A transaction can only be assembled where all of its partitions are read: the
input's group protocol gives every partition to one member; other members of
the group are hot standbys. Run one pipeline per Debezium connector.

### Metadata

Every message carries `+"`kafka_key`, `kafka_topic`, `kafka_partition`, `kafka_offset`, `kafka_timestamp_ms`, `kafka_timestamp_unix`"+` of its event,
`+"`debezium_op`, `debezium_db`, `debezium_schema`, `debezium_table`, `debezium_snapshot`"+`
and the metadata contract.

### Metrics

`+"`debezium_txn_transactions`, `_events`, `_snapshot_rows`, `_untransacted_rows`, `_duplicates`, `_resent_transactions`, `_progress_skipped`, `_empty_transactions`, `_tombstones`, `_truncates_skipped`, `_incomplete_reports`, `_commits`, `_commit_errors`, `_fences`"+` (counters),
`+"`debezium_txn_buffered_bytes`, `_buffered_transactions`, `_buffer_full`, `_in_flight`, `_stopped`, `_standby`"+` and `+"`debezium_txn_committed_offset`"+` per topic and partition (gauges).`).
		Fields(fields()...).
		LintRule(kafka.GroupLintRule(`if this.topics.or([]).contains(this.transaction_topic.or("")) { "transaction_topic must not be listed in topics" } else { null }`)).
		Example("MySQL connector", "Reads the tables of the `inventory` database of the connector `dbserver1` and loads each source transaction atomically.", `
input:
  debezium_txn:
    seed_brokers: [ "broker-1:9092" ]
    topics:
      - dbserver1.inventory.orders
      - dbserver1.inventory.order_items
    transaction_topic: dbserver1.transaction
    consumer_group: starrocks-dbserver1
    batching:
      count: 2000
      period: 50ms
output:
  starrocks_txn:
    load_urls: [ "http://starrocks-fe:8030" ]
    username: loader
    password: "${STARROCKS_PASSWORD}"
`)
}

// fields are the input's fields: the connection and group fields of every
// consumer input (internal/kafka, internal/kafka/consumer) and its own.
func fields() []*service.ConfigField {
	fs := []*service.ConfigField{
		kafka.SeedBrokersField(),
		consumer.TopicsField("The data topics: one per table, as Debezium names them (`<topic.prefix>.<db>.<table>`). Every topic must exist. Do not list the transaction topic here.",
			[]string{"dbserver1.inventory.orders", "dbserver1.inventory.order_items"}),
		service.NewBoolField(fieldRegexpTopics).
			Description("Whether `topics` are regular expressions, matched against every topic of the cluster (a new matching topic is read within `metadata_max_age`). Exclude the schema-change and heartbeat topics: they hold no data change events.").
			Example(true).
			Default(false).
			Advanced(),
		service.NewStringField(fieldTransactionTopic).
			Description("The connector's transaction metadata topic (`<topic.prefix>.transaction`, or the connector's `topic.transaction`). It must have exactly one partition.").
			Example("dbserver1.transaction").
			LintRule(fmt.Sprintf(`root = if this.string().trim() == "" { [ %q ] }`, noTransactionTopicText)),
		service.NewStringField(fieldTopicPrefix).
			Description("The connector's `topic.prefix`: a collection `db.table` of an END event is read from topic `<topic_prefix>.db.table`, sanitized as Debezium names topics (characters outside `[a-zA-Z0-9._-]` become `_`). Empty: the transaction topic's name without `.transaction`.").
			Example("dbserver1").
			Default("").
			Advanced(),
		service.NewStringMapField(fieldCollectionTopics).
			Description("Topics of collections that a routing SMT (e.g. `ByLogicalTableRouter` or `RegexRouter`) renamed: collection (as the END event names it) → topic. Several collections may map to one topic; their counts are added. The mapping is checked: a consumed topic no collection maps to, or an event on another topic than its collection's, stops emission with an error naming the entry to add.").
			Example(map[string]any{"inventory.orders_2025": "orders", "inventory.orders_2026": "orders"}).
			Default(map[string]any{}).
			Advanced(),
	}
	fs = append(fs, consumer.GroupFields()...)
	return append(fs,
		kafka.ClientIDField(),
		service.NewInterpolatedStringField(fieldDatabase).
			Description("The target database. Default: the event's `source.db` for MySQL and MariaDB, `source.schema` for PostgreSQL and the other connectors. Interpolated on each row with its metadata (`debezium_db`, `debezium_schema`, `debezium_table`, `kafka_topic`).").
			Example(`analytics`).
			Example(`${! @debezium_db.lowercase() }`).
			Optional().
			Advanced(),
		service.NewInterpolatedStringField(fieldTable).
			Description("The target table. Default: the event's `source.table`. Interpolated like `database`.").
			Example(`${! @debezium_table.trim_prefix("orders_") }`).
			Optional().
			Advanced(),
		service.NewStringField(fieldTimezone).
			Description("The time zone (IANA name) in which an `io.debezium.time.ZonedTimestamp` (e.g. a MySQL TIMESTAMP column, given in UTC) is written as StarRocks DATETIME text.").
			Default("UTC").
			Example("Europe/Berlin").
			Advanced(),
		service.NewIntField(fieldCheckpointLimit).
			Description("The maximum number of emitted but unacknowledged messages. A transaction is never split to fit: the limit is exceeded by at most one transaction.").
			Example(20000).
			Default(defaultCheckpointLimit).
			LintRule(kafka.IntRangeLintRule(fieldCheckpointLimit, 1, 0)),
		service.NewStringField(fieldMaxBufferedBytes).
			Description("Bound on what is buffered of transactions not emitted yet (their events and END records) and on unemitted rows (`268435456`, `256MiB`, `1GB`). At the bound only the partitions the oldest transaction may still need (or a gate holding it waits for) are read, the transaction topic only while no END of the buffered events is known, until the buffer fell to half the bound; an error names that transaction; a transaction larger than the bound still completes, exceeding it by its own size. Never enforced by emitting a transaction partly.").
			Example("1GiB").
			Default(defaultMaxBufferedBytes),
		service.NewDurationField(fieldMissingEventsTimeout).
			Description("How long a transaction whose END arrived may miss events (or events may wait for an END) before an error names the transaction, each topic's collections and the counts seen and expected; repeated at this period. The transaction keeps waiting: it is never loaded partly.").
			Example("5m").
			Default(defaultMissingEventsTimeout).
			LintRule(kafka.DurationLintRule(fieldMissingEventsTimeout)),
		service.NewIntField(fieldResendWindow).
			Description("How many of the last completed transaction ids are remembered, so that a transaction Debezium re-sends whole after it committed (after a connector restart) is skipped. At an assignment the input re-reads this many END events before its start position on the transaction topic. Size it above the transactions of one `offset.flush.interval.ms` of the connector.").
			Example(100000).
			Default(defaultResendWindow).
			LintRule(kafka.IntRangeLintRule(fieldResendWindow, 1, 0)).
			Advanced(),
		service.NewStringListField(fieldSkipTransactions).
			Description("Ids of transactions that can never complete — events deleted by retention before they were read, or dropped by a Filter SMT — and that the operator decides to give up: when a listed transaction is the oldest and still incomplete (or held by an error), it is skipped whole — none of its events is loaded, as none was — an error names it with the counts seen and expected, `debezium_txn_transactions_skipped` counts it, and the transactions after it go on. Its rows are then missing from StarRocks: re-apply them from the source if needed. A listed transaction that completes is loaded normally.").
			Example([]string{"3e11fa47-71ca-11e1-9e33-c80aa9429562:81"}).
			Default([]any{}).
			Advanced(),
		service.NewStringAnnotatedEnumField(fieldEventsWithoutTransaction, map[string]string{
			untransactedError:     "A create, update, delete or truncate without a transaction block stops its partition with an error naming topic, partition and offset.",
			untransactedSingleRow: "Such an event is loaded as a one-row transaction of its partition `<topic>/<partition>`, in partition order with the transactions around it (each switch waits for a StarRocks commit).",
		}).
			Description("What to do with a data change event that has no transaction block (snapshot rows are always loaded).").
			Example(untransactedSingleRow).
			Default(untransactedError).
			Advanced(),
		service.NewStringAnnotatedEnumField(fieldOnTruncate, map[string]string{
			truncateError: "Hold the transaction with an error naming the table: StarRocks cannot truncate inside a load transaction.",
			truncateSkip:  "Count the truncate (`debezium_txn_truncates_skipped`) and load the rest of its transaction.",
		}).
			Description("What to do with a truncate event (`op: t`).").
			Example(truncateSkip).
			Default(truncateError).
			Advanced(),
		specfields.Batching(fieldBatching).
			Description("How emitted transactions are grouped into batches: `count`, `byte_size`, `period`, `check`, `processors`. A batch always ends at a transaction boundary. With no policy a batch holds what is ready, up to 1000 messages (more when one transaction is larger). Processors must keep every message: the output numbers them (`starrocks_seq`)."),
		kafka.TLSField(),
		kafka.SASLField(),
	)
}
