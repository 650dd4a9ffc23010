package store

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownDatabase is wrapped by every error about a database that does not exist.
var ErrUnknownDatabase = errors.New("unknown database")

// ErrUnknownTable is wrapped by every error about a table that does not exist.
var ErrUnknownTable = errors.New("unknown table")

// unknownDatabase builds the StarRocks-worded error for a missing database.
func unknownDatabase(db string) error {
	return &wrapped{msg: fmt.Sprintf("Database[%s] does not exist", db), err: ErrUnknownDatabase}
}

// unknownTable builds the StarRocks-worded error for a missing table.
func unknownTable(db, table string) error {
	return &wrapped{msg: fmt.Sprintf("Failed to find table %s in db %s", table, db), err: ErrUnknownTable}
}

// wrapped is an error whose text is exactly msg (StarRocks wording) and which unwraps to err.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// KeyType is a table's data model.
type KeyType int

// The supported table models.
const (
	DuplicateKey KeyType = iota
	PrimaryKey
	UniqueKey
	AggregateKey
)

func (k KeyType) String() string {
	switch k {
	case PrimaryKey:
		return "PRIMARY KEY"
	case UniqueKey:
		return "UNIQUE KEY"
	case AggregateKey:
		return "AGGREGATE KEY"
	default:
		return "DUPLICATE KEY"
	}
}

// AggType is the aggregation of a value column of an AGGREGATE KEY table: how a loaded row
// merges into the stored row with the same key.
type AggType int

// The supported aggregations.
const (
	AggNone AggType = iota
	AggSum
	AggMax
	AggMin
	AggReplace
	AggReplaceIfNotNull
)

var aggNames = map[AggType]string{AggSum: "SUM", AggMax: "MAX", AggMin: "MIN", AggReplace: "REPLACE", AggReplaceIfNotNull: "REPLACE_IF_NOT_NULL"}

func (a AggType) String() string { return aggNames[a] }

// ColumnType is a column's StarRocks type family; Column carries the parameters.
type ColumnType int

// The supported column types.
const (
	TypeTinyInt ColumnType = iota
	TypeSmallInt
	TypeInt
	TypeBigInt
	TypeLargeInt
	TypeDecimal // Column.Precision, Column.Scale
	TypeFloat
	TypeDouble
	TypeBoolean
	TypeChar    // Column.Length (bytes)
	TypeVarchar // Column.Length (bytes)
	TypeString
	TypeDate
	TypeDatetime
	TypeJSON
	TypeArray // Column.Elem
	TypeMap   // Column.MapKey, Column.Elem (the value)
)

var typeNames = map[ColumnType]string{
	TypeTinyInt: "TINYINT", TypeSmallInt: "SMALLINT", TypeInt: "INT", TypeBigInt: "BIGINT",
	TypeLargeInt: "LARGEINT", TypeDecimal: "DECIMAL", TypeFloat: "FLOAT", TypeDouble: "DOUBLE",
	TypeBoolean: "BOOLEAN", TypeChar: "CHAR", TypeVarchar: "VARCHAR", TypeString: "STRING",
	TypeDate: "DATE", TypeDatetime: "DATETIME", TypeJSON: "JSON", TypeArray: "ARRAY", TypeMap: "MAP",
}

func (t ColumnType) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("ColumnType(%d)", int(t))
}

// Column is one column of a table.
type Column struct {
	Name     string
	Type     ColumnType
	Nullable bool
	// Default is the DEFAULT literal as written (unquoted), nil when the column has none.
	// For DEFAULT CURRENT_TIMESTAMP it is "CURRENT_TIMESTAMP" and DefaultCurrentTimestamp is set.
	Default                 *string
	DefaultCurrentTimestamp bool
	Precision, Scale        int // DECIMAL
	Length                  int // CHAR / VARCHAR, in bytes
	Comment                 string
	// Agg is the aggregation of a value column of an AGGREGATE KEY table.
	Agg AggType
	// Elem is an ARRAY's element type or a MAP's value type; MapKey a MAP's key type.
	Elem, MapKey *Column

	defaultValue any // Default converted to the column type (nil = NULL)
	// uid is the column's unique id within its table (StarRocks's column unique id): a
	// schema change keeps it for the columns it keeps, so rows loaded under an older
	// schema map onto the current one (remap.go). 0 until the table assigns one.
	uid int
	// What the column definition said, for the ALTER TABLE rules: NULL or NOT NULL
	// written (else the model decides), KEY written, and where the definition starts and
	// ends in the statement (StarRocks's analyzer errors quote the positions).
	nullSet, keySet   bool
	defStart, defLast token
}

