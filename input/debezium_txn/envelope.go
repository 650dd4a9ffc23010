package debezium_txn

import (
	"github.com/starrocks-txn/benthos-starrocks/internal/jsonscan"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Debezium operation codes (the envelope's "op").
const (
	opCreate   = 'c'
	opUpdate   = 'u'
	opDelete   = 'd'
	opRead     = 'r'
	opTruncate = 't'
	opMessage  = 'm'
)

// Values of source.snapshot (Debezium's SnapshotRecord, lowercased).
const (
	snapshotFalse       = "false"
	snapshotIncremental = "incremental"
	snapshotLast        = "last"
)

// event is one decoded Debezium data change event.
type event struct {
	op byte
	// row is the JSON object to load: "after" for c/u/r, "before" with
	// "__op": 1 for d; nil for t and m.
	row []byte
	// hasTxn is set when the envelope carries a transaction block.
	hasTxn     bool
	txID       string
	totalOrder int64
	dco        int64 // data_collection_order
	connector  string
	db         string
	schema     string
	table      string
	// snapshot is source.snapshot lowercased ("" when absent).
	snapshot string
	// source is the row's source table from the JsonConverter's schemas
	// (nil without them): its columns in StarRocks types and its primary
	// key from the record key (ARCHITECTURE.md §14.1).
	source *schema.Table
}

// isSnapshotRow reports an op r event of a snapshot (no transaction block).
func (e *event) isSnapshotRow() bool {
	return e.op == opRead && !e.hasTxn && e.snapshot != snapshotFalse
}

// gatesStreaming reports a snapshot row of an initial or blocking snapshot,
// during which Debezium streams nothing (ARCHITECTURE.md §13.5).
func (e *event) gatesStreaming() bool {
	return e.isSnapshotRow() && e.snapshot != snapshotIncremental
}

// collection identifies the event's Debezium data collection by its source
// coordinates; with the topic it keys the dedup of re-sent events.
func (e *event) collection() string {
	return e.db + "\x00" + e.schema + "\x00" + e.table
}

// sourceName is the collection as Debezium names it in an END event, for
// messages (db.table, schema.table or db.schema.table).
func (e *event) sourceName() string {
	var parts []string
	for _, p := range []string{e.db, e.schema, e.table} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if e.connector == "postgresql" && e.schema != "" {
		parts = []string{e.schema, e.table}
	}
	return strings.Join(parts, ".")
}

// defaultDatabase is the target database when `database` is not set:
// source.db for MySQL and MariaDB, source.schema for the other connectors
// (PostgreSQL's source.db is the server's database, its schema the
// namespace), falling back to source.db.
func (e *event) defaultDatabase() string {
	switch e.connector {
	case "mysql", "mariadb":
		return e.db
	}
	if e.schema != "" {
		return e.schema
	}
	return e.db
}

// flexInt reads a JSON integer or an integer printed as a string (Debezium's
// documentation examples print the transaction block's numbers as strings).
type flexInt struct {
	v   int64
	set bool
}

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if s == "null" {
		return nil
	}
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not an integer", clipString(string(b)))
	}
	f.v, f.set = n, true
	return nil
}

// flexString reads a JSON string, or a number kept as its text.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexString(s)
		return nil
	}
	*f = flexString(b)
	return nil
}

type wireSource struct {
	Connector string          `json:"connector"`
	DB        string          `json:"db"`
	Schema    string          `json:"schema"`
	Table     string          `json:"table"`
	Snapshot  json.RawMessage `json:"snapshot"`
}

type wireTxnBlock struct {
	ID         flexString `json:"id"`
	TotalOrder flexInt    `json:"total_order"`
	DCO        flexInt    `json:"data_collection_order"`
}

type wireEnvelope struct {
	Schema      json.RawMessage `json:"schema"`
	Payload     json.RawMessage `json:"payload"`
	Before      json.RawMessage `json:"before"`
	After       json.RawMessage `json:"after"`
	Op          string          `json:"op"`
	Source      wireSource      `json:"source"`
	Transaction *wireTxnBlock   `json:"transaction"`
}

// errNotEnvelope marks a data-topic record that is not a Debezium change
// event envelope.
var errNotEnvelope = errors.New("not a Debezium change event envelope")

// maxPlans bounds the decoder's cache of row plans (one per distinct
// envelope schema); it starts over when full.
const maxPlans = 4096

