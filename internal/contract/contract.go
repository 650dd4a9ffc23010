// Package contract defines the message metadata through which the txn_assembler
// processor (or a hand-written mapping) tells the starrocks_txn output where
// source transactions begin and end. It is a public API: the keys and their
// formats are documented in the README and must not change without notice.
//
// A hand-written mapping sets every key as a string. Write (and a Writer,
// one per assembler) sets only the keys users route on as strings and
// carries the others in one typed value under KeyTyped (see there), which
// is cheaper than eight more strings per message; Parse reads both, a
// typed key set as a string after the writer winning, and Materialize turns
// the typed keys back into strings where metadata leaves the process as
// text. Parsed.Row tells the output what the writer already checked about a
// row body. Parse also says which keys were present and which malformed.
package contract

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Metadata keys of the contract.
const (
	// KeyPartition identifies exactly one ordered source stream (by default a
	// Kafka topic and partition together). Regions and ordering are per
	// partition.
	KeyPartition = "starrocks_partition"
	// KeyDatabase and KeyTable name the target table of a data row.
	KeyDatabase = "starrocks_database"
	KeyTable    = "starrocks_table"
	// KeyTxnID is the source transaction id.
	KeyTxnID = "starrocks_txn_id"
	// KeyTxnEnd is "true" on the last message of a source transaction: a data
	// row, or a body-less END marker.
	KeyTxnEnd = "starrocks_txn_end"
	// KeyTxnAbort is "true" on a body-less marker that discards the
	// partition's open, uncommitted source transaction.
	KeyTxnAbort = "starrocks_txn_abort"
	// KeySeq is the dense emission order of one assembler instance: one
	// decimal number per emitted message, no gaps.
	KeySeq = "starrocks_seq"
	// KeySeqSource tags KeySeq with the assembler instance that produced it.
	// Partitions and sequences are keyed by (seq source, partition).
	KeySeqSource = "starrocks_seq_source"
	// KeySourceOffset is the source position (e.g. the Kafka offset), strictly
	// increasing per partition.
	KeySourceOffset = "starrocks_source_offset"
	// KeyMarker is "true" on a body-less marker message (END or abort). Such a
	// message carries no row and is never loaded.
	KeyMarker = "starrocks_marker"
	// KeyPartitionEpoch is the assignment epoch of the partition the message
	// was read in (a decimal number, from registry.Assign), optional. The
	// kafka_txn input stamps it; the assembler and the output drop a message
	// whose epoch is older than the partition's current or fenced one, so a
	// batch that arrives after its partition was revoked is never applied.
	// Absent: no epoch checking.
	KeyPartitionEpoch = "starrocks_partition_epoch"
	// KeySchemaChange is "true" on a message whose body is a table
	// definition (schema.Table as JSON: its columns in StarRocks types and
	// its primary key) for KeyDatabase.KeyTable: an explicit schema change
	// at this point of the partition's stream (Maxwell's DDL events, the
	// envelope's SCHEMA event, a custom mapping). It is a source transaction
	// of its own, or part of one; the output applies it in order
	// (ARCHITECTURE.md §14.1) and never loads its body as a row.
	KeySchemaChange = "starrocks_schema_change"
)

// OpField is the JSON key that marks a row as an upsert (0) or a delete (1).
const OpField = "__op"

// KafkaPartition is the default partition identity for a Kafka record: the
// topic and the partition together, so that two topics never share state.
func KafkaPartition(topic string, partition int32) string {
	return topic + "/" + strconv.FormatInt(int64(partition), 10)
}

// Meta is the contract as read from one message. The flags come last,
// together: the output keeps a Meta per message in flight, and so it is 112
// bytes, not 136.
type Meta struct {
	Partition    string
	Database     string
	Table        string
	TxnID        string
	SeqSource    string
	Seq          int64
	SourceOffset int64
	Epoch        uint64
	TxnEnd       bool
	TxnAbort     bool
	Marker       bool
	HasSeq       bool
	HasOffset    bool
	// ArrivalOffset is set when SourceOffset is the txn_assembler's arrival
	// counter (its source gave no position: no source_offset field, no
	// kafka_offset metadata), not a source position. It orders the
	// partition's messages of one run only: it starts at 0 again with the
	// process, so it cannot tell a replay from new data, and exactly_once
	// refuses it. Only the typed value carries it (a KeySourceOffset set as
	// a string is a position); Materialize writes no such offset.
	ArrivalOffset bool
	HasEpoch      bool
	SchemaChange  bool
}

// HasContract reports whether the message carries the contract at all (a
// partition and a sequence). Messages without it are admitted in arrival
// order, each its own transaction.
func (m *Meta) HasContract() bool {
	return m.Partition != "" && m.HasSeq
}

// ErrBadContract wraps every parse error of Read.
var ErrBadContract = errors.New("invalid starrocks metadata")

// Read extracts the contract from a message's metadata. On a malformed value
// it returns the first error (in the order end, abort, marker, seq, offset,
// epoch) with the values read before it; Parse reads everything and says
// which keys were present and which malformed.
func Read(msg *service.Message) (Meta, error) {
	p := Parse(msg)
	if p.Err == nil {
		return p.Meta, nil
	}
	return p.readPrefix(), p.Err
}

// ReadEpoch reads the optional KeyPartitionEpoch of a message.
func ReadEpoch(msg *service.Message) (uint64, bool, error) {
	v, _ := msg.MetaGetMut(KeyPartitionEpoch)
	return epochValue(v)
}

func epochValue(v any) (uint64, bool, error) {
	n, ok, err := intValue(KeyPartitionEpoch, v)
	if err != nil {
		return 0, false, err
	}
	if n < 0 {
		return 0, false, fmt.Errorf("%w: %s must not be negative, got %d", ErrBadContract, KeyPartitionEpoch, n)
	}
	return uint64(n), ok, nil
}

// Write stamps the contract onto a message: the string keys (partition,
// database, table, transaction id, epoch), and the typed value under
// KeyTyped with the rest. Empty strings are removed, and so are the typed
// keys as strings, so that a message never carries a stale value. A Writer
// does the same with fewer allocations; use one per assembler.
func Write(msg *service.Message, m Meta) {
	write(nil, msg, m, nil, RowFacts{})
}

func boolValue(key string, v any) (bool, error) {
	if v == nil {
		return false, nil
	}
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch x {
		case "", "false", "0":
			return false, nil
		case "true", "1":
			return true, nil
		}
	}
	return false, fmt.Errorf("%w: %s must be true or false, got %v", ErrBadContract, key, v)
}

func intValue(key string, v any) (int64, bool, error) {
	if v == nil {
		return 0, false, nil
	}
	switch x := v.(type) {
	case int64:
		return x, true, nil
	case int:
		return int64(x), true, nil
	case int32:
		return int64(x), true, nil
	case uint64:
		return int64(x), true, nil
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true, nil
		}
	case string:
		if x == "" {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(x, 10, 64)
		if err == nil {
			return n, true, nil
		}
	}
	return 0, false, fmt.Errorf("%w: %s must be a whole number, got %v", ErrBadContract, key, v)
}
