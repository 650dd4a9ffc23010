package schemasync

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

func newBook(t *testing.T, meta Meta, mode Mode) *Book {
	t.Helper()
	return New(meta, Config{Mode: mode, PollMin: time.Millisecond, PollMax: 2 * time.Millisecond,
		CreateProperties: map[string]string{"replication_num": "1"}})
}

func orders(extra ...schema.Column) *schema.Table {
	return &schema.Table{Columns: append([]schema.Column{
		{Name: "order_id", Type: schema.BigInt}, {Name: "status", Type: schema.Varchar(40), Nullable: true},
	}, extra...), Key: []string{"order_id"}}
}

var ctx = context.Background()

func TestEvolveCreatesAMissingTableFromATypedRow(t *testing.T) {
	meta := newFakeMeta()
	b := newBook(t, meta, Evolve)
	src := orders()
	assert.False(t, b.Known("shop", "orders", Ref{Typed: src}))
	v := b.Resolve(ctx, "shop", "orders", Ref{Typed: src})
	require.NoError(t, v.Err)
	assert.False(t, v.ReadyAt.IsZero(), "a change was made: the rows go into a transaction begun after it")
	require.Len(t, meta.statements(), 1)
	assert.Contains(t, meta.statements()[0], "CREATE TABLE IF NOT EXISTS `shop`.`orders`")
	assert.Contains(t, meta.statements()[0], `"replication_num" = "1"`)
	assert.True(t, b.Known("shop", "orders", Ref{Typed: src}), "checked once, then known")

	v = b.Resolve(ctx, "shop", "orders", Ref{Typed: src})
	require.NoError(t, v.Err)
	assert.True(t, v.ReadyAt.IsZero())
	assert.Len(t, meta.statements(), 1, "nothing applied twice")
}

func TestEvolveAddsColumnsAndWaitsForTheJob(t *testing.T) {
	meta := newFakeMeta()
	meta.set("shop", "orders", orders())
	meta.steps = 3
	b := newBook(t, meta, Evolve)
	zero := "0"
	src := orders(schema.Column{Name: "coupon", Type: schema.Varchar(16)}, schema.Column{Name: "points", Type: schema.Int, Default: &zero})
	v := b.Resolve(ctx, "shop", "orders", Ref{Typed: src})
	require.NoError(t, v.Err)
	require.Len(t, meta.statements(), 1, "one ALTER for every new column")
	assert.Equal(t, "ALTER TABLE `shop`.`orders` ADD COLUMN (`coupon` VARCHAR(16) NULL, `points` INT NULL DEFAULT \"0\")", meta.statements()[0])
	have, _, _ := meta.Columns(ctx, "shop", "orders")
	_, ok := have.Column("coupon")
	assert.True(t, ok, "Resolve returned only once the job finished and the column showed")
	assert.False(t, v.ReadyAt.IsZero())
}

func TestEvolveWidensAndRefusesWhatItCannot(t *testing.T) {
	meta := newFakeMeta()
	meta.set("shop", "orders", &schema.Table{Columns: []schema.Column{
		{Name: "order_id", Type: schema.Int}, {Name: "qty", Type: schema.Int, Nullable: true}, {Name: "price", Type: schema.Int, Nullable: true},
	}, Key: []string{"order_id"}})
	b := newBook(t, meta, Evolve)
	v := b.Resolve(ctx, "shop", "orders", Ref{Typed: &schema.Table{Columns: []schema.Column{
		{Name: "order_id", Type: schema.Int}, {Name: "qty", Type: schema.BigInt},
	}, Key: []string{"order_id"}}})
	require.NoError(t, v.Err)
	assert.Equal(t, []string{"ALTER TABLE `shop`.`orders` MODIFY COLUMN `qty` BIGINT NULL"}, meta.statements())

	v = b.Resolve(ctx, "shop", "orders", Ref{Typed: &schema.Table{Columns: []schema.Column{
		{Name: "order_id", Type: schema.Int}, {Name: "price", Type: schema.Decimal(10, 2)},
	}, Key: []string{"order_id"}}})
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "column price is INT in StarRocks and DECIMAL(10,2) at the source")
	assert.Contains(t, v.Err.Error(), "change the table yourself")
	assert.Len(t, meta.statements(), 1, "nothing sent for a conflict")

	v = b.Resolve(ctx, "shop", "orders", Ref{Typed: &schema.Table{Columns: []schema.Column{{Name: "order_id", Type: schema.BigInt}}, Key: []string{"order_id"}}})
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "primary-key column")
}

