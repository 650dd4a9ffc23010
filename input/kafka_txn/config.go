package kafka_txn

import (
	"fmt"
	"strings"
	"time"

	// The lint rule of revoke_timeout uses parse_duration, a Bloblang method
	// of the pure components.
	"github.com/redpanda-data/benthos/v4/public/bloblang"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
	"github.com/starrocks-txn/benthos-starrocks/internal/specfields"
)

// Field names of the kafka_txn input. The connection fields (seed_brokers,
// client_id, tls, sasl), topics and the consumer-group fields
// (consumer_group, isolation_level, start_from_oldest, commit_period, the
// timeouts, the fetch and metadata settings) are internal/kafka's and
// internal/kafka/consumer's.
const (
	fieldCheckpointLimit        = "checkpoint_limit"
	fieldCheckpointStallTimeout = "checkpoint_stall_timeout"
	fieldStartAfterProgress     = "start_after_progress"
	fieldBatching               = "batching"
	fieldCoalesce               = "coalesce"
)

const (
	defaultCheckpointLimit        = 100000
	defaultCheckpointStallTimeout = "30s"
)

// ConfigSpec returns the configuration spec of the kafka_txn input.
func ConfigSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Beta().
		Categories("Services").
		Version("0.1.0").
		Summary("Consumes a Kafka topic of CDC source transactions with a consumer group, committing offsets only at source-transaction boundaries that the starrocks_txn output has committed.").
		Description(`
Built on franz-go. Messages of one partition are delivered in offset order; a
batch may join several partitions (`+"`coalesce`"+`), each partition's part in one
piece. A partition's part ends at a source-transaction end (where the stream's
`+"`txn_assembler`"+` says transactions end, or else at a record matching
`+"`batching.check`"+`), so the output, which holds every batch until its source
transactions commit, never has all of its `+"`max_in_flight`"+` calls waiting on
ends not yet delivered, at any partition count. Several batches of one
partition may be unacknowledged at once, up to `+"`checkpoint_limit`"+` messages
per partition; fetching pauses for a partition at that limit.

### Committed offsets

When the `+"`starrocks_txn`"+` output runs in the same stream it publishes,
per partition, the END offset of the last source transaction that StarRocks
committed. The input then commits exactly that offset plus one (the next
position after the committed END, which may be a transaction marker), never
past what it delivered. A restart therefore never begins in the middle of a
source transaction. With any other output the input commits the contiguous
acknowledged prefix of each partition.

### Errors and rebalances

Nacks are not replayed: a nacked batch stops its partition with an error naming
it, and nothing past it is committed. On a revoke the input asks the output to
fence the partition (drop its uncommitted rows), waits at most
`+"`revoke_timeout`"+` for commits already in flight, commits and releases the
partition; acknowledgements that arrive later mark nothing. A lost partition is
fenced without committing.

### Metadata

Every message carries `+"`kafka_key`, `kafka_topic`, `kafka_partition`, `kafka_offset`, `kafka_timestamp_unix`, `kafka_timestamp_ms`, `kafka_tombstone_message`, `kafka_lag`"+`
(records behind the partition's high watermark when the record was fetched),
`+"`starrocks_partition_epoch`"+` (the partition's assignment epoch: the assembler and the
output drop a message of an assignment that was revoked, so a late batch never
writes after the fence) and every record header as a string.

### Metrics

`+"`kafka_txn_lag`"+` (gauge per topic and partition: high watermark minus the
next offset to deliver), `+"`kafka_txn_in_flight`"+` (gauge: unacknowledged
messages per partition), `+"`kafka_txn_commits`"+` and
`+"`kafka_txn_commit_errors`"+` (offset commits), `+"`kafka_txn_committed_offset`"+`
(gauge per partition), `+"`kafka_txn_committed_lag`"+` (gauge per partition: high
watermark minus the offset committed to the group, what a restart would read
again; it keeps rising while a partition is stalled), `+"`kafka_txn_paused`"+` (gauge: 1 while fetching is paused
at the checkpoint limit), `+"`kafka_txn_checkpoint_stalls`"+`, `+"`kafka_txn_nacks`"+`,
`+"`kafka_txn_fences`"+` and `+"`kafka_txn_unmatched_partition_keys`"+` (keys of
`+"`starrocks_partition`"+` used downstream that match no partition the input
assigned: the assembler's `+"`partition`"+` or a mapping changed the key, so
the output's committed offsets and fences never reach the input; each is
also warned about once).`).
		Fields(fields()...).
		LintRule(kafka.GroupLintRule()).
		Example("Production CDC pipeline", "Reads source transactions in the envelope format; the txn_assembler in the input's processors tells the input where transactions end, and offset commits follow the starrocks_txn output's committed boundaries.", `
input:
  kafka_txn:
    seed_brokers: [ "broker-1:9092", "broker-2:9092" ]
    topics: [ "shop.cdc" ]
    consumer_group: starrocks-loader
    checkpoint_limit: 100000
    commit_period: 1s
    revoke_timeout: 30s
    batching:
      count: 1000
      period: 100ms
  processors:
    - txn_assembler:
        format: envelope
`)
}

type inputConfig struct {
	// The connection, topics and consumer-group settings
	// (internal/kafka/consumer).
	consumer.Config
	checkpointLimit        int
	checkpointStallTimeout time.Duration
	startAfterProgress     bool
	batching               batchRule
	coalesce               bool
}