// decoder decodes data change events. It is not safe for concurrent use.
type decoder struct {
	w     valueWriter
	plans map[string]*rowPlan
	// keys caches the column names of record keys by their schema.
	keys map[string]keyColumns
	// slowOnly turns the fast paths off (for the differential tests).
	slowOnly bool
	// The fast path's scratch (fastscan.go): scanned members, the
	// transaction block, interned strings and the last transaction id.
	vals     [7]jsonscan.Value
	srcVals  [5]jsonscan.Value
	txnVals  [3]jsonscan.Value
	txnBlock wireTxnBlock
	strs     map[string]string
	lastTxID string
	// hintSchema is the last envelope schema planned, hintPlan its plan.
	hintSchema []byte
	hintPlan   *rowPlan
	// lastKey is the last schemaless key's columns (keyColumnsScan).
	lastKey    keyColumns
	lastKeySet bool
	// env is decodePlan's envelope (its members alias the value decoded).
	env wireEnvelope
	// meta is decodeTxnMeta's record, metaSchema the last transaction
	// topic schema validated.
	meta       wireTxnMeta
	metaSchema []byte
}

func newDecoder(w valueWriter) *decoder {
	return &decoder{w: w, plans: map[string]*rowPlan{}, keys: map[string]keyColumns{}, strs: map[string]string{}}
}

// isNullValue reports a tombstone: no value, or JSON null, or the
// JsonConverter's schema-wrapped null.
func isNullValue(v []byte) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return true
	}
	if v[0] != '{' || len(v) > 64 || !bytes.Contains(v, []byte(`"payload"`)) {
		return false
	}
	var w struct {
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(v, &w) != nil {
		return false
	}
	p := bytes.TrimSpace(w.Payload)
	return len(p) == 0 || string(p) == "null"
}

// decodeKeyed reads one envelope and, when it carries schemas, gives its
// row the source table, whose primary key is the record key's columns.
func (d *decoder) decodeKeyed(key, value []byte) (event, error) {
	e, plan, err := d.decodePlan(value)
	if err == nil && plan != nil && e.row != nil {
		e.source = plan.keyTable(d.keyColumns(key))
	}
	return e, err
}

// keyColumns are the column names of a record key, and the same names
// joined by NUL (keyTable's cache key, made once per key schema).
type keyColumns struct {
	cols   []string
	joined string
}

// keyColumns returns the column names of a record key: the fields of its
// schema (the JsonConverter with schemas), or the members of a key object
// without one; nil for no key, or a key that is not a JSON object.
func (d *decoder) keyColumns(key []byte) keyColumns {
	if len(key) == 0 {
		return keyColumns{}
	}
	if ks, _, ok := splitEnvelope(key); ok {
		if kc, ok := d.keys[string(ks)]; ok {
			return kc
		}
		var s wireSchema
		var cols []string
		if json.Unmarshal(ks, &s) == nil && s.Type == "struct" {
			for _, f := range s.Fields {
				cols = append(cols, f.Field)
			}
		}
		if len(d.keys) >= maxPlans {
			clear(d.keys)
		}
		kc := keyColumns{cols: cols, joined: strings.Join(cols, "\x00")}
		d.keys[string(ks)] = kc
		return kc
	}
	if kc, ok := d.keyColumnsScan(key); ok {
		return kc
	}
	return keyColumnsSlow(key)
}

// keyColumnsScan is keyColumnsSlow for a key that is one valid JSON text
// (jsonscan decides it): the members' names, found by skipping, and the
// last key's columns again when the names are the same; ok is false when
// keyColumnsSlow must decide.
func (d *decoder) keyColumnsScan(key []byte) (keyColumns, bool) {
	if d.slowOnly || jsonscan.Valid(key) != jsonscan.OK {
		return keyColumns{}, false
	}
	i := skipSpace(key, 0)
	if key[i] != '{' {
		// A valid key that is not an object: no columns.
		return keyColumns{}, true
	}
	last := d.lastKey.cols
	n, same := 0, d.lastKeySet
	for j := i + 1; ; n++ {
		name, _, next, ok := nextMember(key, j)
		if !ok {
			break
		}
		j = next
		c := name[1 : len(name)-1]
		if !plainKey(c) {
			return keyColumns{}, false
		}
		if n >= len(last) || last[n] != string(c) {
			same = false
		}
	}
	if same && n == len(last) {
		return d.lastKey, true
	}
	cols := make([]string, 0, n)
	for j := i + 1; ; {
		name, _, next, ok := nextMember(key, j)
		if !ok {
			break
		}
		j = next
		cols = append(cols, d.intern(name[1:len(name)-1]))
	}
	if len(cols) == 0 {
		cols = nil
	}
	d.lastKey, d.lastKeySet = keyColumns{cols: cols, joined: strings.Join(cols, "\x00")}, true
	return d.lastKey, true
}

// keyColumnsSlow reads the members' names of a key without a schema with
// encoding/json's tokens.
func keyColumnsSlow(key []byte) keyColumns {
	dec := json.NewDecoder(bytes.NewReader(key))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return keyColumns{}
	}
	var cols []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keyColumns{}
		}
		name, _ := tok.(string)
		cols = append(cols, name)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keyColumns{}
		}
	}
	return keyColumns{cols: cols, joined: strings.Join(cols, "\x00")}
}

