// This file turns Maxwell's table-create and table-alter events into
// explicit schema changes (ARCHITECTURE.md §14.1): the table definition
// after the change, in StarRocks types, as the body of a message with
// starrocks_schema_change. Maxwell's def gives each column's MySQL type
// name but no length, precision, scale, nullability or default
// (docs/notes/kafka-cdc.md §6); lengths, precision and scale come from the
// statement in the event's sql (ddl_sql.go).

package txnassembler

// Home of G66 (ARCHITECTURE.md §11.4): a schema change is a transaction of its own or belongs to
// one like a row; an unknowable definition is flagged. Main test:
// TestMaxwellTableAlterIsASchemaChange.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// maxwellTable is a table as Maxwell's def and old give it.
type maxwellTable struct {
	Database   string          `json:"database"`
	Table      string          `json:"table"`
	Columns    []maxwellColumn `json:"columns"`
	PrimaryKey []string        `json:"primary-key"`
}

// maxwellColumn is one column of def or old: signed is given for the
// integer types, enum-values for ENUM and SET.
type maxwellColumn struct {
	Type       string   `json:"type"`
	Name       string   `json:"name"`
	Signed     *bool    `json:"signed"`
	EnumValues []string `json:"enum-values"`
}

// Maxwell's DDL event types.
const (
	maxwellTableCreate = "table-create"
	maxwellTableAlter  = "table-alter"
)

// isMaxwellSchemaChange reports the DDL types that become schema changes;
// every other DDL type (database-create, database-alter, database-drop,
// table-drop) is skipped: databases are created with their first table
// by the output, and nothing is ever dropped automatically.
func isMaxwellSchemaChange(typ string) bool {
	return typ == maxwellTableCreate || typ == maxwellTableAlter
}

// isMaxwellDDL reports Maxwell's DDL event types.
func isMaxwellDDL(typ string) bool {
	return strings.HasPrefix(typ, "database-") || strings.HasPrefix(typ, "table-")
}

// maxwellDDL decodes a table-create or table-alter event into ev: a
// schema change for the table def names (the new name of a renamed
// table), in its own source transaction. An error names the field and,
// for a column whose type cannot be known, the table, the column and
// what to do; ev is then still a one-message transaction of its own.
func maxwellDDL(typ string, raw *maxwellEvent, ev *event) error {
	ev.kind, ev.ddl, ev.txnID = kindDataEnd, true, ""
	var ierr *inputError
	if ev.database, ierr = rawString("database", raw.Database); ierr != nil {
		return ierr
	}
	if ev.table, ierr = rawString("table", raw.Table); ierr != nil {
		return ierr
	}
	if rawAbsent(raw.Def) || raw.Def[0] != '{' {
		return badField("def", "must be the table definition of a maxwell %s event, got %s", typ, rawTypeName(raw.Def))
	}
	var def maxwellTable
	if err := json.Unmarshal(raw.Def, &def); err != nil {
		return badField("def", "is not a maxwell table definition: %v", err)
	}
	// def names the table after the change: a rename's new name.
	if def.Database != "" {
		ev.database = def.Database
	}
	if def.Table != "" {
		ev.table = def.Table
	}
	var old *maxwellTable
	if typ == maxwellTableAlter && !rawAbsent(raw.Old) && raw.Old[0] == '{' {
		old = new(maxwellTable)
		if err := json.Unmarshal(raw.Old, old); err != nil {
			return badField("old", "is not a maxwell table definition: %v", err)
		}
		if !strings.EqualFold(old.Table, def.Table) || !strings.EqualFold(old.Database, def.Database) {
			// A rename: the new table is not in StarRocks under its new
			// name, so no column of it is known there.
			old = nil
		}
	}
	sql, ierr := rawString("sql", raw.SQL)
	if ierr != nil {
		return ierr
	}
	stmt, sqlErr := parseDDL(sql)
	t, err := tableFromMaxwell(def, old, stmt, sqlErr)
	if err != nil {
		return badField("def", "maxwell %s of %s: %v", typ, qualifiedName(ev.database, ev.table), err)
	}
	if ev.def, err = json.Marshal(t); err != nil {
		return badField("def", "cannot be encoded: %v", err)
	}
	ev.schema = true
	return nil
}

// qualifiedName renders db.table for messages.
func qualifiedName(db, table string) string {
	switch {
	case db == "":
		return table
	case table == "":
		return db
	}
	return db + "." + table
}

