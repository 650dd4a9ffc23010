package store

import (
	"bytes"
	"fmt"
	"strings"
	"unsafe"
)

func (b *rowBuilder) parseJSON(body []byte) (*Parsed, error) {
	s := jscan{b: body}
	slow := b.p.JSONRoot != "" || b.paths != nil
	for {
		s.ws()
		if s.i >= len(body) {
			break
		}
		if !slow {
			// Fast path: rows are converted while the document is scanned, once.
			c := body[s.i]
			if b.p.StripOuterArray && c == '[' {
				if err := b.streamArray(&s); err != nil {
					return nil, fmt.Errorf("failed to parse JSON body: %w", err)
				}
				continue
			}
			if !b.p.StripOuterArray && c == '{' {
				if err := b.streamObject(&s); err != nil {
					return nil, fmt.Errorf("failed to parse JSON body: %w", err)
				}
				continue
			}
		}
		k, st, en, _, err := s.value()
		if err != nil {
			return nil, fmt.Errorf("failed to parse JSON body: %w", err)
		}
		doc := body[st:en]
		if b.p.JSONRoot != "" {
			pe, err := compilePath(b.p.JSONRoot)
			if err != nil {
				return nil, err
			}
			rk, rs, re, ok := lookupPath(doc, k, pe)
			if !ok {
				b.startRow()
				b.rowError("JSON root %s not found", b.p.JSONRoot)
				b.finishRow(func() string { return string(doc) })
				continue
			}
			k, doc = rk, doc[rs:re]
		}
		b.document(k, doc)
	}
	return b.res, nil
}

// streamArray converts the rows of a top-level array while scanning it.
func (b *rowBuilder) streamArray(s *jscan) error {
	start := s.i
	s.i++ // [
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for first := true; ; first = false {
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '{' {
			if err := b.streamObject(s); err != nil {
				return err
			}
		} else {
			k, st, en, _, err := s.value()
			if err != nil {
				return err
			}
			b.jsonRow(k, s.b[st:en])
		}
		if first {
			b.reserveRows(len(s.b)-start, s.i-start)
		}
		s.ws()
		if s.i >= len(s.b) {
			return s.fail("unexpected end of JSON input")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.fail(fmt.Sprintf("invalid character %q after array element", s.b[s.i]))
		}
	}
}

// maxReservedRows bounds what reserveRows makes room for.
const maxReservedRows = 1 << 17

// reserveRows makes room for the rows of an array of size bytes whose first
// element took first bytes, rows of about the same size: the result grows
// once, not in doublings that copy it over and over.
func (b *rowBuilder) reserveRows(size, first int) {
	if first <= 0 {
		return
	}
	// Bounded: a small first element of a big body must not reserve a
	// huge result (beyond it, append doubles as usual). size/16 rows keep
	// the reservation within about 4 × the body's bytes (a Row is 64 B),
	// which matters as a table's first load keeps its rows until commit.
	want := min(size/first+size/first/8, size/16, maxReservedRows)
	if rows := b.res.Rows; cap(rows) < want {
		b.res.Rows = append(make([]Row, 0, want), rows...)
	}
}

// streamObject converts one object row while scanning it.
func (b *rowBuilder) streamObject(s *jscan) error {
	st := s.i
	s.i++ // {
	b.startRow()
	member := 0
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
	} else {
		for {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				return s.fail("expected object key")
			}
			ks := s.i
			kesc, err := s.str()
			if err != nil {
				return err
			}
			key := s.b[ks+1 : s.i-1]
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return s.fail("expected ':' after object key")
			}
			s.i++
			vk, vs, ve, vesc, err := s.value()
			if err != nil {
				return err
			}
			var ci int
			if member < len(b.keyMemo) && !kesc && b.keyMemo[member].key == string(key) {
				ci = b.keyMemo[member].ci
			} else {
				ci = b.keyColumn(key, kesc)
				if !kesc {
					m := keyMemo{key: string(key), ci: ci}
					if member < len(b.keyMemo) {
						b.keyMemo[member] = m
					} else if member == len(b.keyMemo) {
						b.keyMemo = append(b.keyMemo, m)
					}
				}
			}
			member++
			if ci != targetSkip {
				b.jsonValue(ci, vk, s.b[vs:ve], vesc)
			}
			s.ws()
			if s.i >= len(s.b) {
				return s.fail("unexpected end of JSON input")
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.b[s.i] == '}' {
				s.i++
				break
			}
			return s.fail(fmt.Sprintf("invalid character %q after object key:value pair", s.b[s.i]))
		}
	}
	end := s.i
	if b.derived != nil {
		b.applyDerived(b.jsonField(s.b[st:end]))
	}
	b.finishRow(func() string { return string(s.b[st:end]) })
	return nil
}

