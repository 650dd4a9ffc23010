package consumer

// Metadata keys every consumer input sets on a message, from the Kafka
// record it came from (named as in Benthos's own Kafka inputs).
const (
	MetaKey          = "kafka_key"
	MetaTopic        = "kafka_topic"
	MetaPartition    = "kafka_partition"
	MetaOffset       = "kafka_offset"
	MetaTimestampSec = "kafka_timestamp_unix"
	MetaTimestampMs  = "kafka_timestamp_ms"
)
