package schema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompare(t *testing.T) {
	zero := "0"
	have := &Table{Columns: []Column{
		{Name: "id", Type: Int}, {Name: "name", Type: Varchar(20), Nullable: true, Default: &zero, Comment: "who"},
		{Name: "qty", Type: Int, Nullable: true}, {Name: "note", Type: String, Nullable: true},
		{Name: "price", Type: Int, Nullable: true},
	}, Key: []string{"id"}}
	want := &Table{Columns: []Column{
		{Name: "ID", Type: Int}, {Name: "name", Type: Varchar(40)}, {Name: "qty", Type: BigInt},
		{Name: "price", Type: Decimal(10, 2)}, {Name: "coupon", Type: Varchar(16), Default: &zero},
	}, Key: []string{"id"}}
	d := Compare(have, want)
	require.Len(t, d.Add, 1)
	assert.Equal(t, "coupon", d.Add[0].Name)
	assert.True(t, d.Add[0].Nullable, "added columns are nullable")
	require.Len(t, d.Modify, 2)
	assert.Equal(t, "name", d.Modify[0].Column.Name)
	assert.Equal(t, "VARCHAR(40)", d.Modify[0].Column.Type.String())
	assert.Equal(t, "VARCHAR(20)", d.Modify[0].From.String())
	assert.Equal(t, &zero, d.Modify[0].Column.Default, "a MODIFY restates the column's own default")
	assert.Equal(t, "who", d.Modify[0].Column.Comment)
	assert.True(t, d.Modify[0].Column.Nullable)
	assert.Equal(t, "qty", d.Modify[1].Column.Name)
	require.Len(t, d.Conflicts, 1)
	assert.Equal(t, "price", d.Conflicts[0].Column)
	assert.Contains(t, d.Conflicts[0].Error(), "column price is INT in StarRocks and DECIMAL(10,2) at the source")
	assert.Equal(t, []string{"note"}, d.Dropped)
	assert.Equal(t, []CaseMismatch{{Field: "ID", Column: "id"}}, d.Cased, "a JSON key ID fills no column id")
	assert.True(t, d.Changes())

	same := Compare(have, &Table{Columns: []Column{{Name: "id", Type: Int}, {Name: "qty", Type: SmallInt}}})
	assert.False(t, same.Changes())
	assert.Empty(t, same.Conflicts)
}

func TestCompareKeyChangesAreConflicts(t *testing.T) {
	have := &Table{Columns: []Column{{Name: "id", Type: Int}, {Name: "k", Type: Varchar(10)}}, Key: []string{"id", "k"}}
	d := Compare(have, &Table{Columns: []Column{{Name: "id", Type: BigInt}, {Name: "k", Type: Varchar(20)}}, Key: []string{"id", "k"}})
	require.Len(t, d.Conflicts, 1, "a key column widens only to a longer VARCHAR")
	assert.Equal(t, "id", d.Conflicts[0].Column)
	assert.Contains(t, d.Conflicts[0].Reason, "primary-key column")
	require.Len(t, d.Modify, 1)
	assert.Equal(t, "k", d.Modify[0].Column.Name)

	d = Compare(have, &Table{Columns: []Column{{Name: "id", Type: Int}, {Name: "k", Type: Varchar(10)}}, Key: []string{"id"}})
	require.Len(t, d.Conflicts, 1)
	assert.True(t, strings.Contains(d.Conflicts[0].Reason, "cannot change a primary key"), d.Conflicts[0].Reason)
	assert.Equal(t, d.Conflicts[0].Reason, d.Conflicts[0].Error(), "a key conflict names no column type")

	d = Compare(have, &Table{Columns: []Column{{Name: "id", Type: Int}, {Name: "k", Type: Varchar(10)}}, Key: []string{"K", "id"}})
	assert.Empty(t, d.Conflicts, "the same key columns in another order (a key object's order) are the same key")
}

// A source field whose name matches a column's only ignoring case is not
// loaded (a JSON key fills the column of exactly its name) and cannot be
// added (DDL refuses the name as a duplicate): neither an addition nor a
// dropped column, but a mismatch that names both.
func TestCompareACaseOnlyMatchIsNeitherLoadedNorAdded(t *testing.T) {
	have := &Table{Columns: []Column{{Name: "id", Type: BigInt}, {Name: "coupon", Type: Varchar(8), Nullable: true}}, Key: []string{"id"}}
	d := Compare(have, &Table{Columns: []Column{{Name: "id", Type: BigInt}, {Name: "Coupon", Type: Varchar(8), Nullable: true}}, Key: []string{"id"}})
	assert.Empty(t, d.Add)
	assert.Empty(t, d.Dropped)
	assert.Empty(t, d.Conflicts)
	require.Equal(t, []CaseMismatch{{Field: "Coupon", Column: "coupon"}}, d.Cased)
	assert.Contains(t, d.Cased[0].Error(), "the source field Coupon matches the column coupon only ignoring case")

	c, ok := have.LoadsInto("coupon")
	assert.True(t, ok)
	assert.Equal(t, "coupon", c.Name)
	_, ok = have.LoadsInto("Coupon")
	assert.False(t, ok, "a JSON key Coupon fills no column coupon")
	_, ok = have.Column("Coupon")
	assert.True(t, ok, "but DDL takes Coupon for coupon")
}