func inputConfigFromParsed(conf *service.ParsedConfig) (c inputConfig, err error) {
	if c.Config, err = consumer.ConfigFromParsed(conf, "topics must name at least one topic"); err != nil {
		return
	}
	if c.checkpointLimit, err = conf.FieldInt(fieldCheckpointLimit); err != nil {
		return
	}
	if err = kafka.IntRangeError(fieldCheckpointLimit, c.checkpointLimit, 1, 0); err != nil {
		return
	}
	if c.checkpointStallTimeout, err = kafka.DurationField(conf, fieldCheckpointStallTimeout); err != nil {
		return
	}
	if c.startAfterProgress, err = conf.FieldBool(fieldStartAfterProgress); err != nil {
		return
	}
	if c.batching, err = batchRuleFromParsed(conf); err != nil {
		return
	}
	if c.coalesce, err = conf.FieldBool(fieldCoalesce); err != nil {
		return
	}
	return
}

// batchRuleFromParsed reads the batching policy: applied by the input
// itself (batching.go), unless it has processors.
func batchRuleFromParsed(conf *service.ParsedConfig) (r batchRule, err error) {
	if r.policy, err = conf.FieldBatchPolicy(fieldBatching); err != nil {
		return r, err
	}
	if conf.Contains(fieldBatching, "processors") {
		procs, err := conf.FieldAnyList(fieldBatching, "processors")
		if err != nil {
			return r, err
		}
		r.benthos = len(procs) > 0
	}
	r.count, r.byteSize = r.policy.Count, r.policy.ByteSize
	if p := strings.TrimSpace(r.policy.Period); p != "" {
		if r.period, err = time.ParseDuration(p); err != nil {
			return r, fmt.Errorf("batching.period %q: %w", p, err)
		}
	}
	if c := strings.TrimSpace(r.policy.Check); c != "" {
		if r.check, err = bloblang.Parse(c); err != nil {
			return r, fmt.Errorf("batching.check: %w", err)
		}
	}
	return r, nil
}

// fields are the input's fields: the connection and group fields of every
// consumer input (internal/kafka, internal/kafka/consumer) and its own.
func fields() []*service.ConfigField {
	fs := []*service.ConfigField{
		kafka.SeedBrokersField(),
		consumer.TopicsField("Topics to consume. Every topic must exist: the input refuses to start on an unknown topic.", []string{"shop.cdc"}),
	}
	fs = append(fs, consumer.GroupFields()...)
	return append(fs,
		kafka.ClientIDField(),
		service.NewIntField(fieldCheckpointLimit).
			Description("The maximum number of delivered but unacknowledged messages per partition. Must be larger than the largest source transaction (in messages) when the output holds acknowledgements until a transaction commits, or the partition stalls.").
			Default(defaultCheckpointLimit).
			Example(20000).
			LintRule(kafka.IntRangeLintRule(fieldCheckpointLimit, 1, 0)),
		service.NewDurationField(fieldCheckpointStallTimeout).
			Description("How long a partition may sit at `checkpoint_limit` with no acknowledgement before an error naming `checkpoint_limit` is logged (and repeated at this period).").
			Default(defaultCheckpointStallTimeout).
			Example("2m").
			LintRule(kafka.DurationLintRule(fieldCheckpointStallTimeout)).
			Advanced(),
		service.NewBoolField(fieldStartAfterProgress).
			Description("When the `starrocks_txn` output runs with `semantic: exactly_once`, start a newly assigned partition after the output's durable progress (the offset through which StarRocks holds the partition's source transactions) when that is ahead of the group's committed offset. An optimisation only: the output drops such replays itself; turning it off re-reads them (useful to test that).").
			Default(true).
			Example(false).
			Advanced(),
		specfields.Batching(fieldBatching).
			Description(`How records are grouped into batches, per partition: a partition's part of a batch is due at `+"`count`"+` messages, at `+"`byte_size`"+` bytes or after `+"`period`"+` (with no policy: what was fetched). A part always ends at a source-transaction end: with a `+"`txn_assembler`"+` in the input's processors (and its `+"`partition`"+` unset) the input asks it where transactions end; without one, a record for which `+"`check`"+` is true ends a transaction (for the envelope format `+"`this.type == \"TXN_END\"`"+`, for Maxwell `+"`this.commit == true`"+`). The records after a partition's last end wait for their transaction to end, so a part may exceed `+"`count`"+` by a transaction; a transaction that alone fills `+"`checkpoint_limit`"+` is delivered as it is (and the partition reports the stall). So no batch waits on a record that is not delivered, which keeps the output's `+"`max_in_flight`"+` calls from ever all waiting on transactions whose ends cannot arrive. A policy with `+"`processors`"+` is applied by Benthos's batcher instead: one partition per batch, cut by the policy alone.`),
		service.NewBoolField(fieldCoalesce).
			Description("Join the due parts of several partitions into one batch, in partition order, until it holds `batching.count` messages (1000 without a count) or no other part is due; each part is added whole, so a batch stays under twice that. Only parts known to end at a source-transaction end are joined: a transaction cut at `checkpoint_limit`, and every part when the input cannot tell where transactions end (no `txn_assembler`, no `check`), goes in a batch of its own, so that a transaction which cannot complete never holds another partition's rows unacknowledged. The output holds each batch until it commits, in one of its `max_in_flight` slots: with one partition per batch, many partitions flushed every `period` give many batches of a few records each, and the slots, not the throughput, bound a commit cycle. Off: one partition per batch.").
			Default(true).
			Example(false).
			Advanced(),
		kafka.TLSField(),
		kafka.SASLField(),
	)
}
