package schema

import (
	"github.com/stretchr/testify/require"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWidensFollowsStarRocksLosslessChanges(t *testing.T) {
	yes := [][2]Type{
		{Int, BigInt}, {TinyInt, LargeInt}, {SmallInt, Int}, {BigInt, LargeInt}, {Float, Double},
		{Varchar(10), Varchar(20)}, {Char(5), Char(9)}, {Char(5), Varchar(5)},
		{Decimal(10, 2), Decimal(18, 2)}, {Decimal(10, 2), Decimal(12, 4)}, {Date, DateTime},
	}
	no := [][2]Type{
		{BigInt, Int}, {Int, Int}, {Varchar(20), Varchar(10)}, {Double, Float},
		{Decimal(10, 2), Decimal(18, 1)}, // scale lost (the matrix's own example)
		{Decimal(10, 2), Decimal(11, 4)}, // an integer digit lost
		{Decimal(30, 2), Decimal(40, 2)}, // wider than StarRocks's DECIMAL
		{Int, Varchar(20)}, {Varchar(20), Int}, {Int, Decimal(20, 0)}, {DateTime, Date}, {Int, Double},
		{Char(9), Varchar(5)},
	}
	for _, c := range yes {
		assert.Truef(t, Widens(c[0], c[1]), "%s → %s", c[0], c[1])
	}
	for _, c := range no {
		assert.Falsef(t, Widens(c[0], c[1]), "%s → %s", c[0], c[1])
	}
}

func TestHoldsIsLenientOnlyWhereTheSourceDoesNotTell(t *testing.T) {
	holds := [][2]Type{
		{BigInt, Int}, {Int, Int}, {Int, Boolean}, {Varchar(100), Varchar(50)}, {Varchar(100), Varchar(0)},
		{String, BigInt}, {JSON, ArrayOf(Int)}, {Decimal(18, 2), Decimal(10, 2)}, {Decimal(12, 0), Int},
		{Double, Int}, {Double, Float}, {Double, Decimal(15, 4)}, {DateTime, Date}, {Int, String}, {Decimal(10, 2), String},
		{ArrayOf(BigInt), ArrayOf(Int)}, {Type{Kind: KindUnknown, Raw: "hll"}, Int},
	}
	not := [][2]Type{
		{Int, BigInt}, {Varchar(10), Varchar(50)}, {Decimal(10, 2), Decimal(10, 3)}, {Decimal(10, 0), BigInt},
		{Int, Double}, {Int, Decimal(10, 2)}, {Date, DateTime}, {Boolean, Int}, {Float, Int},
		{Double, BigInt}, {Double, LargeInt}, {Double, Decimal(16, 2)}, {Double, Type{Kind: KindDecimal, Scale: 2}},
		{ArrayOf(Int), ArrayOf(BigInt)}, {Varchar(10), ArrayOf(Int)},
	}
	for _, c := range holds {
		assert.Truef(t, Holds(c[0], c[1]), "column %s should hold %s", c[0], c[1])
	}
	for _, c := range not {
		assert.Falsef(t, Holds(c[0], c[1]), "column %s should not hold %s", c[0], c[1])
	}
}

func TestWidest(t *testing.T) {
	w, ok := Widest(Int, BigInt)
	assert.True(t, ok)
	assert.True(t, w.Equal(BigInt))
	w, ok = Widest(Decimal(10, 4), Decimal(12, 2))
	assert.True(t, ok)
	assert.Equal(t, "DECIMAL(14,4)", w.String())
	_, ok = Widest(Int, Varchar(3))
	assert.False(t, ok)
	_, ok = Widest(Decimal(38, 0), Decimal(38, 10))
	assert.False(t, ok)
}

// A length or a precision the source does not give is never a reason to
// change a column: an unknown length holds in any VARCHAR, an unknown
// precision in any DECIMAL of enough scale, and neither is widened to.
func TestUnknownLengthsAndPrecisionsChangeNothing(t *testing.T) {
	assert.True(t, Holds(Varchar(32), Text))
	assert.False(t, Widens(Varchar(32), Text))
	assert.True(t, Holds(Decimal(10, 2), Type{Kind: KindDecimal, Scale: 2}))
	assert.False(t, Holds(Decimal(10, 2), Type{Kind: KindDecimal, Scale: 3}))
	assert.False(t, Widens(Decimal(10, 2), Type{Kind: KindDecimal, Scale: 3}))
	assert.Equal(t, "DECIMAL(38,3)", Type{Kind: KindDecimal, Scale: 3}.String())
	assert.Equal(t, "VARCHAR(65533)", Text.String())
	d := Compare(&Table{Columns: []Column{{Name: "id", Type: Varchar(32)}, {Name: "p", Type: Decimal(10, 2)}}, Key: []string{"id"}},
		&Table{Columns: []Column{{Name: "id", Type: Text}, {Name: "p", Type: Type{Kind: KindDecimal, Scale: 2}}}, Key: []string{"id"}})
	assert.False(t, d.Changes())
	assert.Empty(t, d.Conflicts)
	b, err := Text.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `"VARCHAR"`, string(b))
	var back Type
	require.NoError(t, back.UnmarshalJSON(b))
	assert.True(t, back.Equal(Text), "an unknown length survives the JSON form")
}
