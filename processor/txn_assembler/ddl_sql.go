// This file reads the column definitions of a MySQL CREATE TABLE or ALTER
// TABLE statement: what Maxwell's DDL events leave out of their table
// definition (lengths, precision and scale, unsigned; docs/notes/kafka-cdc.md
// §6) is taken from the statement in their sql field.
//
// Why not the SQL parser the emulator links (dolthub/vitess): it refuses
// statements MySQL runs and Maxwell forwards — `ALTER TABLE t ADD (a int
// unsigned, b int)` and `CREATE TABLE t2 (LIKE t1)` are syntax errors to it
// (checked against the version in go.mod) — and a refused statement would
// flag a schema change that only needs its columns' types. This reader
// takes the column definitions and skips everything else (indexes,
// constraints, table options), so a clause it does not know cannot stop it.

package txnassembler

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// sqlColumn is what a statement says of one column it defines.
type sqlColumn struct {
	name string
	// typ is the type name as written, lower case, with MySQL's multi-word
	// forms folded ("double precision" is "double", "character varying"
	// is "varchar").
	typ string
	// args are the numeric arguments (length; precision and scale), nil
	// when none are written; values are those of ENUM and SET.
	args     []int
	values   []string
	unsigned bool
	notNull  bool
	// def is the DEFAULT when it is a plain literal (a string or a number),
	// nil otherwise (none, NULL, an expression or a function).
	def     *string
	comment string
}

// sqlStatement is what a statement defines.
type sqlStatement struct {
	// verb is "create" or "alter", "" for any other statement.
	verb string
	// columns are the columns the statement defines (every column of a
	// CREATE TABLE, the ADDed, MODIFYed and CHANGEd ones of an ALTER
	// TABLE), by lower-case name.
	columns map[string]sqlColumn
}

// parseDDL reads the column definitions of a CREATE TABLE or ALTER TABLE
// statement in MySQL's syntax: quoted identifiers, comments (versioned
// ones are read as code), strings with either quote, several clauses. Any
// other statement defines no column. An error means the text could not be
// read (an unterminated string or comment, unbalanced parentheses).
func parseDDL(sql string) (sqlStatement, error) {
	toks, err := lexSQL(sql)
	if err != nil {
		return sqlStatement{}, err
	}
	p := &ddlParser{toks: toks}
	st := sqlStatement{columns: map[string]sqlColumn{}}
	switch {
	case p.acceptWord("create"):
		st.verb = "create"
		err = p.create(&st)
	case p.acceptWord("alter"):
		st.verb = "alter"
		err = p.alter(&st)
	}
	return st, err
}

// ddlParser walks the tokens of one statement.
type ddlParser struct {
	toks []token
	i    int
}

func (p *ddlParser) done() bool { return p.i >= len(p.toks) || p.isPunct(";") }

func (p *ddlParser) isWord(w string) bool {
	return p.i < len(p.toks) && p.toks[p.i].kind == tokWord && strings.EqualFold(p.toks[p.i].text, w)
}

func (p *ddlParser) isPunct(c string) bool {
	return p.i < len(p.toks) && p.toks[p.i].kind == tokPunct && p.toks[p.i].text == c
}

// acceptWord consumes the words ws when they come next, all of them.
func (p *ddlParser) acceptWord(ws ...string) bool {
	for k, w := range ws {
		j := p.i + k
		if j >= len(p.toks) || p.toks[j].kind != tokWord || !strings.EqualFold(p.toks[j].text, w) {
			return false
		}
	}
	p.i += len(ws)
	return true
}

func (p *ddlParser) acceptPunct(c string) bool {
	if p.isPunct(c) {
		p.i++
		return true
	}
	return false
}

// name reads an identifier, bare or quoted; ok is false when none comes.
func (p *ddlParser) name() (string, bool) {
	if p.i < len(p.toks) && (p.toks[p.i].kind == tokWord || p.toks[p.i].kind == tokIdent || p.toks[p.i].kind == tokString) {
		p.i++
		return p.toks[p.i-1].text, true
	}
	return "", false
}

// tableName reads [db.]table.
func (p *ddlParser) tableName() bool {
	if _, ok := p.name(); !ok {
		return false
	}
	if p.acceptPunct(".") {
		_, ok := p.name()
		return ok
	}
	return true
}

// skipItem skips to the next comma at the current nesting level, or to
// the closing parenthesis that ends it (which it does not consume).
func (p *ddlParser) skipItem() error {
	depth := 0
	for ; !p.done(); p.i++ {
		switch {
		case p.isPunct("("):
			depth++
		case p.isPunct(")"):
			if depth == 0 {
				return nil
			}
			depth--
		case p.isPunct(",") && depth == 0:
			return nil
		}
	}
	if depth != 0 {
		return errors.New("unbalanced parentheses")
	}
	return nil
}