func TestEvolveRefusesToCreateATableWithoutKey(t *testing.T) {
	b := newBook(t, newFakeMeta(), Evolve)
	v := b.Resolve(ctx, "shop", "logs", Ref{Typed: &schema.Table{Columns: []schema.Column{{Name: "line", Type: schema.String}}}})
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "no primary key")
	assert.Contains(t, v.Err.Error(), "create it yourself")
}

func TestUntypedRows(t *testing.T) {
	var h schema.KeysHash
	for _, k := range []string{"order_id", "status", "coupon"} {
		h.AddString(k)
	}
	ref := Ref{Keys: h.Sum(), KeyNames: []string{"order_id", "status", "coupon", "__op"}}
	for _, c := range []struct {
		mode Mode
		want string
	}{
		{Evolve, "the source gives no types"},
		{Error, "has no column coupon (schema_evolution: error)"},
	} {
		meta := newFakeMeta()
		meta.set("shop", "orders", orders())
		b := newBook(t, meta, c.mode)
		v := b.Resolve(ctx, "shop", "orders", ref)
		require.Error(t, v.Err, c.mode)
		assert.Contains(t, v.Err.Error(), c.want)
		assert.False(t, b.Known("shop", "orders", ref), "a refused schema is asked again: it heals once the table has the column")
		meta.set("shop", "orders", orders(schema.Column{Name: "coupon", Type: schema.String, Nullable: true}))
		v = b.Resolve(ctx, "shop", "orders", ref)
		require.NoError(t, v.Err, "after an operator added the column")
		assert.True(t, b.Known("shop", "orders", ref))
		assert.Empty(t, meta.statements())
	}

	meta := newFakeMeta()
	meta.set("shop", "orders", orders())
	b := newBook(t, meta, Ignore)
	v := b.Resolve(ctx, "shop", "orders", ref)
	require.NoError(t, v.Err, "ignore loads as it is")
	assert.True(t, b.Known("shop", "orders", ref))
	assert.True(t, b.warnOnce(tableKey{"shop", "orders"}, "other", "x"))
	assert.False(t, b.warnOnce(tableKey{"shop", "orders"}, "ignored", "coupon"), "the ignored field was warned about once")
}

func TestErrorModeMissingTable(t *testing.T) {
	b := newBook(t, newFakeMeta(), Error)
	v := b.Resolve(ctx, "shop", "orders", Ref{Typed: orders()})
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "table shop.orders does not exist (schema_evolution: error)")
}

func TestACancelledJobPoisonsWithStarRocksReason(t *testing.T) {
	meta := newFakeMeta()
	meta.set("shop", "orders", orders())
	meta.steps = 2
	meta.cancel = "Timeout"
	b := newBook(t, meta, Evolve)
	v := b.Resolve(ctx, "shop", "orders", Ref{Typed: orders(schema.Column{Name: "coupon", Type: schema.Varchar(16)})})
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "StarRocks cancelled the schema change of shop.orders")
	assert.Contains(t, v.Err.Error(), "Timeout")
}

func TestARefusedChangeIsReadAgainBeforeItPoisons(t *testing.T) {
	meta := newFakeMeta()
	meta.set("shop", "orders", orders())
	meta.refuse["coupon"] = "Access denied; you need (at least one of) the ALTER privilege(s)"
	b := newBook(t, meta, Evolve)
	v := b.Resolve(ctx, "shop", "orders", Ref{Typed: orders(schema.Column{Name: "coupon", Type: schema.Varchar(16)})})
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "ALTER privilege")
	assert.Len(t, meta.statements(), 1, "a refusal is not sent again")
}

