package schema

import (
	"fmt"
	"sort"
	"strings"
)

// The DDL the output sends (docs/notes/starrocks-protocol.md §11.5, §11.7):
// every identifier backquoted and checked, every literal double-quoted and
// escaped, so no name or value from a source reaches SQL unchecked.

// checkIdent refuses a name that backquotes cannot hold.
func checkIdent(what, name string) error {
	if name == "" {
		return fmt.Errorf("the %s name is empty", what)
	}
	if strings.ContainsAny(name, "`\x00\n\r") {
		return fmt.Errorf("the %s name %q has a backquote or a control character, which the project does not put into SQL", what, name)
	}
	return nil
}

// Ident returns name backquoted, after checkIdent.
func Ident(what, name string) (string, error) {
	if err := checkIdent(what, name); err != nil {
		return "", err
	}
	return "`" + name + "`", nil
}

// literal double-quotes s for SQL.
func literal(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// columnDef renders one column definition.
func columnDef(c Column, notNull bool) (string, error) {
	name, err := Ident("column", c.Name)
	if err != nil {
		return "", err
	}
	if c.Type.Kind == KindUnknown {
		return "", fmt.Errorf("column %s: the type %q is not one the project can create", c.Name, c.Type.Raw)
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte(' ')
	b.WriteString(c.Type.String())
	if notNull || !c.Nullable {
		b.WriteString(" NOT NULL")
	} else {
		b.WriteString(" NULL")
	}
	if c.Default != nil {
		b.WriteString(" DEFAULT ")
		b.WriteString(literal(*c.Default))
	}
	if c.Comment != "" {
		b.WriteString(" COMMENT ")
		b.WriteString(literal(c.Comment))
	}
	return b.String(), nil
}

// qualified returns `db`.`table`.
func qualified(db, table string) (string, error) {
	d, err := Ident("database", db)
	if err != nil {
		return "", err
	}
	t, err := Ident("table", table)
	if err != nil {
		return "", err
	}
	return d + "." + t, nil
}

// KeyTextLen is the length of a text key column whose source gives none.
const KeyTextLen = 255

// CreateTableSQL renders CREATE TABLE IF NOT EXISTS for a PRIMARY KEY table
// (ARCHITECTURE.md §14.3): the key columns first, in key order and NOT NULL
// (StarRocks wants them so), then the others in the source's order;
// DISTRIBUTED BY HASH of the key; properties sorted by name. A table without
// a key is refused: the output creates only PRIMARY KEY tables, the one
// model on which a replayed row and a delete mean what they meant at the
// source.
func CreateTableSQL(db, name string, t *Table, properties map[string]string) (string, error) {
	if err := t.Validate(); err != nil {
		return "", fmt.Errorf("table %s.%s: %w", db, name, err)
	}
	if len(t.Key) == 0 {
		return "", fmt.Errorf("table %s.%s: the source gives no primary key, and the output creates only PRIMARY KEY tables", db, name)
	}
	q, err := qualified(db, name)
	if err != nil {
		return "", err
	}
	var defs, keys []string
	for _, k := range t.Key {
		c, _ := t.Column(k)
		if c.Type.Kind == KindVarchar && c.Type.Len == 0 {
			// A key of unknown length: StarRocks bounds a primary key's
			// encoded length, so not the 65533 bytes of a value column.
			c.Type.Len = KeyTextLen
		}
		d, err := columnDef(c, true)
		if err != nil {
			return "", fmt.Errorf("table %s.%s: %w", db, name, err)
		}
		defs = append(defs, d)
		kq, _ := Ident("column", c.Name)
		keys = append(keys, kq)
	}
	for _, c := range t.Columns {
		if t.IsKey(c.Name) {
			continue
		}
		c.Nullable = true
		d, err := columnDef(c, false)
		if err != nil {
			return "", fmt.Errorf("table %s.%s: %w", db, name, err)
		}
		defs = append(defs, d)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n  %s\n) ENGINE=OLAP\nPRIMARY KEY(%s)\nDISTRIBUTED BY HASH(%s)",
		q, strings.Join(defs, ",\n  "), strings.Join(keys, ", "), strings.Join(keys, ", "))
	if len(properties) > 0 {
		names := make([]string, 0, len(properties))
		for k := range properties {
			names = append(names, k)
		}
		sort.Strings(names)
		props := make([]string, len(names))
		for i, k := range names {
			props[i] = literal(k) + " = " + literal(properties[k])
		}
		fmt.Fprintf(&b, "\nPROPERTIES (%s)", strings.Join(props, ", "))
	}
	return b.String(), nil
}

// AddColumnsSQL renders one ALTER TABLE … ADD COLUMN (…) for every column:
// one schema-change job (docs/notes/starrocks-protocol.md §11.2). Added
// columns are nullable.
func AddColumnsSQL(db, table string, cols []Column) (string, error) {
	if len(cols) == 0 {
		return "", fmt.Errorf("no column to add to %s.%s", db, table)
	}
	q, err := qualified(db, table)
	if err != nil {
		return "", err
	}
	defs := make([]string, len(cols))
	for i, c := range cols {
		c.Nullable = true
		if defs[i], err = columnDef(c, false); err != nil {
			return "", fmt.Errorf("table %s.%s: %w", db, table, err)
		}
	}
	return fmt.Sprintf("ALTER TABLE %s ADD COLUMN (%s)", q, strings.Join(defs, ", ")), nil
}

// ModifyColumnSQL renders ALTER TABLE … MODIFY COLUMN for one column, with
// its full definition: the new type and the column's own nullability,
// default and comment, which StarRocks wants restated unchanged.
func ModifyColumnSQL(db, table string, c Column) (string, error) {
	q, err := qualified(db, table)
	if err != nil {
		return "", err
	}
	def, err := columnDef(c, false)
	if err != nil {
		return "", fmt.Errorf("table %s.%s: %w", db, table, err)
	}
	return fmt.Sprintf("ALTER TABLE %s MODIFY COLUMN %s", q, def), nil
}

// CreateDatabaseSQL renders CREATE DATABASE IF NOT EXISTS.
func CreateDatabaseSQL(db string) (string, error) {
	d, err := Ident("database", db)
	if err != nil {
		return "", err
	}
	return "CREATE DATABASE IF NOT EXISTS " + d, nil
}
