package store

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// A small validating JSON scanner over a byte slice. It never builds generic values: rows
// are converted straight from the value spans, which keeps Parse cheap.

type jkind byte

const (
	jNull jkind = iota
	jFalse
	jTrue
	jNumber
	jString
	jObject
	jArray
)

var jkindNames = [...]string{"null", "false", "true", "number", "string", "object", "array"}

type jscan struct {
	b []byte
	i int
}

type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

func (s *jscan) fail(msg string) error { return &syntaxError{off: s.i, msg: msg} }

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value starting at the current position (whitespace skipped), returning its
// kind and span [start, end). For strings, esc reports whether the string has escapes.
func (s *jscan) value() (k jkind, start, end int, esc bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return 0, 0, 0, false, s.fail("unexpected end of JSON input")
	}
	start = s.i
	switch c := s.b[s.i]; {
	case c == '{':
		err = s.skipComposite('{', '}')
		k = jObject
	case c == '[':
		err = s.skipComposite('[', ']')
		k = jArray
	case c == '"':
		esc, err = s.str()
		k = jString
	case c == '-' || c >= '0' && c <= '9':
		err = s.number()
		k = jNumber
	case c == 't':
		err = s.lit("true")
		k = jTrue
	case c == 'f':
		err = s.lit("false")
		k = jFalse
	case c == 'n':
		err = s.lit("null")
		k = jNull
	default:
		err = s.fail(fmt.Sprintf("invalid character %q looking for beginning of value", c))
	}
	return k, start, s.i, esc, err
}

func (s *jscan) lit(w string) error {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return nil
	}
	return s.fail("invalid literal")
}

func (s *jscan) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return s.fail("invalid number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return s.fail("invalid number")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return s.fail("invalid number")
		}
	}
	return nil
}

// strSpecial marks the bytes that end the fast scan of a string body.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str scans a string starting at the opening quote.
func (s *jscan) str() (esc bool, err error) {
	s.i++
	b := s.b
	for {
		i := s.i
		for i < len(b) && !strSpecial[b[i]] {
			i++
		}
		s.i = i
		if i >= len(b) {
			return esc, s.fail("unexpected end of JSON input")
		}
		switch c := b[i]; {
		case c == '"':
			s.i++
			return esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return esc, s.fail("unexpected end of JSON input")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if i+6 > len(b) {
					return esc, s.fail("invalid \\u escape")
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return esc, s.fail("invalid \\u escape")
					}
				}
				s.i += 6
			default:
				return esc, s.fail("invalid escape")
			}
		default:
			return esc, s.fail("control character in string")
		}
	}
}

func (s *jscan) skipComposite(open, close byte) error {
	s.i++ // open
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == close {
		s.i++
		return nil
	}
	for {
		if open == '{' {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				return s.fail("expected object key")
			}
			if _, err := s.str(); err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return s.fail("expected ':' after object key")
			}
			s.i++
		}
		if _, _, _, _, err := s.value(); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return s.fail("unexpected end of JSON input")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case close:
			s.i++
			return nil
		default:
			return s.fail(fmt.Sprintf("invalid character %q after %s element", s.b[s.i], map[byte]string{'{': "object", '[': "array"}[open]))
		}
	}
}

// objectIter iterates the members of the object whose span is b.
type objectIter struct {
	s     jscan
	first bool
}

func newObjectIter(b []byte) objectIter { return objectIter{s: jscan{b: b, i: 1}, first: true} }

// next returns the next key span (without quotes) and value; ok=false at the end. The object
// was already validated, so errors only guard against misuse.
func (it *objectIter) next() (key []byte, keyEsc bool, k jkind, vs, ve int, vesc bool, ok bool) {
	s := &it.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] == '}' {
		return nil, false, 0, 0, 0, false, false
	}
	if !it.first && s.b[s.i] == ',' {
		s.i++
		s.ws()
	}
	it.first = false
	ks := s.i
	keyEsc, _ = s.str()
	key = s.b[ks+1 : s.i-1]
	s.ws()
	s.i++ // ':'
	k, vs, ve, vesc, _ = s.value()
	return key, keyEsc, k, vs, ve, vesc, true
}

// arrayIter iterates the elements of the array whose span is b.
type arrayIter struct {
	s     jscan
	first bool
}

func newArrayIter(b []byte) arrayIter { return arrayIter{s: jscan{b: b, i: 1}, first: true} }

func (it *arrayIter) next() (k jkind, vs, ve int, vesc bool, ok bool) {
	s := &it.s
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] == ']' {
		return 0, 0, 0, false, false
	}
	if !it.first && s.b[s.i] == ',' {
		s.i++
	}
	it.first = false
	k, vs, ve, vesc, _ = s.value()
	return k, vs, ve, vesc, true
}

// unquote decodes a JSON string span including its quotes.
func unquote(b []byte, esc bool) (string, error) {
	if !esc {
		return string(b[1 : len(b)-1]), nil
	}
	out := make([]byte, 0, len(b))
	for i := 1; i < len(b)-1; i++ {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch b[i] {
		case '"', '\\', '/':
			out = append(out, b[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 32)
			if err != nil {
				return "", errors.New("invalid \\u escape")
			}
			i += 4
			ru := rune(r)
			if ru >= 0xD800 && ru < 0xDC00 && i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
				r2, err := strconv.ParseUint(string(b[i+3:i+7]), 16, 32)
				if err == nil && r2 >= 0xDC00 && r2 < 0xE000 {
					ru = (ru-0xD800)<<10 + (rune(r2) - 0xDC00) + 0x10000
					i += 6
				}
			}
			out = utf8.AppendRune(out, ru)
		}
	}
	return string(out), nil
}
