package contract

import (
	"encoding/json"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"math"
	"strconv"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// allKeys are the contract's metadata keys, the typed value's and one that
// is no part of the contract.
var allKeys = append(fieldKeys[:], KeyTyped, "kafka_offset")

var stringPool = []string{"", "p0", "cdc/3", "test", "orders", "t-17", "null", "true", "false", "1", "0", "7", "-1",
	"42", "seven", "1.5", " 7", "9223372036854775808", "18446744073709551615", "yes", "TRUE"}

func genString(t *rapid.T, label string) string { return rapid.SampledFrom(stringPool).Draw(t, label) }

// genValue draws a metadata value of any type a mapping or an input may set.
func genValue(t *rapid.T, label string) any {
	switch rapid.IntRange(0, 9).Draw(t, label+"/type") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, label+"/bool")
	case 2:
		return rapid.Int64().Draw(t, label+"/int64")
	case 3:
		return rapid.IntRange(-5, 5).Draw(t, label+"/int")
	case 4:
		return rapid.SampledFrom([]float64{0, 1, 12, -3, 1.5, 1e300, math.NaN()}).Draw(t, label+"/float")
	case 5:
		return rapid.SampledFrom([]uint64{0, 3, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64}).Draw(t, label+"/uint64")
	case 6:
		return int32(rapid.IntRange(-3, 3).Draw(t, label+"/int32"))
	}
	return genString(t, label+"/string")
}

func genMeta(t *rapid.T) Meta {
	return Meta{
		Partition: genString(t, "partition"), Database: genString(t, "database"), Table: genString(t, "table"),
		TxnID: genString(t, "txn"), SeqSource: genString(t, "seqSource"),
		TxnEnd: rapid.Bool().Draw(t, "end"), TxnAbort: rapid.Bool().Draw(t, "abort"), Marker: rapid.Bool().Draw(t, "marker"),
		HasSeq: rapid.Bool().Draw(t, "hasSeq"), Seq: rapid.SampledFrom([]int64{1, 42, 99, 100, 123456789, -7, math.MaxInt64, math.MinInt64}).Draw(t, "seq"),
		HasOffset: rapid.Bool().Draw(t, "hasOffset"), SourceOffset: rapid.Int64().Draw(t, "offset"),
		HasEpoch: rapid.Bool().Draw(t, "hasEpoch"), Epoch: rapid.SampledFrom([]uint64{0, 1, 2, 150, math.MaxInt64, math.MaxInt64 + 1}).Draw(t, "epoch"),
		SchemaChange: rapid.Bool().Draw(t, "schemaChange"),
	}
}

// genMessage draws a message carrying arbitrary metadata under contract keys
// and others: what an input or an earlier processor may have left.
func genMessage(t *rapid.T, label string) func() *service.Message {
	type kv struct {
		k string
		v any
	}
	var pre []kv
	for i, n := 0, rapid.IntRange(0, 6).Draw(t, label+"/n"); i < n; i++ {
		pre = append(pre, kv{rapid.SampledFrom(allKeys).Draw(t, label+"/key"), genValue(t, label+"/value")})
	}
	return func() *service.Message {
		msg := service.NewMessage([]byte(`{"a":1}`))
		for _, e := range pre {
			msg.MetaSetMut(e.k, e.v)
		}
		return msg
	}
}

