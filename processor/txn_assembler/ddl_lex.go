// This file splits a MySQL statement into tokens for ddl_sql.go's parser:
// bare words, backquoted identifiers, strings with either quote, numbers and
// punctuation, with comments dropped and versioned comments read as code.

package txnassembler

import (
	"errors"
	"fmt"
	"strings"
)

// Tokens of a statement.
type tokKind uint8

const (
	tokWord   tokKind = iota // a bare word: a keyword or an identifier
	tokIdent                 // a backquoted identifier
	tokString                // a quoted string, unescaped
	tokNumber                // digits, with a fraction
	tokPunct                 // one other character
)

type token struct {
	kind tokKind
	text string
}

var errUnterminated = errors.New("unterminated")

// lexSQL splits a statement into tokens, dropping comments. A versioned
// comment (/*!50100 … */) holds code that MySQL runs: its text is read.
func lexSQL(s string) ([]token, error) {
	var out []token
	versioned := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || (c == '-' && strings.HasPrefix(s[i:], "--") && (i+2 == len(s) || isSQLSpace(s[i+2]))):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*!"):
			i += 3
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			versioned++
		case strings.HasPrefix(s[i:], "*/") && versioned > 0:
			i += 2
			versioned--
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%w comment at %d", errUnterminated, i)
			}
			i += 2 + end + 2
		case c == '`':
			var b strings.Builder
			j := i + 1
			for {
				k := strings.IndexByte(s[j:], '`')
				if k < 0 {
					return nil, fmt.Errorf("%w identifier at %d", errUnterminated, i)
				}
				b.WriteString(s[j : j+k])
				j += k + 1
				if j < len(s) && s[j] == '`' {
					b.WriteByte('`')
					j++
					continue
				}
				break
			}
			out = append(out, token{tokIdent, b.String()})
			i = j
		case c == '\'' || c == '"':
			text, next, err := lexString(s, i)
			if err != nil {
				return nil, err
			}
			out = append(out, token{tokString, text})
			i = next
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			kind := tokWord
			if allDigits(s[i:j]) {
				kind = tokNumber
				if j+1 < len(s) && s[j] == '.' && s[j+1] >= '0' && s[j+1] <= '9' {
					j++
					for j < len(s) && s[j] >= '0' && s[j] <= '9' {
						j++
					}
				}
			}
			out = append(out, token{kind, s[i:j]})
			i = j
		case c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' && (len(out) == 0 || out[len(out)-1].kind == tokPunct):
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			out = append(out, token{tokNumber, "0" + s[i:j]})
			i = j
		default:
			out = append(out, token{tokPunct, s[i : i+1]})
			i++
		}
	}
	return out, nil
}

// lexString reads the string literal starting at s[i] (either quote):
// backslash escapes and a doubled quote, as MySQL reads them by default.
func lexString(s string, i int) (string, int, error) {
	q := s[i]
	var b strings.Builder
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '\\' && j+1 < len(s):
			j++
			switch e := s[j]; e {
			case '0':
				b.WriteByte(0)
			case 'b':
				b.WriteByte('\b')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'Z':
				b.WriteByte(26)
			case '%', '_':
				// Kept with their backslash, as MySQL does.
				b.WriteByte('\\')
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
		case c == q && j+1 < len(s) && s[j+1] == q:
			b.WriteByte(q)
			j++
		case c == q:
			return b.String(), j + 1, nil
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("%w string at %d", errUnterminated, i)
}

func isSQLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// isWordByte: the bytes of an unquoted identifier (non-ASCII included).
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
