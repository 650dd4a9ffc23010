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
func decodeTxnMeta(value []byte) (txnMeta, error) { return decodeTxnMetaWith(value, true) }

// decodeTxnMetaWith is decodeTxnMeta; fast takes the JsonConverter's
// envelope apart without decoding its schema (FuzzTxnMetaFastEqualsSlow
// holds the two equal).
func decodeTxnMetaWith(value []byte, fast bool) (txnMeta, error) {
	if id, framed := registryFramed(value); framed {
		return txnMeta{}, notJSONError(id)
	}
	var w wireTxnMeta
	done := false
	if schema, payload, ok := splitEnvelope(value); fast && ok && jsonscan.Valid(schema) == jsonscan.OK {
		// The schema only validated, as decoding the whole value would,
		// and the payload decoded, as below; any error is left to that
		// decoding, for its message.
		if done = json.Unmarshal(payload, &w) == nil; !done {
			w = wireTxnMeta{}
		}
	}
	if !done {
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
