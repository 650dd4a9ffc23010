package schemasync

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// A field Coupon against a column coupon: evolve sends no DDL (StarRocks
// would refuse ADD COLUMN Coupon as a duplicate) and poisons with the field,
// the column and what to do.
func TestACaseOnlyMatchPoisonsNamingFieldColumnAndRemedy(t *testing.T) {
	meta := newFakeMeta()
	meta.set("shop", "orders", orders(schema.Column{Name: "coupon", Type: schema.Varchar(16), Nullable: true}))
	b := newBook(t, meta, Evolve)
	src := orders(schema.Column{Name: "Coupon", Type: schema.Varchar(16), Nullable: true}, schema.Column{Name: "points", Type: schema.Int, Nullable: true})
	v := b.Resolve(ctx, "shop", "orders", Ref{Typed: src})
	require.Error(t, v.Err)
	for _, s := range []string{"shop.orders", "the source field Coupon matches the column coupon only ignoring case", "rename Coupon to coupon at the source, or with a Bloblang mapping"} {
		assert.Contains(t, v.Err.Error(), s)
	}
	assert.Empty(t, meta.statements(), "no ADD COLUMN for Coupon, nor for the rows' other columns")
	assert.False(t, b.Known("shop", "orders", Ref{Typed: src}))

	same := orders(schema.Column{Name: "coupon", Type: schema.Varchar(16), Nullable: true})
	require.NoError(t, b.Resolve(ctx, "shop", "orders", Ref{Typed: same}).Err, "the field spelled as its column loads")
}

// Under ignore a field whose case differs is counted and warned about once,
// like a field the table lacks, and the rows load without it.
func TestIgnoreCountsACaseOnlyMatch(t *testing.T) {
	k := tableKey{"shop", "orders"}
	for _, ref := range []Ref{
		{Typed: orders(schema.Column{Name: "Coupon", Type: schema.Varchar(16), Nullable: true})},
		{Keys: 7, KeyNames: []string{"order_id", "status", "Coupon", "__op"}},
	} {
		meta := newFakeMeta()
		meta.set("shop", "orders", orders(schema.Column{Name: "coupon", Type: schema.Varchar(16), Nullable: true}))
		b := newBook(t, meta, Ignore)
		require.NoError(t, b.Resolve(ctx, "shop", "orders", ref).Err)
		assert.True(t, b.Known("shop", "orders", ref))
		assert.False(t, b.warnOnce(k, "cased", "Coupon"), "the field was warned about")
		assert.Empty(t, meta.statements())
	}
}

// An untyped row's keys: only an exact name fills a column; a key whose
// case differs poisons under error, naming the column.
func TestUntypedKeysMatchColumnsExactly(t *testing.T) {
	meta := newFakeMeta()
	meta.set("shop", "orders", orders(schema.Column{Name: "coupon", Type: schema.Varchar(16), Nullable: true}))
	b := newBook(t, meta, Error)
	require.NoError(t, b.Resolve(ctx, "shop", "orders", Ref{Keys: 1, KeyNames: []string{"order_id", "coupon", "__op"}}).Err)
	v := b.Resolve(ctx, "shop", "orders", Ref{Keys: 2, KeyNames: []string{"order_id", "Status", "__op"}})
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "the source field Status matches the column status only ignoring case")
}
