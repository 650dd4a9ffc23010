package txnassembler

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/jsonscan"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// fastDecoder holds the single-pass decoders of the envelope and maxwell
// formats and their scratch space. Each fast decoder reads the body once
// with internal/jsonscan and handles only what it can decide exactly: a
// valid event with nothing unusual in it. For anything else (bad input
// included) it declines, and the encoding/json decoder (decodeEnvelope,
// decodeMaxwell) decides, so errors and odd inputs behave exactly as they
// always did. The differential tests (fast_test.go, the fuzz targets) check
// that an accepted event equals the encoding/json decoder's.
//
// A fastDecoder belongs to one processor and is used under its mutex.
type fastDecoder struct {
	vals [8]jsonscan.Value
	// buf receives the unquoted row of an envelope whose json member is a
	// string.
	buf []byte
	// Interned strings: most events repeat the partition, transaction,
	// database and table of the one before.
	part, txn, db, table interner
	// off disables the fast path (tests compare both paths).
	off bool
}

const (
	// maxScratch bounds the unquoting buffer kept between events.
	maxScratch = 1 << 20
	// maxInterned is the longest string an interner keeps.
	maxInterned = 256
)

// envelope decodes an envelope event, fast when it can.
func (d *fastDecoder) envelope(msg *service.Message) (event, error) {
	if ev, ok := d.envelopeFast(msg); ok {
		return ev, nil
	}
	ev, err := decodeEnvelope(msg)
	ev.del = rowIsDelete(ev.rowJSON)
	return ev, err
}

// maxwell decodes a maxwell row, fast when it can.
func (d *fastDecoder) maxwell(msg *service.Message) (event, error) {
	if ev, ok := d.maxwellFast(msg); ok {
		return ev, nil
	}
	ev, err := decodeMaxwell(msg)
	ev.del = rowIsDelete(ev.rowJSON)
	return ev, err
}

// scanBody reads the message body and scans it for fields, adding the keys
// of the row member to keys; ok is false when the fast path must decline.
func (d *fastDecoder) scanBody(msg *service.Message, fields *jsonscan.Fields, row int, keys *schema.KeysHash) ([]jsonscan.Value, bool) {
	if d.off {
		return nil, false
	}
	b, err := msg.AsBytes()
	if err != nil {
		return nil, false
	}
	vals := d.vals[:fields.Len()]
	if fields.ScanKeys(bytes.TrimSpace(b), vals, row, keys) != jsonscan.OK {
		return nil, false
	}
	return vals, true
}

// envelopeFields are the envelope's members, in decodeEnvelope's order.
var envelopeFields = jsonscan.NewFields("partition", "txnId", "type", "database", "table", "json", "op")

const (
	envPartition = iota
	envTxnID
	envType
	envDatabase
	envTable
	envJSON
	envOp
)

