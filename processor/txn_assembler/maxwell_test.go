package txnassembler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The two rows of docs/notes/kafka-cdc.md §4 (Maxwell), verbatim.
const (
	maxwellRow1 = `{"database":"shop","table":"orders","type":"insert","ts":1477053217,"xid":23396,"xoffset":0,"position":"master.000006:800911","data":{"id":1,"customer_id":42}}`
	maxwellRow2 = `{"database":"shop","table":"order_items","type":"insert","ts":1477053217,"xid":23396,"commit":true,"position":"master.000006:801203","data":{"id":7,"order_id":1}}`
)

func TestMaxwellTransaction(t *testing.T) {
	p, _ := newProc(t, `format: maxwell`)
	out := run(t, p,
		kafkaMsg("maxwell", 0, 40, maxwellRow1),
		kafkaMsg("maxwell", 0, 41, maxwellRow2),
	)
	got := readAll(t, out)
	require.Len(t, got, 2)

	assert.Equal(t, "maxwell/0", got[0].Partition)
	assert.Equal(t, "23396", got[0].TxnID)
	assert.Equal(t, "shop", got[0].Database)
	assert.Equal(t, "orders", got[0].Table)
	assert.JSONEq(t, `{"id":1,"customer_id":42,"__op":0}`, got[0].Body)
	assert.False(t, got[0].TxnEnd)

	assert.Equal(t, "23396", got[1].TxnID)
	assert.Equal(t, "order_items", got[1].Table)
	assert.JSONEq(t, `{"id":7,"order_id":1,"__op":0}`, got[1].Body)
	assert.True(t, got[1].TxnEnd, "the commit:true row ends the transaction itself")
	assert.False(t, got[1].Marker, "no marker is needed when the END is a row")
	assert.Equal(t, int64(41), got[1].SourceOffset)
	for _, g := range got {
		assert.NoError(t, g.Err)
	}
}

func TestMaxwellRowTypes(t *testing.T) {
	p, _ := newProc(t, `format: maxwell`)
	out := run(t, p,
		kafkaMsg("mw", 1, 1, `{"database":"shop","table":"orders","type":"update","xid":7,"data":{"id":1,"status":"paid"},"old":{"status":"new"}}`),
		kafkaMsg("mw", 1, 2, `{"database":"shop","table":"orders","type":"delete","xid":7,"commit":true,"data":{"id":2,"status":"gone"}}`),
		// DDL that changes no table and bootstrap bookkeeping carry no row
		// and are dropped (table-create and table-alter are schema
		// changes: maxwell_ddl_test.go).
		kafkaMsg("mw", 1, 3, `{"type":"table-drop","database":"shop","table":"x","sql":"DROP TABLE x"}`),
		kafkaMsg("mw", 1, 4, `{"type":"database-create","database":"new_db","sql":"CREATE DATABASE new_db"}`),
		kafkaMsg("mw", 1, 5, `{"type":"database-drop","database":"old_db","sql":"DROP DATABASE old_db"}`),
		kafkaMsg("mw", 1, 6, `{"database":"shop","table":"orders","type":"bootstrap-start","ts":1,"data":{}}`),
		kafkaMsg("mw", 1, 7, `{"database":"shop","table":"orders","type":"bootstrap-insert","ts":1,"data":{"id":10}}`),
		kafkaMsg("mw", 1, 8, `{"database":"shop","table":"orders","type":"bootstrap-insert","ts":1,"data":{"id":11}}`),
		kafkaMsg("mw", 1, 9, `{"database":"shop","table":"orders","type":"bootstrap-complete","ts":1,"data":{}}`),
	)
	got := readAll(t, out)
	require.Len(t, got, 4)
	assert.JSONEq(t, `{"id":1,"status":"paid","__op":0}`, got[0].Body, "an update loads data as an upsert")
	assert.JSONEq(t, `{"id":2,"status":"gone","__op":1}`, got[1].Body, "a delete loads data as a delete")
	assert.True(t, got[1].TxnEnd)

	// Each bootstrap row is its own one-row transaction.
	assert.Equal(t, "bootstrap@7", got[2].TxnID)
	assert.True(t, got[2].TxnEnd)
	assert.JSONEq(t, `{"id":10,"__op":0}`, got[2].Body)
	assert.Equal(t, "bootstrap@8", got[3].TxnID)
	assert.True(t, got[3].TxnEnd)
	for _, g := range got {
		assert.NoError(t, g.Err)
	}
	assert.Equal(t, []int64{1, 2, 3, 4}, []int64{got[0].Seq, got[1].Seq, got[2].Seq, got[3].Seq}, "dropped events take no seq")
}

func TestMaxwellBadInput(t *testing.T) {
	p, _ := newProc(t, `format: maxwell`)
	out := run(t, p,
		kafkaMsg("mw", 0, 1, `{"database":"shop","table":"orders","type":"insert","data":{"id":1}}`),
		kafkaMsg("mw", 0, 2, `{"database":"shop","table":"orders","type":"upsert-ish","xid":5,"data":{"id":1}}`),
		kafkaMsg("mw", 0, 3, `{"database":"shop","type":"insert","xid":6,"data":{"id":1}}`),
		kafkaMsg("mw", 0, 4, `{"database":"shop","table":"orders","type":"insert","xid":6,"commit":"yes","data":{"id":2}}`),
	)
	got := readAll(t, out)
	require.Len(t, got, 4)

	require.Error(t, got[0].Err)
	assert.Contains(t, got[0].Err.Error(), `field "xid"`)
	assert.Contains(t, got[0].Err.Error(), "output_commit_info")
	assert.Contains(t, got[0].Err.Error(), `partition "mw/0"`)
	assert.Equal(t, "invalid@1", got[0].TxnID, "an unattributable message is its own transaction")
	assert.True(t, got[0].TxnEnd)
	assert.Equal(t, `{"database":"shop","table":"orders","type":"insert","data":{"id":1}}`, got[0].Body, "the original body is kept for the dead letter")

	require.Error(t, got[1].Err)
	assert.Contains(t, got[1].Err.Error(), `unknown maxwell type "upsert-ish"`)
	assert.Equal(t, "5", got[1].TxnID)
	assert.True(t, got[1].TxnEnd)

	require.Error(t, got[2].Err)
	assert.Contains(t, got[2].Err.Error(), `field "table"`)
	assert.Contains(t, got[2].Err.Error(), `transaction "6"`)
	assert.Equal(t, "6", got[2].TxnID)
	assert.False(t, got[2].TxnEnd, "a bad row still opens its transaction")

	require.Error(t, got[3].Err)
	assert.Contains(t, got[3].Err.Error(), `field "commit"`)
	assert.Equal(t, "6", got[3].TxnID, "attributed to the open transaction")
}
