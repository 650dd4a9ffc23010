// This file holds the decoder's fast path for an envelope's members: the
// members fromWire reads are found by internal/jsonscan in one validating
// pass instead of being decoded by encoding/json, and the strings that
// repeat from event to event are interned. Whatever the scan does not
// decide (jsonscan's Unusual, a member of an unexpected type, a number
// that is not an integer) is decoded by encoding/json, which stays the
// reference: FuzzScanEnvelopeEqualsEncodingJSON holds the two equal.

package debezium_txn

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/starrocks-txn/benthos-starrocks/internal/jsonscan"
)

// The members of wireEnvelope, wireSource and wireTxnBlock, in the order
// of the indexes below.
var (
	envelopeFields = jsonscan.NewFields("schema", "payload", "before", "after", "op", "source", "transaction")
	sourceFields   = jsonscan.NewFields("connector", "db", "schema", "table", "snapshot")
	txnBlockFields = jsonscan.NewFields("id", "total_order", "data_collection_order")
)

const (
	envSchema = iota
	envPayload
	envBefore
	envAfter
	envOp
	envSource
	envTransaction
)

const (
	srcConnector = iota
	srcDB
	srcSchema
	srcTable
	srcSnapshot
)

const (
	txnID = iota
	txnTotalOrder
	txnDCO
)

// maxInterned bounds the decoder's interned strings (connectors, databases,
// schemas, tables, snapshot values); it starts over when full.
const maxInterned = 4096

// unmarshalEnvelope is json.Unmarshal(b, env) for a zero env: the scan
// when it decides, encoding/json otherwise (and always with slowOnly). The
// RawMessage members alias b.
func (d *decoder) unmarshalEnvelope(b []byte, env *wireEnvelope) error {
	if !d.slowOnly && d.scanEnvelope(b, env) {
		return nil
	}
	*env = wireEnvelope{}
	return json.Unmarshal(b, env)
}

// scanEnvelope fills env as json.Unmarshal would and reports true, or
// reports false (env then unspecified) when encoding/json must decide.
func (d *decoder) scanEnvelope(b []byte, env *wireEnvelope) bool {
	v := d.vals[:envelopeFields.Len()]
	if envelopeFields.Scan(b, v) != jsonscan.OK {
		return false
	}
	*env = wireEnvelope{
		Schema:  json.RawMessage(v[envSchema].Raw),
		Payload: json.RawMessage(v[envPayload].Raw),
		Before:  json.RawMessage(v[envBefore].Raw),
		After:   json.RawMessage(v[envAfter].Raw),
	}
	var ok bool
	if env.Op, ok = d.stringMember(v[envOp], false); !ok {
		return false
	}
	switch s := v[envSource]; s.Kind {
	case jsonscan.KindNone, jsonscan.KindNull:
	case jsonscan.KindObject:
		sv := d.srcVals[:sourceFields.Len()]
		if sourceFields.Scan(s.Raw, sv) != jsonscan.OK {
			return false
		}
		src := &env.Source
		var ok1, ok2, ok3, ok4 bool
		src.Connector, ok1 = d.stringMember(sv[srcConnector], true)
		src.DB, ok2 = d.stringMember(sv[srcDB], true)
		src.Schema, ok3 = d.stringMember(sv[srcSchema], true)
		src.Table, ok4 = d.stringMember(sv[srcTable], true)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return false
		}
		src.Snapshot = json.RawMessage(sv[srcSnapshot].Raw)
	default:
		return false
	}
	switch t := v[envTransaction]; t.Kind {
	case jsonscan.KindNone, jsonscan.KindNull:
	case jsonscan.KindObject:
		tv := d.txnVals[:txnBlockFields.Len()]
		if txnBlockFields.Scan(t.Raw, tv) != jsonscan.OK {
			return false
		}
		blk := &d.txnBlock
		*blk = wireTxnBlock{}
		switch id := tv[txnID]; id.Kind {
		case jsonscan.KindNone, jsonscan.KindNull:
		case jsonscan.KindString:
			blk.ID = flexString(d.txnIDString(id))
		default:
			// flexString keeps any other value as its text.
			blk.ID = flexString(id.Raw)
		}
		if blk.TotalOrder, ok = scanFlexInt(tv[txnTotalOrder]); !ok {
			return false
		}
		if blk.DCO, ok = scanFlexInt(tv[txnDCO]); !ok {
			return false
		}
		env.Transaction = blk
	default:
		return false
	}
	return true
}