func (d *fastDecoder) envelopeFast(msg *service.Message) (event, bool) {
	var r event
	if d.off {
		return r, false
	}
	b, err := msg.AsBytes()
	if err != nil {
		return r, false
	}
	if cap(d.buf) > maxScratch {
		d.buf = nil // do not keep the largest row ever seen
	}
	// A row given as a string is decoded into d.buf in the same pass; the
	// keys of one given as an object are hashed in it.
	v := d.vals[:envelopeFields.Len()]
	var st jsonscan.Status
	var keys schema.KeysHash
	if st, d.buf = envelopeFields.ScanUnquoteKeys(bytes.TrimSpace(b), v, envJSON, d.buf[:0], &keys); st != jsonscan.OK {
		return r, false
	}
	ok := false
	ev := &r
	// decodeEnvelope keeps the partition only when it is a non-empty
	// string or a number, and ignores it otherwise.
	switch p := v[envPartition]; p.Kind {
	case jsonscan.KindString:
		ev.envPartition = d.part.value(p)
	case jsonscan.KindNumber:
		ev.envPartition = d.part.bytes(p.Raw)
	}
	switch t := v[envTxnID]; t.Kind {
	case jsonscan.KindNone, jsonscan.KindNull:
	case jsonscan.KindString:
		if ev.txnID = d.txn.value(t); ev.txnID == "" {
			return r, false
		}
	case jsonscan.KindNumber:
		ev.txnID = d.txn.bytes(t.Raw)
	default:
		return r, false
	}
	if ev.kind, ok = envelopeKind(v[envType]); !ok || ev.txnID == "" {
		return r, false
	}
	if ev.kind != kindData {
		return r, true
	}
	if ev.database, ok = d.db.optional(v[envDatabase]); !ok {
		return r, false
	}
	if ev.table, ok = d.table.optional(v[envTable]); !ok {
		return r, false
	}
	var row []byte
	var scanned *jsonscan.Row
	hasOp := false
	switch j := v[envJSON]; j.Kind {
	case jsonscan.KindObject:
		row = j.Raw // validated with the envelope
		hasOp = hasOpKey(row)
	case jsonscan.KindString:
		row = bytes.TrimSpace(d.buf) // decoded by the scan
		if len(row) == 0 || row[0] != '{' {
			return r, false
		}
		// Validated once, its keys hashed: with the analysis withOpFast
		// needs when the row carries __op text, plainly otherwise.
		if hasOp = hasOpKey(row); hasOp {
			st, info := jsonscan.ScanRow(row, contract.OpField)
			if st != jsonscan.OK {
				return r, false
			}
			scanned, keys = &info, info.Keys
		} else if st, keys = jsonscan.ObjectKeys(row); st != jsonscan.OK {
			return r, false
		}
	default:
		return r, false
	}
	del, explicit := false, false
	switch op := v[envOp]; op.Kind {
	case jsonscan.KindNone, jsonscan.KindNull:
	case jsonscan.KindString:
		var ierr *inputError
		if del, ierr = parseOp(op.String()); ierr != nil {
			return r, false
		}
		explicit = true
	case jsonscan.KindNumber:
		// encoding/json decodes the number to a float64 first; only the
		// plain 0 and 1 are taken here.
		switch string(op.Raw) {
		case "0":
		case "1":
			del = true
		default:
			return r, false
		}
		explicit = true
	default:
		return r, false
	}
	ev.rowJSON, ev.del, ev.keys, ok = withOpFast("json", row, hasOp, scanned, keys, del, explicit)
	return r, ok
}

// envelopeKind maps the type member as decodeEnvelope does (upper-cased);
// ok is false for anything decodeEnvelope rejects.
func envelopeKind(t jsonscan.Value) (eventKind, bool) {
	if t.Kind != jsonscan.KindString {
		return kindUnknown, false
	}
	if c, plain := t.Content(); plain {
		// ASCII: comparing without regard to case is what strings.ToUpper
		// and a comparison do.
		switch {
		case equalFoldASCII(c, "TXN_BEGIN"):
			return kindBegin, true
		case equalFoldASCII(c, "DATA"):
			return kindData, true
		case equalFoldASCII(c, "TXN_END"):
			return kindEnd, true
		}
		return kindUnknown, false
	}
	switch strings.ToUpper(t.String()) {
	case "TXN_BEGIN":
		return kindBegin, true
	case "DATA":
		return kindData, true
	case "TXN_END":
		return kindEnd, true
	}
	return kindUnknown, false
}

// maxwellFields are maxwell's members that decodeMaxwell reads.
var maxwellFields = jsonscan.NewFields("database", "table", "type", "xid", "commit", "data", "sql", "def")

const (
	mxDatabase = iota
	mxTable
	mxType
	mxXid
	mxCommit
	mxData
	mxSQL
	mxDef
)

func (d *fastDecoder) maxwellFast(msg *service.Message) (event, bool) {
	var r event
	var keys schema.KeysHash
	v, ok := d.scanBody(msg, maxwellFields, mxData, &keys)
	if !ok {
		return r, false
	}
	ev := &r
	t := v[mxType]
	if t.Kind != jsonscan.KindString {
		return r, false // missing or not a string: decodeMaxwell says which
	}
	typ, plain := t.Content()
	if !plain {
		typ = []byte(t.String())
	}
	switch x := v[mxXid]; x.Kind {
	case jsonscan.KindNone, jsonscan.KindNull:
	case jsonscan.KindString:
		if ev.txnID = d.txn.value(x); ev.txnID == "" {
			return r, false
		}
	case jsonscan.KindNumber:
		ev.txnID = d.txn.bytes(x.Raw)
	default:
		return r, false
	}
	del := false
	switch string(typ) {
	case "insert", "update":
		ev.kind = kindData
	case "delete":
		ev.kind, del = kindData, true
	case "bootstrap-insert":
		ev.kind, ev.bootstrap, ev.txnID = kindDataEnd, true, ""
	default:
		s := string(typ)
		switch {
		case isMaxwellSchemaChange(s):
			return r, false // rare: decodeMaxwell builds the table
		case isMaxwellDDL(s):
			return skippedDDL(s, ev.txnID, v[mxDatabase].Raw, v[mxTable].Raw), true
		case maxwellSkipped[s] || v[mxSQL].Raw != nil || v[mxDef].Raw != nil:
			return event{kind: kindSkip, txnID: ev.txnID}, true
		}
		return r, false
	}
	if !ev.bootstrap {
		switch v[mxCommit].Kind {
		case jsonscan.KindNone, jsonscan.KindNull, jsonscan.KindFalse:
		case jsonscan.KindTrue:
			ev.kind = kindDataEnd
		default:
			return r, false
		}
		if ev.txnID == "" {
			return r, false
		}
	}
	if ev.database, ok = d.db.optional(v[mxDatabase]); !ok {
		return r, false
	}
	if ev.table, ok = d.table.optional(v[mxTable]); !ok {
		return r, false
	}
	if v[mxData].Kind != jsonscan.KindObject {
		return r, false
	}
	row := v[mxData].Raw
	ev.rowJSON, ev.del, ev.keys, ok = withOpFast("data", row, hasOpKey(row), nil, keys, del, true)
	return r, ok
}

