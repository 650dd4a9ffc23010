package txnassembler

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// col is a sqlColumn to compare with: what a statement says of a column.
func col(name, typ string, args ...int) sqlColumn {
	c := sqlColumn{name: name, typ: typ}
	if args != nil {
		c.args = args
	}
	return c
}

func strp(s string) *string { return &s }

func TestParseDDLCreateTable(t *testing.T) {
	stmt, err := parseDDL("CREATE TABLE IF NOT EXISTS `shop`.`orders` (\n" +
		"  `id` int(10) unsigned NOT NULL AUTO_INCREMENT COMMENT 'the key',\n" +
		"  status VARCHAR(32) NOT NULL DEFAULT 'new, (not yet) ''paid''',\n" +
		"  `total` decimal(12,2) unsigned DEFAULT '0.00', -- a comment, with (parens\n" +
		"  kind enum('a','b,c') CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,\n" +
		"  created datetime(6) DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), # another\n" +
		"  `we``ird` double precision DEFAULT -1.5,\n" +
		"  name character varying(20), nat national char(3), z int(4) zerofill,\n" +
		"  period int DEFAULT 0, flag tinyint(1) DEFAULT TRUE, blob1 blob,\n" +
		"  lv long varchar, bits bit, price decimal, g int GENERATED ALWAYS AS (id + 1) STORED,\n" +
		"  /* a block comment, with ) */ c1 char DEFAULT _utf8mb4'x' CHECK (c1 <> 'y'),\n" +
		"  PRIMARY KEY (`id`), KEY `idx_status` (status, `total`), UNIQUE KEY u (name),\n" +
		"  CONSTRAINT fk FOREIGN KEY (z) REFERENCES other (id) ON DELETE CASCADE, CHECK (total > 0)\n" +
		") ENGINE=InnoDB /*!50100 DEFAULT CHARSET=utf8mb4 */ COMMENT='orders, all of them'")
	require.NoError(t, err)
	assert.Equal(t, "create", stmt.verb)
	want := map[string]sqlColumn{}
	add := func(c sqlColumn, f func(*sqlColumn)) {
		if f != nil {
			f(&c)
		}
		want[strings.ToLower(c.name)] = c
	}
	add(col("id", "int", 10), func(c *sqlColumn) { c.unsigned, c.notNull, c.comment = true, true, "the key" })
	add(col("status", "varchar", 32), func(c *sqlColumn) { c.notNull, c.def = true, strp("new, (not yet) 'paid'") })
	add(col("total", "decimal", 12, 2), func(c *sqlColumn) { c.unsigned, c.def = true, strp("0.00") })
	add(col("kind", "enum"), func(c *sqlColumn) { c.args, c.values = []int{}, []string{"a", "b,c"} })
	add(col("created", "datetime", 6), nil)
	add(col("we`ird", "double"), func(c *sqlColumn) { c.def = strp("-1.5") })
	add(col("name", "varchar", 20), nil)
	add(col("nat", "char", 3), nil)
	add(col("z", "int", 4), func(c *sqlColumn) { c.unsigned = true })
	add(col("period", "int"), func(c *sqlColumn) { c.def = strp("0") })
	add(col("flag", "tinyint", 1), func(c *sqlColumn) { c.def = strp("1") })
	add(col("blob1", "blob"), nil)
	add(col("lv", "mediumtext"), nil)
	add(col("bits", "bit"), nil)
	add(col("price", "decimal"), nil)
	add(col("g", "int"), nil)
	add(col("c1", "char"), func(c *sqlColumn) { c.def = strp("x") })
	assert.Equal(t, want, stmt.columns)
}

