package schema

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTypeReadsWhatStarRocksPrints(t *testing.T) {
	cases := map[string]Type{
		"int(11)":                  Int,
		"INT":                      Int,
		"bigint(20)":               BigInt,
		"largeint(40)":             LargeInt,
		"tinyint(4)":               TinyInt,
		"smallint(6)":              SmallInt,
		"boolean":                  Boolean,
		"float":                    Float,
		"double":                   Double,
		"varchar(65533)":           Varchar(65533),
		"STRING":                   String,
		"char(10)":                 Char(10),
		"CHAR":                     Char(1),
		"decimal(18,2)":            Decimal(18, 2),
		"decimal64(18, 2)":         Decimal(18, 2),
		"DECIMAL":                  Decimal(10, 0),
		"date":                     Date,
		"datetime":                 DateTime,
		"json":                     JSON,
		"array<int(11)>":           ArrayOf(Int),
		"ARRAY<ARRAY<VARCHAR(8)>>": ArrayOf(ArrayOf(Varchar(8))),
	}
	for in, want := range cases {
		got, err := ParseType(in)
		require.NoError(t, err, in)
		assert.Truef(t, got.Equal(want), "%s: got %s, want %s", in, got, want)
	}
	m, err := ParseType("map<varchar(65533),int(11)>")
	require.NoError(t, err)
	assert.Equal(t, "MAP<VARCHAR(65533),INT>", m.String())
	s, err := ParseType("struct<a int(11), b varchar(10)>")
	require.NoError(t, err)
	assert.Equal(t, KindStruct, s.Kind)
	assert.Equal(t, "struct<a int(11), b varchar(10)>", s.String())
	u, err := ParseType("hll")
	require.NoError(t, err)
	assert.Equal(t, KindUnknown, u.Kind)
	assert.Equal(t, "hll", u.String())
	for _, bad := range []string{"", "varchar(", "decimal(a)", "array<int", "int(11) unsigned", "map<int>"} {
		_, err := ParseType(bad)
		assert.Error(t, err, bad)
	}
}

func TestTypeRendersAsDDL(t *testing.T) {
	for want, ty := range map[string]Type{
		"VARCHAR(255)": Varchar(255), "VARCHAR(65533)": String, "DECIMAL(18,2)": Decimal(18, 2),
		"ARRAY<BIGINT>": ArrayOf(BigInt), "DATETIME": DateTime, "CHAR(3)": Char(3), "LARGEINT": LargeInt,
	} {
		assert.Equal(t, want, ty.String())
		back, err := ParseType(ty.String())
		require.NoError(t, err)
		assert.True(t, back.Equal(ty), want)
	}
}

func TestColumnJSONCarriesTheTypeAsText(t *testing.T) {
	def := "0"
	tbl := Table{Columns: []Column{{Name: "id", Type: BigInt}, {Name: "amount", Type: Decimal(12, 2), Nullable: true, Default: &def}}, Key: []string{"id"}}
	b, err := json.Marshal(tbl)
	require.NoError(t, err)
	assert.JSONEq(t, `{"columns":[{"name":"id","type":"BIGINT","nullable":false},{"name":"amount","type":"DECIMAL(12,2)","nullable":true,"default":"0"}],"primary_key":["id"]}`, string(b))
	var back Table
	require.NoError(t, json.Unmarshal(b, &back))
	assert.True(t, back.Columns[1].Type.Equal(Decimal(12, 2)))
	assert.Equal(t, "0", *back.Columns[1].Default)
	assert.Error(t, json.Unmarshal([]byte(`{"columns":[{"name":"x","type":7}]}`), &back))
	assert.Error(t, json.Unmarshal([]byte(`{"columns":[{"name":"x","type":"varchar("}]}`), &back))
}
