// This file holds the fast path of the transaction topic's decoder: the
// members of a BEGIN or END payload found by internal/jsonscan in one
// validating pass instead of being decoded by encoding/json, the
// collection names interned. Whatever the scan does not decide is decoded
// by encoding/json, which stays the reference: FuzzTxnMetaScanEqualsSlow
// holds the two equal.

package debezium_txn

import (
	"github.com/starrocks-txn/benthos-starrocks/internal/jsonscan"
)

// The members of wireTxnMeta the decoder reads, and of one
// data_collections entry, in the order of the indexes below. "payload" is
// scanned only to decline a record that has one: encoding/json would take
// it for the JsonConverter's envelope.
var (
	txnMetaFields    = jsonscan.NewFields("status", "id", "event_count", "data_collections", "payload")
	collectionFields = jsonscan.NewFields("data_collection", "event_count")
)

const (
	metaStatus = iota
	metaID
	metaEventCount
	metaCollections
	metaPayload
)

const (
	collName = iota
	collEventCount
)

// scanTxnMeta fills w as json.Unmarshal(b, w) would for a zero w (the
// backing array of w.DataCollections reused), and
// reports true, or reports false (w then unspecified) when encoding/json
// must decide: anything jsonscan calls Unusual or Invalid, a member of a
// type encoding/json refuses, a "payload" member. d, when not nil, interns
// the collection names (they repeat from END to END).
func scanTxnMeta(b []byte, w *wireTxnMeta, d *decoder) bool {
	var v [5]jsonscan.Value
	if txnMetaFields.Scan(b, v[:]) != jsonscan.OK || v[metaPayload].Kind != jsonscan.KindNone {
		return false
	}
	*w = wireTxnMeta{DataCollections: w.DataCollections[:0]}
	switch s := v[metaStatus]; s.Kind {
	case jsonscan.KindNone, jsonscan.KindNull:
	case jsonscan.KindString:
		w.Status = statusString(s)
	default:
		return false
	}
	switch id := v[metaID]; id.Kind {
	case jsonscan.KindNone, jsonscan.KindNull:
	case jsonscan.KindString:
		w.ID = flexString(id.String())
	default:
		// flexString keeps any other value as its text.
		w.ID = flexString(id.Raw)
	}
	var ok bool
	if w.EventCount, ok = scanFlexInt(v[metaEventCount]); !ok {
		return false
	}
	switch c := v[metaCollections]; c.Kind {
	case jsonscan.KindNone, jsonscan.KindNull:
	case jsonscan.KindArray:
		return scanCollections(c.Raw, w, d)
	default:
		return false
	}
	return true
}

// statusString is a status string's content, without an allocation for
// the two values Debezium writes.
func statusString(v jsonscan.Value) string {
	if c, plain := v.Content(); plain {
		switch string(c) {
		case "BEGIN":
			return "BEGIN"
		case "END":
			return "END"
		}
	}
	return v.String()
}

// scanCollections decodes the elements of a data_collections array (raw,
// valid JSON: the payload it is in was validated) into w.DataCollections
// as encoding/json would, or reports false.
func scanCollections(raw []byte, w *wireTxnMeta, d *decoder) bool {
	var v [2]jsonscan.Value
	for i := skipSpace(raw, 1); i < len(raw) && raw[i] != ']'; {
		end, ok := skipValue(raw, i)
		if !ok {
			return false
		}
		elem := raw[i:end]
		w.DataCollections = append(w.DataCollections, wireCollection{})
		c := &w.DataCollections[len(w.DataCollections)-1]
		switch elem[0] {
		case 'n':
			// A null entry stays zero (and is refused as lacking its
			// members, as after encoding/json).
		case '{':
			if collectionFields.Scan(elem, v[:]) != jsonscan.OK {
				return false
			}
			switch n := v[collName]; n.Kind {
			case jsonscan.KindNone, jsonscan.KindNull:
			case jsonscan.KindString:
				if content, plain := n.Content(); plain && d != nil {
					c.DataCollection = d.intern(content)
				} else {
					c.DataCollection = n.String()
				}
			default:
				return false
			}
			if c.EventCount, ok = scanFlexInt(v[collEventCount]); !ok {
				return false
			}
		default:
			return false
		}
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return true
}
