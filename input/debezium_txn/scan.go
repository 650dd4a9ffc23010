// This file holds the byte scanner that splits a change event into its
// schema and payload without decoding either.

package debezium_txn

import (
	"bytes"
)

// splitEnvelope finds the values of a JsonConverter envelope,
// {"schema": <value>, "payload": <value>} (the two keys in either order,
// whitespace allowed), without decoding them; ok is false for any other
// shape. The schema is only skipped (brackets and strings), not validated:
// it is parsed before its plan is cached, so bytes are trusted only once
// they parsed. TestSplitEnvelopeMatchesEncodingJSON and
// FuzzDecodeFastEqualsSlow hold the fast path equal to encoding/json.
func splitEnvelope(v []byte) (schema, payload []byte, ok bool) {
	schema, payload, _, ok = splitEnvelopeHint(v, nil)
	return schema, payload, ok
}

// splitEnvelopeHint is splitEnvelope given the schema of an earlier event
// (hint, a JSON object splitEnvelope found, or nil): when v's schema starts
// with those bytes it is that schema — the skip would end at the same
// closing brace, having read the same bytes — and hit is set. Comparing
// bytes is a fraction of skipping them, and the schema is most of an event.
func splitEnvelopeHint(v, hint []byte) (schema, payload []byte, hit, ok bool) {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return nil, nil, false, false
	}
	i++
	for n := 0; n < 2; n++ {
		if n == 1 {
			i = skipSpace(v, i)
			if i >= len(v) || v[i] != ',' {
				return nil, nil, false, false
			}
			i++
		}
		var key string
		switch j := skipSpace(v, i); {
		case bytes.HasPrefix(v[j:], []byte(`"schema"`)) && schema == nil:
			key = `"schema"`
		case bytes.HasPrefix(v[j:], []byte(`"payload"`)) && payload == nil:
			key = `"payload"`
		default:
			return nil, nil, false, false
		}
		if i, ok = expectKey(v, i, key); !ok {
			return nil, nil, false, false
		}
		start := i
		if key == `"schema"` && len(hint) > 0 && hint[0] == '{' && bytes.HasPrefix(v[start:], hint) {
			i, hit = start+len(hint), true
		} else if i, ok = skipValue(v, i); !ok {
			return nil, nil, false, false
		}
		if key == `"schema"` {
			schema = v[start:i]
		} else {
			payload = v[start:i]
		}
	}
	i = skipSpace(v, i)
	if i >= len(v) || v[i] != '}' {
		return nil, nil, false, false
	}
	if skipSpace(v, i+1) != len(v) {
		return nil, nil, false, false
	}
	return schema, payload, hit, true
}

func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

// expectKey reads `key` and a colon at i (whitespace allowed) and returns
// the index of the value.
func expectKey(v []byte, i int, key string) (int, bool) {
	i = skipSpace(v, i)
	if !bytes.HasPrefix(v[i:], []byte(key)) {
		return 0, false
	}
	i = skipSpace(v, i+len(key))
	if i >= len(v) || v[i] != ':' {
		return 0, false
	}
	return skipSpace(v, i+1), true
}

// skipValue returns the index after the JSON value at i: an object or array
// by bracket depth, a string to its closing quote, a literal to the next
// delimiter.
func skipValue(v []byte, i int) (int, bool) {
	if i >= len(v) {
		return 0, false
	}
	switch v[i] {
	case '"':
		return skipString(v, i)
	case '{', '[':
		depth := 0
		for i < len(v) {
			switch v[i] {
			case '"':
				end, ok := skipString(v, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default:
		start := i
		for i < len(v) && v[i] != ',' && v[i] != '}' && v[i] != ']' && v[i] != ' ' && v[i] != '\t' && v[i] != '\n' && v[i] != '\r' {
			i++
		}
		return i, i > start
	}
}

func skipString(v []byte, i int) (int, bool) {
	for j := i + 1; j < len(v); j++ {
		switch v[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}
