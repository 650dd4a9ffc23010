package starrocks_txn

import (
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// parseOne reads one message as WriteBatch does.
func parseOne(t *testing.T, msg *service.Message) *item {
	t.Helper()
	pc, err := parseTestYAML("load_urls: [ http://fake:8030 ]", nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	o := newOutput(c, nil, nil, service.MockResources())
	batch := service.MessageBatch{msg}
	targets := batchTargets{db: batch.InterpolationExecutor(o.conf.database), table: batch.InterpolationExecutor(o.conf.table)}
	it := o.parseContract(msg, &call{}, time.Now())
	o.parseBody(batch, 0, it, targets)
	return it
}

func rowMeta() contract.Meta {
	return contract.Meta{Partition: "cdc/0", Database: "test", Table: "orders", TxnID: "t1", SeqSource: "a1", Seq: 1, HasSeq: true, TxnEnd: true}
}

// A row the assembler built and vouched for (contract.Writer.WriteRow) is
// neither validated nor decoded again: the output takes the assembler's
// delete flag. Shown with a flag the body alone would not give, so the
// test fails if the output decoded the body itself.
func TestVouchedRowIsNotScannedAgain(t *testing.T) {
	var w contract.Writer
	body := []byte(`{"order_id":1}`)
	msg := service.NewMessage(nil)
	msg.SetBytes(body)
	w.WriteRow(msg, rowMeta(), body, true)
	it := parseOne(t, msg)
	require.NoError(t, it.poison)
	assert.True(t, it.vouched)
	assert.True(t, it.isRow)
	assert.True(t, it.isDelete, "the assembler's flag, not a decode of the body")
}

// Once a later processor replaced the body, the assembler's facts no
// longer hold: the output checks the body itself, and refuses one that is
// not a JSON object.
func TestReplacedBodyIsCheckedByTheOutput(t *testing.T) {
	var w contract.Writer
	body := []byte(`{"order_id":1}`)
	msg := service.NewMessage(nil)
	msg.SetBytes(body)
	w.WriteRow(msg, rowMeta(), body, true)

	replaced := msg.Copy()
	replaced.SetBytes([]byte(`{"order_id":1,"__op":0}`))
	it := parseOne(t, replaced)
	require.NoError(t, it.poison)
	assert.False(t, it.vouched)
	assert.False(t, it.isDelete, "decided from the new body")

	bad := msg.Copy()
	bad.SetBytes([]byte(`{"order_id":`))
	it = parseOne(t, bad)
	assert.False(t, it.vouched)
	require.Error(t, it.poison)
	assert.Contains(t, it.poison.Error(), "not a JSON object")
}

// A contract set by hand (string keys only) carries no facts: the body is
// validated and its __op decoded.
func TestHandWrittenContractBodyIsChecked(t *testing.T) {
	byHand := func(body string) *service.Message {
		msg := service.NewMessage([]byte(body))
		for k, v := range map[string]string{
			contract.KeyPartition: "cdc/0", contract.KeyDatabase: "test", contract.KeyTable: "orders",
			contract.KeyTxnID: "t1", contract.KeySeqSource: "a1", contract.KeySeq: "1", contract.KeyTxnEnd: "true",
		} {
			msg.MetaSetMut(k, v)
		}
		return msg
	}
	it := parseOne(t, byHand(`{"order_id":1,"__op":1}`))
	require.NoError(t, it.poison)
	assert.False(t, it.vouched)
	assert.True(t, it.isDelete)

	it = parseOne(t, byHand(`[1]`))
	require.Error(t, it.poison)
	assert.Contains(t, it.poison.Error(), "not a JSON object")
}

// The visibility clock starts at the record's timestamp whether the input
// set it as an integer (kafka_txn) or as text (a mapping, a header).
func TestSourceTimeFromEveryForm(t *testing.T) {
	now := time.UnixMilli(5_000_000)
	for _, tc := range []struct {
		key  string
		v    any
		want time.Time
	}{
		{"kafka_timestamp_ms", int64(1_700_000_000_123), time.UnixMilli(1_700_000_000_123)},
		{"kafka_timestamp_ms", 1_700_000_000_123, time.UnixMilli(1_700_000_000_123)},
		{"kafka_timestamp_ms", "1700000000123", time.UnixMilli(1_700_000_000_123)},
		{"kafka_timestamp_ms", "not a number", now},
		{"kafka_timestamp_ms", int64(0), now},
		{"kafka_timestamp_unix", int64(1_700_000_000), time.Unix(1_700_000_000, 0)},
		{"kafka_timestamp_unix", "1700000000", time.Unix(1_700_000_000, 0)},
		{"other", int64(1), now},
	} {
		msg := service.NewMessage(nil)
		msg.MetaSetMut(tc.key, tc.v)
		assert.True(t, tc.want.Equal(sourceTime(msg, now)), "%s = %#v", tc.key, tc.v)
	}
}
