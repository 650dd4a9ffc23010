// Package jsonscan is a single-pass JSON scanner for the hot paths of CDC
// decoders. It validates a JSON text exactly as encoding/json does and, in the
// same pass, extracts the few top-level members a decoder needs, without
// decoding anything else.
//
// It never guesses. Every function answers OK (the text is valid and the
// result is exact), Invalid (encoding/json would reject the text too) or
// Unusual: something the scanner does not decide cheaply — an escaped or
// non-ASCII top-level key (encoding/json matches struct fields
// case-insensitively, with Unicode folding), a duplicate member, a key that
// differs from a wanted name only in case, nesting deeper than MaxDepth. The
// caller then decodes with encoding/json, which stays the reference: the
// differential fuzz tests of this package and of its callers check that OK
// results equal encoding/json's, and Invalid ones are rejected by it.
//
// A decoder for a new format (for example Debezium's envelope) declares its
// member names once with NewFields, scans each message with Fields.Scan and
// reads the returned Values; nested objects (Debezium's "source") can be
// scanned again with another Fields. Fields.ScanUnquote also decodes one
// string member in the same pass (a row sent as a JSON string), and
// Fields.ScanKeys hashes the top-level keys of one object member (a row:
// schema.KeysHash, what identifies a row's columns, ARCHITECTURE.md §14.1);
// ObjectKeys and ScanRow hash those of a row scanned on its own.
package jsonscan

import (
	"bytes"
	"unicode/utf8"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// Status is the outcome of a scan.
type Status uint8

const (
	// OK: the text is valid JSON and the result is exact.
	OK Status = iota
	// Invalid: the text is not valid JSON; encoding/json rejects it too.
	Invalid
	// Unusual: the scanner does not decide; decode with encoding/json.
	Unusual
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Invalid:
		return "invalid"
	}
	return "unusual"
}

// MaxDepth is the deepest nesting of objects and arrays the scanner follows;
// deeper texts are Unusual (encoding/json allows 10000 levels).
const MaxDepth = 64

// Kind is the type of a JSON value.
type Kind uint8

// Kinds of JSON values; KindNone marks an absent member.
const (
	KindNone Kind = iota
	KindNull
	KindTrue
	KindFalse
	KindNumber
	KindString
	KindObject
	KindArray
)

// Value is one scanned JSON value.
type Value struct {
	// Raw is the value's text exactly as written (what json.RawMessage would
	// hold); nil when the member is absent. It aliases the scanned bytes.
	Raw []byte
	// Off is where Raw starts in the scanned text.
	Off  int
	Kind Kind
	// Plain is set on a string without escapes whose bytes are all ASCII:
	// its decoded content is Raw[1:len(Raw)-1] verbatim.
	Plain bool
}

// Absent reports a member that is missing or null, the way the decoders of
// this project treat both.
func (v Value) Absent() bool { return v.Kind == KindNone || v.Kind == KindNull }

// Content returns a plain string's content without copying; ok is false for
// anything that is not a Plain string.
func (v Value) Content() ([]byte, bool) {
	if !v.Plain {
		return nil, false
	}
	return v.Raw[1 : len(v.Raw)-1], true
}

// Fields is the set of top-level member names one decoder extracts. It is
// immutable and safe for concurrent use.
type Fields struct {
	names []string
}

// NewFields declares the member names a decoder extracts; Scan fills its
// output in the same order. Names must be ASCII.
func NewFields(names ...string) *Fields {
	for _, n := range names {
		for i := 0; i < len(n); i++ {
			if n[i] >= utf8.RuneSelf {
				panic("jsonscan: member names must be ASCII: " + n)
			}
		}
	}
	return &Fields{names: append([]string(nil), names...)}
}

// Len is the number of declared names.
func (f *Fields) Len() int { return len(f.names) }

// Scan validates b, a JSON text whose value must be an object, and fills
// out[i] (len(out) >= f.Len()) with the value of the member named f's i-th
// name, or a zero Value when there is none. It is OK only when b is valid,
// its value is an object, every top-level key is ASCII without escapes, no
// wanted name occurs twice and no key equals a wanted name except in case:
// exactly then the result equals what encoding/json.Unmarshal gives for a
// struct with one json.RawMessage field per name.
func (f *Fields) Scan(b []byte, out []Value) Status {
	st, _ := f.scan(b, out, -1, nil, -1, nil)
	return st
}

// ScanKeys is Scan that also, when the member of f's member-th name is an
// object (a row), adds the names of its top-level keys to keys in the same
// pass: each unquoted, as written (a key written twice is added twice). On
// any status but OK, keys is unspecified.
func (f *Fields) ScanKeys(b []byte, out []Value, member int, keys *schema.KeysHash) Status {
	st, _ := f.scan(b, out, -1, nil, member, keys)
	return st
}

