package debezium_txn

import (
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
	// slowOnly turns the schema fast path off (for the differential test).
	slowOnly bool
}

func newDecoder(w valueWriter) *decoder {
	return &decoder{w: w, plans: map[string]*rowPlan{}}
}

// isNullValue reports a tombstone: no value, or JSON null, or the
// JsonConverter's schema-wrapped null.
func isNullValue(v []byte) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return true
	}
	if v[0] != '{' || !bytes.Contains(v, []byte(`"payload"`)) || len(v) > 64 {
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

// decode reads one envelope: with the JsonConverter's schemas
// (`{"schema": …, "payload": …}`) or without (the payload alone).
func (d *decoder) decode(value []byte) (event, error) {
	var env wireEnvelope
	var plan *rowPlan
	if schema, payload, ok := splitEnvelope(value); ok && !d.slowOnly {
		// The JsonConverter's schema is as large as the rest and the same
		// for every event of a table: found, not decoded, and planned once
		// (profile: encoding/json scanning it was most of the cost).
		var err error
		if plan, err = d.plan(schema); err != nil {
			return event{}, fmt.Errorf("reading the envelope's schema: %w", err)
		}
		if err := json.Unmarshal(payload, &env); err != nil {
			return event{}, fmt.Errorf("%w: payload: %v", errNotEnvelope, err)
		}
		return d.fromWire(env, plan)
	}
	if err := json.Unmarshal(value, &env); err != nil {
		return event{}, fmt.Errorf("%w: %v", errNotEnvelope, err)
	}
	if env.Op == "" && len(env.Payload) > 0 && len(env.Schema) > 0 {
		var err error
		if plan, err = d.plan(env.Schema); err != nil {
			return event{}, fmt.Errorf("reading the envelope's schema: %w", err)
		}
		var inner wireEnvelope
		if err := json.Unmarshal(env.Payload, &inner); err != nil {
			return event{}, fmt.Errorf("%w: payload: %v", errNotEnvelope, err)
		}
		env = inner
	}
	return d.fromWire(env, plan)
}

// fromWire turns a decoded payload into an event.
func (d *decoder) fromWire(env wireEnvelope, plan *rowPlan) (event, error) {
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
		snapshot:  snapshotValue(env.Source.Snapshot),
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

// splitEnvelope finds the values of a JsonConverter envelope,
// {"schema": <value>, "payload": <value>} (the two keys in either order,
// whitespace allowed), without decoding them; ok is false for any other
// shape. The schema is only skipped (brackets and strings), not validated:
// it is parsed before its plan is cached, so bytes are trusted only once
// they parsed. TestSplitEnvelopeMatchesEncodingJSON and
// FuzzDecodeFastEqualsSlow hold the fast path equal to encoding/json.
func splitEnvelope(v []byte) (schema, payload []byte, ok bool) {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return nil, nil, false
	}
	i++
	for n := 0; n < 2; n++ {
		if n == 1 {
			i = skipSpace(v, i)
			if i >= len(v) || v[i] != ',' {
				return nil, nil, false
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
			return nil, nil, false
		}
		if i, ok = expectKey(v, i, key); !ok {
			return nil, nil, false
		}
		start := i
		if i, ok = skipValue(v, i); !ok {
			return nil, nil, false
		}
		if key == `"schema"` {
			schema = v[start:i]
		} else {
			payload = v[start:i]
		}
	}
	i = skipSpace(v, i)
	if i >= len(v) || v[i] != '}' {
		return nil, nil, false
	}
	if skipSpace(v, i+1) != len(v) {
		return nil, nil, false
	}
	return schema, payload, true
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

func (d *decoder) plan(schema json.RawMessage) (*rowPlan, error) {
	if p, ok := d.plans[string(schema)]; ok {
		return p, nil
	}
	p, err := planFromEnvelopeSchema(schema)
	if err != nil {
		return nil, err
	}
	if len(d.plans) >= maxPlans {
		clear(d.plans)
	}
	d.plans[string(schema)] = p
	return p, nil
}

// row renders the row image to load: values converted by the plan, and
// `"__op": 1` first for a delete.
func (d *decoder) row(img json.RawMessage, plan *rowPlan, del bool) ([]byte, error) {
	img = bytes.TrimSpace(img)
	if len(img) == 0 || string(img) == "null" {
		return nil, errors.New("the row image is missing (null)")
	}
	if img[0] != '{' {
		return nil, fmt.Errorf("the row image is not a JSON object: %s", clip(img))
	}
	if plan == nil || len(plan.convs) == 0 {
		if !del {
			return append([]byte(nil), img...), nil
		}
		out := make([]byte, 0, len(img)+10)
		out = append(out, `{"__op":1`...)
		rest := bytes.TrimSpace(img[1:])
		if len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, rest...), nil
	}
	return d.convertObject(img, plan, del)
}

// convertObject rewrites the members of a JSON object in their order,
// converting those the plan names.
func (d *decoder) convertObject(img []byte, plan *rowPlan, del bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(img))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(img)+32)
	out = append(out, '{')
	if del {
		out = append(out, `"__op":1`...)
	}
	first := !del
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("unexpected %v in the row image", tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("field %q: %w", key, err)
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		kb, _ := json.Marshal(key)
		out = append(out, kb...)
		out = append(out, ':')
		if c, ok := plan.convs[key]; ok {
			if out, err = d.w.convert(out, c, raw); err != nil {
				return nil, fmt.Errorf("field %q: %w", key, err)
			}
			continue
		}
		out = append(out, raw...)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// txnMeta is one record of the transaction topic.
type txnMeta struct {
	end         bool
	id          string
	eventCount  int64
	collections []collectionCount
}

type collectionCount struct {
	name  string
	count int64
}

type wireTxnMeta struct {
	Schema          json.RawMessage `json:"schema"`
	Payload         json.RawMessage `json:"payload"`
	Status          string          `json:"status"`
	ID              flexString      `json:"id"`
	EventCount      flexInt         `json:"event_count"`
	DataCollections []struct {
		DataCollection string  `json:"data_collection"`
		EventCount     flexInt `json:"event_count"`
	} `json:"data_collections"`
}

// decodeTxnMeta reads a BEGIN or END record of the transaction topic, with
// or without the JsonConverter's schema.
func decodeTxnMeta(value []byte) (txnMeta, error) {
	var w wireTxnMeta
	if err := json.Unmarshal(value, &w); err != nil {
		return txnMeta{}, fmt.Errorf("not a Debezium transaction metadata event: %w", err)
	}
	if w.Status == "" && len(w.Payload) > 0 {
		var inner wireTxnMeta
		if err := json.Unmarshal(w.Payload, &inner); err != nil {
			return txnMeta{}, fmt.Errorf("not a Debezium transaction metadata event: payload: %w", err)
		}
		w = inner
	}
	m := txnMeta{id: string(w.ID)}
	switch w.Status {
	case "BEGIN":
	case "END":
		m.end = true
		if !w.EventCount.set {
			return txnMeta{}, errors.New("END event without event_count")
		}
		m.eventCount = w.EventCount.v
		for _, c := range w.DataCollections {
			if c.DataCollection == "" || !c.EventCount.set || c.EventCount.v < 0 {
				return txnMeta{}, errors.New("END event with a data_collections entry lacking data_collection or event_count")
			}
			m.collections = append(m.collections, collectionCount{name: c.DataCollection, count: c.EventCount.v})
		}
	default:
		return txnMeta{}, fmt.Errorf("not a Debezium transaction metadata event: status %q is neither BEGIN nor END", w.Status)
	}
	if m.id == "" {
		return txnMeta{}, errors.New("transaction metadata event without an id")
	}
	return m, nil
}
