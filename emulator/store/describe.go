package store

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// How a table's columns read back, as StarRocks prints them (docs/notes/starrocks-protocol.md
// §11.6): DESC (DescribeStmt: Field, Type, Null, Key, Default, Extra), SHOW [FULL] COLUMNS
// (ShowExecutor: Field, Type, [Collation,] Null, Key, Default, Extra[, Privileges,
// Comment]) and information_schema.columns (FrontendServiceImpl.describeTable, printed by
// the BE's SchemaColumnsScanner). All read the table's base schema: a running schema
// change's new columns are not there until its job is FINISHED.

// descType is a type as DESC and SHOW COLUMNS print it (Type.canonicalName, lower case):
// int, varchar(32), decimal(10,2), array<int>.
func descType(c *Column) string {
	if c.Type == TypeDecimal {
		return fmt.Sprintf("decimal(%d,%d)", c.Precision, c.Scale)
	}
	return typeString(c)
}

// metaDefault is Column.getMetaDefaultValue: the default's text, CURRENT_TIMESTAMP, or NULL.
func metaDefault(c *Column) *string {
	switch {
	case c.DefaultCurrentTimestamp:
		return str("CURRENT_TIMESTAMP")
	case c.Default != nil:
		return str(*c.Default)
	}
	return nil
}

// keysMetadata is KeysType.toMetadata: COLUMN_KEY of a key column.
func keysMetadata(k KeyType) string {
	switch k {
	case PrimaryKey:
		return "PRI"
	case UniqueKey:
		return "UNI"
	case AggregateKey:
		return "AGG"
	}
	return "DUP"
}

// describe is DESC|DESCRIBE [db.]t; ok is false for a table the store does not have (an
// information_schema table: go-mysql-server describes it).
func (h *ddlHandler) describe(p *parser, cur string) (*sqltypes.Result, bool, error) {
	p.next() // DESC or DESCRIBE
	db, name, err := p.qualifiedName("a table name")
	if err != nil {
		return nil, true, sysErr("%s", err.Error())
	}
	if p.accept("all") {
		return nil, true, sysErr("DESC … ALL is not supported by the emulator: its tables have no rollups or materialized views; DESC %s shows the columns", name)
	}
	if p.done() != nil {
		return nil, true, sysErr("the emulator knows DESC [db.]table")
	}
	if db == "" {
		db = cur
	}
	if strings.EqualFold(db, "information_schema") || db == "" {
		return nil, false, nil
	}
	t, err := h.bridge.store.snap().table(db, name)
	if err != nil {
		return nil, true, sysErr("Unknown table '%s.%s'", db, name)
	}
	sc := t.schema
	var rows [][]*string
	for i := range sc.Columns {
		c := &sc.Columns[i]
		var extras []string
		if c.Agg != AggNone {
			extras = append(extras, c.Agg.String())
		}
		if c.DefaultCurrentTimestamp {
			extras = append(extras, "DEFAULT_GENERATED")
		}
		rows = append(rows, []*string{str(c.Name), str(descType(c)), str(yesNo(c.Nullable)),
			str(fmt.Sprint(i < len(sc.Key))), metaDefault(c), str(strings.Join(extras, ","))})
	}
	return textResult([]string{"Field", "Type", "Null", "Key", "Default", "Extra"}, rows), true, nil
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

// showColumns is SHOW [FULL] COLUMNS|FIELDS FROM|IN [db.]t [FROM|IN db] [LIKE 'pattern'].
func (h *ddlHandler) showColumns(p *parser, cur string) (*sqltypes.Result, bool, error) {
	p.next() // SHOW
	full := p.accept("full")
	if !p.accept("columns") && !p.accept("fields") {
		return nil, false, nil
	}
	if !p.accept("from") && !p.accept("in") {
		return nil, true, sysErr("SHOW COLUMNS FROM [db.]table")
	}
	db, name, err := p.qualifiedName("a table name")
	if err != nil {
		return nil, true, sysErr("%s", err.Error())
	}
	if p.accept("from") || p.accept("in") {
		if db, err = p.ident("a database name"); err != nil {
			return nil, true, sysErr("%s", err.Error())
		}
	}
	like := ""
	if p.accept("like") {
		t := p.next()
		if t.kind != tokString {
			return nil, true, sysErr("LIKE takes a quoted pattern")
		}
		like = t.text
	}
	if p.done() != nil {
		return nil, true, sysErr("the emulator knows SHOW [FULL] COLUMNS FROM [db.]table [FROM db] [LIKE 'pattern']")
	}
	if db == "" {
		db = cur
	}
	if strings.EqualFold(db, "information_schema") || db == "" {
		return nil, false, nil
	}
	t, err := h.bridge.store.snap().table(db, name)
	if err != nil {
		return nil, true, sysErr("Unknown table '%s.%s'", db, name)
	}
	sc := t.schema
	var rows [][]*string
	for i := range sc.Columns {
		c := &sc.Columns[i]
		if like != "" && !likeMatch(like, c.Name) {
			continue
		}
		agg := ""
		if c.Agg != AggNone {
			agg = c.Agg.String()
		}
		key := yesNo(i < len(sc.Key))
		if full {
			rows = append(rows, []*string{str(c.Name), str(descType(c)), str(""), str(yesNo(c.Nullable)), str(key),
				metaDefault(c), str(agg), str(""), str(c.Comment)})
		} else {
			rows = append(rows, []*string{str(c.Name), str(descType(c)), str(yesNo(c.Nullable)), str(key), metaDefault(c), str(agg)})
		}
	}
	cols := []string{"Field", "Type", "Null", "Key", "Default", "Extra"}
	if full {
		cols = []string{"Field", "Type", "Collation", "Null", "Key", "Default", "Extra", "Privileges", "Comment"}
	}
	return textResult(cols, rows), true, nil
}

// information_schema.columns as StarRocks fills it.

const columnsName = "columns"

var columnsSchema = func() sql.Schema {
	cols := []struct {
		name string
		num  bool
	}{
		{"TABLE_CATALOG", false}, {"TABLE_SCHEMA", false}, {"TABLE_NAME", false}, {"COLUMN_NAME", false},
		{"ORDINAL_POSITION", true}, {"COLUMN_DEFAULT", false}, {"IS_NULLABLE", false}, {"DATA_TYPE", false},
		{"CHARACTER_MAXIMUM_LENGTH", true}, {"CHARACTER_OCTET_LENGTH", true}, {"NUMERIC_PRECISION", true},
		{"NUMERIC_SCALE", true}, {"DATETIME_PRECISION", true}, {"CHARACTER_SET_NAME", false},
		{"COLLATION_NAME", false}, {"COLUMN_TYPE", false}, {"COLUMN_KEY", false}, {"EXTRA", false},
		{"PRIVILEGES", false}, {"COLUMN_COMMENT", false}, {"COLUMN_SIZE", true}, {"DECIMAL_DIGITS", true},
		{"GENERATION_EXPRESSION", false}, {"SRS_ID", true},
	}
	s := make(sql.Schema, len(cols))
	for i, c := range cols {
		typ := sql.Type(types.LongText)
		if c.num {
			typ = types.Int64
		}
		s[i] = &sql.Column{Name: c.name, Type: typ, Nullable: true, Source: columnsName, DatabaseSource: "information_schema"}
	}
	return s
}()

type columnsTable struct{ snap *snapshot }

func (t *columnsTable) Name() string               { return columnsName }
func (t *columnsTable) String() string             { return columnsName }
func (t *columnsTable) Schema() sql.Schema         { return columnsSchema }
func (t *columnsTable) Collation() sql.CollationID { return sql.Collation_Default }
func (t *columnsTable) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return sql.PartitionsToPartitionIter(onePartition{}), nil
}