// decode reads one envelope: with the JsonConverter's schemas
// (`{"schema": …, "payload": …}`) or without (the payload alone).
func (d *decoder) decode(value []byte) (event, error) {
	e, _, err := d.decodePlan(value)
	return e, err
}

// decodePlan is decode, with the row plan of the envelope's schema.
func (d *decoder) decodePlan(value []byte) (event, *rowPlan, error) {
	if id, framed := registryFramed(value); framed {
		return event{}, nil, notJSONError(id)
	}
	// The decoder's envelope: a local one escapes to the heap (it is
	// handed to encoding/json), a large allocation per event.
	env := &d.env
	var plan *rowPlan
	if schema, payload, hit, ok := splitEnvelopeHint(value, d.hintSchema); ok && !d.slowOnly {
		// The JsonConverter's schema is as large as the rest and the same
		// for every event of a table: found, not decoded, and planned once
		// (profile: encoding/json scanning it was most of the cost); the
		// last one is recognised by its bytes, without a skip or a hash.
		if hit {
			plan = d.hintPlan
		} else {
			var err error
			if plan, err = d.plan(schema); err != nil {
				return event{}, nil, fmt.Errorf("reading the envelope's schema: %w", err)
			}
			if len(schema) > 0 && schema[0] == '{' {
				d.hintSchema, d.hintPlan = append(d.hintSchema[:0], schema...), plan
			}
		}
		if err := d.unmarshalEnvelope(payload, env); err != nil {
			return event{}, nil, fmt.Errorf("%w: payload: %v", errNotEnvelope, err)
		}
		e, err := d.fromWire(env, plan)
		*env = wireEnvelope{} // holds no fetched bytes
		return e, plan, err
	}
	if err := d.unmarshalEnvelope(value, env); err != nil {
		return event{}, nil, fmt.Errorf("%w: %v", errNotEnvelope, err)
	}
	if env.Op == "" && len(env.Payload) > 0 && len(env.Schema) > 0 {
		var err error
		if plan, err = d.plan(env.Schema); err != nil {
			return event{}, nil, fmt.Errorf("reading the envelope's schema: %w", err)
		}
		var inner wireEnvelope
		if err := d.unmarshalEnvelope(env.Payload, &inner); err != nil {
			return event{}, nil, fmt.Errorf("%w: payload: %v", errNotEnvelope, err)
		}
		*env = inner
	}
	e, err := d.fromWire(env, plan)
	*env = wireEnvelope{}
	return e, plan, err
}

// fromWire turns a decoded payload into an event.
func (d *decoder) fromWire(env *wireEnvelope, plan *rowPlan) (event, error) {
	if len(env.Op) != 1 {
		if env.Op == "" {
			return event{}, fmt.Errorf("%w: it has no \"op\" field", errNotEnvelope)
		}
		return event{}, fmt.Errorf("%w: op %q is not one of c, u, d, r, t, m", errNotEnvelope, env.Op)
	}
	e := event{
		op:        env.Op[0],
		connector: env.Source.Connector,
		db:        env.Source.DB,
		schema:    env.Source.Schema,
		table:     env.Source.Table,
		snapshot:  d.snapshotValue(env.Source.Snapshot),
	}
	if t := env.Transaction; t != nil {
		if t.ID == "" || !t.DCO.set {
			return event{}, fmt.Errorf("the transaction block needs an id and a data_collection_order (check transaction.metadata.factory)")
		}
		e.hasTxn, e.txID, e.totalOrder, e.dco = true, string(t.ID), t.TotalOrder.v, t.DCO.v
		if !t.TotalOrder.set {
			e.totalOrder = t.DCO.v
		}
	}
	var err error
	switch e.op {
	case opCreate, opUpdate, opRead:
		if e.row, err = d.row(env.After, plan, false); err != nil {
			return event{}, fmt.Errorf("op %c: after: %w", e.op, err)
		}
	case opDelete:
		if e.row, err = d.row(env.Before, plan, true); err != nil {
			return event{}, fmt.Errorf("op d: before: %w", err)
		}
	case opTruncate, opMessage:
	default:
		return event{}, fmt.Errorf("%w: op %q is not one of c, u, d, r, t, m", errNotEnvelope, env.Op)
	}
	return e, nil
}

// snapshotValue is snapshotValue, interned for a plain string.
func (d *decoder) snapshotValue(raw json.RawMessage) string {
	if !d.slowOnly && isPlainASCIIString(raw) {
		c := raw[1 : len(raw)-1]
		if !bytes.ContainsFunc(c, func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
			return d.intern(c)
		}
	}
	return snapshotValue(raw)
}

func snapshotValue(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return ""
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return strings.ToLower(s)
		}
	}
	// Debezium 1.x printed a boolean.
	return strings.ToLower(string(raw))
}
