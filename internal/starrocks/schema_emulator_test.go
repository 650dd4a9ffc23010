package starrocks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The schema-change statements the output sends, and what it reads back,
// against the emulator's MySQL port.
func TestSchemaChangesAgainstTheEmulator(t *testing.T) {
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: "CREATE DATABASE shop;"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	m, err := starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	ctx := context.Background()

	_, found, err := m.Columns(ctx, "shop", "orders")
	require.NoError(t, err)
	assert.False(t, found, "no table yet")

	def := "0"
	src := &schema.Table{Columns: []schema.Column{
		{Name: "order_id", Type: schema.BigInt},
		{Name: "status", Type: schema.Varchar(40)},
		{Name: "amount", Type: schema.Decimal(18, 2), Default: &def},
	}, Key: []string{"order_id"}}
	create, err := schema.CreateTableSQL("shop", "orders", src, map[string]string{"replication_num": "1"})
	require.NoError(t, err)
	require.NoError(t, m.ExecDDL(ctx, "shop", create))
	require.NoError(t, m.ExecDDL(ctx, "shop", create), "IF NOT EXISTS")

	have, found, err := m.Columns(ctx, "shop", "orders")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, []string{"order_id"}, have.Key)
	require.Len(t, have.Columns, 3)
	assert.True(t, have.Columns[0].Type.Equal(schema.BigInt), have.Columns[0].Type.String())
	assert.False(t, have.Columns[0].Nullable)
	assert.True(t, have.Columns[2].Type.Equal(schema.Decimal(18, 2)), have.Columns[2].Type.String())
	assert.True(t, have.Columns[2].Nullable)
	assert.False(t, schema.Compare(have, src).Changes(), "the table created from the source needs no change")

	src.Columns = append(src.Columns, schema.Column{Name: "coupon", Type: schema.Varchar(16)})
	d := schema.Compare(have, src)
	require.Len(t, d.Add, 1)
	add, err := schema.AddColumnsSQL("shop", "orders", d.Add)
	require.NoError(t, err)
	require.NoError(t, m.ExecDDL(ctx, "shop", add))
	jobs, err := m.AlterJobs(ctx, "shop", "orders", 5)
	require.NoError(t, err)
	require.NotEmpty(t, jobs)
	assert.Equal(t, "orders", jobs[0].Table)
	assert.NotEmpty(t, jobs[0].ID)

	// A statement StarRocks refuses is a DDLError: it changed nothing.
	err = m.ExecDDL(ctx, "shop", add)
	var de *starrocks.DDLError
	require.ErrorAs(t, err, &de, "adding an existing column is refused")
	assert.NotZero(t, de.Number)

	v, err := m.Version(ctx)
	require.NoError(t, err)
	assert.Regexp(t, `^\d+\.\d+\.\d+$`, v)

	_, _, err = m.Columns(ctx, "shop", "or`ders")
	assert.ErrorContains(t, err, "refusing to put it into SQL")
}