func (b *rowBuilder) document(k jkind, doc []byte) {
	if b.p.StripOuterArray {
		if k != jArray {
			b.startRow()
			b.rowError("JSON data is an object, strip_outer_array must be set false")
			b.finishRow(func() string { return string(doc) })
			return
		}
		it := newArrayIter(doc)
		for {
			ek, es, ee, _, ok := it.next()
			if !ok {
				return
			}
			b.jsonRow(ek, doc[es:ee])
		}
	}
	if k == jArray {
		b.startRow()
		b.rowError("JSON data is an array, strip_outer_array must be set true")
		b.finishRow(func() string { return string(doc) })
		return
	}
	b.jsonRow(k, doc)
}

func (b *rowBuilder) jsonRow(k jkind, raw []byte) {
	b.startRow()
	rowText := func() string { return string(raw) }
	if k != jObject {
		b.rowError("JSON row is a %s, not an object", jkindNames[k])
		b.finishRow(rowText)
		return
	}
	if b.paths != nil {
		for i, pe := range b.paths {
			vk, vs, ve, ok := lookupPath(raw, jObject, pe)
			if !ok {
				continue
			}
			b.jsonValue(b.targets[i], vk, raw[vs:ve], bytes.IndexByte(raw[vs:ve], '\\') >= 0)
		}
		if b.derived != nil {
			b.applyDerived(func(i int) (string, bool) {
				if i < 0 || i >= len(b.paths) {
					return "", false
				}
				vk, vs, ve, ok := lookupPath(raw, jObject, b.paths[i])
				if !ok {
					return "", false
				}
				return jsonText(vk, raw[vs:ve])
			})
		}
		b.finishRow(rowText)
		return
	}
	it := newObjectIter(raw)
	for {
		key, kesc, vk, vs, ve, vesc, ok := it.next()
		if !ok {
			break
		}
		ci := b.keyColumn(key, kesc)
		if ci == targetSkip {
			continue
		}
		b.jsonValue(ci, vk, raw[vs:ve], vesc)
	}
	if b.derived != nil {
		b.applyDerived(b.jsonField(raw))
	}
	b.finishRow(rowText)
}

// jsonField gives mapping expressions the source fields of a JSON row: the value of the key
// each plain columns entry names, as text (a string unquoted, null as \N).
func (b *rowBuilder) jsonField(obj []byte) func(i int) (string, bool) {
	return func(i int) (string, bool) {
		if i < 0 || i >= len(b.plain) {
			return "", false
		}
		vk, vs, ve, ok := lookupPath(obj, jObject, []pathElem{{key: b.plain[i], index: -1}})
		if !ok {
			return "", false
		}
		return jsonText(vk, obj[vs:ve])
	}
}

// jsonText is a JSON value as load text: a string unquoted, null as \N, others as written.
func jsonText(k jkind, v []byte) (string, bool) {
	switch k {
	case jNull:
		return `\N`, true
	case jString:
		s, err := unquote(v, bytes.IndexByte(v, '\\') >= 0)
		return s, err == nil
	}
	return string(v), true
}

// keyColumn maps a JSON key to a column index, targetOp or targetSkip: by its exact name,
// as the BE's JSON reader does (a key "Coupon" is no source field of a column "coupon").
func (b *rowBuilder) keyColumn(key []byte, esc bool) int {
	if esc {
		s, err := unquote(append(append([]byte{'"'}, key...), '"'), true)
		if err != nil {
			return targetSkip
		}
		key = []byte(s)
	}
	ci, ok := b.sources[string(key)]
	if !ok {
		return targetSkip
	}
	if ci >= 0 && b.allowed != nil && !b.allowed[ci] {
		return targetSkip
	}
	return ci
}

