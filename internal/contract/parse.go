package contract

import (
	"fmt"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Field names one key of the contract, for the sets Parse reports.
type Field uint8

// The contract's keys, in the order Read checks them.
const (
	FieldPartition Field = iota
	FieldDatabase
	FieldTable
	FieldTxnID
	FieldSeqSource
	FieldTxnEnd
	FieldTxnAbort
	FieldMarker
	FieldSeq
	FieldSourceOffset
	FieldPartitionEpoch
	FieldSchemaChange
	numFields
)

var fieldKeys = [numFields]string{
	FieldPartition:      KeyPartition,
	FieldDatabase:       KeyDatabase,
	FieldTable:          KeyTable,
	FieldTxnID:          KeyTxnID,
	FieldSeqSource:      KeySeqSource,
	FieldTxnEnd:         KeyTxnEnd,
	FieldTxnAbort:       KeyTxnAbort,
	FieldMarker:         KeyMarker,
	FieldSeq:            KeySeq,
	FieldSourceOffset:   KeySourceOffset,
	FieldPartitionEpoch: KeyPartitionEpoch,
	FieldSchemaChange:   KeySchemaChange,
}

// Key returns the metadata key of f.
func (f Field) Key() string {
	if f >= numFields {
		return fmt.Sprintf("contract.Field(%d)", f)
	}
	return fieldKeys[f]
}

func (f Field) String() string { return f.Key() }

// Fields is a set of contract keys.
type Fields uint16

// Has reports whether f is in the set.
func (s Fields) Has(f Field) bool { return s&(1<<f) != 0 }

func (s Fields) with(f Field) Fields { return s | 1<<f }

// List returns the keys of the set in Field order.
func (s Fields) List() []Field {
	var out []Field
	for f := Field(0); f < numFields; f++ {
		if s.Has(f) {
			out = append(out, f)
		}
	}
	return out
}

// String lists the metadata keys of the set, comma-separated.
func (s Fields) String() string {
	keys := make([]string, 0, numFields)
	for _, f := range s.List() {
		keys = append(keys, f.Key())
	}
	return strings.Join(keys, ", ")
}

// Parsed is the contract of one message with what the output needs to judge
// it: which keys it carries, which of them are malformed, and (through Row)
// what the assembler already established about its body.
type Parsed struct {
	// Meta holds every value that could be read; a malformed one is left at
	// its zero value (and its Has flag false).
	Meta
	// Present is the set of keys the message carries with a value (an empty
	// string or a nil value counts as absent, as in Read).
	Present Fields
	// Malformed is the subset of Present whose value cannot be read: a flag
	// that is not true or false, a number that is not whole, a negative
	// epoch. The string keys are never malformed.
	Malformed Fields
	// Err is Read's error: the first malformed key, in Field order, wrapped
	// in ErrBadContract; nil when Malformed is empty.
	Err error

	stamp *stamp
}

// Named reports whether the message names a partition and a transaction: the
// output can then attribute it (and poison that transaction when Malformed
// is not empty) instead of treating the message as contract-less.
func (p Parsed) Named() bool {
	return p.Present.Has(FieldPartition) && p.Present.Has(FieldTxnID)
}

// Typed reports whether the message carried a typed value (KeyTyped), from
// which the typed keys not set as strings were read.
func (p Parsed) Typed() bool { return p.stamp != nil }

// Parse reads the contract of a message: the string keys, and the typed
// keys from the typed value an assembler writes under KeyTyped, except
// those set as metadata after it (a later processor's value wins, as if
// the typed value had been materialized before it ran). A message without
// a typed value is read from its string keys alone, as a hand-written
// mapping sets them.
func Parse(msg *service.Message) Parsed {
	return parse(msg, typedValue(msg))
}

// parseStrings reads the string keys only, ignoring any typed value.
func parseStrings(msg *service.Message) Parsed {
	return parse(msg, nil)
}

// parse reads every key, even after a malformed one; a typed key not set
// in the metadata is taken from st when there is one.
func parse(msg *service.Message, st *stamp) Parsed {
	p := Parsed{stamp: st}
	for _, s := range []struct {
		f   Field
		dst *string
	}{
		{FieldPartition, &p.Partition},
		{FieldDatabase, &p.Database},
		{FieldTable, &p.Table},
		{FieldTxnID, &p.TxnID},
	} {
		*s.dst, _ = msg.MetaGet(s.f.Key())
		if *s.dst != "" {
			p.Present = p.Present.with(s.f)
		}
	}
	if _, set := msg.MetaGetMut(KeySeqSource); set || st == nil {
		if p.SeqSource, _ = msg.MetaGet(KeySeqSource); p.SeqSource != "" {
			p.Present = p.Present.with(FieldSeqSource)
		}
	} else {
		p.SeqSource = st.seqSource
		p.fromStamp(st, FieldSeqSource)
	}
	for _, b := range []struct {
		f   Field
		dst *bool
	}{
		{FieldTxnEnd, &p.TxnEnd},
		{FieldTxnAbort, &p.TxnAbort},
		{FieldMarker, &p.Marker},
	} {
		v, set := msg.MetaGetMut(b.f.Key())
		if !set && st != nil {
			*b.dst = st.present.Has(b.f)
			p.fromStamp(st, b.f)
			continue
		}
		x, err := boolValue(b.f.Key(), v)
		p.note(b.f, v, err)
		*b.dst = x
	}
	for _, n := range []struct {
		f   Field
		dst *int64
		has *bool
	}{
		{FieldSeq, &p.Seq, &p.HasSeq},
		{FieldSourceOffset, &p.SourceOffset, &p.HasOffset},
	} {
		v, set := msg.MetaGetMut(n.f.Key())
		if !set && st != nil {
			if st.present.Has(n.f) {
				*n.has = true
				if n.f == FieldSeq {
					*n.dst = st.seq
				} else {
					*n.dst, p.ArrivalOffset = st.offset, st.arrival
				}
			}
			p.fromStamp(st, n.f)
			continue
		}
		var err error
		*n.dst, *n.has, err = intValue(n.f.Key(), v)
		p.note(n.f, v, err)
	}
	v, _ := msg.MetaGetMut(KeyPartitionEpoch)
	var err error
	p.Epoch, p.HasEpoch, err = epochValue(v)
	p.note(FieldPartitionEpoch, v, err)
	if v, set := msg.MetaGetMut(KeySchemaChange); !set && st != nil {
		p.SchemaChange = st.present.Has(FieldSchemaChange)
		p.fromStamp(st, FieldSchemaChange)
	} else {
		x, err := boolValue(KeySchemaChange, v)
		p.note(FieldSchemaChange, v, err)
		p.SchemaChange = x
	}
	return p
}

// fromStamp records a typed key read from the typed value.
func (p *Parsed) fromStamp(st *stamp, f Field) {
	if st.present.Has(f) {
		p.Present = p.Present.with(f)
	}
}

// note records whether the key f, with metadata value v, is present and
// malformed.
func (p *Parsed) note(f Field, v any, err error) {
	if v != nil && v != "" {
		p.Present = p.Present.with(f)
	}
	if err == nil {
		return
	}
	p.Malformed = p.Malformed.with(f)
	if p.Err == nil {
		p.Err = err
	}
}

// readPrefix is Read's result on an error: the values read before the first
// malformed key, and nothing from it on.
func (p *Parsed) readPrefix() Meta {
	m := p.Meta
	first := numFields
	for f := FieldTxnEnd; f < numFields; f++ {
		if p.Malformed.Has(f) {
			first = f
			break
		}
	}
	for f := first; f < numFields; f++ {
		switch f {
		case FieldTxnEnd:
			m.TxnEnd = false
		case FieldTxnAbort:
			m.TxnAbort = false
		case FieldMarker:
			m.Marker = false
		case FieldSeq:
			m.Seq, m.HasSeq = 0, false
		case FieldSourceOffset:
			m.SourceOffset, m.HasOffset, m.ArrivalOffset = 0, false, false
		case FieldPartitionEpoch:
			m.Epoch, m.HasEpoch = 0, false
		case FieldSchemaChange:
			m.SchemaChange = false
		}
	}
	return m
}

// Row returns what the assembler established about body when it wrote the
// contract: that it is one JSON object (json.Valid, starting with '{', no
// surrounding white space) and whether it is a delete (its top-level __op
// is 1, as the output decides it). ok is false when there is no such
// knowledge: the contract was not typed, the message is not a row the
// assembler built, or body is not the very byte slice the assembler set
// (a later processor replaced the body). The output then checks the body
// itself.
func (p Parsed) Row(body []byte) (row RowFacts, ok bool) {
	st := p.stamp
	if st == nil || !st.hasRow || len(body) == 0 || len(body) != len(st.body) || &body[0] != &st.body[0] {
		return RowFacts{}, false
	}
	return RowFacts{Delete: st.del, Schema: st.schema, Keys: st.keys}, true
}

// RowFacts is what the assembler knows about a row body it built.
type RowFacts struct {
	// Delete is set when the row's top-level __op is 1.
	Delete bool
	// Schema, when set, is the row's table as the source defines it
	// (a Kafka Connect schema, say): its columns in StarRocks types and its
	// primary key, one value shared by every row of that source schema, so
	// that the output checks it against StarRocks once (ARCHITECTURE.md
	// §14.1). Immutable.
	Schema *schema.Table
	// Keys, when not zero, is KeysHash of the row's top-level keys.
	Keys uint64
}