// mutate changes, removes or re-sets contract keys the way a later
// processor may.
func mutate(t *rapid.T, msg *service.Message) bool {
	n := rapid.IntRange(0, 3).Draw(t, "mutations")
	for i := 0; i < n; i++ {
		key := rapid.SampledFrom(allKeys).Draw(t, "mutate/key")
		switch rapid.IntRange(0, 2).Draw(t, "mutate/op") {
		case 0:
			msg.MetaDelete(key)
		case 1:
			msg.MetaSetMut(key, genValue(t, "mutate/value"))
		default:
			// The same text again, as a new string: still the contract
			// that was written.
			if s, ok := msg.MetaGet(key); ok && key != KeyTyped {
				msg.MetaSetMut(key, string([]byte(s)))
			}
		}
	}
	return n > 0
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkParse compares Parse with the string keys of the message with its
// typed keys materialized, and with the reference Read on that message,
// and checks the key sets against their definitions.
func checkParse(t require.TestingT, msg *service.Message) Parsed {
	p := Parse(msg)
	ref := Materialized(msg)
	q := parseStrings(ref)
	require.Equal(t, q.Meta, p.Meta, "the typed path and the materialized string keys disagree")
	require.Equal(t, q.Present, p.Present)
	require.Equal(t, q.Malformed, p.Malformed)
	require.Equal(t, errText(q.Err), errText(p.Err))
	require.Equal(t, typedValue(msg) != nil, p.Typed())

	m, err := Read(msg)
	rm, rerr := readReference(ref)
	require.Equal(t, rm, m, "Read changed")
	require.Equal(t, errText(rerr), errText(err), "Read's error changed")

	for f := Field(0); f < numFields; f++ {
		var present, malformed bool
		switch f {
		case FieldPartition, FieldDatabase, FieldTable, FieldTxnID, FieldSeqSource:
			s, _ := ref.MetaGet(f.Key())
			present = s != ""
		default:
			v, ok := ref.MetaGetMut(f.Key())
			present = ok && v != nil && v != ""
			var ferr error
			switch f {
			case FieldTxnEnd, FieldTxnAbort, FieldMarker, FieldSchemaChange:
				_, ferr = boolValue(f.Key(), v)
			case FieldPartitionEpoch:
				_, _, ferr = epochValue(v)
			default:
				_, _, ferr = intValue(f.Key(), v)
			}
			malformed = ferr != nil
			if malformed {
				require.ErrorIs(t, ferr, ErrBadContract)
			}
		}
		require.Equal(t, present, p.Present.Has(f), "present %s", f)
		require.Equal(t, malformed, p.Malformed.Has(f), "malformed %s", f)
	}
	require.Equal(t, p.Malformed, p.Malformed&p.Present, "only a present key can be malformed")
	require.Equal(t, p.Malformed != 0, p.Err != nil)
	return p
}

// Write sets the string keys users route on as strings and the typed keys
// in the typed value only; materialized, the message carries exactly what
// Write always wrote, and Parse reads it.
func TestWriteMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var w Writer
		for i, n := 0, rapid.IntRange(1, 4).Draw(t, "messages"); i < n; i++ {
			pre := genMessage(t, "pre")
			m := genMeta(t)
			got, want := pre(), pre()
			switch rapid.IntRange(0, 2).Draw(t, "writer") {
			case 0:
				Write(got, m)
			case 1:
				w.Write(got, m)
			default:
				w.WriteRow(got, m, []byte(`{"a":1,"__op":0}`), false)
			}
			writeReference(want, m)
			for _, f := range typedFields {
				_, set := got.MetaGetMut(f.Key())
				require.False(t, set, "%s is not written as a string", f)
			}
			require.Equal(t, metaStrings(want), metaStrings(Materialized(got)), "the materialized keys differ from what Write always wrote")
			p := checkParse(t, got)
			require.True(t, p.Typed(), "a written message carries the typed value")
		}
	})
}

// A processor after the writer may change any key: Parse then reads what
// a materialized message with the same change would hold.
func TestParseTypedNeverDisagreesWithStrings(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var w Writer
		msg := genMessage(t, "pre")()
		w.Write(msg, genMeta(t))
		mutate(t, msg)
		checkParse(t, msg)
	})
}