// jsonValue converts one JSON value into target column ci.
func (b *rowBuilder) jsonValue(ci int, k jkind, raw []byte, esc bool) {
	if ci == targetSkip {
		return
	}
	if ci == targetOp {
		switch k {
		case jNull:
			// a null __op is treated like a missing one: upsert
		case jNumber:
			b.setOp(string(raw))
		case jString:
			s, _ := unquote(raw, esc)
			b.setOp(s)
		default:
			b.setOp(string(raw))
		}
		return
	}
	if b.seen[ci] {
		return
	}
	c := &b.sc.Columns[ci]
	rawText := func() string { return string(raw) }
	if k == jNull {
		b.setValue(ci, nil, nil, rawText)
		return
	}
	if c.Type == TypeJSON {
		b.setValue(ci, compactJSON(raw), nil, rawText)
		return
	}
	switch k {
	case jString:
		if !esc && c.Type != TypeChar && c.Type != TypeVarchar && c.Type != TypeString {
			// Numbers, dates and booleans are parsed, never retained: read them in place.
			s := unsafe.String(unsafe.SliceData(raw[1:]), len(raw)-2)
			v, err := convertText(c, s)
			b.setValue(ci, v, err, func() string { return strings.Clone(s) })
			return
		}
		if !esc {
			if v, ok := b.texts.get(ci, raw[1:len(raw)-1]); ok {
				b.setValue(ci, v, nil, rawText)
				return
			}
		}
		s, err := unquote(raw, esc)
		if err != nil {
			b.setValue(ci, nil, err, rawText)
			return
		}
		v, err := convertText(c, s)
		if err == nil && !esc {
			b.texts.put(ci, s, v)
		}
		b.setValue(ci, v, err, func() string { return s })
	case jNumber:
		v, err := convertNumber(c, raw)
		b.setValue(ci, v, err, rawText)
	case jTrue, jFalse:
		var v any
		var err error
		switch c.Type {
		case TypeBoolean:
			v = k == jTrue
		case TypeChar, TypeVarchar, TypeString:
			v, err = convertText(c, string(raw))
		case TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt, TypeLargeInt, TypeFloat, TypeDouble:
			// "Unsupported value type. Numeric type is required" (numeric_column.cpp).
			err = errConvert
		default:
			if k == jTrue {
				v, err = convertText(c, "1")
			} else {
				v, err = convertText(c, "0")
			}
		}
		b.setValue(ci, v, err, rawText)
	case jObject, jArray:
		var v any
		err := errConvert
		switch c.Type {
		case TypeChar, TypeVarchar, TypeString:
			v, err = convertText(c, compactJSON(raw))
		case TypeArray, TypeMap:
			v, err = convertComplex(c, string(raw))
		}
		b.setValue(ci, v, err, rawText)
	}
}

// convertNumber converts a JSON number; the fast path avoids strconv allocations for integers.
func convertNumber(c *Column, raw []byte) (any, error) {
	switch c.Type {
	case TypeBigInt, TypeInt, TypeSmallInt, TypeTinyInt:
		if v, ok := atoiFast(raw); ok {
			switch c.Type {
			case TypeBigInt:
				return v, nil
			case TypeInt:
				if v >= -1<<31 && v < 1<<31 {
					return int32(v), nil
				}
			case TypeSmallInt:
				if v >= -1<<15 && v < 1<<15 {
					return int16(v), nil
				}
			case TypeTinyInt:
				if v >= -1<<7 && v < 1<<7 {
					return int8(v), nil
				}
			}
			return nil, errConvert
		}
		if bytes.ContainsAny(raw, ".eE") {
			return jsonFloatToInt(c, raw)
		}
	case TypeDate, TypeDatetime:
		return nil, errConvert
	}
	return convertText(c, string(raw))
}

// atoiFast parses a plain decimal integer of at most 18 digits.
func atoiFast(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
