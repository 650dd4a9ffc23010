package jsonscan

import (
	"bytes"
	"unicode/utf8"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// The scanner: one pass over a JSON text, the grammar of RFC 8259 as
// encoding/json accepts it, used by every scan of scan.go.

// scanner walks one JSON text. With canon set it also tracks whether the
// text is in encoding/json's canonical form.
type scanner struct {
	b     []byte
	i     int
	canon bool
	// lastPlain is set by str when the string it read was Plain.
	lastPlain bool
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// ws skips JSON whitespace (space, tab, newline, carriage return).
func (s *scanner) ws() {
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
			continue
		}
		break
	}
	if s.i != start {
		s.canon = false
	}
}

// end accepts trailing whitespace and nothing else.
func (s *scanner) end() Status {
	s.ws()
	if s.i != len(s.b) {
		return Invalid
	}
	return OK
}

// value reads one value at nesting depth depth.
func (s *scanner) value(depth int) (Kind, Status) {
	if s.i >= len(s.b) {
		return KindNone, Invalid
	}
	switch c := s.b[s.i]; c {
	case '"':
		st, _ := s.str()
		return KindString, st
	case '{':
		return KindObject, s.object(depth+1, nil)
	case '[':
		return KindArray, s.array(depth + 1)
	case 't':
		return KindTrue, s.lit("true")
	case 'f':
		return KindFalse, s.lit("false")
	case 'n':
		return KindNull, s.lit("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return KindNumber, s.number()
		}
	}
	return KindNone, Invalid
}

func (s *scanner) lit(word string) Status {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return Invalid
	}
	s.i += len(word)
	return OK
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() Status {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return Invalid
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return Invalid
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return Invalid
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	s.i = i
	return OK
}

// plainByte marks bytes a string may hold without escapes or further
// checks: printable ASCII other than the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string literal starting at the opening quote. plain is set
// when it holds neither escapes nor non-ASCII bytes.
func (s *scanner) str() (Status, bool) {
	b := s.b
	i := s.i + 1
	start := i
	escaped, nonASCII := false, false
	for {
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		if i >= len(b) {
			return Invalid, false
		}
		switch c := b[i]; {
		case c == '"':
			if s.canon && (escaped || (nonASCII && !canonicalUTF8(b[start:i]))) {
				s.canon = false
			}
			s.i = i + 1
			s.lastPlain = !escaped && !nonASCII
			return OK, s.lastPlain
		case c == '\\':
			escaped = true
			i++
			if i >= len(b) {
				return Invalid, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(b)-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return Invalid, false
				}
				i += 5
			default:
				return Invalid, false
			}
		case c < 0x20:
			return Invalid, false
		default:
			// encoding/json accepts any byte >= 0x80 in a string, even
			// invalid UTF-8 (it decodes it to U+FFFD).
			nonASCII = true
			i++
		}
	}
}

// canonicalUTF8 reports whether a string's non-ASCII content is left as is by
// encoding/json's encoder: valid UTF-8 without U+2028 and U+2029.
func canonicalUTF8(p []byte) bool {
	return utf8.Valid(p) && !bytes.Contains(p, []byte("\u2028")) && !bytes.Contains(p, []byte("\u2029"))
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// object reads an object at nesting depth depth; with keys set, it adds
// each of its own keys (not those of nested objects) to keys, unquoted, as
// written: a key that occurs twice is added twice.
func (s *scanner) object(depth int, keys *schema.KeysHash) Status {
	if depth > MaxDepth {
		return Unusual
	}
	s.i++ // {
	s.ws()
	if s.peek() == '}' {
		s.i++
		return OK
	}
	var prev []byte
	for {
		if s.peek() != '"' {
			return Invalid
		}
		keyStart := s.i
		st, plain := s.str()
		if st != OK {
			return st
		}
		if keys != nil {
			addKey(keys, s.b[keyStart:s.i], plain)
		}
		if s.canon {
			k := s.b[keyStart+1 : s.i-1]
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				s.canon = false
			}
			prev = k
		}
		s.ws()
		if s.peek() != ':' {
			return Invalid
		}
		s.i++
		s.ws()
		if _, st := s.value(depth); st != OK {
			return st
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			return OK
		default:
			return Invalid
		}
	}
}

func (s *scanner) array(depth int) Status {
	if depth > MaxDepth {
		return Unusual
	}
	s.i++ // [
	s.ws()
	if s.peek() == ']' {
		s.i++
		return OK
	}
	for {
		if _, st := s.value(depth); st != OK {
			return st
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case ']':
			s.i++
			return OK
		default:
			return Invalid
		}
	}
}

// addKey adds the key whose string literal (quotes included) is raw to
// keys; plain is what str said of it.
func addKey(keys *schema.KeysHash, raw []byte, plain bool) {
	if plain {
		keys.Add(raw[1 : len(raw)-1])
		return
	}
	addEscapedKey(keys, raw)
}

// addEscapedKey adds a key with escapes or non-ASCII bytes by its decoded
// name (AppendUnquoted), unquoted on the stack unless it is long.
func addEscapedKey(keys *schema.KeysHash, raw []byte) {
	var buf [128]byte
	keys.Add(AppendUnquoted(buf[:0], raw))
}

// equalFoldASCII reports whether the ASCII texts a and b are equal without
// regard to case.
func equalFoldASCII(a []byte, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