// Materialize fills only what is not set: a key changed after the writer
// keeps its new value, and a message without a typed value is untouched.
func TestMaterializeKeepsLaterValues(t *testing.T) {
	msg := service.NewMessage(nil)
	Write(msg, Meta{Partition: "p", TxnID: "t", HasSeq: true, Seq: 7, SeqSource: "s", HasOffset: true, SourceOffset: 9, TxnEnd: true, Marker: true})
	msg.MetaSetMut(KeyTxnEnd, "false")
	c := Materialized(msg)
	require.NotSame(t, msg, c, "a typed message is copied")
	for k, want := range map[string]string{KeySeq: "7", KeySeqSource: "s", KeySourceOffset: "9", KeyMarker: "true", KeyTxnEnd: "false", KeyPartition: "p", KeyTxnID: "t"} {
		v, _ := c.MetaGet(k)
		assert.Equal(t, want, v, k)
	}
	_, set := c.MetaGetMut(KeyTxnAbort)
	assert.False(t, set, "a false flag stays absent")
	_, set = msg.MetaGetMut(KeySeq)
	assert.False(t, set, "the original is not changed")
	assert.False(t, Parse(c).TxnEnd, "the later value wins")

	plain := service.NewMessage(nil)
	plain.MetaSetMut(KeySeq, "3")
	assert.Same(t, plain, Materialized(plain))
	assert.False(t, Materialize(plain))
}

func TestReadOnArbitraryMetadata(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		checkParse(t, genMessage(t, "msg")())
	})
}

func TestParseTellsMalformedFromAbsent(t *testing.T) {
	msg := service.NewMessage(nil)
	p := Parse(msg)
	assert.Zero(t, p.Present, "no contract")
	assert.Zero(t, p.Malformed)
	assert.False(t, p.Named())
	assert.NoError(t, p.Err)

	var w Writer
	w.Write(msg, Meta{Partition: "cdc/1", TxnID: "t-9", HasSeq: true, Seq: 12, SeqSource: "a1", HasOffset: true, SourceOffset: 5, TxnEnd: true})
	msg.MetaSetMut(KeySeq, "twelve")
	msg.MetaSetMut(KeyTxnEnd, "yes")
	p = Parse(msg)
	assert.True(t, p.Typed())
	assert.True(t, p.Named(), "the message still names its partition and transaction")
	assert.Equal(t, "cdc/1", p.Partition)
	assert.Equal(t, "t-9", p.TxnID)
	assert.True(t, p.Malformed.Has(FieldSeq))
	assert.True(t, p.Malformed.Has(FieldTxnEnd))
	assert.False(t, p.Malformed.Has(FieldSourceOffset))
	assert.Equal(t, int64(5), p.SourceOffset, "values after a malformed one are still read")
	assert.False(t, p.HasSeq)
	assert.Equal(t, "starrocks_txn_end, starrocks_seq", p.Malformed.String())
	require.ErrorIs(t, p.Err, ErrBadContract)
	assert.Contains(t, p.Err.Error(), KeyTxnEnd, "Err is the first malformed key, as Read's")

	m, err := Read(msg)
	require.ErrorIs(t, err, ErrBadContract)
	assert.False(t, m.HasOffset, "Read stops at the first malformed key, as it always did")
}

func TestRowFactsFollowTheBody(t *testing.T) {
	var w Writer
	body := []byte(`{"id":1,"__op":1}`)
	msg := service.NewMessage(nil)
	msg.SetBytes(body)
	w.WriteRow(msg, Meta{Partition: "p", TxnID: "t", HasSeq: true, Seq: 1, SeqSource: "s", HasOffset: true, SourceOffset: 1}, body, true)

	got, err := msg.AsBytes()
	require.NoError(t, err)
	p := Parse(msg)
	require.True(t, p.Typed())
	f, ok := p.Row(got)
	require.True(t, ok, "the body the assembler set")
	assert.True(t, f.Delete)

	_, ok = p.Row(append([]byte(nil), got...))
	assert.False(t, ok, "equal bytes elsewhere are not the body that was checked")
	_, ok = p.Row(got[:len(got)-1])
	assert.False(t, ok)

	c := msg.Copy()
	p = Parse(c)
	b, _ := c.AsBytes()
	_, ok = p.Row(b)
	assert.True(t, ok, "a copy shares the body")
	c.SetBytes([]byte(`{"id":2,"__op":0}`))
	b, _ = c.AsBytes()
	_, ok = Parse(c).Row(b)
	assert.False(t, ok, "a processor that replaced the body voids the facts")

	c = msg.Copy()
	c.MetaSetMut(KeyTable, "other")
	b, _ = c.AsBytes()
	p = Parse(c)
	_, ok = p.Row(b)
	assert.True(t, ok, "the facts are about the body, which is unchanged")
	assert.Equal(t, "other", p.Table, "the changed string key wins")

	c = msg.Copy()
	c.MetaDelete(KeyTyped)
	b, _ = c.AsBytes()
	_, ok = Parse(c).Row(b)
	assert.False(t, ok, "without the typed value there are no facts")

	m := service.NewMessage(body)
	w.Write(m, Meta{Partition: "p", HasSeq: true, Seq: 2})
	b, _ = m.AsBytes()
	_, ok = Parse(m).Row(b)
	assert.False(t, ok, "Write vouches for no body")
}

