package kafka_txn

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
	"github.com/starrocks-txn/benthos-starrocks/internal/specfields"
)

// emptyTopicText is what lint and the start say of an empty topic.
const emptyTopicText = "topic must not be empty"

// Field names of the kafka_txn output (the connection fields are
// internal/kafka's). They are the names users know from Redpanda Connect's
// kafka_franz output.
const (
	fieldTopic           = "topic"
	fieldKey             = "key"
	fieldPartitioner     = "partitioner"
	fieldPartition       = "partition"
	fieldMetadata        = "metadata"
	fieldMaxInFlight     = "max_in_flight"
	fieldBatching        = "batching"
	fieldTimeout         = "timeout"
	fieldMaxMessageBytes = "max_message_bytes"
	fieldCompression     = "compression"
	fieldIdempotentWrite = "idempotent_write"
	fieldTransactionalID = "transactional_id"
)

// Partitioners accepted by partitioner.
const (
	partitionerMurmur2     = "murmur2_hash"
	partitionerRoundRobin  = "round_robin"
	partitionerLeastBackup = "least_backup"
	partitionerManual      = "manual"
)

// Compression codecs accepted by compression.
const (
	compressionNone   = "none"
	compressionGzip   = "gzip"
	compressionSnappy = "snappy"
	compressionLz4    = "lz4"
	compressionZstd   = "zstd"
)

const (
	defaultMaxInFlight     = 10
	defaultTimeout         = "10s"
	defaultMaxMessageBytes = "1MiB"
)

