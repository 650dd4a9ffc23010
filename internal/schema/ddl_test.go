package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCreateTableSQL(t *testing.T) {
	def := `it's "x"`
	tbl := &Table{Columns: []Column{
		{Name: "name", Type: Varchar(80), Default: &def},
		{Name: "order_id", Type: BigInt},
		{Name: "line", Type: Int},
		{Name: "amount", Type: Decimal(18, 2), Comment: `a\b`},
	}, Key: []string{"order_id", "line"}}
	sql, err := CreateTableSQL("shop", "order_items", tbl, map[string]string{"replication_num": "1", "fast_schema_evolution": "true"})
	require.NoError(t, err)
	assert.Equal(t, "CREATE TABLE IF NOT EXISTS `shop`.`order_items` (\n"+
		"  `order_id` BIGINT NOT NULL,\n"+
		"  `line` INT NOT NULL,\n"+
		"  `name` VARCHAR(80) NULL DEFAULT \"it's \\\"x\\\"\",\n"+
		"  `amount` DECIMAL(18,2) NULL COMMENT \"a\\\\b\"\n"+
		") ENGINE=OLAP\nPRIMARY KEY(`order_id`, `line`)\nDISTRIBUTED BY HASH(`order_id`, `line`)\n"+
		"PROPERTIES (\"fast_schema_evolution\" = \"true\", \"replication_num\" = \"1\")", sql)

	_, err = CreateTableSQL("shop", "t", &Table{Columns: []Column{{Name: "a", Type: Int}}}, nil)
	assert.ErrorContains(t, err, "no primary key")
	_, err = CreateTableSQL("shop", "t", &Table{Columns: []Column{{Name: "a`b", Type: Int}}, Key: []string{"a`b"}}, nil)
	assert.ErrorContains(t, err, "backquote")
	_, err = CreateTableSQL("sh`op", "t", &Table{Columns: []Column{{Name: "a", Type: Int}}, Key: []string{"a"}}, nil)
	assert.ErrorContains(t, err, "backquote")
	_, err = CreateTableSQL("shop", "t", &Table{Columns: []Column{{Name: "a", Type: Int}}, Key: []string{"b"}}, nil)
	assert.ErrorContains(t, err, `names "b"`)
	_, err = CreateTableSQL("shop", "t", &Table{Columns: []Column{{Name: "a", Type: Int}, {Name: "A", Type: Int}}, Key: []string{"a"}}, nil)
	assert.ErrorContains(t, err, "listed twice")
	_, err = CreateTableSQL("shop", "t", &Table{Columns: []Column{{Name: "a", Type: Int}, {Name: "h", Type: Type{Kind: KindUnknown, Raw: "hll"}}}, Key: []string{"a"}}, nil)
	assert.ErrorContains(t, err, `"hll"`)
}

func TestAlterSQL(t *testing.T) {
	zero := "0"
	sql, err := AddColumnsSQL("shop", "orders", []Column{{Name: "coupon", Type: Varchar(64)}, {Name: "n", Type: Int, Default: &zero}})
	require.NoError(t, err)
	assert.Equal(t, "ALTER TABLE `shop`.`orders` ADD COLUMN (`coupon` VARCHAR(64) NULL, `n` INT NULL DEFAULT \"0\")", sql)
	_, err = AddColumnsSQL("shop", "orders", nil)
	assert.Error(t, err)

	sql, err = ModifyColumnSQL("shop", "orders", Column{Name: "qty", Type: BigInt, Nullable: true, Default: &zero})
	require.NoError(t, err)
	assert.Equal(t, "ALTER TABLE `shop`.`orders` MODIFY COLUMN `qty` BIGINT NULL DEFAULT \"0\"", sql)
	sql, err = ModifyColumnSQL("shop", "orders", Column{Name: "id", Type: Varchar(40)})
	require.NoError(t, err)
	assert.Equal(t, "ALTER TABLE `shop`.`orders` MODIFY COLUMN `id` VARCHAR(40) NOT NULL", sql)

	sql, err = CreateDatabaseSQL("shop")
	require.NoError(t, err)
	assert.Equal(t, "CREATE DATABASE IF NOT EXISTS `shop`", sql)
}

func TestCreateTableGivesAKeyOfUnknownLengthABoundedOne(t *testing.T) {
	sql, err := CreateTableSQL("d", "t", &Table{Columns: []Column{{Name: "k", Type: Text}, {Name: "v", Type: Text}}, Key: []string{"k"}}, nil)
	require.NoError(t, err)
	assert.Contains(t, sql, "`k` VARCHAR(255) NOT NULL")
	assert.Contains(t, sql, "`v` VARCHAR(65533) NULL")
}
