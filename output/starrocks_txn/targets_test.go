package starrocks_txn

import (
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// With database and table at their defaults the output takes the contract's
// values instead of running the interpolation per message: for every kind
// of value a processor can set (strings of every sort, numbers, booleans,
// structured values, empty, unset) the result is the interpolation's.
func TestDefaultTargetsEqualTheInterpolation(t *testing.T) {
	pc, err := parseTestYAML("load_urls: [ http://fake:8030 ]", nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	require.True(t, c.dbFromContract && c.tableFromContract, "the defaults read the contract")
	o := newOutput(c, nil, nil, service.MockResources())

	values := []any{"test", "shop_db", " padded ", "ünïcode", "a\"quote", "", int64(42), 3.5, true,
		map[string]any{"k": "v"}, []any{"x", 1}, nil}
	var batch service.MessageBatch
	for _, db := range values {
		for _, table := range values {
			m := service.NewMessage([]byte(`{"id":1}`))
			if db != nil {
				m.MetaSetMut(contract.KeyDatabase, db)
			}
			if table != nil {
				m.MetaSetMut(contract.KeyTable, table)
			}
			batch = append(batch, m)
		}
	}
	targets := batchTargets{db: batch.InterpolationExecutor(o.conf.database), table: batch.InterpolationExecutor(o.conf.table)}
	fast := 0
	for i, m := range batch {
		meta := contract.Parse(m).Meta
		db, table, dbErr, tableErr := o.target(targets, i, meta)
		wantDB, wantDBErr := targets.db.TryString(i)
		wantTable, wantTableErr := targets.table.TryString(i)
		assert.Equal(t, wantDB, db, "database of message %d (%v)", i, meta.Database)
		assert.Equal(t, wantTable, table, "table of message %d (%v)", i, meta.Table)
		assert.Equal(t, wantDBErr, dbErr)
		assert.Equal(t, wantTableErr, tableErr)
		if meta.Database != "" {
			fast++
		}
	}
	assert.Greater(t, fast, len(batch)/2, "most messages took the contract's values")

	// Any other expression is interpolated.
	pc, err = parseTestYAML("load_urls: [ http://fake:8030 ]\ndatabase: '${! @starrocks_database.uppercase() }'\ntable: '${! @starrocks_table }_x'", nil)
	require.NoError(t, err)
	c, err = configFromParsed(pc)
	require.NoError(t, err)
	assert.False(t, c.dbFromContract || c.tableFromContract)
}
