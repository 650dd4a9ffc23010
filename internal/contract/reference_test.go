package contract

import (
	"strconv"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// writeReference and readReference are Write and Read as they were before
// the typed value existed: the oracle the tests compare the current code
// with (through Materialize), so that the contract stays byte for byte
// what it was.
func writeReference(msg *service.Message, m Meta) {
	refSet := func(key, v string) {
		if v == "" {
			msg.MetaDelete(key)
			return
		}
		msg.MetaSetMut(key, v)
	}
	flagStr := func(b bool) string {
		if b {
			return "true"
		}
		return ""
	}
	refSet(KeyPartition, m.Partition)
	refSet(KeyDatabase, m.Database)
	refSet(KeyTable, m.Table)
	refSet(KeyTxnID, m.TxnID)
	refSet(KeySeqSource, m.SeqSource)
	refSet(KeyTxnEnd, flagStr(m.TxnEnd))
	refSet(KeyTxnAbort, flagStr(m.TxnAbort))
	refSet(KeyMarker, flagStr(m.Marker))
	if m.HasSeq {
		msg.MetaSetMut(KeySeq, strconv.FormatInt(m.Seq, 10))
	} else {
		msg.MetaDelete(KeySeq)
	}
	if m.HasOffset {
		msg.MetaSetMut(KeySourceOffset, strconv.FormatInt(m.SourceOffset, 10))
	} else {
		msg.MetaDelete(KeySourceOffset)
	}
	if m.HasEpoch {
		msg.MetaSetMut(KeyPartitionEpoch, strconv.FormatUint(m.Epoch, 10))
	} else {
		msg.MetaDelete(KeyPartitionEpoch)
	}
	refSet(KeySchemaChange, flagStr(m.SchemaChange))
}

func readReference(msg *service.Message) (Meta, error) {
	var m Meta
	m.Partition, _ = msg.MetaGet(KeyPartition)
	m.Database, _ = msg.MetaGet(KeyDatabase)
	m.Table, _ = msg.MetaGet(KeyTable)
	m.TxnID, _ = msg.MetaGet(KeyTxnID)
	m.SeqSource, _ = msg.MetaGet(KeySeqSource)
	readBool := func(msg *service.Message, key string) (bool, error) {
		v, _ := msg.MetaGetMut(key)
		return boolValue(key, v)
	}
	readInt := func(msg *service.Message, key string) (int64, bool, error) {
		v, _ := msg.MetaGetMut(key)
		return intValue(key, v)
	}
	var err error
	if m.TxnEnd, err = readBool(msg, KeyTxnEnd); err != nil {
		return m, err
	}
	if m.TxnAbort, err = readBool(msg, KeyTxnAbort); err != nil {
		return m, err
	}
	if m.Marker, err = readBool(msg, KeyMarker); err != nil {
		return m, err
	}
	if m.Seq, m.HasSeq, err = readInt(msg, KeySeq); err != nil {
		return m, err
	}
	if m.SourceOffset, m.HasOffset, err = readInt(msg, KeySourceOffset); err != nil {
		return m, err
	}
	if m.Epoch, m.HasEpoch, err = ReadEpoch(msg); err != nil {
		return m, err
	}
	if m.SchemaChange, err = readBool(msg, KeySchemaChange); err != nil {
		return m, err
	}
	return m, nil
}

// metaStrings renders every metadata key but KeyTyped as text, the way a
// mapping or an interpolation sees it, with its Go type.
func metaStrings(msg *service.Message) map[string]string {
	out := map[string]string{}
	_ = msg.MetaWalkMut(func(k string, v any) error {
		if k != KeyTyped {
			s, _ := msg.MetaGet(k)
			out[k] = typeTag(v) + ":" + s
		}
		return nil
	})
	return out
}

func typeTag(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case nil:
		return "nil"
	case bool:
		return "bool"
	case int, int32, int64, uint64:
		return "int"
	case float64:
		return "float"
	}
	return "other"
}