// ConfigSpec returns the configuration spec of the kafka_txn output.
func ConfigSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Beta().
		Categories("Services").
		Version("0.1.0").
		Summary("Writes messages to Kafka with franz-go; with a transactional_id every batch is one Kafka transaction, so a dead-lettered source transaction arrives whole and atomically.").
		Description(`
The counterpart of the `+"`kafka_txn`"+` input, with the field names of Redpanda
Connect's `+"`kafka_franz`"+` output. A batch is acknowledged only when
every one of its records is acknowledged by the brokers; a broker error fails
the batch, and Benthos retries it.

### Delivery

The idempotent producer is on by default: the client's own retries of a
produce request (a lost reply, a reset connection, a leader change) never
write a record twice, and records of one partition keep their order.

Without `+"`transactional_id`"+`, a batch whose records partly failed is
reported failed, naming the failed messages; written records are not
withdrawn, so a retried batch may write them again (at-least-once).

With `+"`transactional_id`"+`, each batch is one Kafka transaction: it is
committed whole or aborted whole, and consumers that read with
`+"`read_committed`"+` (the `+"`kafka_txn`"+` input's default) never see part
of it. Batches are then written one transaction at a time (a transactional
producer runs one transaction at a time). This is the way to use the output as
the `+"`starrocks_txn`"+` output's `+"`dead_letter`"+`: a poisoned source
transaction is one batch, so it arrives whole, in order and atomically. Leave
`+"`batching`"+` unset there: a batching policy regroups messages and can
split a batch over two transactions. A commit whose reply is lost cannot be
told apart from one that failed: the batch is written again in a new
transaction, so a consumer may see it twice, never half.

### Headers and metadata

Metadata keys that match `+"`metadata`"+` become record headers (the value as
a string). For dead letters include `+"`starrocks_dead_letter_reason`"+` (and
`+"`starrocks_txn_id`"+`, `+"`starrocks_partition`"+`), e.g.
`+"`include_patterns: [ \"^starrocks_\" ]`"+`.

### Metrics

`+"`kafka_txn_output_records`"+` (records acknowledged by the brokers),
`+"`kafka_txn_output_errors`"+` (batches that failed),
`+"`kafka_txn_output_txn_commits`"+` and `+"`kafka_txn_output_txn_aborts`"+`
(with `+"`transactional_id`"+`).`).
		Fields(
			kafka.SeedBrokersField(),
			service.NewInterpolatedStringField(fieldTopic).
				Description("The topic to write each message to. When it has no interpolation, Connect fails with an error naming `topic` if the topic does not exist.").
				Example("starrocks.dead_letter").
				Example(`${! @kafka_topic }-retry`).
				LintRule(fmt.Sprintf(`root = if this.string().trim() == "" { [ %q ] }`, emptyTopicText)),
			service.NewInterpolatedStringField(fieldKey).
				Description("The record key. With the `murmur2_hash` partitioner records with the same key go to the same partition, in order.").
				Example(`${! @starrocks_partition }`).
				Example(`${! json("order_id") }`).
				Optional(),
			service.NewStringAnnotatedEnumField(fieldPartitioner, map[string]string{
				partitionerMurmur2:     "Records with a key go to the partition the key hashes to (murmur2, as the Java client: the same key lands where Java producers put it); records without a key stick to one partition per batch.",
				partitionerRoundRobin:  "Records go to every partition in turn.",
				partitionerLeastBackup: "Records go to the partition with the fewest records waiting to be sent.",
				partitionerManual:      "Records go to the partition given by `partition`.",
			}).
				Description("How a record's partition is chosen.").
				Default(partitionerMurmur2).
				Example(partitionerRoundRobin).
				Advanced(),
			service.NewInterpolatedStringField(fieldPartition).
				Description("The partition of each record, as a whole number; with `partitioner: manual` only, and required by it.").
				Example(`${! @kafka_partition }`).
				Example("0").
				Optional().
				Advanced(),
			kafka.ClientIDField(),
			service.NewBoolField(fieldIdempotentWrite).
				Description("Use the idempotent producer: a produce request the client retries (after a lost reply or a reset connection) never writes its records twice, and order per partition holds. Needs the IDEMPOTENT_WRITE permission on clusters before Kafka 3.0; turn it off only where that cannot be granted.").
				Default(true).
				Example(false).
				Advanced(),
			service.NewStringField(fieldTransactionalID).
				Description("Write each batch as one Kafka transaction under this transactional ID: committed whole or aborted whole, never half visible to `read_committed` consumers. Must be unique per running output: a second producer with the same ID fences the first. Needs the idempotent producer.").
				Example("starrocks-loader-dead-letter").
				Example("${HOSTNAME}-dead-letter").
				Optional(),
			service.NewMetadataFilterField(fieldMetadata).
				Description("Which metadata keys become record headers.").
				Example(map[string]any{"include_patterns": []any{"^starrocks_"}}).
				Example(map[string]any{"include_prefixes": []any{"kafka_", "trace_"}}).
				Optional(),
			service.NewOutputMaxInFlightField().
				Description("The maximum number of batches written at once. With `transactional_id` batches are written one transaction at a time whatever this is.").
				Default(defaultMaxInFlight).
				Example(64).
				LintRule(kafka.IntRangeLintRule(fieldMaxInFlight, 1, 0)),
			service.NewDurationField(fieldTimeout).
				Description("How long one batch may take to be written (and its transaction committed) before it fails and is retried.").
				Default(defaultTimeout).
				Example("30s").
				LintRule(kafka.DurationLintRule(fieldTimeout)).
				Advanced(),
			specfields.Batching(fieldBatching).
				Description("How messages are grouped into batches before they are written. A starrocks_txn `dead_letter` refuses one: it would hold a poisoned transaction back and regroup it."),
			service.NewStringField(fieldMaxMessageBytes).
				Description("The largest record batch sent to one partition in one request, in bytes (`1048576`, `512KiB`, `1MiB`, `2MB`); a record larger than this fails its batch. Keep it at or below the brokers' `message.max.bytes`.").
				Default(defaultMaxMessageBytes).
				Example("2MiB").
				LintRule(kafka.ByteSizeLintRule(fieldMaxMessageBytes)).
				Advanced(),
			service.NewStringEnumField(fieldCompression, compressionNone, compressionGzip, compressionSnappy, compressionLz4, compressionZstd).
				Description("The compression codec of record batches. Unset: snappy where the broker supports it.").
				Example(compressionLz4).
				Optional().
				Advanced(),
			kafka.TLSField(),
			kafka.SASLField(),
		).
		LintRule(`root = match {
  this.partitioner.or("`+partitionerMurmur2+`") == "`+partitionerManual+`" && this.partition.or("") == "" => ["partition must be set when partitioner is manual"],
  this.partitioner.or("`+partitionerMurmur2+`") != "`+partitionerManual+`" && this.partition.or("") != "" => ["partition is only used with partitioner: manual"],
  this.transactional_id.or("") != "" && this.idempotent_write.or(true) == false => ["transactional_id needs idempotent_write: true"],
}`).
		Example("Dead letters to a topic", "Poisoned source transactions of the starrocks_txn output go to a topic, each as one Kafka transaction, keyed by source partition, with the reason as a header.", `
output:
  starrocks_txn:
    load_urls: [ "http://starrocks-fe:8030" ]
    dead_letter:
      kafka_txn:
        seed_brokers: [ "broker-1:9092" ]
        topic: starrocks.dead_letter
        key: ${! @starrocks_partition }
        transactional_id: starrocks-loader-dead-letter
        metadata:
          include_patterns: [ "^starrocks_" ]
`).
		Example("Writing a topic", "Forwards messages to a topic keyed by a field of the row.", `
output:
  kafka_txn:
    seed_brokers: [ "broker-1:9092", "broker-2:9092" ]
    topic: orders
    key: ${! json("order_id") }
    max_in_flight: 64
    batching:
      count: 1000
      period: 50ms
`)
}

