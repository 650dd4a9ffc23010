package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// AppendUnquoted appends the decoded content of raw, a string literal that a
// scan accepted (quotes included), to dst, exactly as encoding/json decodes a
// JSON string into a Go string: escapes resolved, surrogate pairs joined, a
// lone surrogate and every byte of invalid UTF-8 replaced by U+FFFD. The
// result is undefined for text that no scan accepted as a string.
func AppendUnquoted(dst, raw []byte) []byte {
	s := raw[1 : len(raw)-1]
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			r++
			if e, ok := simpleEscape(s[r]); ok {
				dst = append(dst, e)
				r++
				continue
			}
			dst, r = appendUnicodeEscape(dst, s, r) // \u
		case c < utf8.RuneSelf:
			// Copy the run of plain ASCII at once.
			start := r
			for r < len(s) && s[r] < utf8.RuneSelf && s[r] != '\\' {
				r++
			}
			dst = append(dst, s[start:r]...)
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			dst = utf8.AppendRune(dst, rr)
		}
	}
	return dst
}

// String returns the decoded content of a string Value (see AppendUnquoted);
// a Plain one costs a single copy.
func (v Value) String() string {
	if v.Kind != KindString {
		return ""
	}
	if v.Plain {
		return string(v.Raw[1 : len(v.Raw)-1])
	}
	return string(AppendUnquoted(make([]byte, 0, len(v.Raw)), v.Raw))
}

func isHex4(p []byte) bool {
	return isHex(p[0]) && isHex(p[1]) && isHex(p[2]) && isHex(p[3])
}

func hex4(p []byte) rune {
	var r rune
	for _, c := range p {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// ScanUnquote is Scan that also decodes, in the same pass, the member of
// f's unquote-th name when it is a string: its content is appended to dst
// as AppendUnquoted appends it, and the extended dst returned (dst as
// given when the member is absent or not a string). On any status but OK,
// what was appended is unspecified.
func (f *Fields) ScanUnquote(b []byte, out []Value, unquote int, dst []byte) (Status, []byte) {
	return f.scan(b, out, unquote, dst, -1, nil)
}

// ScanUnquoteKeys is ScanUnquote and ScanKeys of one member at once: a row
// sent either as a JSON string (decoded into dst) or as an object (its
// keys added to keys).
func (f *Fields) ScanUnquoteKeys(b []byte, out []Value, member int, dst []byte, keys *schema.KeysHash) (Status, []byte) {
	return f.scan(b, out, member, dst, member, keys)
}

// strAppend is str, outside canonical tracking, that also appends the
// string's decoded content to dst as AppendUnquoted does. A multi-byte
// sequence is decoded from the text on: it cannot run past the closing
// quote (a quote, a backslash or any ASCII byte ends a sequence), so it
// decodes as within the content alone.
func (s *scanner) strAppend(dst []byte) (Status, []byte) {
	b := s.b
	i := s.i + 1
	escaped, nonASCII := false, false
	for {
		run := i
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		dst = append(dst, b[run:i]...)
		if i >= len(b) {
			return Invalid, dst
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			s.lastPlain = !escaped && !nonASCII
			return OK, dst
		case c == '\\':
			escaped = true
			i++
			if i >= len(b) {
				return Invalid, dst
			}
			if e, ok := simpleEscape(b[i]); ok {
				dst = append(dst, e)
				i++
				continue
			}
			if b[i] != 'u' || len(b)-i < 5 || !isHex4(b[i+1:i+5]) {
				return Invalid, dst
			}
			dst, i = appendUnicodeEscape(dst, b, i)
		case c < 0x20:
			return Invalid, dst
		default:
			// Any byte >= 0x80 is accepted, invalid UTF-8 decoding to
			// U+FFFD, as in str and AppendUnquoted.
			nonASCII = true
			rr, size := utf8.DecodeRune(b[i:])
			i += size
			dst = utf8.AppendRune(dst, rr)
		}
	}
}

// simpleEscape decodes the escape whose letter (after the backslash) is c,
// for every escape but \u; ok is false for anything else.
func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// appendUnicodeEscape appends the character of the \u escape whose 'u' is
// at s[i], its four hex digits checked already, and returns where the text
// goes on: a surrogate joins the \u escape that follows when the two make a
// pair, and a lone one decodes to U+FFFD, as in encoding/json.
func appendUnicodeEscape(dst, s []byte, i int) ([]byte, int) {
	rr := hex4(s[i+1 : i+5])
	i += 5
	if utf16.IsSurrogate(rr) {
		if len(s)-i >= 6 && s[i] == '\\' && s[i+1] == 'u' && isHex4(s[i+2:i+6]) {
			if dec := utf16.DecodeRune(rr, hex4(s[i+2:i+6])); dec != utf8.RuneError {
				return utf8.AppendRune(dst, dec), i + 6
			}
		}
		rr = utf8.RuneError
	}
	return utf8.AppendRune(dst, rr), i
}