// constraintWords start a table element that is not a column.
var constraintWords = map[string]bool{
	"key": true, "index": true, "primary": true, "unique": true, "constraint": true, "foreign": true,
	"fulltext": true, "spatial": true, "check": true, "period": true, "partition": true,
}

func (p *ddlParser) atConstraint() bool {
	if p.i >= len(p.toks) || p.toks[p.i].kind != tokWord {
		return false
	}
	w := strings.ToLower(p.toks[p.i].text)
	if w == "period" {
		// MariaDB's PERIOD FOR; "period" is not reserved, so it may also
		// be a column's name.
		return p.i+1 < len(p.toks) && p.toks[p.i+1].kind == tokWord && strings.EqualFold(p.toks[p.i+1].text, "for")
	}
	return constraintWords[w]
}

// create reads CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] name
// (definitions) …; CREATE TABLE … LIKE and … AS SELECT without
// definitions define no column here.
func (p *ddlParser) create(st *sqlStatement) error {
	p.acceptWord("or", "replace")
	p.acceptWord("temporary")
	if !p.acceptWord("table") {
		st.verb = ""
		return nil
	}
	p.acceptWord("if", "not", "exists")
	if !p.tableName() {
		return errors.New("CREATE TABLE without a table name")
	}
	if !p.acceptPunct("(") || p.isWord("like") {
		return nil
	}
	return p.definitions(st)
}

// definitions reads comma-separated table elements up to the closing
// parenthesis, keeping the columns.
func (p *ddlParser) definitions(st *sqlStatement) error {
	for !p.done() {
		if p.acceptPunct(")") {
			return nil
		}
		if p.acceptPunct(",") {
			continue
		}
		if p.atConstraint() {
			if err := p.skipItem(); err != nil {
				return err
			}
			continue
		}
		if err := p.column(st); err != nil {
			return err
		}
	}
	return errors.New("unbalanced parentheses")
}

// alter reads ALTER [ONLINE|IGNORE] TABLE name spec[, spec]….
func (p *ddlParser) alter(st *sqlStatement) error {
	p.acceptWord("online")
	p.acceptWord("offline")
	p.acceptWord("ignore")
	if !p.acceptWord("table") {
		st.verb = ""
		return nil
	}
	if !p.tableName() {
		return errors.New("ALTER TABLE without a table name")
	}
	for !p.done() {
		if p.acceptPunct(",") {
			continue
		}
		var err error
		switch {
		case p.acceptWord("add"):
			err = p.alterAdd(st)
		case p.acceptWord("modify"):
			p.acceptWord("column")
			p.acceptWord("if", "exists")
			err = p.column(st)
		case p.acceptWord("change"):
			p.acceptWord("column")
			p.acceptWord("if", "exists")
			if _, ok := p.name(); !ok {
				return errors.New("CHANGE without the column's old name")
			}
			err = p.column(st)
		default:
			err = p.skipItem()
		}
		if err != nil {
			return err
		}
		if p.acceptPunct(")") {
			return errors.New("unbalanced parentheses")
		}
	}
	return nil
}

// alterAdd reads what follows ADD: a column, a parenthesised list of
// columns, or an index or constraint (skipped).
func (p *ddlParser) alterAdd(st *sqlStatement) error {
	column := p.acceptWord("column")
	p.acceptWord("if", "not", "exists")
	switch {
	case !column && p.atConstraint():
		return p.skipItem()
	case p.acceptPunct("("):
		return p.definitions(st)
	}
	return p.column(st)
}

// column reads one column definition: its name, its type and the
// attributes this file keeps, up to the end of the definition (a comma or
// a closing parenthesis at its own level, not consumed).
func (p *ddlParser) column(st *sqlStatement) error {
	name, ok := p.name()
	if !ok {
		return p.skipItem()
	}
	c := sqlColumn{name: name}
	typ, ok := p.name()
	if !ok {
		return p.skipItem()
	}
	c.typ = strings.ToLower(typ)
	p.foldType(&c)
	if p.acceptPunct("(") {
		if err := p.typeArgs(&c); err != nil {
			return err
		}
	}
	if err := p.attributes(&c); err != nil {
		return err
	}
	st.columns[strings.ToLower(c.name)] = c
	return nil
}

