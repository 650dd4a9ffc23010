package store

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The SQL surface of schema changes on the MySQL port: the CREATE TABLE and ALTER TABLE forms
// the output emits, SHOW ALTER TABLE COLUMN with its filters, CANCEL ALTER, SYNC, the FE
// configs, and how the columns read back (information_schema.columns, DESC, SHOW FULL
// COLUMNS, SHOW CREATE TABLE).

func sqlRowsOf(t *testing.T, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	rows, err := db.Query(q, args...)
	require.NoError(t, err, q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		r := make([]string, len(cols))
		for i, v := range vals {
			r[i] = "NULL"
			if v.Valid {
				r[i] = v.String
			}
		}
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestOutputDDLForms: every CREATE TABLE and ALTER TABLE form the output emits is accepted,
// and the tables come out as written.
func TestOutputDDLForms(t *testing.T) {
	s := New()
	srv := serve(t, s, "root", "")
	db := openDB(t, srv, "root", "", "", "")
	for _, stmt := range []string{
		"CREATE DATABASE IF NOT EXISTS `db`",
		"CREATE DATABASE IF NOT EXISTS `db`",
		"CREATE TABLE IF NOT EXISTS `db`.`t` (`k1` BIGINT NOT NULL COMMENT \"the key\", `k2` VARCHAR(64) NOT NULL, " +
			"`ti` TINYINT NULL, `si` SMALLINT NULL, `i` INT NULL DEFAULT \"7\", `bi` BIGINT NULL, `li` LARGEINT NULL, " +
			"`f` FLOAT NULL, `d` DOUBLE NULL, `dec` DECIMAL(18,2) NULL DEFAULT \"0\", `b` BOOLEAN NULL, `dt` DATE NULL, " +
			"`ts` DATETIME NULL, `c` CHAR(4) NULL, `v` VARCHAR(1020) NULL COMMENT \"a \\\"quoted\\\" comment\", `s` STRING NULL, " +
			"`j` JSON NULL, `a` ARRAY<INT> NULL) ENGINE=OLAP PRIMARY KEY(`k1`, `k2`) COMMENT \"orders\" " +
			"DISTRIBUTED BY HASH(`k1`, `k2`) BUCKETS 4 PROPERTIES (\"replication_num\" = \"1\", \"fast_schema_evolution\" = \"true\")",
		"CREATE TABLE IF NOT EXISTS `db`.`t` (`k1` BIGINT NOT NULL) ENGINE=OLAP PRIMARY KEY(`k1`) DISTRIBUTED BY HASH(`k1`)",
		"CREATE TABLE IF NOT EXISTS `db`.`dup` (`id` BIGINT NOT NULL, `v` VARCHAR(10) NULL) ENGINE=OLAP DUPLICATE KEY(`id`) " +
			"DISTRIBUTED BY HASH(`id`) PROPERTIES (\"replication_num\" = \"1\", \"fast_schema_evolution\" = \"false\", \"storage_medium\" = \"SSD\", \"compression\" = \"LZ4\")",
		"CREATE TABLE `db`.`nokeynull` (`id` BIGINT, `v` INT) ENGINE=OLAP PRIMARY KEY(`id`) DISTRIBUTED BY HASH(`id`)",
		"ALTER TABLE `db`.`t` ADD COLUMN (`n1` INT NULL DEFAULT \"3\" COMMENT \"new\", `n2` VARCHAR(8) NULL)",
		"ALTER TABLE `db`.`t` MODIFY COLUMN `v` VARCHAR(2000) NULL COMMENT \"a \\\"quoted\\\" comment\"",
	} {
		_, err := db.Exec(stmt)
		require.NoError(t, err, stmt)
	}
	sc, err := s.Table("db", "nokeynull")
	require.NoError(t, err)
	assert.False(t, sc.Columns[0].Nullable, "a PRIMARY KEY column without NULL or NOT NULL is NOT NULL")
	ddl := sqlRowsOf(t, db, "SHOW CREATE TABLE db.t")[0][1]
	for _, want := range []string{"`n1` int(11) NULL DEFAULT \"3\" COMMENT \"new\"", "`v` varchar(2000) NULL COMMENT \"a \\\"quoted\\\" comment\"",
		"`a` array<int(11)> NULL", "PROPERTIES (\n\"fast_schema_evolution\" = \"true\",\n\"replication_num\" = \"1\"\n)"} {
		assert.Contains(t, ddl, want)
	}
	assert.Contains(t, sqlRowsOf(t, db, "SHOW CREATE TABLE db.dup")[0][1], "\"fast_schema_evolution\" = \"false\"")
	_, err = db.Exec("CREATE TABLE db.bad (id INT) PROPERTIES (\"replication_num\" = \"1\", \"colour\" = \"red\", \"a\" = \"b\")")
	assert.ErrorContains(t, err, "Error 1064 (HY000): Unknown properties: {a=b, colour=red}")
}

// TestInformationSchemaColumns: information_schema.columns has StarRocks's values for every
// type: COLUMN_TYPE with display widths, DATA_TYPE, IS_NULLABLE, COLUMN_DEFAULT, COLUMN_KEY
// by the table's model, ORDINAL_POSITION, the numeric and character lengths.
func TestInformationSchemaColumns(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript(`CREATE DATABASE db;
CREATE TABLE db.t (k1 BIGINT NOT NULL, k2 VARCHAR(64) NOT NULL, ti TINYINT, si SMALLINT, i INT DEFAULT "7", li LARGEINT,
  f FLOAT, d DOUBLE, dec DECIMAL(18,2) DEFAULT "0", b BOOLEAN, dt DATE, ts DATETIME DEFAULT CURRENT_TIMESTAMP, c CHAR(4),
  s STRING COMMENT "text", j JSON, a ARRAY<INT>) PRIMARY KEY(k1, k2);
CREATE TABLE db.dup (id INT, v INT) DUPLICATE KEY(id);
CREATE TABLE db.u (id INT, v INT) UNIQUE KEY(id);
CREATE TABLE db.ag (id INT, v INT SUM) AGGREGATE KEY(id);`))
	srv := serve(t, s, "root", "")
	db := openDB(t, srv, "root", "", "", "")
	got := sqlRowsOf(t, db, `SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, IS_NULLABLE, DATA_TYPE, COLUMN_TYPE, COLUMN_KEY,
  CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, COLUMN_COMMENT
  FROM information_schema.columns WHERE TABLE_SCHEMA = 'db' AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION`)
	want := [][]string{
		{"k1", "1", "NULL", "NO", "bigint", "bigint(20)", "PRI", "NULL", "19", "0", "NULL", ""},
		{"k2", "2", "NULL", "NO", "varchar", "varchar(64)", "PRI", "64", "NULL", "NULL", "NULL", ""},
		{"ti", "3", "NULL", "YES", "tinyint", "tinyint(4)", "", "NULL", "3", "0", "NULL", ""},
		{"si", "4", "NULL", "YES", "smallint", "smallint(6)", "", "NULL", "5", "0", "NULL", ""},
		{"i", "5", "7", "YES", "int", "int(11)", "", "NULL", "10", "0", "NULL", ""},
		{"li", "6", "NULL", "YES", "bigint unsigned", "bigint(20) unsigned", "", "NULL", "39", "NULL", "NULL", ""},
		{"f", "7", "NULL", "YES", "float", "float", "", "NULL", "7", "7", "NULL", ""},
		{"d", "8", "NULL", "YES", "double", "double", "", "NULL", "15", "15", "NULL", ""},
		{"dec", "9", "0", "YES", "decimal", "decimal(18, 2)", "", "NULL", "18", "2", "NULL", ""},
		{"b", "10", "NULL", "YES", "tinyint", "tinyint(1)", "", "NULL", "NULL", "0", "NULL", ""},
		{"dt", "11", "NULL", "YES", "date", "date", "", "NULL", "NULL", "NULL", "NULL", ""},
		{"ts", "12", "CURRENT_TIMESTAMP", "YES", "datetime", "datetime", "", "NULL", "NULL", "NULL", "6", ""},
		{"c", "13", "NULL", "YES", "char", "char(4)", "", "4", "NULL", "NULL", "NULL", ""},
		{"s", "14", "NULL", "YES", "varchar", "varchar(65533)", "", "65533", "NULL", "NULL", "NULL", "text"},
		{"j", "15", "NULL", "YES", "json", "json", "", "NULL", "NULL", "NULL", "NULL", ""},
		{"a", "16", "NULL", "YES", "array", "array<int(11)>", "", "NULL", "NULL", "NULL", "NULL", ""},
	}
	assert.Equal(t, want, got)
	for table, key := range map[string]string{"dup": "DUP", "u": "UNI", "ag": "AGG"} {
		assert.Equal(t, [][]string{{key}, {""}}, sqlRowsOf(t, db, "SELECT COLUMN_KEY FROM information_schema.columns WHERE TABLE_SCHEMA = 'db' AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", table), table)
	}
	assert.Equal(t, [][]string{{"id", "int", "YES", "true", "NULL", ""}, {"v", "int", "YES", "false", "NULL", "SUM"}}, sqlRowsOf(t, db, "DESC db.ag"))
	assert.Equal(t, [][]string{{"ts", "datetime", "", "YES", "NO", "CURRENT_TIMESTAMP", "", "", ""}}, sqlRowsOf(t, db, "SHOW FULL COLUMNS FROM t FROM db LIKE 'ts'"))
	assert.Equal(t, [][]string{{"ts", "datetime", "YES", "false", "CURRENT_TIMESTAMP", "DEFAULT_GENERATED"}}, sqlRowsOf(t, db, "DESC db.t")[11:12])
}

// TestDescribeAfterChanges: DESC, SHOW [FULL] COLUMNS, SHOW CREATE TABLE and
// information_schema.columns show a job's new column only once it is FINISHED.
func TestDescribeAfterChanges(t *testing.T) {
	env := newSCEnv(t)
	s := env.s
	srv := serve(t, s, "root", "")
	db := openDB(t, srv, "root", "", "db", "")
	_, err := db.Exec(`ALTER TABLE t ADD COLUMN n DECIMAL(10,2) NOT NULL DEFAULT "1.5" COMMENT "amount" AFTER id`)
	require.NoError(t, err)
	s.StepSchemaChanges()
	s.StepSchemaChanges()
	check := func(withN bool) {
		t.Helper()
		desc := [][]string{{"id", "bigint", "NO", "true", "NULL", ""}, {"v", "varchar(8)", "YES", "false", "NULL", ""}}
		cols := [][]string{{"id", "bigint", "", "NO", "YES", "NULL", "", "", ""}, {"v", "varchar(8)", "", "YES", "NO", "NULL", "", "", ""}}
		names := [][]string{{"id"}, {"v"}}
		if withN {
			desc = append(desc[:1], append([][]string{{"n", "decimal(10,2)", "NO", "false", "1.5", ""}}, desc[1:]...)...)
			cols = append(cols[:1], append([][]string{{"n", "decimal(10,2)", "", "NO", "NO", "1.5", "", "", "amount"}}, cols[1:]...)...)
			names = [][]string{{"id"}, {"n"}, {"v"}}
		}
		assert.Equal(t, desc, sqlRowsOf(t, db, "DESC t"))
		assert.Equal(t, desc, sqlRowsOf(t, db, "DESCRIBE db.t"))
		assert.Equal(t, cols, sqlRowsOf(t, db, "SHOW FULL COLUMNS FROM t"))
		assert.Equal(t, names, sqlRowsOf(t, db, "SELECT COLUMN_NAME FROM information_schema.columns WHERE TABLE_SCHEMA = 'db' AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION"))
		ddl := sqlRowsOf(t, db, "SHOW CREATE TABLE t")[0][1]
		assert.Equal(t, withN, strings.Contains(ddl, "`n` decimal(10, 2) NOT NULL DEFAULT \"1.5\" COMMENT \"amount\""), ddl)
		star := sqlRowsOf(t, db, "SELECT * FROM t")
		assert.Len(t, star[0], len(names))
	}
	check(false)
	assert.Equal(t, [][]string{{"id", "bigint", "NO", "YES", "NULL", ""}}, sqlRowsOf(t, db, "SHOW COLUMNS FROM t LIKE 'i%'"))
	env.clock.add(time.Second)
	s.StepSchemaChanges()
	check(true)
}

// TestShowAlterAndCancel: SHOW ALTER TABLE COLUMN prints StarRocks's columns and takes WHERE
// TableName/State, ORDER BY and LIMIT; CANCEL ALTER TABLE COLUMN cancels over the MySQL port;
// SYNC is accepted; the FE configs of schema changes are set and shown by ADMIN.
func TestShowAlterAndCancel(t *testing.T) {
	env := newSCEnv(t)
	s := env.s
	require.NoError(t, s.ExecDDL(`CREATE TABLE db.u (id BIGINT NOT NULL) PRIMARY KEY(id) PROPERTIES ("fast_schema_evolution" = "false")`))
	srv := serve(t, s, "root", "")
	db := openDB(t, srv, "root", "", "db", "")
	_, err := db.Exec("ALTER TABLE u ADD COLUMN x INT")
	require.NoError(t, err)
	_, err = db.Exec("ALTER TABLE t ADD COLUMN x INT")
	require.NoError(t, err)
	s.StepSchemaChanges()
	rows, err := db.Query("SHOW ALTER TABLE COLUMN")
	require.NoError(t, err)
	cols, _ := rows.Columns()
	require.NoError(t, rows.Close())
	assert.Equal(t, []string{"JobId", "TableName", "CreateTime", "FinishTime", "IndexName", "IndexId", "OriginIndexId",
		"SchemaVersion", "TransactionId", "State", "Msg", "Progress", "Timeout"}, cols)
	all := sqlRowsOf(t, db, "SHOW ALTER TABLE COLUMN FROM db ORDER BY JobId")
	require.Len(t, all, 2)
	u := all[0]
	assert.Equal(t, "u", u[1])
	assert.Equal(t, env.clock.now().Format("2006-01-02 15:04:05"), u[2])
	assert.Equal(t, "NULL", u[3], "FinishTime before the job ends")
	assert.Equal(t, "u", u[4], "IndexName")
	assert.True(t, strings.HasPrefix(u[7], "1:"), u[7])
	assert.Equal(t, "WAITING_TXN", u[9])
	assert.Equal(t, "", u[10])
	assert.Equal(t, "NULL", u[11], "Progress while not RUNNING")
	assert.Equal(t, "86400", u[12])

	assert.Equal(t, [][]string{{"t"}}, tableNames(sqlRowsOf(t, db, "SHOW ALTER TABLE COLUMN WHERE TableName = \"t\"")))
	assert.Equal(t, [][]string{{"t"}}, tableNames(sqlRowsOf(t, db, "SHOW ALTER TABLE COLUMN FROM db ORDER BY CreateTime DESC, JobId DESC LIMIT 1")))
	assert.Equal(t, [][]string{{"u"}}, tableNames(sqlRowsOf(t, db, "SHOW ALTER TABLE COLUMN ORDER BY JobId LIMIT 1")))
	assert.Equal(t, [][]string{{"t"}}, tableNames(sqlRowsOf(t, db, "SHOW ALTER TABLE COLUMN ORDER BY JobId LIMIT 1, 5")))
	assert.Len(t, sqlRowsOf(t, db, "SHOW ALTER TABLE COLUMN WHERE State = 'FINISHED'"), 0)
	_, err = db.Query("SHOW ALTER TABLE COLUMN WHERE JobId = 1")
	assert.ErrorContains(t, err, "The columns of TableName/CreateTime/FinishTime/State are supported.")

	_, err = db.Exec("CANCEL ALTER TABLE COLUMN FROM db.u")
	require.NoError(t, err)
	_, err = db.Exec("CANCEL ALTER TABLE COLUMN FROM u")
	assert.ErrorContains(t, err, "Error 1064 (HY000): Table[u] is not under SCHEMA_CHANGE/WAITING_STABLE.")
	cancelled := sqlRowsOf(t, db, "SHOW ALTER TABLE COLUMN WHERE TableName = 'u' AND State = 'CANCELLED'")
	require.Len(t, cancelled, 1)
	assert.Equal(t, "user cancelled", cancelled[0][10])
	assert.NotEqual(t, "NULL", cancelled[0][3])

	s.StepSchemaChanges()
	running := sqlRowsOf(t, db, "SHOW ALTER TABLE COLUMN WHERE TableName = 't'")
	assert.Equal(t, "RUNNING", running[0][9])
	assert.Equal(t, "0/1", running[0][11])
	_, err = db.Exec("SYNC")
	require.NoError(t, err)

	_, err = db.Exec(`ADMIN SET FRONTEND CONFIG ("enable_fast_schema_evolution" = "false")`)
	require.NoError(t, err)
	_, err = db.Exec(`ADMIN SET FRONTEND CONFIG ("alter_table_timeout_second" = "60")`)
	require.NoError(t, err)
	_, err = db.Exec(`ADMIN SET FRONTEND CONFIG ("enable_fast_schema_evolution" = "maybe")`)
	assert.ErrorContains(t, err, "Failed to set config 'enable_fast_schema_evolution'. err: Invalid boolean value: maybe")
	cfg := sqlRowsOf(t, db, "ADMIN SHOW FRONTEND CONFIG LIKE '%schema%'")
	assert.Contains(t, cfg, []string{"enable_fast_schema_evolution", "[]", "false", "boolean", "true", "fast_schema_evolution of a table created without the property"})
	_, err = db.Exec("CREATE TABLE db.v (id INT NOT NULL) PRIMARY KEY(id)")
	require.NoError(t, err)
	assert.Contains(t, sqlRowsOf(t, db, "SHOW CREATE TABLE v")[0][1], `"fast_schema_evolution" = "false"`)
	_, err = db.Exec("ALTER TABLE v ADD COLUMN x INT")
	require.NoError(t, err)
	assert.Equal(t, "60", sqlRowsOf(t, db, "SHOW ALTER TABLE COLUMN WHERE TableName = 'v'")[0][12])
}

func tableNames(rows [][]string) [][]string {
	out := [][]string{}
	for _, r := range rows {
		out = append(out, []string{r[1]})
	}
	return out
}
