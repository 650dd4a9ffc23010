package contract

import (
	"encoding/json"
	"math"
	"strconv"
	"unsafe"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// KeyTyped holds the typed form of the contract, written next to the string
// keys by Write and Writer: a Go value (opaque to users) that Parse reads
// first, so that the output neither parses the numbers again nor re-checks
// a row body the assembler already validated. It is valid only while every
// string key holds what was written with it; Parse checks that, so the
// string keys stay the contract and a hand-written mapping never needs to
// set this key. Rendered as text (a Kafka header, a log line) it is a small
// JSON object.
const KeyTyped = "starrocks_contract"

// stamp is the value under KeyTyped. It is immutable once written, so
// message copies share it.
type stamp struct {
	meta    Meta
	present Fields
	// seq, offset and epoch are the decimal strings written.
	seq, offset, epoch string
	// body is the row body set on the message, when hasRow: a JSON object
	// whose __op says del.
	body   []byte
	hasRow bool
	del    bool
}

// matches reports whether every string key of msg still holds what was
// written with the stamp.
func (st *stamp) matches(msg *service.Message) bool {
	m := &st.meta
	return metaIs(msg, KeyPartition, m.Partition) &&
		metaIs(msg, KeyTxnID, m.TxnID) &&
		metaIs(msg, KeySeq, st.seq) &&
		metaIs(msg, KeySeqSource, m.SeqSource) &&
		metaIs(msg, KeySourceOffset, st.offset) &&
		metaIs(msg, KeyDatabase, m.Database) &&
		metaIs(msg, KeyTable, m.Table) &&
		metaIs(msg, KeyTxnEnd, flag(m.TxnEnd)) &&
		metaIs(msg, KeyMarker, flag(m.Marker)) &&
		metaIs(msg, KeyTxnAbort, flag(m.TxnAbort)) &&
		metaIs(msg, KeyPartitionEpoch, st.epoch)
}

// metaIs reports whether key holds the string want, or is absent when want
// is empty.
func metaIs(msg *service.Message, key, want string) bool {
	v, ok := msg.MetaGetMut(key)
	if want == "" {
		return !ok
	}
	return isString(v, want)
}

func flag(b bool) string {
	if b {
		return "true"
	}
	return ""
}

// MarshalJSON renders the stamp where Benthos turns metadata into text.
func (st *stamp) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Seq       string `json:"seq"`
		SeqSource string `json:"seq_source"`
		Row       bool   `json:"row"`
		Delete    bool   `json:"delete,omitempty"`
	}{st.seq, st.meta.SeqSource, st.hasRow, st.del})
}

// boxedTrue is the flag value, boxed once.
var boxedTrue any = "true"

// Writer writes the contract like Write, with fewer allocations: it keeps
// the boxed form of the string values that repeat from message to message
// (partition, transaction, table, database, instance tag, epoch), and takes
// stamps and decimal strings from blocks it allocates in bulk. A Writer is
// not safe for concurrent use: give each assembler instance its own.
type Writer struct {
	boxes  [numFields]boxCache
	stamps []stamp
	digits []byte
}

// Block sizes: a block stays in memory while any message made from it
// does, so stamps (which reference their message's body) come in small
// blocks.
const (
	stampBlock = 32
	digitBlock = 4096
	// maxBoxed is the longest string the Writer keeps boxed.
	maxBoxed = 256
)

// Write stamps m onto msg, as the package function Write does.
func (w *Writer) Write(msg *service.Message, m Meta) {
	write(w, msg, m, nil, false)
}

// WriteRow stamps m onto a data row whose body the caller has just set to
// body with msg.SetBytes and vouches for: body is one JSON object (valid,
// starting with '{', no surrounding white space) whose top-level __op is 1
// exactly when del is set. Parsed.Row hands this to the output, which then
// skips its own validation of the body.
func (w *Writer) WriteRow(msg *service.Message, m Meta, body []byte, del bool) {
	write(w, msg, m, body, del)
}