// foldType folds MySQL's multi-word type names into one.
func (p *ddlParser) foldType(c *sqlColumn) {
	if c.typ == "national" {
		if w, ok := p.name(); ok {
			c.typ = strings.ToLower(w)
		}
	}
	switch c.typ {
	case "double":
		p.acceptWord("precision")
	case "character", "char", "nchar":
		if p.acceptWord("varying") {
			c.typ = "varchar"
		}
	case "long":
		switch {
		case p.acceptWord("varbinary"):
			c.typ = "mediumblob"
		case p.acceptWord("varchar"), p.acceptWord("char", "varying"), p.acceptWord("character", "varying"):
			c.typ = "mediumtext"
		default:
			c.typ = "mediumtext"
		}
	}
}

// maxTypeArg bounds a type's argument: MySQL's are far smaller (a length
// of at most 4294967295 for LONGTEXT, which takes none), and the mapping's
// arithmetic must not overflow.
const maxTypeArg = 1 << 30

// typeArgs reads the arguments of a type after its opening parenthesis:
// numbers, or the strings of ENUM and SET.
func (p *ddlParser) typeArgs(c *sqlColumn) error {
	c.args = []int{}
	for !p.done() {
		t := p.toks[p.i]
		p.i++
		switch {
		case t.kind == tokPunct && t.text == ")":
			return nil
		case t.kind == tokPunct && t.text == ",":
		case t.kind == tokNumber:
			n, err := strconv.Atoi(t.text)
			if err != nil || n > maxTypeArg {
				return fmt.Errorf("column %s: the type argument %q is not a whole number up to %d", c.name, t.text, maxTypeArg)
			}
			c.args = append(c.args, n)
		case t.kind == tokString:
			c.values = append(c.values, t.text)
		default:
			return fmt.Errorf("column %s: unexpected %q among the type's arguments", c.name, t.text)
		}
	}
	return errors.New("unbalanced parentheses")
}

// attributes reads the rest of a column definition, keeping UNSIGNED
// (ZEROFILL implies it), NOT NULL, a literal DEFAULT and COMMENT, and
// skipping the operands of the others (a CHARACTER SET, a COLLATE or an
// AFTER names something that could be read as an attribute).
func (p *ddlParser) attributes(c *sqlColumn) error {
	depth := 0
	for !p.done() {
		if depth == 0 && (p.isPunct(",") || p.isPunct(")")) {
			return nil
		}
		switch {
		case p.acceptPunct("("):
			depth++
			continue
		case p.acceptPunct(")"):
			depth--
			continue
		case depth > 0:
			p.i++
			continue
		case p.acceptWord("unsigned"), p.acceptWord("zerofill"):
			c.unsigned = true
		case p.acceptWord("signed"):
			c.unsigned = false
		case p.acceptWord("not", "null"):
			c.notNull = true
		case p.acceptWord("null"):
			c.notNull = false
		case p.acceptWord("default"):
			c.def = p.literal()
		case p.acceptWord("comment"):
			if p.i < len(p.toks) && p.toks[p.i].kind == tokString {
				c.comment = p.toks[p.i].text
				p.i++
			}
		case p.acceptWord("character", "set"), p.acceptWord("charset"), p.acceptWord("collate"), p.acceptWord("after"):
			p.acceptPunct("=")
			p.name()
		default:
			p.i++
		}
	}
	if depth != 0 {
		return errors.New("unbalanced parentheses")
	}
	return nil
}

// literal reads the operand of DEFAULT: a string (a charset introducer
// before it allowed), a number with its sign, TRUE or FALSE. Anything else
// (NULL, a function, an expression in parentheses) is no literal: nil,
// with only its first token consumed (parentheses are left to the caller).
func (p *ddlParser) literal() *string {
	if p.i >= len(p.toks) {
		return nil
	}
	t := p.toks[p.i]
	if t.kind == tokWord && strings.HasPrefix(t.text, "_") && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == tokString {
		p.i++
		t = p.toks[p.i]
	}
	sign := ""
	if t.kind == tokPunct && (t.text == "-" || t.text == "+") && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == tokNumber {
		if t.text == "-" {
			sign = "-"
		}
		p.i++
		t = p.toks[p.i]
	}
	switch {
	case t.kind == tokString:
		p.i++
		return &t.text
	case t.kind == tokNumber:
		p.i++
		v := sign + t.text
		return &v
	case t.kind == tokWord && strings.EqualFold(t.text, "true"):
		p.i++
		v := "1"
		return &v
	case t.kind == tokWord && strings.EqualFold(t.text, "false"):
		p.i++
		v := "0"
		return &v
	case t.kind == tokPunct && t.text == "(":
		return nil
	}
	p.i++
	return nil
}