func TestALostReplyIsSettledByReadingTheTable(t *testing.T) {
	meta := newFakeMeta()
	meta.set("shop", "orders", orders())
	meta.lostReply = true
	b := newBook(t, meta, Evolve)
	v := b.Resolve(ctx, "shop", "orders", Ref{Typed: orders(schema.Column{Name: "coupon", Type: schema.Varchar(16)})})
	require.NoError(t, v.Err)
	assert.Len(t, meta.statements(), 1, "the ALTER took effect: it is found applied, not sent again")
}

func TestAJobRunningBeforeIsWaitedFor(t *testing.T) {
	meta := newFakeMeta()
	meta.set("shop", "orders", orders())
	meta.steps = 3
	// An ALTER from before a restart, still running.
	require.NoError(t, meta.ExecDDL(ctx, "shop", "ALTER TABLE `shop`.`orders` ADD COLUMN (`coupon` VARCHAR(16) NULL)"))
	b := newBook(t, meta, Evolve)
	v := b.Resolve(ctx, "shop", "orders", Ref{Typed: orders(schema.Column{Name: "coupon", Type: schema.Varchar(16)})})
	require.NoError(t, v.Err)
	assert.Len(t, meta.statements(), 1, "the running change was waited for, not repeated")
}

func TestAReadFailureIsAnErrorToRetry(t *testing.T) {
	meta := newFakeMeta()
	meta.failColumns = 1
	b := newBook(t, meta, Evolve)
	v := b.Resolve(ctx, "shop", "orders", Ref{Typed: orders()})
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "reading the columns of shop.orders")
	v = b.Resolve(ctx, "shop", "orders", Ref{Typed: orders()})
	require.NoError(t, v.Err)
}

func TestResolveEndsWithItsContext(t *testing.T) {
	meta := newFakeMeta()
	meta.set("shop", "orders", orders())
	meta.steps = 1 << 30
	b := newBook(t, meta, Evolve)
	c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	v := b.Resolve(c, "shop", "orders", Ref{Typed: orders(schema.Column{Name: "coupon", Type: schema.Varchar(16)})})
	require.ErrorIs(t, v.Err, context.DeadlineExceeded)
}

func TestExplicitChanges(t *testing.T) {
	meta := newFakeMeta()
	b := newBook(t, meta, Evolve)
	def := orders(schema.Column{Name: "coupon", Type: schema.Varchar(16)})
	v := b.Resolve(ctx, "shop", "orders", Ref{Change: def})
	require.NoError(t, v.Err)
	assert.True(t, b.Known("shop", "orders", Ref{Change: def}))
	assert.False(t, b.Known("shop", "orders", Ref{Typed: def}), "identities are per kind")
	b.Invalidate("shop", "orders")
	assert.False(t, b.Known("shop", "orders", Ref{Change: def}), "Invalidate forgets")
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{Evolve, Error, Ignore} {
		got, err := ParseMode(m.String())
		require.NoError(t, err)
		assert.Equal(t, m, got)
	}
	_, err := ParseMode("lenient")
	assert.ErrorContains(t, err, "expected evolve, error or ignore")
}

// Error mode refuses a source type the column cannot hold, as it refuses a
// column the table lacks: loading would round or cut the values.
func TestErrorModeRefusesATypeTheColumnCannotHold(t *testing.T) {
	meta := newFakeMeta()
	meta.set("shop", "orders", &schema.Table{Columns: []schema.Column{
		{Name: "order_id", Type: schema.Int}, {Name: "amount", Type: schema.Double, Nullable: true},
	}, Key: []string{"order_id"}})
	b := newBook(t, meta, Error)
	v := b.Resolve(ctx, "shop", "orders", Ref{Typed: &schema.Table{Columns: []schema.Column{
		{Name: "order_id", Type: schema.Int}, {Name: "amount", Type: schema.BigInt, Nullable: true},
	}, Key: []string{"order_id"}}})
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "amount")
	assert.Contains(t, v.Err.Error(), "schema_evolution: error")
	assert.Empty(t, meta.statements(), "error mode sends nothing")
}
