package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestReviewDoubleDoesNotHoldEveryBigintOrDecimal: Holds promises "stores
// every value of a source column of type src without loss". A DOUBLE has a
// 53-bit mantissa: 9007199254740993 (2^53+1), a BIGINT, is stored as
// 9007199254740992, and DECIMAL(38, 10) values lose digits. So a source
// column retyped from DOUBLE to BIGINT or DECIMAL (MySQL MODIFY COLUMN) is
// loaded into the existing DOUBLE column with no change, no conflict and no
// warning, and its values are silently rounded. Compare should report a
// conflict (StarRocks cannot widen DOUBLE to BIGINT; the operator decides).
func TestReviewDoubleDoesNotHoldEveryBigintOrDecimal(t *testing.T) {
	assert.Equal(t, float64(1<<53), float64(int64(1<<53)+1), "the premise: 2^53+1 does not survive a DOUBLE")
	assert.False(t, Holds(Double, BigInt), "DOUBLE loses BIGINT values above 2^53")
	assert.False(t, Holds(Double, LargeInt), "DOUBLE loses LARGEINT values")
	assert.False(t, Holds(Double, Decimal(38, 10)), "DOUBLE loses DECIMAL(38, 10) digits")
	assert.False(t, Holds(Float, Int), "FLOAT (24-bit mantissa) loses INT values above 2^24")

	have := &Table{Columns: []Column{{Name: "id", Type: BigInt}, {Name: "amount", Type: Double, Nullable: true}}, Key: []string{"id"}}
	want := &Table{Columns: []Column{{Name: "id", Type: BigInt}, {Name: "amount", Type: BigInt, Nullable: true}}, Key: []string{"id"}}
	d := Compare(have, want)
	assert.Len(t, d.Conflicts, 1, "a DOUBLE column cannot take the source's BIGINT without rounding: %+v", d)
}
