package store

import (
	"fmt"
	"strings"
)

type tokKind int

const (
	tokIdent  tokKind = iota // bare word (keyword or name)
	tokQuoted                // `name`
	tokString                // 'x' or "x"
	tokNumber
	tokPunct // ( ) , . = ;
	tokEOF
)

type token struct {
	kind tokKind
	text string // unquoted text for tokQuoted/tokString
	line int
	col  int
	off  int // byte offset of the token's first byte
	end  int // byte offset just past the token
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of statement"
	case tokQuoted:
		return "`" + t.text + "`"
	case tokString:
		return fmt.Sprintf("%q", t.text)
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

// is reports whether t is the bare keyword kw (case-insensitive).
func (t token) is(kw string) bool {
	return t.kind == tokIdent && strings.EqualFold(t.text, kw)
}

func (t token) isPunct(p string) bool { return t.kind == tokPunct && t.text == p }

// lexScript turns a script into tokens, dropping -- , # and /* */ comments. Statement text
// spans are kept so errors can quote the statement.
func lexScript(src string) ([]token, error) {
	var toks []token
	line, col := 1, 1
	i := 0
	adv := func(n int) {
		for k := 0; k < n && i < len(src); k++ {
			if src[i] == '\n' {
				line++
				col = 1
			} else {
				col++
			}
			i++
		}
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			adv(1)
		case c == '-' && i+1 < len(src) && src[i+1] == '-', c == '#':
			for i < len(src) && src[i] != '\n' {
				adv(1)
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			sl, sc := line, col
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("unterminated /* comment starting at line %d col %d", sl, sc)
			}
			adv(end + 4)
		case c == '`' || c == '\'' || c == '"':
			sl, sc, so := line, col, i
			q := c
			adv(1)
			var b strings.Builder
			closed := false
			for i < len(src) {
				ch := src[i]
				if ch == '\\' && q != '`' && i+1 < len(src) {
					nx := src[i+1]
					switch nx {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case '0':
						b.WriteByte(0)
					default:
						b.WriteByte(nx)
					}
					adv(2)
					continue
				}
				if ch == q {
					if i+1 < len(src) && src[i+1] == q { // doubled quote
						b.WriteByte(q)
						adv(2)
						continue
					}
					adv(1)
					closed = true
					break
				}
				b.WriteByte(ch)
				adv(1)
			}
			if !closed {
				return nil, fmt.Errorf("unterminated %c quote starting at line %d col %d", q, sl, sc)
			}
			k := tokString
			if q == '`' {
				k = tokQuoted
			}
			toks = append(toks, token{kind: k, text: b.String(), line: sl, col: sc, off: so, end: i})
		case c == '(' || c == ')' || c == ',' || c == '.' || c == '=' || c == ';':
			toks = append(toks, token{kind: tokPunct, text: string(c), line: line, col: col, off: i, end: i + 1})
			adv(1)
		case c >= '0' && c <= '9' || (c == '-' || c == '+') && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			sl, sc := line, col
			start := i
			adv(1)
			for i < len(src) && (src[i] >= '0' && src[i] <= '9' || src[i] == '.' || src[i] == 'e' || src[i] == 'E') {
				adv(1)
			}
			toks = append(toks, token{kind: tokNumber, text: src[start:i], line: sl, col: sc, off: start, end: i})
		case isIdentByte(c):
			sl, sc := line, col
			start := i
			for i < len(src) && isIdentByte(src[i]) {
				adv(1)
			}
			toks = append(toks, token{kind: tokIdent, text: src[start:i], line: sl, col: sc, off: start, end: i})
		default:
			// Any other symbol (e.g. <, >, +, *, :) is kept as punctuation; the parser rejects
			// it where it does not belong and skips it inside clauses it ignores.
			toks = append(toks, token{kind: tokPunct, text: string(c), line: line, col: col, off: i, end: i + 1})
			adv(1)
		}
	}
	return toks, nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// splitStatements splits tokens at top-level ';'. Empty statements are dropped.
func splitStatements(toks []token) [][]token {
	var out [][]token
	start := 0
	for i, t := range toks {
		if t.isPunct(";") {
			if i > start {
				out = append(out, toks[start:i])
			}
			start = i + 1
		}
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	return out
}