// withOpFast is withOp for a row known to be one valid JSON object, with
// the same result; it also returns the row's final __op and the KeysHash
// sum of the row it returns (rowKeys). A row in encoding/json's canonical
// form that already carries a top-level __op of 0 or 1 keeps its bytes
// (withOp would decode and re-encode it to the same text); ok is false
// where withOp fails. hasOp is hasOpKey(row), scanned ScanRow's analysis
// of the row when the caller has it already, and keys the row's keys as
// the caller's scan hashed them.
func withOpFast(field string, row []byte, hasOp bool, scanned *jsonscan.Row, keys schema.KeysHash, del, explicit bool) (out []byte, isDel bool, sum uint64, ok bool) {
	if !hasOp {
		// withOp appends the __op: it is del, and the keys are the row's.
		out, ierr := withOpKnown(field, row, false, del, explicit)
		return out, del, keys.Sum(), ierr == nil
	}
	st, info := jsonscan.OK, jsonscan.Row{}
	if scanned != nil {
		info = *scanned
	} else {
		st, info = jsonscan.ScanRow(row, contract.OpField)
	}
	if op := info.Member; st == jsonscan.OK && info.Canonical && op.Kind == jsonscan.KindNumber &&
		len(op.Raw) == 1 && (op.Raw[0] == '0' || op.Raw[0] == '1') {
		if !explicit {
			del = op.Raw[0] == '1'
		}
		out := make([]byte, len(row))
		copy(out, row)
		out[op.Off] = opDigit(del)
		return out, del, keys.Sum(), true
	}
	// Decoded and encoded again: a key written twice becomes one member.
	out, built, ierr := reencodeWithOp(field, row, del, explicit)
	if ierr != nil {
		return nil, false, 0, false
	}
	return out, rowIsDelete(out), built.Sum(), true
}

func opDigit(del bool) byte {
	if del {
		return '1'
	}
	return '0'
}

// rowIsDelete decides a built row's __op the way the starrocks_txn output
// does from the body alone; the fast paths know it without this decode.
func rowIsDelete(row []byte) bool {
	if row == nil || !hasOpKey(row) {
		return false
	}
	var op struct {
		Op json.RawMessage `json:"__op"`
	}
	if err := json.Unmarshal(row, &op); err != nil {
		return false
	}
	return strings.Trim(string(op.Op), `" `) == "1"
}

// equalFoldASCII reports whether the ASCII text b equals the upper-case
// ASCII word upper without regard to case.
func equalFoldASCII(b []byte, upper string) bool {
	if len(b) != len(upper) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// interner returns the same string for the same bytes as one of the last
// few it made, so that repeated values are not allocated again.
type interner struct {
	s    [8]string
	next uint8
}

func (in *interner) bytes(b []byte) string {
	if len(b) > maxInterned {
		return string(b)
	}
	for _, s := range in.s {
		if s == string(b) && s != "" {
			return s
		}
	}
	s := string(b)
	in.s[in.next%uint8(len(in.s))] = s
	in.next++
	return s
}

// value is a string member's decoded content.
func (in *interner) value(v jsonscan.Value) string {
	if c, plain := v.Content(); plain {
		return in.bytes(c)
	}
	return v.String()
}

// optional reads an optional string member as rawString does; ok is false
// where rawString fails (the member is not a string).
func (in *interner) optional(v jsonscan.Value) (string, bool) {
	switch v.Kind {
	case jsonscan.KindNone, jsonscan.KindNull:
		return "", true
	case jsonscan.KindString:
		return in.value(v), true
	}
	return "", false
}
