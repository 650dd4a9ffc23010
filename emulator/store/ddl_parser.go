package store

import (
	"fmt"
	"strconv"
	"strings"
)

// The DDL parser: a cursor over one statement's tokens and the small readers every statement
// uses (names, keywords, punctuation, PROPERTIES and parenthesised lists).

// parser walks the tokens of one statement.
type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	last := token{kind: tokEOF}
	if len(p.toks) > 0 {
		lt := p.toks[len(p.toks)-1]
		last.line, last.col = lt.line, lt.col+len(lt.text)
	}
	return last
}

func (p *parser) next() token {
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	}
	return t
}

func (p *parser) errAt(t token, want string) error {
	if t.kind == tokEOF {
		return fmt.Errorf("unexpected end of statement, expected %s", want)
	}
	return fmt.Errorf("unexpected token %s at line %d col %d, expected %s", t, t.line, t.col, want)
}

func (p *parser) accept(kw string) bool {
	if p.peek().is(kw) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) acceptPunct(s string) bool {
	if p.peek().isPunct(s) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(kw string) error {
	if t := p.next(); !t.is(kw) {
		return p.errAt(t, strings.ToUpper(kw))
	}
	return nil
}

func (p *parser) expectPunct(s string) error {
	if t := p.next(); !t.isPunct(s) {
		return p.errAt(t, fmt.Sprintf("%q", s))
	}
	return nil
}

func (p *parser) ident(what string) (string, error) {
	t := p.next()
	if t.kind == tokIdent || t.kind == tokQuoted {
		return t.text, nil
	}
	return "", p.errAt(t, what)
}

// qualifiedName reads [db.]name.
func (p *parser) qualifiedName(what string) (db, name string, err error) {
	first, err := p.ident(what)
	if err != nil {
		return "", "", err
	}
	if p.acceptPunct(".") {
		second, err := p.ident(what)
		if err != nil {
			return "", "", err
		}
		return first, second, nil
	}
	return "", first, nil
}

func (p *parser) done() error {
	if t := p.peek(); t.kind != tokEOF {
		return p.errAt(t, "end of statement")
	}
	return nil
}

// properties reads ("k" = "v", …).
func (p *parser) properties() ([][2]string, error) {
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	var out [][2]string
	if p.acceptPunct(")") {
		return out, nil
	}
	for {
		k := p.next()
		if k.kind != tokString && k.kind != tokIdent && k.kind != tokQuoted {
			return nil, p.errAt(k, "a property name")
		}
		if err := p.expectPunct("="); err != nil {
			return nil, err
		}
		v := p.next()
		if v.kind != tokString && v.kind != tokNumber && v.kind != tokIdent {
			return nil, p.errAt(v, "a property value")
		}
		out = append(out, [2]string{k.text, v.text})
		if p.acceptPunct(",") {
			continue
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		return out, nil
	}
}

// skipParens skips a balanced parenthesised group starting at the current token.
func (p *parser) skipParens() error {
	if err := p.expectPunct("("); err != nil {
		return err
	}
	depth := 1
	for depth > 0 {
		t := p.next()
		switch {
		case t.kind == tokEOF:
			return p.errAt(t, `")"`)
		case t.isPunct("("):
			depth++
		case t.isPunct(")"):
			depth--
		}
	}
	return nil
}

// nameList reads ( name, name … ).
func (p *parser) nameList(what string) ([]string, error) {
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	var out []string
	for {
		n, err := p.ident(what)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
		if p.acceptPunct(",") {
			continue
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		return out, nil
	}
}

// acceptOp consumes an operator of one or two symbols (=, <, >=, !=, <>) written without a
// space inside.
func (p *parser) acceptOp(op string) bool {
	if p.pos+len(op) > len(p.toks) {
		return false
	}
	for i := 0; i < len(op); i++ {
		t := p.toks[p.pos+i]
		if !t.isPunct(op[i:i+1]) || i > 0 && p.toks[p.pos+i-1].end != t.off {
			return false
		}
	}
	if n := p.pos + len(op); n < len(p.toks) && p.toks[n].kind == tokPunct && p.toks[n].off == p.toks[n-1].end &&
		strings.ContainsAny(p.toks[n].text, "=<>") {
		return false // a longer operator
	}
	p.pos += len(op)
	return true
}

// number reads a non-negative integer.
func (p *parser) number() (int, error) {
	t := p.next()
	n, err := strconv.Atoi(t.text)
	if t.kind != tokNumber || err != nil || n < 0 {
		return 0, p.errAt(t, "a number")
	}
	return n, nil
}
