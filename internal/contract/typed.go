package contract

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// KeyTyped holds the typed form of the contract, written by Write and
// Writer: a Go value (opaque to users) that Parse reads first. It carries
// the keys a mapping or an interpolation rarely reads — KeySeq,
// KeySeqSource, KeySourceOffset, KeyTxnEnd, KeyTxnAbort and KeyMarker (the
// typed keys) — which Write therefore does not set as strings, and what the
// writer established about a row body it built (Parsed.Row). The string
// keys a user routes on or interpolates (KeyPartition, KeyDatabase,
// KeyTable, KeyTxnID and KeyPartitionEpoch) are always written as strings
// and always read from the strings.
//
// A typed key set as metadata after the writer (by a later processor or a
// mapping) wins over the typed value, whatever it holds, so the string keys
// stay the contract: a hand-written mapping never needs this key, and one
// that changes a key after the assembler is obeyed. Materialize writes the
// typed keys back as strings (for dead letters, Kafka headers and anything
// else that leaves the process). Rendered as text (a Kafka header, a log
// line) the value is a small JSON object of the typed keys.
const KeyTyped = "starrocks_contract"

// typedFields are the keys the typed value carries, in Field order.
var typedFields = [...]Field{FieldSeqSource, FieldTxnEnd, FieldTxnAbort, FieldMarker, FieldSeq, FieldSourceOffset, FieldSchemaChange}

// stamp is the value under KeyTyped. It is immutable once written, so
// message copies share it. It holds the typed keys only (the string keys
// are read from the strings), in a small value: one is made per message
// and held as long as the message, so its flags come last, together (80
// bytes, not 88 with a flag between the words).
type stamp struct {
	seqSource string
	seq       int64
	offset    int64
	// body is the row body set on the message, when hasRow: a JSON object
	// whose __op says del.
	body []byte
	// schema and keys are RowFacts.Schema and RowFacts.Keys.
	schema *schema.Table
	keys   uint64
	// present is the set of typed keys the writer set; for KeyTxnEnd,
	// KeyTxnAbort and KeyMarker it is their value.
	present Fields
	// arrival is Meta.ArrivalOffset: offset is an arrival counter.
	arrival bool
	hasRow  bool
	del     bool
}

// typedValue returns the stamp a message carries, or nil.
func typedValue(msg *service.Message) *stamp {
	v, ok := msg.MetaGetMut(KeyTyped)
	if !ok {
		return nil
	}
	st, _ := v.(*stamp)
	return st
}

// Materialize sets every typed key the message's typed value carries as a
// string, unless the key is already set (a later processor's value wins,
// as in Parse): afterwards the string keys alone hold the whole contract,
// as a hand-written mapping would have set them. An arrival counter
// (Meta.ArrivalOffset) is no source position and is not written: as a
// string it would be read as one downstream. Call it on a copy of a
// message that leaves the pipeline with its metadata as text (dead letters,
// Kafka headers). It reports whether the message carried a typed value.
func Materialize(msg *service.Message) bool {
	st := typedValue(msg)
	if st == nil {
		return false
	}
	for _, f := range typedFields {
		if !st.present.Has(f) || (f == FieldSourceOffset && st.arrival) {
			continue
		}
		if _, set := msg.MetaGetMut(f.Key()); set {
			continue
		}
		var v string
		switch f {
		case FieldSeqSource:
			v = st.seqSource
		case FieldTxnEnd, FieldTxnAbort, FieldMarker, FieldSchemaChange:
			v = "true"
		case FieldSeq:
			v = strconv.FormatInt(st.seq, 10)
		case FieldSourceOffset:
			v = strconv.FormatInt(st.offset, 10)
		}
		msg.MetaSetMut(f.Key(), v)
	}
	return true
}

// Materialized returns msg itself when it carries no typed value, else a
// copy with the typed keys materialized (Materialize): for a component
// that reads metadata as text and must not change the message it was
// given.
func Materialized(msg *service.Message) *service.Message {
	if typedValue(msg) == nil {
		return msg
	}
	c := msg.Copy()
	Materialize(c)
	return c
}

// MarshalJSON renders the stamp where Benthos turns metadata into text.
func (st *stamp) MarshalJSON() ([]byte, error) {
	type rendered struct {
		Seq          *int64 `json:"seq,omitempty"`
		SeqSource    string `json:"seq_source,omitempty"`
		SourceOffset *int64 `json:"source_offset,omitempty"`
		Arrival      bool   `json:"source_offset_is_arrival,omitempty"`
		TxnEnd       bool   `json:"txn_end,omitempty"`
		TxnAbort     bool   `json:"txn_abort,omitempty"`
		Marker       bool   `json:"marker,omitempty"`
		Row          bool   `json:"row"`
		Delete       bool   `json:"delete,omitempty"`
		SchemaChange bool   `json:"schema_change,omitempty"`
	}
	r := rendered{SeqSource: st.seqSource, TxnEnd: st.present.Has(FieldTxnEnd),
		TxnAbort: st.present.Has(FieldTxnAbort), Marker: st.present.Has(FieldMarker),
		Row: st.hasRow, Delete: st.del, SchemaChange: st.present.Has(FieldSchemaChange)}
	if st.present.Has(FieldSeq) {
		r.Seq = &st.seq
	}
	if st.present.Has(FieldSourceOffset) {
		r.SourceOffset, r.Arrival = &st.offset, st.arrival
	}
	return json.Marshal(r)
}