// scan is Scan; when the member of the unquote-th name is a string, it
// also appends its decoded content to dst (ScanUnquote), and when the
// member of the hash-th name is an object, it adds its keys to keys
// (ScanKeys).
func (f *Fields) scan(b []byte, out []Value, unquote int, dst []byte, hash int, keys *schema.KeysHash) (Status, []byte) {
	out = out[:len(f.names)]
	clear(out)
	s := scanner{b: b}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		// Not an object: left to encoding/json, which says what it is.
		return Unusual, dst
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		return s.end(), dst
	}
	for {
		if s.peek() != '"' {
			return Invalid, dst
		}
		keyStart := s.i
		st, plain := s.str()
		if st != OK {
			return st, dst
		}
		key := s.b[keyStart+1 : s.i-1]
		if !plain {
			// An escaped or non-ASCII key may still name a wanted field
			// (encoding/json unescapes and folds it).
			return Unusual, dst
		}
		slot := -1
		for n, name := range f.names {
			if len(name) != len(key) {
				continue
			}
			if string(key) == name {
				slot = n
				break
			}
			if equalFoldASCII(key, name) {
				return Unusual, dst
			}
		}
		s.ws()
		if s.peek() != ':' {
			return Invalid, dst
		}
		s.i++
		s.ws()
		valStart := s.i
		var kind Kind
		// slot is -1 for a key nobody asked for, as unquote is when Scan
		// decodes no member: compare only a wanted key's slot.
		switch {
		case slot >= 0 && slot == unquote && s.peek() == '"':
			kind = KindString
			st, dst = s.strAppend(dst)
		case slot >= 0 && slot == hash && s.peek() == '{':
			// A member's value is at depth 1, an object in it at 2.
			kind = KindObject
			st = s.object(2, keys)
		default:
			kind, st = s.value(1)
		}
		if st != OK {
			return st, dst
		}
		if slot >= 0 {
			if out[slot].Kind != KindNone {
				return Unusual, dst // a duplicate: encoding/json keeps the last
			}
			out[slot] = Value{Raw: s.b[valStart:s.i:s.i], Off: valStart, Kind: kind, Plain: kind == KindString && s.lastPlain}
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			return s.end(), dst
		default:
			return Invalid, dst
		}
	}
}

// ObjectKeys validates b as one JSON text, as Valid does, whose value must
// be an object, and returns the names of the object's top-level keys added
// to a KeysHash (see ScanKeys). A valid text whose value is not an object
// is Unusual.
func ObjectKeys(b []byte) (Status, schema.KeysHash) {
	var keys schema.KeysHash
	s := scanner{b: b}
	s.ws()
	if s.peek() != '{' {
		if _, st := s.value(0); st != OK {
			return st, keys
		}
		if st := s.end(); st != OK {
			return st, keys
		}
		return Unusual, keys
	}
	if st := s.object(1, &keys); st != OK {
		return st, keys
	}
	return s.end(), keys
}

// Valid reports whether b is one valid JSON text, as json.Valid does.
func Valid(b []byte) Status {
	s := scanner{b: b}
	s.ws()
	if _, st := s.value(0); st != OK {
		return st
	}
	return s.end()
}

// Row is what ScanRow learns about a JSON object row.
type Row struct {
	// Canonical is set when decoding the row with encoding/json (UseNumber,
	// into map[string]any) and encoding it back (SetEscapeHTML(false),
	// compact) reproduces it byte for byte: no whitespace, every object's
	// keys strictly ascending (so no duplicates), no string that holds an
	// escape or needs one.
	Canonical bool
	// Member is the top-level member ScanRow was asked for. It is reported
	// for canonical rows only (a non-canonical row may hold the key twice or
	// escaped); zero when absent.
	Member Value
	// Keys holds the names of the row's top-level keys, as ObjectKeys
	// adds them.
	Keys schema.KeysHash
}

// ScanRow validates b as one JSON text, reports whether it is in
// encoding/json's canonical form and finds its top-level member named key
// (ASCII). A valid text whose value is not an object is Unusual.
func ScanRow(b []byte, key string) (Status, Row) {
	s := scanner{b: b, canon: true}
	var row Row
	s.ws()
	if s.peek() != '{' {
		if _, st := s.value(0); st != OK {
			return st, row
		}
		if st := s.end(); st != OK {
			return st, row
		}
		return Unusual, row
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		st := s.end()
		row.Canonical = s.canon
		return st, row
	}
	var prev []byte
	for {
		if s.peek() != '"' {
			return Invalid, row
		}
		keyStart := s.i
		st, plain := s.str()
		if st != OK {
			return st, row
		}
		addKey(&row.Keys, s.b[keyStart:s.i], plain)
		k := s.b[keyStart+1 : s.i-1]
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			s.canon = false
		}
		prev = k
		s.ws()
		if s.peek() != ':' {
			return Invalid, row
		}
		s.i++
		s.ws()
		valStart := s.i
		kind, st := s.value(1)
		if st != OK {
			return st, row
		}
		if plain && string(k) == key {
			row.Member = Value{Raw: s.b[valStart:s.i:s.i], Off: valStart, Kind: kind, Plain: kind == KindString && s.lastPlain}
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			st := s.end()
			row.Canonical = s.canon && st == OK
			if !row.Canonical {
				row.Member = Value{}
			}
			return st, row
		default:
			return Invalid, row
		}
	}
}
