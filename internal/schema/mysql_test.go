package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFromMySQL(t *testing.T) {
	cases := []struct {
		in   MySQLColumn
		want string
	}{
		{MySQLColumn{Type: "int"}, "INT"},
		{MySQLColumn{Type: "INT", Unsigned: true}, "BIGINT"},
		{MySQLColumn{Type: "bigint", Unsigned: true}, "LARGEINT"},
		{MySQLColumn{Type: "tinyint", Unsigned: true}, "SMALLINT"},
		{MySQLColumn{Type: "mediumint"}, "INT"},
		{MySQLColumn{Type: "bit", Args: []int{1}}, "BOOLEAN"},
		{MySQLColumn{Type: "bit", Args: []int{8}}, "BIGINT"},
		{MySQLColumn{Type: "varchar", Args: []int{255}}, "VARCHAR(1020)"},
		{MySQLColumn{Type: "varchar"}, "VARCHAR(65533)"},
		{MySQLColumn{Type: "char", Args: []int{2}}, "VARCHAR(8)"},
		{MySQLColumn{Type: "decimal", Args: []int{10, 2}}, "DECIMAL(10,2)"},
		{MySQLColumn{Type: "decimal", Args: []int{10}}, "DECIMAL(10,0)"},
		{MySQLColumn{Type: "decimal", Args: []int{65, 30}}, "VARCHAR(67)"},
		{MySQLColumn{Type: "datetime"}, "DATETIME"},
		{MySQLColumn{Type: "timestamp"}, "DATETIME"},
		{MySQLColumn{Type: "time"}, "VARCHAR(32)"},
		{MySQLColumn{Type: "json"}, "JSON"},
		{MySQLColumn{Type: "text"}, "VARCHAR(65535)"},
		{MySQLColumn{Type: "longtext"}, "VARCHAR(1048576)"},
		{MySQLColumn{Type: "varbinary", Args: []int{16}}, "VARCHAR(24)"},
		{MySQLColumn{Type: "enum", Values: []string{"a", "long"}}, "VARCHAR(16)"},
		{MySQLColumn{Type: "set", Values: []string{"a", "bc"}}, "VARCHAR(20)"},
		{MySQLColumn{Type: "double"}, "DOUBLE"},
		{MySQLColumn{Type: "year"}, "SMALLINT"},
	}
	for _, c := range cases {
		got, err := FromMySQL(c.in)
		require.NoError(t, err, c.in.Type)
		assert.Equal(t, c.want, got.String(), "%+v", c.in)
	}
	_, err := FromMySQL(MySQLColumn{Type: "decimal"})
	assert.ErrorContains(t, err, "without its precision")
	_, err = FromMySQL(MySQLColumn{Type: "geometry"})
	assert.ErrorContains(t, err, "GEOMETRY")
}