// write is Write for a nil w, WriteRow for a non-nil body.
func write(w *Writer, msg *service.Message, m Meta, body []byte, del bool) {
	var st *stamp
	if w != nil {
		st = w.stamp()
	} else {
		st = new(stamp)
	}
	// The stamp holds what Read would give: no number without its flag.
	if !m.HasSeq {
		m.Seq = 0
	}
	if !m.HasOffset {
		m.SourceOffset = 0
	}
	if !m.HasEpoch {
		m.Epoch = 0
	}
	st.meta = m
	st.body, st.hasRow, st.del = body, body != nil, del && body != nil
	w.setString(msg, st, FieldPartition, m.Partition)
	w.setString(msg, st, FieldDatabase, m.Database)
	w.setString(msg, st, FieldTable, m.Table)
	w.setString(msg, st, FieldTxnID, m.TxnID)
	w.setString(msg, st, FieldSeqSource, m.SeqSource)
	w.setFlag(msg, st, FieldTxnEnd, m.TxnEnd)
	w.setFlag(msg, st, FieldTxnAbort, m.TxnAbort)
	w.setFlag(msg, st, FieldMarker, m.Marker)
	if m.HasSeq {
		st.seq = w.decimal(m.Seq)
		msg.MetaSetMut(KeySeq, st.seq)
		st.present = st.present.with(FieldSeq)
	} else {
		msg.MetaDelete(KeySeq)
	}
	if m.HasOffset {
		st.offset = w.decimal(m.SourceOffset)
		msg.MetaSetMut(KeySourceOffset, st.offset)
		st.present = st.present.with(FieldSourceOffset)
	} else {
		msg.MetaDelete(KeySourceOffset)
	}
	switch {
	case m.HasEpoch && m.Epoch > math.MaxInt64:
		// Read refuses such an epoch; so must the typed value.
		msg.MetaSetMut(KeyPartitionEpoch, strconv.FormatUint(m.Epoch, 10))
		msg.MetaDelete(KeyTyped)
		return
	case m.HasEpoch:
		st.epoch = w.decimal(int64(m.Epoch))
		st.present = st.present.with(FieldPartitionEpoch)
		if cur, _ := msg.MetaGetMut(KeyPartitionEpoch); !isString(cur, st.epoch) {
			// Usually the input's own value is already this string.
			msg.MetaSetMut(KeyPartitionEpoch, w.box(FieldPartitionEpoch, st.epoch))
		}
	default:
		msg.MetaDelete(KeyPartitionEpoch)
	}
	msg.MetaSetMut(KeyTyped, st)
}

func isString(v any, want string) bool {
	s, ok := v.(string)
	return ok && s == want
}

func (w *Writer) setString(msg *service.Message, st *stamp, f Field, v string) {
	if v == "" {
		msg.MetaDelete(f.Key())
		return
	}
	msg.MetaSetMut(f.Key(), w.box(f, v))
	st.present = st.present.with(f)
}

func (w *Writer) setFlag(msg *service.Message, st *stamp, f Field, v bool) {
	if !v {
		msg.MetaDelete(f.Key())
		return
	}
	msg.MetaSetMut(f.Key(), boxedTrue)
	st.present = st.present.with(f)
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

// decimal formats n, taking the bytes from a shared block that is only ever
// appended to (so the strings made from it never change).
func (w *Writer) decimal(n int64) string {
	if w == nil || (n >= 0 && n < 100) {
		return strconv.FormatInt(n, 10) // small numbers are static strings
	}
	if cap(w.digits)-len(w.digits) < 20 {
		w.digits = make([]byte, 0, digitBlock)
	}
	start := len(w.digits)
	w.digits = strconv.AppendInt(w.digits, n, 10)
	return unsafe.String(&w.digits[start], len(w.digits)-start)
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
