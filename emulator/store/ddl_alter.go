package store

import (
	"fmt"
	"strings"
)

// ALTER TABLE [db.]t clause [, clause …], the column clauses of StarRocks's grammar
// (StarRocks.g4 addColumnClause, addColumnsClause, dropColumnClause, modifyColumnClause):
//
//	ADD COLUMN col_def [FIRST | AFTER col] [TO | IN rollup] [PROPERTIES (…)]
//	ADD COLUMN (col_def, …) [TO | IN rollup] [PROPERTIES (…)]
//	DROP COLUMN col [FROM | IN rollup] [PROPERTIES (…)]
//	MODIFY COLUMN col_def [FIRST | AFTER col] [FROM | IN rollup] [PROPERTIES (…)]
//
// There is no IF [NOT] EXISTS. The emulator has no rollups: a clause naming one is an
// error. What the clauses do is schemachange_plan.go.

// alterTableStmt is one ALTER TABLE statement's column clauses, in order.
type alterTableStmt struct {
	db, name string
	ops      []alterOp
}

// alterOpKind is the kind of a column clause.
type alterOpKind int

const (
	opAdd alterOpKind = iota
	opDrop
	opModify
)

// alterOp is one column of a column clause (ADD COLUMN (a, b) is two ops of one clause).
type alterOp struct {
	kind   alterOpKind
	col    *Column // ADD and MODIFY: the column definition
	drop   string  // DROP: the column's name
	after  string  // AFTER col
	first  bool    // FIRST
	clause int     // the clause's number in the statement, from 0
}

func (p *parser) alterTable() (ddlStmt, error) {
	db, name, err := p.qualifiedName("a table name")
	if err != nil {
		return nil, err
	}
	s := alterTableStmt{db: db, name: name}
	for clause := 0; ; clause++ {
		t := p.next()
		switch {
		case t.is("add"):
			if !p.accept("column") {
				return nil, fmt.Errorf("ALTER TABLE … ADD %s is not supported by the emulator: only ADD COLUMN, DROP COLUMN and MODIFY COLUMN are", strings.ToUpper(p.peek().text))
			}
			if p.acceptPunct("(") {
				for {
					c, err := p.columnDef()
					if err != nil {
						return nil, err
					}
					s.ops = append(s.ops, alterOp{kind: opAdd, col: &c, clause: clause})
					if p.acceptPunct(",") {
						continue
					}
					if err := p.expectPunct(")"); err != nil {
						return nil, err
					}
					break
				}
			} else {
				c, err := p.columnDef()
				if err != nil {
					return nil, err
				}
				op := alterOp{kind: opAdd, col: &c, clause: clause}
				if err := p.columnPosition(&op); err != nil {
					return nil, err
				}
				s.ops = append(s.ops, op)
			}
		case t.is("drop"):
			if !p.accept("column") {
				return nil, fmt.Errorf("ALTER TABLE … DROP %s is not supported by the emulator: only ADD COLUMN, DROP COLUMN and MODIFY COLUMN are", strings.ToUpper(p.peek().text))
			}
			col, err := p.ident("a column name")
			if err != nil {
				return nil, err
			}
			s.ops = append(s.ops, alterOp{kind: opDrop, drop: col, clause: clause})
		case t.is("modify"):
			if !p.accept("column") {
				return nil, fmt.Errorf("ALTER TABLE … MODIFY %s is not supported by the emulator: only ADD COLUMN, DROP COLUMN and MODIFY COLUMN are", strings.ToUpper(p.peek().text))
			}
			c, err := p.columnDef()
			if err != nil {
				return nil, err
			}
			op := alterOp{kind: opModify, col: &c, clause: clause}
			if err := p.columnPosition(&op); err != nil {
				return nil, err
			}
			s.ops = append(s.ops, op)
		default:
			if t.kind == tokEOF {
				return nil, p.errAt(t, "ADD COLUMN, DROP COLUMN or MODIFY COLUMN")
			}
			return nil, fmt.Errorf("ALTER TABLE … %s is not supported by the emulator: only ADD COLUMN, DROP COLUMN and MODIFY COLUMN are", strings.ToUpper(t.text))
		}
		if p.accept("to") || p.accept("from") || p.accept("in") {
			rollup, err := p.ident("a rollup name")
			if err != nil {
				return nil, err
			}
			// checkIndexExists: the emulator's tables have no rollup index.
			return nil, fmt.Errorf("Index[%s] does not exist in table[%s]", rollup, name)
		}
		if p.accept("properties") {
			if _, err := p.properties(); err != nil {
				return nil, err
			}
		}
		if p.acceptPunct(",") {
			continue
		}
		return s, p.done()
	}
}

// columnPosition reads an optional FIRST or AFTER col.
func (p *parser) columnPosition(op *alterOp) error {
	switch {
	case p.accept("first"):
		op.first = true
	case p.accept("after"):
		name, err := p.ident("a column name")
		if err != nil {
			return err
		}
		op.after = name
	}
	return nil
}
