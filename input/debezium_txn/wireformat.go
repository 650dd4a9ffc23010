package debezium_txn

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A schema registry's serializers (Confluent's and the compatible ones:
// Avro, Protobuf, JSON Schema) frame every value as a zero "magic" byte, a
// 4-byte big-endian schema id, then the encoded payload. JSON never starts
// with a zero byte, so the framing is told apart from a JsonConverter value
// by its first byte. The input reads JSON only (its guide, "Values must be
// JSON").

// registryFramed reports whether value is in a schema registry's wire
// format, and its schema id.
func registryFramed(value []byte) (schemaID uint32, ok bool) {
	if len(value) < 5 || value[0] != 0 {
		return 0, false
	}
	return binary.BigEndian.Uint32(value[1:5]), true
}

// errNotJSON marks a value in a schema registry's wire format.
var errNotJSON = errors.New("not JSON")

// notJSONError is the error for a value in a schema registry's wire format:
// what it is, and the converter to run the connector with.
func notJSONError(schemaID uint32) error {
	return fmt.Errorf("the value is in a schema registry's wire format (a zero byte and schema id %d, then Avro, Protobuf or JSON Schema), %w: "+
		"debezium_txn reads the JSON of Kafka Connect's JsonConverter only; run the connector with "+
		"value.converter=org.apache.kafka.connect.json.JsonConverter and value.converter.schemas.enable=true "+
		"(the key likewise), on the topics this input reads", schemaID, errNotJSON)
}