func TestParseDDLAlterTable(t *testing.T) {
	stmt, err := parseDDL("alter table test.e add column torvalds bigint unsigned after m")
	require.NoError(t, err)
	assert.Equal(t, "alter", stmt.verb)
	assert.Equal(t, map[string]sqlColumn{"torvalds": {name: "torvalds", typ: "bigint", unsigned: true}}, stmt.columns)

	stmt, err = parseDDL("ALTER TABLE `orders`\n" +
		"  ADD COLUMN coupon VARCHAR(20) NULL DEFAULT NULL AFTER `unsigned`,\n" +
		"  ADD INDEX idx_coupon (coupon), ADD PRIMARY KEY (id), ADD CONSTRAINT c CHECK (a > 0),\n" +
		"  MODIFY COLUMN total DECIMAL(14,2) NOT NULL COMMENT 'sum',\n" +
		"  CHANGE old_name new_name char(8) FIRST,\n" +
		"  DROP COLUMN legacy, RENAME COLUMN a TO b, ALTER COLUMN s SET DEFAULT 'x',\n" +
		"  ADD (p1 int unsigned, p2 numeric(5)), ADD COLUMN IF NOT EXISTS p3 binary(4),\n" +
		"  ADD `key` varchar(3), ALGORITHM=INPLACE, LOCK=NONE")
	require.NoError(t, err)
	assert.Equal(t, map[string]sqlColumn{
		"coupon":   {name: "coupon", typ: "varchar", args: []int{20}},
		"total":    {name: "total", typ: "decimal", args: []int{14, 2}, notNull: true, comment: "sum"},
		"new_name": {name: "new_name", typ: "char", args: []int{8}},
		"p1":       {name: "p1", typ: "int", unsigned: true},
		"p2":       {name: "p2", typ: "numeric", args: []int{5}},
		"p3":       {name: "p3", typ: "binary", args: []int{4}},
		"key":      {name: "key", typ: "varchar", args: []int{3}},
	}, stmt.columns, "AFTER `unsigned` does not make coupon unsigned; indexes, drops and renames define no column")
}

func TestParseDDLOtherStatements(t *testing.T) {
	for _, sql := range []string{
		"CREATE TABLE t2 LIKE t1", "CREATE TABLE t2 (LIKE t1)", "create table t3 as select * from t1",
		"RENAME TABLE a TO b", "DROP TABLE t", "CREATE DATABASE d", "", "ALTER DATABASE d CHARACTER SET utf8mb4",
		"CREATE INDEX i ON t (a)",
	} {
		stmt, err := parseDDL(sql)
		require.NoError(t, err, sql)
		assert.Empty(t, stmt.columns, sql)
	}
	stmt, err := parseDDL("/* by the app */ CREATE TEMPORARY TABLE t (a varchar(4)); DROP TABLE x")
	require.NoError(t, err)
	assert.Equal(t, map[string]sqlColumn{"a": {name: "a", typ: "varchar", args: []int{4}}}, stmt.columns)

	for sql, msg := range map[string]string{
		"CREATE TABLE t (a varchar(4) DEFAULT 'x)":   "unterminated string",
		"CREATE TABLE t (a int /* x":                 "unterminated comment",
		"CREATE TABLE t (a int, b decimal(10, 2)":    "unbalanced parentheses",
		"CREATE TABLE `t (a int)":                    "unterminated identifier",
		"CREATE TABLE t (a decimal(x))":              "unexpected",
		"ALTER TABLE t MODIFY a varchar(9999999999)": "not a whole number up to",
		"ALTER TABLE t MODIFY a varchar(1.5)":        "not a whole number up to",
	} {
		_, err := parseDDL(sql)
		assert.ErrorContains(t, err, msg, sql)
	}
}

// FuzzParseDDL: any text is read or refused, never a panic, and every
// column it defines has a name and a type.
func FuzzParseDDL(f *testing.F) {
	for _, s := range []string{
		"CREATE TABLE `a` (`b` int(11) unsigned NOT NULL DEFAULT '0', c decimal(10,2), PRIMARY KEY (`b`))",
		"ALTER TABLE t ADD COLUMN x varchar(3) AFTER y, MODIFY z enum('a','b'), CHANGE p q char",
		"CREATE TABLE t (a int /*!50100 , b int */)", "ALTER TABLE t ADD (a int, b int)", "create table t (",
		"CREATE TABLE t (a varchar(4) DEFAULT 'x\\'y'", "ALTER TABLE t ADD a long", "alter table t add national",
		"CREATE TABLE t (a int DEFAULT -", "CREATE TABLE t (a int DEFAULT _utf8", "ALTER TABLE t CHANGE",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		stmt, err := parseDDL(sql)
		if err != nil {
			return
		}
		for k, c := range stmt.columns {
			require.Equal(t, strings.ToLower(c.name), k)
			require.NotEmpty(t, c.typ, "column %q of %q", c.name, sql)
		}
	})
}
