package txnassembler

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

var opKey = []byte(`"` + contract.OpField + `"`)

// opTail is opKey without its opening quote: its first byte ('_') is far
// rarer in JSON than a quote, which is what bytes.Index scans for first.
var opTail = opKey[1:]

// hasOpKey reports whether b contains the text "__op" (quotes included),
// as bytes.Contains(b, opKey) does, faster: every row is checked.
func hasOpKey(b []byte) bool {
	for i := 1; i < len(b); {
		j := bytes.Index(b[i:], opTail)
		if j < 0 {
			return false
		}
		if b[i+j-1] == '"' {
			return true
		}
		i += j + 1
	}
	return false
}

// withOp returns the row object's JSON with __op set. When explicit is false
// an __op the row already carries is kept. A row without any "__op" text is
// extended in place, without decoding it.
func withOp(field string, rowJSON []byte, del, explicit bool) ([]byte, *inputError) {
	return withOpKnown(field, rowJSON, hasOpKey(rowJSON), del, explicit)
}

// withOpKnown is withOp for a caller that knows hasOp, hasOpKey(rowJSON):
// every row is searched for the key once.
func withOpKnown(field string, rowJSON []byte, hasOp, del, explicit bool) ([]byte, *inputError) {
	op := byte('0')
	if del {
		op = '1'
	}
	if !hasOp {
		body := bytes.TrimSpace(rowJSON)
		if len(body) < 2 || body[len(body)-1] != '}' {
			return nil, badField(field, "must be a JSON object")
		}
		inner := bytes.TrimSpace(body[1 : len(body)-1])
		out := make([]byte, 0, len(body)+12)
		out = append(out, '{')
		if len(inner) > 0 {
			out = append(out, inner...)
			out = append(out, ',')
		}
		out = append(out, `"`+contract.OpField+`":`...)
		out = append(out, op, '}')
		return out, nil
	}
	out, _, ierr := reencodeWithOp(field, rowJSON, del, explicit)
	return out, ierr
}

// reencodeWithOp is withOp for a row that carries "__op" text: it decodes
// the row, sets __op and encodes it again. It also returns the keys of the
// row it built (its decoded members: a key written twice is one member).
func reencodeWithOp(field string, rowJSON []byte, del, explicit bool) ([]byte, schema.KeysHash, *inputError) {
	v, err := decodeJSON(rowJSON)
	if err != nil {
		return nil, 0, badField(field, "is not valid JSON: %v", err)
	}
	row, ok := v.(map[string]any)
	if !ok {
		return nil, 0, badField(field, "must be a JSON object, got %s", typeName(v))
	}
	if !explicit {
		d, has, ierr := existingOp(row)
		if ierr != nil {
			return nil, 0, ierr
		}
		if has {
			del = d
		}
	}
	setOp(row, del)
	b, err := encodeRow(row)
	if err != nil {
		return nil, 0, badField(field, "cannot be encoded: %v", err)
	}
	return b, mapKeys(row), nil
}

// mapKeys is the KeysHash of a decoded row's members.
func mapKeys(row map[string]any) schema.KeysHash {
	var h schema.KeysHash
	for k := range row {
		h.AddString(k)
	}
	return h
}

// rowKeys is the encoding/json decoders' KeysHash sum of a row they built:
// its top-level keys read with encoding/json's tokenizer, each as written.
// The single-pass decoders compute the same value while they scan the row
// (internal/jsonscan); the differential tests hold the two equal. 0 for a
// row that is not one JSON object (it is flagged before it is emitted).
func rowKeys(row []byte) uint64 {
	if row == nil {
		return 0
	}
	var h schema.KeysHash
	dec := json.NewDecoder(bytes.NewReader(row))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0
		}
		k, _ := tok.(string)
		h.AddString(k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return 0
		}
	}
	return h.Sum()
}

// encodeRow renders a row as compact JSON without HTML escaping.
func encodeRow(row map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(row); err != nil {
		return nil, fmt.Errorf("encoding row: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