// Writer writes the contract like Write, with fewer allocations: it keeps
// the boxed form of the string values that repeat from message to message
// (partition, transaction, table, database, epoch), and takes stamps from
// blocks it allocates in bulk. A Writer is not safe for concurrent use:
// give each assembler instance its own.
type Writer struct {
	boxes  [numFields]boxCache
	stamps []stamp
}

// Block sizes: a block stays in memory while any message made from it
// does, so stamps (which reference their message's body) come in small
// blocks.
const (
	stampBlock = 32
	// maxBoxed is the longest string the Writer keeps boxed.
	maxBoxed = 256
)

// Write stamps m onto msg, as the package function Write does.
func (w *Writer) Write(msg *service.Message, m Meta) {
	write(w, msg, m, nil, RowFacts{})
}

// WriteRow stamps m onto a data row whose body the caller has just set to
// body with msg.SetBytes and vouches for: body is one JSON object (valid,
// starting with '{', no surrounding white space) whose top-level __op is 1
// exactly when del is set. Parsed.Row hands this to the output, which then
// skips its own validation of the body.
func (w *Writer) WriteRow(msg *service.Message, m Meta, body []byte, del bool) {
	write(w, msg, m, body, RowFacts{Delete: del})
}

// WriteRowFacts is WriteRow with more of what the writer knows of the row:
// its source schema, and the hash of its keys (RowFacts).
func (w *Writer) WriteRowFacts(msg *service.Message, m Meta, body []byte, facts RowFacts) {
	write(w, msg, m, body, facts)
}

// write is Write for a nil w, WriteRow for a non-nil body.
func write(w *Writer, msg *service.Message, m Meta, body []byte, facts RowFacts) {
	var st *stamp
	if w != nil {
		st = w.stamp()
	} else {
		st = new(stamp)
	}
	// The stamp holds what Read would give: no number without its flag.
	*st = stamp{seqSource: m.SeqSource}
	if m.HasSeq {
		st.seq = m.Seq
	}
	if m.HasOffset {
		st.offset, st.arrival = m.SourceOffset, m.ArrivalOffset
	}
	st.body, st.hasRow, st.del = body, body != nil, facts.Delete && body != nil
	if body != nil {
		st.schema, st.keys = facts.Schema, facts.Keys
	}
	w.setString(msg, FieldPartition, m.Partition)
	w.setString(msg, FieldDatabase, m.Database)
	w.setString(msg, FieldTable, m.Table)
	w.setString(msg, FieldTxnID, m.TxnID)
	// The typed keys live in the stamp only; a string left under one of
	// them (by an input's headers, or an earlier writer) would override it.
	for _, f := range typedFields {
		deleteKey(msg, f.Key())
	}
	if m.SeqSource != "" {
		st.present = st.present.with(FieldSeqSource)
	}
	if m.TxnEnd {
		st.present = st.present.with(FieldTxnEnd)
	}
	if m.TxnAbort {
		st.present = st.present.with(FieldTxnAbort)
	}
	if m.Marker {
		st.present = st.present.with(FieldMarker)
	}
	if m.SchemaChange {
		st.present = st.present.with(FieldSchemaChange)
	}
	if m.HasSeq {
		st.present = st.present.with(FieldSeq)
	}
	if m.HasOffset {
		st.present = st.present.with(FieldSourceOffset)
	}
	switch {
	case m.HasEpoch && m.Epoch > math.MaxInt64:
		// Read refuses such an epoch; it is written as given, and the
		// output poisons the transaction it names.
		msg.MetaSetMut(KeyPartitionEpoch, strconv.FormatUint(m.Epoch, 10))
	case m.HasEpoch:
		if cur, _ := msg.MetaGetMut(KeyPartitionEpoch); !isEpoch(cur, m.Epoch) {
			// Usually the input's own value is already this number.
			msg.MetaSetMut(KeyPartitionEpoch, w.box(FieldPartitionEpoch, strconv.FormatUint(m.Epoch, 10)))
		}
	default:
		deleteKey(msg, KeyPartitionEpoch)
	}
	msg.MetaSetMut(KeyTyped, st)
}

// isEpoch reports whether v is the canonical decimal string of epoch, as an
// input stamps it.
func isEpoch(v any, epoch uint64) bool {
	s, ok := v.(string)
	if !ok || len(s) == 0 || len(s) > 20 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return err == nil && n == epoch
}

func (w *Writer) setString(msg *service.Message, f Field, v string) {
	if v == "" {
		deleteKey(msg, f.Key())
		return
	}
	msg.MetaSetMut(f.Key(), w.box(f, v))
}

// deleteKey removes key from msg's metadata. It looks first: the key is
// usually absent, and a lookup costs half what deleting an absent key does.
func deleteKey(msg *service.Message, key string) {
	if _, set := msg.MetaGetMut(key); set {
		msg.MetaDelete(key)
	}
}

// box returns s as an interface value, reusing the one made for the same
// string recently.
func (w *Writer) box(f Field, s string) any {
	if w == nil || len(s) > maxBoxed {
		return s
	}
	return w.boxes[f].box(s)
}

func (w *Writer) stamp() *stamp {
	if len(w.stamps) == 0 {
		w.stamps = make([]stamp, stampBlock)
	}
	st := &w.stamps[0]
	w.stamps = w.stamps[1:]
	return st
}

// boxCache remembers the last few strings boxed for one key.
type boxCache struct {
	s    [4]string
	v    [4]any
	next uint8
}

func (c *boxCache) box(s string) any {
	for i := range c.v {
		if c.v[i] != nil && c.s[i] == s {
			return c.v[i]
		}
	}
	v := any(s)
	i := c.next % uint8(len(c.v))
	c.s[i], c.v[i] = s, v
	c.next++
	return v
}