// stringMember is a string member as encoding/json decodes it into a Go
// string (absent or null: ""); ok is false for any other type, which
// encoding/json refuses. intern reuses the decoder's copy of a repeating
// string.
func (d *decoder) stringMember(v jsonscan.Value, intern bool) (string, bool) {
	switch v.Kind {
	case jsonscan.KindNone, jsonscan.KindNull:
		return "", true
	case jsonscan.KindString:
	default:
		return "", false
	}
	c, plain := v.Content()
	if !plain {
		return v.String(), true
	}
	if len(c) <= 1 || !intern {
		// A one-byte string costs no allocation.
		return string(c), true
	}
	return d.intern(c), true
}

// intern returns b as a string, the same string for the same bytes.
func (d *decoder) intern(b []byte) string {
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	if len(d.strs) >= maxInterned {
		clear(d.strs)
	}
	s := string(b)
	d.strs[s] = s
	return s
}

// txnIDString decodes a transaction id, reusing the last one's string: a
// transaction's events of one partition are consecutive.
func (d *decoder) txnIDString(v jsonscan.Value) string {
	if c, plain := v.Content(); plain && d.lastTxID != "" && string(c) == d.lastTxID {
		return d.lastTxID
	}
	d.lastTxID = v.String()
	return d.lastTxID
}

// scanFlexInt is flexInt.UnmarshalJSON on a scanned member; ok is false
// when that returns an error (left to encoding/json for its message).
func scanFlexInt(v jsonscan.Value) (flexInt, bool) {
	switch v.Kind {
	case jsonscan.KindNone, jsonscan.KindNull:
		return flexInt{}, true
	}
	s := v.Raw
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	n, ok := parseInt64(s)
	if !ok {
		return flexInt{}, false
	}
	return flexInt{v: n, set: true}, true
}

// parseInt64 is strconv.ParseInt(string(b), 10, 64) without the copy for
// the common case (up to 18 digits, an optional sign); ok is false where
// ParseInt fails.
func parseInt64(b []byte) (int64, bool) {
	digits := b
	neg := false
	if len(digits) > 0 && (digits[0] == '-' || digits[0] == '+') {
		neg, digits = digits[0] == '-', digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		n, err := strconv.ParseInt(string(b), 10, 64)
		return n, err == nil
	}
	var n int64
	for _, c := range digits {
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

// plainKey reports a member name that encoding/json decodes and encodes
// back byte for byte: no escape, ASCII only, none of the characters
// json.Marshal escapes for HTML.
func plainKey(content []byte) bool {
	for _, c := range content {
		if c == '\\' || c >= 0x80 || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// nextMember reads the member at i of a valid JSON object (i just after
// '{' or after the previous member's value): its key literal (quotes
// included), its value, and the index after the value; ok is false at the
// closing brace.
func nextMember(obj []byte, i int) (key, val []byte, next int, ok bool) {
	i = skipSpace(obj, i)
	if i < len(obj) && obj[i] == ',' {
		i = skipSpace(obj, i+1)
	}
	if i >= len(obj) || obj[i] != '"' {
		return nil, nil, i, false
	}
	end, sok := skipString(obj, i)
	if !sok {
		return nil, nil, i, false
	}
	key = obj[i:end]
	i = skipSpace(obj, end)
	if i >= len(obj) || obj[i] != ':' {
		return nil, nil, i, false
	}
	i = skipSpace(obj, i+1)
	vend, vok := skipValue(obj, i)
	if !vok {
		return nil, nil, i, false
	}
	return key, obj[i:vend], vend, true
}

// isPlainASCIIString reports a JSON string literal without escapes whose
// bytes are all ASCII: its content is what encoding/json decodes.
func isPlainASCIIString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c == '\\' || c >= 0x80 || c < 0x20 {
			return false
		}
	}
	return true
}

var nullBytes = []byte("null")

func isNull(raw []byte) bool { return bytes.Equal(raw, nullBytes) }