// tableFromMaxwell builds the StarRocks table of def: each column's type
// from its MySQL type (schema.FromMySQL) with the arguments and unsigned
// flag the statement gives (def's signed wins), primary-key columns NOT
// NULL and the others nullable, the key from def. A column whose type
// cannot be known is an error, unless old (the table before an ALTER that
// keeps its name) has it with the same type and the statement does not
// define it: the ALTER left it as it was, StarRocks holds it already, and
// its type there is kept (keptType). That is also what such a column gets
// when its type depends on arguments only its CREATE TABLE gave (a length,
// a precision): a guess would make the output widen it for nothing.
func tableFromMaxwell(def maxwellTable, old *maxwellTable, stmt sqlStatement, sqlErr error) (*schema.Table, error) {
	if len(def.Columns) == 0 {
		return nil, fmt.Errorf("def lists no columns")
	}
	t := &schema.Table{Key: def.PrimaryKey}
	for _, c := range def.Columns {
		col := schema.Column{Name: c.Name, Nullable: !t.IsKey(c.Name)}
		sc, inSQL := stmt.columns[strings.ToLower(c.Name)]
		kept := !inSQL && old != nil && unchanged(old, c)
		typ, err := schema.FromMySQL(mysqlColumn(c, sc, inSQL))
		switch {
		case kept && (err != nil || sizedMySQLType(c.Type)):
			typ = keptType
		case err != nil:
			return nil, unknowableColumn(c, inSQL, stmt, unreadSQL(sqlErr), err)
		}
		col.Type = typ
		if inSQL {
			col.Comment = sc.comment
			col.Default = literalDefault(sc.def, typ)
		}
		t.Columns = append(t.Columns, col)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// keptType is the type of a column a table definition does not change:
// KindUnknown, which the output's comparison takes as held by whatever
// StarRocks has (schema.Holds) and never creates.
var keptType = schema.Type{Kind: schema.KindUnknown, Raw: "UNKNOWN"}

// sizedMySQLType reports the MySQL types whose StarRocks type depends on
// arguments Maxwell's def leaves out (a length, a precision and scale).
func sizedMySQLType(typ string) bool {
	switch strings.ToLower(typ) {
	case "char", "nchar", "varchar", "nvarchar", "binary", "varbinary", "decimal", "numeric", "dec", "fixed", "bit":
		return true
	}
	return false
}

// unreadSQL says why the statement gave no column, for messages.
func unreadSQL(err error) string {
	if err != nil {
		return fmt.Sprintf(" (its sql could not be read: %v)", err)
	}
	return ""
}

// unknowableColumn is the error of a column whose StarRocks type cannot be
// known: it names the column, what is missing and what to do.
func unknowableColumn(c maxwellColumn, inSQL bool, stmt sqlStatement, sqlNote string, cause error) error {
	where := "the event's sql does not define the column"
	switch {
	case inSQL:
		where = "as the event's sql defines it"
	case stmt.verb == "":
		where = "the event's sql is no CREATE TABLE or ALTER TABLE that defines it"
	}
	return fmt.Errorf("column %q: %v (%s%s); give the column its type in StarRocks yourself (CREATE TABLE, or ALTER TABLE … ADD or MODIFY COLUMN): the change is flagged rather than applied with a guessed type",
		c.Name, cause, where, sqlNote)
}

// unchanged reports whether old has the column c with the same type: an
// ALTER that does not define c left it as it was.
func unchanged(old *maxwellTable, c maxwellColumn) bool {
	for _, o := range old.Columns {
		if strings.EqualFold(o.Name, c.Name) {
			return strings.EqualFold(o.Type, c.Type)
		}
	}
	return false
}

// mysqlColumn is the MySQL type of a def column, completed from the
// statement's definition of it (sc, when inSQL). A definition without
// arguments takes MySQL's defaults (CHAR and BINARY are one long, DECIMAL
// is DECIMAL(10,0), BIT is BIT(1)); FLOAT(p) with p above 24 is a DOUBLE.
func mysqlColumn(c maxwellColumn, sc sqlColumn, inSQL bool) schema.MySQLColumn {
	m := schema.MySQLColumn{Type: strings.ToLower(c.Type), Values: c.EnumValues}
	if c.Signed != nil {
		m.Unsigned = !*c.Signed
	}
	if !inSQL {
		return m
	}
	if c.Signed == nil {
		m.Unsigned = sc.unsigned
	}
	if len(m.Values) == 0 {
		m.Values = sc.values
	}
	m.Args = sc.args
	if len(m.Args) == 0 {
		switch m.Type {
		case "char", "nchar", "binary", "bit":
			m.Args = []int{1}
		case "decimal", "numeric", "dec", "fixed":
			m.Args = []int{10, 0}
		}
	}
	if m.Type == "float" && len(m.Args) == 1 && m.Args[0] > 24 {
		m.Type = "double"
	}
	return m
}

// literalDefault keeps a literal DEFAULT the column's StarRocks type can
// take as written: any text for a text column, a number for a numeric one,
// a date or date-time that is not MySQL's zero date for a temporal one.
// Anything else is left out: the column is then created without a default
// rather than refused.
func literalDefault(def *string, t schema.Type) *string {
	if def == nil {
		return nil
	}
	v := *def
	switch {
	case t.Kind.IsString():
		return def
	case t.Kind.IsInteger() || t.Kind == schema.KindDecimal || t.Kind == schema.KindFloat ||
		t.Kind == schema.KindDouble || t.Kind == schema.KindBoolean:
		if isNumber(v) {
			return def
		}
	case t.Kind == schema.KindDate || t.Kind == schema.KindDateTime:
		if len(v) >= 10 && v[4] == '-' && v[7] == '-' && !strings.HasPrefix(v, "0000-00-00") &&
			allDigits(v[:4]) && allDigits(v[5:7]) && allDigits(v[8:10]) {
			return def
		}
	}
	return nil
}

// isNumber reports a plain decimal number: an optional minus, digits, an
// optional fraction.
func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	whole, frac, hasFrac := strings.Cut(s, ".")
	return allDigits(whole) && (!hasFrac || allDigits(frac))
}
