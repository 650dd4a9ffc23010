// This file decodes the records of the transaction topic: BEGIN and END,
// with their per-collection event counts.

package debezium_txn

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/starrocks-txn/benthos-starrocks/internal/jsonscan"
)

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
	Schema          json.RawMessage  `json:"schema"`
	Payload         json.RawMessage  `json:"payload"`
	Status          string           `json:"status"`
	ID              flexString       `json:"id"`
	EventCount      flexInt          `json:"event_count"`
	DataCollections []wireCollection `json:"data_collections"`
}

type wireCollection struct {
	DataCollection string  `json:"data_collection"`
	EventCount     flexInt `json:"event_count"`
}

// decodeTxnMeta reads a BEGIN or END record of the transaction topic, with
// or without the JsonConverter's schema.
func decodeTxnMeta(value []byte) (txnMeta, error) { return decodeTxnMetaWith(value, true) }

// decodeTxnMeta is decodeTxnMeta with d's interned strings for the
// collection names (the fast paths off with slowOnly).
func (d *decoder) decodeTxnMeta(value []byte) (txnMeta, error) {
	return decodeTxnMetaIn(value, !d.slowOnly, d)
}

// decodeTxnMetaWith is decodeTxnMeta; fast takes the JsonConverter's
// envelope apart without decoding its schema, and scans the payload
// (FuzzTxnMetaFastEqualsSlow and FuzzTxnMetaScanEqualsSlow hold the two
// equal).
func decodeTxnMetaWith(value []byte, fast bool) (txnMeta, error) {
	return decodeTxnMetaIn(value, fast, nil)
}

// decodeTxnMetaIn is decodeTxnMetaWith, interning with d when not nil.
func decodeTxnMetaIn(value []byte, fast bool, d *decoder) (txnMeta, error) {
	if id, framed := registryFramed(value); framed {
		return txnMeta{}, notJSONError(id)
	}
	// The decoder's, when there is one: a local one escapes to the heap.
	var w *wireTxnMeta
	var hint []byte
	if d != nil {
		w, hint = &d.meta, d.metaSchema
		*w = wireTxnMeta{DataCollections: w.DataCollections[:0]}
	} else {
		w = new(wireTxnMeta)
	}
	done := false
	if schema, payload, hit, ok := splitEnvelopeHint(value, hint); fast && ok && (hit || jsonscan.Valid(schema) == jsonscan.OK) {
		// The schema only validated, as decoding the whole value would
		// (or recognised: the bytes of the last one validated, which
		// BEGIN and END share), and the payload decoded, as below; any
		// error is left to that decoding, for its message.
		if d != nil && !hit && len(schema) > 0 && schema[0] == '{' {
			d.metaSchema = append(d.metaSchema[:0], schema...)
		}
		if done = scanTxnMeta(payload, w, d); !done {
			*w = wireTxnMeta{}
			if done = json.Unmarshal(payload, w) == nil; !done {
				*w = wireTxnMeta{}
			}
		}
	} else if fast && !ok {
		// Without the schema: the value is the payload (unless it has a
		// "payload" member, which the scan leaves to encoding/json).
		done = scanTxnMeta(value, w, d)
	}
	if !done {
		*w = wireTxnMeta{}
		if err := json.Unmarshal(value, w); err != nil {
			return txnMeta{}, fmt.Errorf("not a Debezium transaction metadata event: %w", err)
		}
		if w.Status == "" && len(w.Payload) > 0 {
			var inner wireTxnMeta
			if err := json.Unmarshal(w.Payload, &inner); err != nil {
				return txnMeta{}, fmt.Errorf("not a Debezium transaction metadata event: payload: %w", err)
			}
			*w = inner
		}
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
