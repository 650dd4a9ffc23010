package store

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// ARRAY and MAP values. A load gives them as JSON (a JSON array or object in a JSON load, the
// same text in a CSV field): every element converts to the element type by the rules of a
// scalar of that type, a map's keys to the key type. The stored value is the value's canonical
// JSON text — elements rendered from their converted value, so ["1", 2.0] into ARRAY<INT> is
// [1,2] — which is also what the MySQL port returns. A map is printed the way StarRocks
// prints it over MySQL (Map type doc: map(1,1,2,2) returns {1:1,2:2}): a numeric or boolean
// key bare, a string, date or datetime key quoted ({1:"a"}, {"k":1}). That text is not JSON,
// so a map value is also read in that form (a CSV field, or the emulator's own text read back
// by an INSERT … SELECT or a restart): bare keys are quoted before the JSON scan.
// An element that does not convert makes the whole value fail to convert (NULL, or a filtered
// row in strict mode), as a scalar that does not convert does.

// convertComplex converts the JSON text of an ARRAY or MAP value.
func convertComplex(c *Column, s string) (any, error) {
	b := bytes.TrimSpace([]byte(s))
	if c.Type == TypeMap || bytes.IndexByte(b, '{') >= 0 {
		b = quoteBareKeys(b)
	}
	sc := jscan{b: b}
	k, st, en, _, err := sc.value()
	if err != nil {
		return nil, errConvert
	}
	sc.ws()
	if sc.i != len(b) {
		return nil, errConvert
	}
	var out strings.Builder
	if err := renderComplex(&out, c, k, b[st:en]); err != nil {
		return nil, err
	}
	return out.String(), nil
}

// renderComplex writes (raw is a validated JSON value, so the iterators cannot fail) the canonical text of the JSON value raw (of kind k) for column c.
func renderComplex(out *strings.Builder, c *Column, k jkind, raw []byte) error {
	switch c.Type {
	case TypeArray:
		if k != jArray {
			return errConvert
		}
		out.WriteByte('[')
		it := newArrayIter(raw)
		for n := 0; ; n++ {
			ek, es, ee, _, ok := it.next()
			if !ok {
				break
			}
			if n > 0 {
				out.WriteByte(',')
			}
			if err := renderElem(out, c.Elem, ek, raw[es:ee]); err != nil {
				return err
			}
		}
		out.WriteByte(']')
		return nil
	case TypeMap:
		if k != jObject {
			return errConvert
		}
		type entry struct{ key, val string }
		var entries []entry
		at := map[string]int{}
		it := newObjectIter(raw)
		for {
			key, kesc, vk, vs, ve, _, ok := it.next()
			if !ok {
				break
			}
			ks, err := unquote(append(append([]byte{'"'}, key...), '"'), kesc)
			if err != nil {
				return errConvert
			}
			kv, err := convertText(c.MapKey, ks)
			if err != nil {
				return errConvert
			}
			var kb strings.Builder
			renderScalar(&kb, c.MapKey, kv) // numbers and booleans bare, the rest quoted
			keyText := kb.String()
			var vb strings.Builder
			if err := renderElem(&vb, c.Elem, vk, raw[vs:ve]); err != nil {
				return err
			}
			if i, dup := at[keyText]; dup {
				entries[i].val = vb.String() // the last of duplicate keys wins
				continue
			}
			at[keyText] = len(entries)
			entries = append(entries, entry{keyText, vb.String()})
		}
		out.WriteByte('{')
		for i, e := range entries {
			if i > 0 {
				out.WriteByte(',')
			}
			out.WriteString(e.key)
			out.WriteByte(':')
			out.WriteString(e.val)
		}
		out.WriteByte('}')
		return nil
	}
	return errConvert
}

// renderElem writes one element (or map value) of type c from its JSON form.
func renderElem(out *strings.Builder, c *Column, k jkind, raw []byte) error {
	if k == jNull {
		out.WriteString("null")
		return nil
	}
	if c.complex() {
		return renderComplex(out, c, k, raw)
	}
	if c.Type == TypeJSON {
		out.WriteString(compactJSON(raw))
		return nil
	}
	text := string(raw)
	switch k {
	case jString:
		s, err := unquote(raw, bytes.IndexByte(raw, '\\') >= 0)
		if err != nil {
			return errConvert
		}
		text = s
	case jObject, jArray:
		if c.Type != TypeChar && c.Type != TypeVarchar && c.Type != TypeString {
			return errConvert
		}
		text = compactJSON(raw)
	case jTrue:
		if c.Type != TypeBoolean {
			text = "1"
		}
	case jFalse:
		if c.Type != TypeBoolean {
			text = "0"
		}
	}
	v, err := convertText(c, text)
	if err != nil {
		return errConvert
	}
	renderScalar(out, c, v)
	return nil
}

// renderScalar writes a converted scalar: numbers bare, booleans as 1/0, strings, dates and
// datetimes as JSON strings.
func renderScalar(out *strings.Builder, c *Column, v any) {
	switch x := v.(type) {
	case nil:
		out.WriteString("null")
	case string:
		if c.Type == TypeJSON {
			out.WriteString(x)
			return
		}
		out.WriteString(strconv.Quote(x))
	case bool:
		if x {
			out.WriteByte('1')
		} else {
			out.WriteByte('0')
		}
	case decimal.Decimal:
		if c.Type == TypeDecimal {
			out.WriteString(x.StringFixed(int32(c.Scale)))
		} else {
			out.WriteString(x.String())
		}
	case float32:
		out.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	case float64:
		out.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case time.Time:
		if c.Type == TypeDate {
			out.WriteString(strconv.Quote(x.Format("2006-01-02")))
		} else {
			out.WriteString(strconv.Quote(x.Format("2006-01-02 15:04:05.999999")))
		}
	default:
		out.WriteString(fmtAny(x))
	}
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// quoteBareKeys rewrites the keys StarRocks prints bare ({1:"a"}, {-2.5:null}) as JSON
// strings, so the map text can be scanned as JSON; JSON text comes back unchanged. A key is
// bare when an object member does not start with a quote: everything up to the colon, trimmed,
// is the key.
func quoteBareKeys(b []byte) []byte {
	var out []byte // nil until a bare key is found
	var stack []byte
	expectKey := false
	for i := 0; i < len(b); i++ {
		ch := b[i]
		switch {
		case ch == '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if out != nil {
				out = append(out, b[i:min(j+1, len(b))]...)
			}
			i = j
			expectKey = false
			continue
		case ch == '{':
			stack = append(stack, '{')
			expectKey = true
		case ch == '[':
			stack = append(stack, '[')
			expectKey = false
		case ch == '}' || ch == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
		case ch == ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
		default:
			if expectKey {
				j := bytes.IndexByte(b[i:], ':')
				if j < 0 {
					return b // not a map text: let the scan reject it
				}
				if out == nil {
					out = append(make([]byte, 0, len(b)+8), b[:i]...)
				}
				out = strconv.AppendQuote(out, string(bytes.TrimSpace(b[i:i+j])))
				i += j - 1
				expectKey = false
				continue
			}
		}
		if out != nil {
			out = append(out, ch)
		}
	}
	if out == nil {
		return b
	}
	return out
}