func (t *columnsTable) PartitionRows(*sql.Context, sql.Partition) (sql.RowIter, error) {
	dbs := make([]string, 0, len(t.snap.dbs))
	for n := range t.snap.dbs {
		dbs = append(dbs, n)
	}
	sort.Strings(dbs)
	var rows []sql.Row
	for _, dn := range dbs {
		d := t.snap.dbs[dn]
		names := make([]string, 0, len(d.tables))
		for n := range d.tables {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			sc := d.tables[n].schema
			for i := range sc.Columns {
				rows = append(rows, columnsRow(sc, i))
			}
		}
	}
	return &sliceRowIter{rows: rows}, nil
}

// columnsRow is one column as information_schema.columns shows it.
func columnsRow(sc *TableSchema, i int) sql.Row {
	c := &sc.Columns[i]
	var def, charLen, octetLen, dtPrec any
	if d := metaDefault(c); d != nil {
		def = *d
	}
	if c.Type == TypeChar || c.Type == TypeVarchar || c.Type == TypeString {
		charLen, octetLen = int64(strLen(c)), int64(strLen(c))*3
	}
	if c.Type == TypeDatetime {
		dtPrec = int64(6)
	}
	prec, scale := numericPrecision(c), decimalDigits(c)
	size := prec
	if charLen != nil {
		size = charLen
	}
	key := ""
	if i < len(sc.Key) {
		key = keysMetadata(sc.KeyType)
	}
	return sql.Row{"def", sc.DB, sc.Name, c.Name, int64(i + 1), def, yesNo(c.Nullable), mysqlDataType(c),
		charLen, octetLen, prec, scale, dtPrec, nil, nil, mysqlColumnType(c), key, "", "", c.Comment, size, scale, nil, nil}
}

// mysqlDataType is Type.toMysqlDataTypeString (DATA_TYPE).
func mysqlDataType(c *Column) string {
	switch c.Type {
	case TypeBoolean:
		return "tinyint"
	case TypeLargeInt:
		return "bigint unsigned"
	case TypeDecimal:
		return "decimal"
	case TypeString:
		return "varchar"
	}
	return strings.ToLower(c.Type.String())
}

// mysqlColumnType is Type.toMysqlColumnTypeString (COLUMN_TYPE): the SHOW CREATE TABLE type,
// except BOOLEAN (tinyint(1)) and LARGEINT (bigint(20) unsigned).
func mysqlColumnType(c *Column) string {
	switch c.Type {
	case TypeBoolean:
		return "tinyint(1)"
	case TypeLargeInt:
		return "bigint(20) unsigned"
	}
	return displayType(c)
}

// numericPrecision is Type.getPrecision (NUMERIC_PRECISION), NULL for non-numbers.
func numericPrecision(c *Column) any {
	switch c.Type {
	case TypeTinyInt:
		return int64(3)
	case TypeSmallInt:
		return int64(5)
	case TypeInt:
		return int64(10)
	case TypeBigInt:
		return int64(19)
	case TypeLargeInt:
		return int64(39)
	case TypeFloat:
		return int64(7)
	case TypeDouble:
		return int64(15)
	case TypeDecimal:
		return int64(c.Precision)
	}
	return nil
}

// decimalDigits is Type.getDecimalDigits (NUMERIC_SCALE, DECIMAL_DIGITS).
func decimalDigits(c *Column) any {
	switch c.Type {
	case TypeBoolean, TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt:
		return int64(0)
	case TypeFloat:
		return int64(7)
	case TypeDouble:
		return int64(15)
	case TypeDecimal:
		return int64(c.Scale)
	}
	return nil
}