// outputConfig is the parsed configuration.
type outputConfig struct {
	client          kafka.ClientConfig
	topic           *service.InterpolatedString
	key             *service.InterpolatedString
	partitioner     string
	partition       *service.InterpolatedString
	idempotent      bool
	transactionalID string
	metadata        *service.MetadataFilter
	maxInFlight     int
	timeout         time.Duration
	batching        service.BatchPolicy
	maxMessageBytes int32
	compression     string
}

func outputConfigFromParsed(conf *service.ParsedConfig) (c outputConfig, err error) {
	if c.client, err = kafka.ClientConfigFromParsed(conf); err != nil {
		return
	}
	if c.topic, err = conf.FieldInterpolatedString(fieldTopic); err != nil {
		return
	}
	if s, static := c.topic.Static(); static && strings.TrimSpace(s) == "" {
		err = errors.New(emptyTopicText)
		return
	}
	if conf.Contains(fieldKey) {
		if c.key, err = conf.FieldInterpolatedString(fieldKey); err != nil {
			return
		}
	}
	if c.partitioner, err = conf.FieldString(fieldPartitioner); err != nil {
		return
	}
	switch c.partitioner {
	case partitionerMurmur2, partitionerRoundRobin, partitionerLeastBackup, partitionerManual:
	default:
		err = fmt.Errorf("%s %q is not one of %s, %s, %s, %s", fieldPartitioner, c.partitioner, partitionerMurmur2, partitionerRoundRobin, partitionerLeastBackup, partitionerManual)
		return
	}
	if conf.Contains(fieldPartition) {
		if c.partition, err = conf.FieldInterpolatedString(fieldPartition); err != nil {
			return
		}
	}
	switch {
	case c.partitioner == partitionerManual && c.partition == nil:
		err = fmt.Errorf("partition must be set when partitioner is manual")
		return
	case c.partitioner != partitionerManual && c.partition != nil:
		err = fmt.Errorf("partition is only used with partitioner: manual")
		return
	}
	if c.idempotent, err = conf.FieldBool(fieldIdempotentWrite); err != nil {
		return
	}
	if conf.Contains(fieldTransactionalID) {
		if c.transactionalID, err = conf.FieldString(fieldTransactionalID); err != nil {
			return
		}
		c.transactionalID = strings.TrimSpace(c.transactionalID)
	}
	if c.transactionalID != "" && !c.idempotent {
		err = fmt.Errorf("transactional_id needs idempotent_write: true")
		return
	}
	if conf.Contains(fieldMetadata) {
		if c.metadata, err = conf.FieldMetadataFilter(fieldMetadata); err != nil {
			return
		}
	}
	if c.maxInFlight, err = conf.FieldMaxInFlight(); err != nil {
		return
	}
	if err = kafka.IntRangeError(fieldMaxInFlight, c.maxInFlight, 1, 0); err != nil {
		return
	}
	if c.timeout, err = kafka.DurationField(conf, fieldTimeout); err != nil {
		return
	}
	if c.batching, err = conf.FieldBatchPolicy(fieldBatching); err != nil {
		return
	}
	if c.maxMessageBytes, err = kafka.ByteSizeField(conf, fieldMaxMessageBytes); err != nil {
		return
	}
	if conf.Contains(fieldCompression) {
		if c.compression, err = conf.FieldString(fieldCompression); err != nil {
			return
		}
		switch c.compression {
		case compressionNone, compressionGzip, compressionSnappy, compressionLz4, compressionZstd:
		default:
			err = fmt.Errorf("%s %q is not one of %s, %s, %s, %s, %s", fieldCompression, c.compression, compressionNone, compressionGzip, compressionSnappy, compressionLz4, compressionZstd)
			return
		}
	}
	return
}

// producerOpts are the producer options of the config.
func (c outputConfig) producerOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.ProducerBatchMaxBytes(c.maxMessageBytes),
		// A record that could not be delivered within timeout fails (its
		// batch fails and Benthos retries it); the client's own retries
		// stay within that.
		kgo.RecordDeliveryTimeout(c.timeout),
	}
	switch c.partitioner {
	case partitionerMurmur2:
		opts = append(opts, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	case partitionerRoundRobin:
		opts = append(opts, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	case partitionerLeastBackup:
		opts = append(opts, kgo.RecordPartitioner(kgo.LeastBackupPartitioner()))
	case partitionerManual:
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	if !c.idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if c.transactionalID != "" {
		opts = append(opts, kgo.TransactionalID(c.transactionalID), kgo.TransactionTimeout(max(c.timeout*2, time.Minute)))
	}
	switch c.compression {
	case compressionNone:
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	case compressionGzip:
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case compressionSnappy:
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	case compressionLz4:
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case compressionZstd:
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	}
	return opts
}

// partitionOf evaluates partition for a message.
func partitionOf(s string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s gave %q, not a partition number (a whole number from 0)", fieldPartition, s)
	}
	return int32(n), nil
}
