package contract

import (
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteReadRoundTrip(t *testing.T) {
	in := Meta{
		Partition: "cdc/3", Database: "test", Table: "orders", TxnID: "t-17",
		TxnEnd: true, HasSeq: true, Seq: 42, SeqSource: "a1b2",
		HasOffset: true, SourceOffset: 1234, HasEpoch: true, Epoch: 3,
	}
	msg := service.NewMessage([]byte(`{"order_id":1}`))
	Write(msg, in)
	out, err := Read(msg)
	require.NoError(t, err)
	assert.Equal(t, in, out)
	assert.True(t, out.HasContract())

	v, ok := Materialized(msg).MetaGet(KeySeq)
	require.True(t, ok)
	assert.Equal(t, "42", v, "the sequence is a plain decimal number")
}

func TestWriteClearsStaleKeys(t *testing.T) {
	msg := service.NewMessage(nil)
	Write(msg, Meta{Partition: "p", TxnEnd: true, TxnAbort: true, Marker: true, HasSeq: true, Seq: 1, HasOffset: true, SourceOffset: 9, HasEpoch: true, Epoch: 2})
	Write(msg, Meta{Partition: "p"})
	for _, k := range []string{KeyTxnEnd, KeyTxnAbort, KeyMarker, KeySeq, KeySourceOffset, KeyTable, KeyPartitionEpoch} {
		_, ok := msg.MetaGet(k)
		assert.False(t, ok, k)
	}
	m, err := Read(msg)
	require.NoError(t, err)
	assert.False(t, m.HasContract(), "a partition without a sequence is not the contract")
}

func TestReadAcceptsHandWrittenMappings(t *testing.T) {
	// A Bloblang mapping may set typed metadata (numbers, booleans) with
	// meta foo = 1 rather than strings.
	msg := service.NewMessage([]byte(`{}`))
	msg.MetaSetMut(KeyPartition, "p0")
	msg.MetaSetMut(KeySeq, int64(7))
	msg.MetaSetMut(KeySourceOffset, float64(12))
	msg.MetaSetMut(KeyTxnEnd, true)
	m, err := Read(msg)
	require.NoError(t, err)
	assert.Equal(t, int64(7), m.Seq)
	assert.Equal(t, int64(12), m.SourceOffset)
	assert.True(t, m.TxnEnd)
}

func TestReadRejectsMalformedValues(t *testing.T) {
	for key, val := range map[string]any{
		KeySeq:            "seven",
		KeySourceOffset:   1.5,
		KeyTxnEnd:         "yes",
		KeyTxnAbort:       "maybe",
		KeyPartitionEpoch: "-1",
	} {
		msg := service.NewMessage(nil)
		msg.MetaSetMut(key, val)
		_, err := Read(msg)
		require.ErrorIs(t, err, ErrBadContract, key)
		assert.Contains(t, err.Error(), key, "the error names the key")
	}
}

func TestKafkaPartition(t *testing.T) {
	assert.Equal(t, "orders.cdc/12", KafkaPartition("orders.cdc", 12))
	assert.NotEqual(t, KafkaPartition("a", 1), KafkaPartition("b", 1))
}

func TestEpochIsOptional(t *testing.T) {
	msg := service.NewMessage([]byte(`{}`))
	msg.MetaSetMut(KeyPartition, "p0")
	m, err := Read(msg)
	require.NoError(t, err)
	assert.False(t, m.HasEpoch, "absent: no epoch checking")
	msg.MetaSetMut(KeyPartitionEpoch, int64(4))
	e, ok, err := ReadEpoch(msg)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, uint64(4), e)
	msg.MetaSetMut(KeyPartitionEpoch, "4")
	m, err = Read(msg)
	require.NoError(t, err)
	assert.True(t, m.HasEpoch)
	assert.Equal(t, uint64(4), m.Epoch)
}