// SQLType renders the column type in StarRocks syntax, e.g. "DECIMAL(10,2)", "VARCHAR(32)"
// or "ARRAY<INT>".
func (c Column) SQLType() string {
	switch c.Type {
	case TypeDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", c.Precision, c.Scale)
	case TypeChar, TypeVarchar:
		return fmt.Sprintf("%s(%d)", c.Type, c.Length)
	case TypeArray:
		return "ARRAY<" + c.Elem.SQLType() + ">"
	case TypeMap:
		return "MAP<" + c.MapKey.SQLType() + "," + c.Elem.SQLType() + ">"
	default:
		return c.Type.String()
	}
}

// complex reports whether the column is an ARRAY or a MAP.
func (c *Column) complex() bool { return c.Type == TypeArray || c.Type == TypeMap }

// TableSchema is a table's definition.
type TableSchema struct {
	DB, Name string
	ID       int64
	KeyType  KeyType
	Key      []string // key columns, in declaration order
	Columns  []Column

	keyIdx []int          // column indexes of Key
	byName map[string]int // lower-case and exact column name -> index
	// version counts the schema changes (ALTER TABLE) of the table, for caches keyed by ID.
	version int
	// fse is the table property fast_schema_evolution (schemachange.go); fseSet records
	// that CREATE TABLE gave it (else the FE config enable_fast_schema_evolution decides).
	fse, fseSet bool
	// maxUID is the largest column uid the table ever gave out.
	maxUID int
	// indexID is the base index's id, schemaVersion and schemaHash its schema version and
	// hash, as SHOW ALTER TABLE COLUMN prints them (IndexId, SchemaVersion).
	indexID       int64
	schemaVersion int
	schemaHash    int32

	// physical clauses, kept for information_schema.tables_config
	distType   string // HASH or RANDOM
	distKeys   []string
	buckets    int
	sortKeys   []string
	properties [][2]string
	comment    string
}

// ColumnIndex returns the index of the named column (case-insensitive), or -1.
func (t *TableSchema) ColumnIndex(name string) int {
	if i, ok := t.byName[name]; ok {
		return i
	}
	if i, ok := t.byName[strings.ToLower(name)]; ok {
		return i
	}
	return -1
}

func (t *TableSchema) index() {
	t.byName = make(map[string]int, 2*len(t.Columns))
	for i, c := range t.Columns {
		t.byName[strings.ToLower(c.Name)] = i
	}
	for i, c := range t.Columns {
		t.byName[c.Name] = i
	}
	t.keyIdx = t.keyIdx[:0]
	for _, k := range t.Key {
		t.keyIdx = append(t.keyIdx, t.ColumnIndex(k))
	}
}

// Op is a row operation.
type Op int

// Row operations: __op 0 and 1.
const (
	OpUpsert Op = 0
	OpDelete Op = 1
)

// Row is one converted row. Values has one entry per table column (defaults applied); for a
// partial-update row Set marks the columns the load supplied (nil for full rows). MergeCol,
// when > 0, is 1 + the index of the merge_condition column: an upsert of an existing key then
// applies only if its value in that column is >= the stored one (PRIMARY KEY tables).
type Row struct {
	Op       Op
	Values   []any
	Set      []bool
	MergeCol int

	// sc is the schema the row was converted under (nil: the table's current one); Apply
	// maps a row of an older schema onto the current one (remap.go).
	sc *TableSchema
}

// TableChange is a list of rows for one table, applied in order.
type TableChange struct {
	DB, Table string
	Rows      []Row
}
