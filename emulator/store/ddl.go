package store

import (
	"fmt"
	"strings"
)

// ddlStmt is one parsed DDL statement.
type ddlStmt interface{ ddl() }

type createDatabaseStmt struct {
	name        string
	ifNotExists bool
}

type createTableStmt struct {
	db, name    string // db empty: current database
	ifNotExists bool
	schema      *TableSchema
}

type dropTableStmt struct {
	db, name string
	ifExists bool
	force    bool
}

type dropDatabaseStmt struct {
	name     string
	ifExists bool
}

type useStmt struct{ name string }

type truncateTableStmt struct{ db, name string }

func (createDatabaseStmt) ddl() {}
func (createTableStmt) ddl()    {}
func (dropTableStmt) ddl()      {}
func (dropDatabaseStmt) ddl()   {}
func (useStmt) ddl()            {}
func (truncateTableStmt) ddl()  {}
func (alterTableStmt) ddl()     {}

// parseDDL parses one statement's tokens.
func parseDDL(toks []token) (ddlStmt, error) {
	p := &parser{toks: toks}
	t := p.next()
	switch {
	case t.is("create"):
		switch k := p.next(); {
		case k.is("database") || k.is("schema"):
			return p.createDatabase()
		case k.is("table"):
			return p.createTable()
		case k.is("external") || k.is("temporary") || k.is("materialized") || k.is("view") || k.is("index"):
			return nil, fmt.Errorf("CREATE %s is not supported by the emulator: only CREATE DATABASE and CREATE TABLE are", strings.ToUpper(k.text))
		default:
			return nil, p.errAt(k, "DATABASE or TABLE")
		}
	case t.is("drop"):
		switch k := p.next(); {
		case k.is("database") || k.is("schema"):
			s := dropDatabaseStmt{}
			if p.accept("if") {
				if err := p.expect("exists"); err != nil {
					return nil, err
				}
				s.ifExists = true
			}
			name, err := p.ident("a database name")
			if err != nil {
				return nil, err
			}
			s.name = name
			p.accept("force")
			return s, p.done()
		case k.is("table"):
			s := dropTableStmt{}
			if p.accept("if") {
				if err := p.expect("exists"); err != nil {
					return nil, err
				}
				s.ifExists = true
			}
			db, name, err := p.qualifiedName("a table name")
			if err != nil {
				return nil, err
			}
			s.db, s.name = db, name
			s.force = p.accept("force")
			return s, p.done()
		default:
			return nil, p.errAt(k, "DATABASE or TABLE")
		}
	case t.is("truncate"):
		p.accept("table")
		db, name, err := p.qualifiedName("a table name")
		if err != nil {
			return nil, err
		}
		return truncateTableStmt{db: db, name: name}, p.done()
	case t.is("alter"):
		if k := p.next(); !k.is("table") {
			return nil, fmt.Errorf("ALTER %s is not supported by the emulator: only ALTER TABLE … ADD / DROP / MODIFY COLUMN are", strings.ToUpper(k.text))
		}
		return p.alterTable()
	case t.is("use"):
		name, err := p.ident("a database name")
		if err != nil {
			return nil, err
		}
		return useStmt{name: name}, p.done()
	default:
		return nil, p.errAt(t, "CREATE DATABASE, CREATE TABLE, ALTER TABLE, DROP TABLE, DROP DATABASE, TRUNCATE TABLE or USE")
	}
}

func (p *parser) createDatabase() (ddlStmt, error) {
	s := createDatabaseStmt{}
	if p.accept("if") {
		if err := p.expect("not"); err != nil {
			return nil, err
		}
		if err := p.expect("exists"); err != nil {
			return nil, err
		}
		s.ifNotExists = true
	}
	name, err := p.ident("a database name")
	if err != nil {
		return nil, err
	}
	s.name = name
	if p.accept("properties") {
		if err := p.skipParens(); err != nil {
			return nil, err
		}
	}
	return s, p.done()
}