func TestTypedValueRendersAsJSON(t *testing.T) {
	msg := service.NewMessage(nil)
	Write(msg, Meta{Partition: "p", HasSeq: true, Seq: 7, SeqSource: "a1"})
	s, ok := msg.MetaGet(KeyTyped)
	require.True(t, ok)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	assert.Equal(t, float64(7), v["seq"])
	assert.Equal(t, "a1", v["seq_source"])
}

func TestWriterReusesButNeverConfusesValues(t *testing.T) {
	var w Writer
	msgs := make([]*service.Message, 300)
	for i := range msgs {
		msgs[i] = service.NewMessage(nil)
		w.Write(msgs[i], Meta{Partition: "p" + strconv.Itoa(i%7), TxnID: "t" + strconv.Itoa(i/3), HasSeq: true, Seq: int64(1000 + i),
			SeqSource: "s", HasOffset: true, SourceOffset: int64(i * 1000003), HasEpoch: true, Epoch: uint64(i % 3)})
	}
	for i, msg := range msgs {
		m, err := Read(msg)
		require.NoError(t, err)
		assert.Equal(t, "p"+strconv.Itoa(i%7), m.Partition)
		assert.Equal(t, "t"+strconv.Itoa(i/3), m.TxnID)
		assert.Equal(t, int64(1000+i), m.Seq)
		assert.Equal(t, int64(i*1000003), m.SourceOffset)
		assert.Equal(t, uint64(i%3), m.Epoch)
		v, _ := Materialized(msg).MetaGet(KeySeq)
		assert.Equal(t, strconv.Itoa(1000+i), v)
	}
}

// WriteRowFacts hands the row's schema and key hash to the output through
// Parsed.Row, for the very body it was written with only.
func TestRowFactsCarrySchemaAndKeys(t *testing.T) {
	var w Writer
	tbl := &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}}, Key: []string{"id"}}
	body := []byte(`{"id":1}`)
	msg := service.NewMessage(nil)
	msg.SetBytes(body)
	w.WriteRowFacts(msg, Meta{Partition: "p", TxnID: "t", HasSeq: true, Seq: 1}, body, RowFacts{Schema: tbl, Keys: 42})
	p := Parse(msg)
	facts, ok := p.Row(body)
	require.True(t, ok)
	assert.Same(t, tbl, facts.Schema)
	assert.Equal(t, uint64(42), facts.Keys)
	_, ok = p.Row([]byte(`{"id":1}`))
	assert.False(t, ok, "another body is not vouched for")

	change := service.NewMessage([]byte(`{"columns":[]}`))
	w.Write(change, Meta{Partition: "p", TxnID: "t2", HasSeq: true, Seq: 2, SchemaChange: true, TxnEnd: true})
	p = Parse(change)
	assert.True(t, p.SchemaChange)
	assert.True(t, p.Present.Has(FieldSchemaChange))
	Materialize(change)
	v, _ := change.MetaGet(KeySchemaChange)
	assert.Equal(t, "true", v)
}

