package txnassembler

import (
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const customConf = `
format: custom
partition: '${! @source_stream }'
source_offset: '${! this.lsn }'
database: shop
custom:
  kind: |
    root = match this.op {
      "BEGIN" => "begin"
      "COMMIT" => "end"
      "ROLLBACK" => "abort"
      ["INSERT", "UPDATE", "DELETE"].contains(this) => "data"
      "LAST" => "data_end"
      _ => "skip"
    }
  txn_id: 'root = this.tx'
  database: 'root = ""'
  table: 'root = this.tbl'
  row: 'root = this.row'
  delete: 'root = this.op == "DELETE"'
`

func customMsg(body string) *service.Message {
	m := service.NewMessage([]byte(body))
	m.MetaSetMut("source_stream", "pg-1")
	return m
}

func TestCustomFormat(t *testing.T) {
	p, _ := newProc(t, customConf)
	out := run(t, p,
		customMsg(`{"lsn":1,"tx":42,"op":"BEGIN"}`),
		customMsg(`{"lsn":2,"tx":42,"op":"INSERT","tbl":"orders","row":{"id":1}}`),
		customMsg(`{"lsn":3,"tx":42,"op":"DELETE","tbl":"orders","row":"{\"id\":2}"}`),
		customMsg(`{"lsn":4,"tx":42,"op":"HEARTBEAT"}`),
		customMsg(`{"lsn":5,"tx":42,"op":"COMMIT"}`),
		customMsg(`{"lsn":6,"tx":43,"op":"INSERT","tbl":"orders","row":{"id":3}}`),
		customMsg(`{"lsn":7,"tx":43,"op":"ROLLBACK"}`),
		customMsg(`{"lsn":8,"tx":44,"op":"LAST","tbl":"orders","row":{"id":4}}`),
	)
	got := readAll(t, out)
	require.Len(t, got, 6)
	for _, g := range got {
		assert.NoError(t, g.Err)
		assert.Equal(t, "pg-1", g.Partition)
	}
	assert.Equal(t, "42", got[0].TxnID)
	assert.Equal(t, "shop", got[0].Database, "database supplies what the events lack")
	assert.JSONEq(t, `{"id":1,"__op":0}`, got[0].Body)
	assert.JSONEq(t, `{"id":2,"__op":1}`, got[1].Body)
	assert.True(t, got[2].TxnEnd && got[2].Marker)
	assert.Equal(t, int64(5), got[2].SourceOffset)

	assert.Equal(t, "43", got[3].TxnID)
	assert.True(t, got[4].TxnAbort && got[4].Marker, "abort discards the open transaction")
	assert.Equal(t, "43", got[4].TxnID)
	assert.Equal(t, int64(7), got[4].SourceOffset)

	assert.Equal(t, "44", got[5].TxnID)
	assert.True(t, got[5].TxnEnd)
	assert.False(t, got[5].Marker)
}

func TestCustomMappingErrors(t *testing.T) {
	p, _ := newProc(t, customConf)
	out := run(t, p,
		customMsg(`not json`),
	)
	got := readAll(t, out)
	require.Len(t, got, 1, "a message without a usable offset cannot be placed")
	require.Error(t, got[0].Err)
	assert.Contains(t, got[0].Err.Error(), `field "source_offset"`)
	assert.Equal(t, "invalid", got[0].TxnID)
	assert.Equal(t, "not json", got[0].Body)
}

func TestCustomRowMustBeObject(t *testing.T) {
	p, _ := newProc(t, customConf)
	got := readAll(t, run(t, p,
		customMsg(`{"lsn":2,"tx":9,"op":"INSERT","tbl":"orders","row":[1,2]}`),
		customMsg(`{"lsn":3,"tx":9,"op":"WHAT","tbl":"orders","row":{}}`),
	))
	require.Len(t, got, 1, "an unknown op maps to skip in this config")
	require.Error(t, got[0].Err)
	assert.Contains(t, got[0].Err.Error(), `field "custom.row"`)
	assert.Contains(t, got[0].Err.Error(), `transaction "9"`)
	assert.Equal(t, "9", got[0].TxnID)
}

func TestCustomDefaults(t *testing.T) {
	p, _ := newProc(t, `
format: custom
partition: p
`)
	got := readAll(t, run(t, p,
		service.NewMessage([]byte(`{"kind":"data_end","txn_id":"x","database":"d","table":"t","row":{"a":1},"delete":true}`)),
		service.NewMessage([]byte(`{"kind":"nonsense","txn_id":"y"}`)),
	))
	require.Len(t, got, 2)
	assert.NoError(t, got[0].Err)
	assert.JSONEq(t, `{"a":1,"__op":1}`, got[0].Body)
	assert.True(t, got[0].TxnEnd)
	assert.Equal(t, "p", got[0].Partition)
	require.Error(t, got[1].Err)
	assert.Contains(t, got[1].Err.Error(), `field "custom.kind" gave unknown kind "nonsense"`)
}

// A mapping whose root is null (a field the event lacks) gives nothing: a
// row without its table is flagged, never loaded into a table named
// "null", and an event without its transaction id is flagged too.
func TestCustomNullIsMissing(t *testing.T) {
	p, _ := newProc(t, `
format: custom
partition: p
database: shop
`)
	got := readAll(t, run(t, p,
		service.NewMessage([]byte(`{"kind":"data_end","txn_id":"x","row":{"a":1}}`)),
		service.NewMessage([]byte(`{"kind":"data_end","table":"t","row":{"a":1}}`)),
		service.NewMessage([]byte(`{"kind":"data_end","txn_id":"y","table":"t"}`)),
	))
	require.Len(t, got, 3)
	require.Error(t, got[0].Err)
	assert.Contains(t, got[0].Err.Error(), `field "table" is missing or empty`)
	assert.NotEqual(t, "null", got[0].Table)
	require.Error(t, got[1].Err)
	assert.Contains(t, got[1].Err.Error(), `field "custom.txn_id" gave no transaction id`)
	require.Error(t, got[2].Err)
	assert.Contains(t, got[2].Err.Error(), `field "custom.row" is missing`)
}