// An arrival counter (Meta.ArrivalOffset: the assembler's number for a
// source without positions) is read back from the typed value with its
// flag, is never written as a string — where metadata leaves the process
// as text it would be read as a source position — and gives way to a
// position a later processor sets.
func TestArrivalOffsetIsNoSourcePosition(t *testing.T) {
	for name, write := range map[string]func(*service.Message, Meta){"Write": Write, "Writer": new(Writer).Write} {
		t.Run(name, func(t *testing.T) {
			msg := service.NewMessage(nil)
			write(msg, Meta{Partition: "p", TxnID: "t", HasSeq: true, Seq: 3, SeqSource: "s", HasOffset: true, SourceOffset: 2, ArrivalOffset: true})
			p := Parse(msg)
			assert.True(t, p.HasOffset)
			assert.Equal(t, int64(2), p.SourceOffset)
			assert.True(t, p.ArrivalOffset)
			assert.True(t, p.Present.Has(FieldSourceOffset))
			m, err := Read(msg)
			require.NoError(t, err)
			assert.True(t, m.ArrivalOffset)

			c := Materialized(msg)
			_, set := c.MetaGetMut(KeySourceOffset)
			assert.False(t, set, "an arrival counter is not materialized")
			seq, _ := c.MetaGet(KeySeq)
			assert.Equal(t, "3", seq, "the other typed keys are")
			assert.True(t, Parse(c).ArrivalOffset, "the typed value still says what it is")
			c.MetaDelete(KeyTyped)
			p = Parse(c)
			assert.False(t, p.HasOffset, "as text (a Kafka header, a dead letter read back) the message has no offset")
			assert.False(t, p.ArrivalOffset)

			s, _ := msg.MetaGet(KeyTyped)
			var v map[string]any
			require.NoError(t, json.Unmarshal([]byte(s), &v), s)
			assert.Equal(t, float64(2), v["source_offset"])
			assert.Equal(t, true, v["source_offset_is_arrival"])

			d := msg.Copy()
			d.MetaSetMut(KeySourceOffset, "17")
			p = Parse(d)
			assert.Equal(t, int64(17), p.SourceOffset, "a position set after the writer wins")
			assert.False(t, p.ArrivalOffset, "and is a position")

			e := msg.Copy()
			e.MetaSetMut(KeySeq, "three")
			m, err = Read(e)
			require.Error(t, err)
			assert.False(t, m.HasOffset || m.ArrivalOffset, "Read stops at the malformed key before the offset")
		})
	}

	pos := service.NewMessage(nil)
	Write(pos, Meta{Partition: "p", TxnID: "t", HasOffset: true, SourceOffset: 2})
	assert.False(t, Parse(pos).ArrivalOffset)
	off, _ := Materialized(pos).MetaGet(KeySourceOffset)
	assert.Equal(t, "2", off, "a position is materialized")

	none := service.NewMessage(nil)
	Write(none, Meta{Partition: "p", TxnID: "t", ArrivalOffset: true})
	assert.False(t, Parse(none).ArrivalOffset, "no offset, no arrival counter")
}

// Whatever a later processor changes, the arrival flag is read exactly when
// the offset comes from the typed value that carries it, and the
// materialized string keys agree with Parse on everything but that offset.
func TestArrivalOffsetOnlyFromTheTypedValue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var w Writer
		msg := genMessage(t, "pre")()
		m := genMeta(t)
		m.ArrivalOffset = rapid.Bool().Draw(t, "arrival")
		w.Write(msg, m)
		mutate(t, msg)
		p := Parse(msg)
		st := typedValue(msg)
		_, stringSet := msg.MetaGetMut(KeySourceOffset)
		fromStamp := !stringSet && st != nil && st.present.Has(FieldSourceOffset)
		require.Equal(t, fromStamp && st.arrival, p.ArrivalOffset)
		q := parseStrings(Materialized(msg))
		require.False(t, q.ArrivalOffset, "the string keys never carry the flag")
		want := p.Meta
		if p.ArrivalOffset {
			require.True(t, p.HasOffset)
			require.Equal(t, st.offset, p.SourceOffset)
			require.False(t, q.HasOffset, "an arrival counter is never materialized")
			want.HasOffset, want.SourceOffset, want.ArrivalOffset = false, 0, false
		}
		require.Equal(t, want, q.Meta)
	})
}
