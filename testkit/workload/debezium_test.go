package workload

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The traffic is what the Debezium input must handle: per-table topics keyed
// by primary key, BEGIN and END on the transaction topic with per-collection
// counts that match the events (the unconsumed audit_log included),
// tombstones after deletes, a snapshot with first and last markers, large
// transactions over every topic, and re-sent copies.
func TestDebeziumTraffic(t *testing.T) {
	for _, schemas := range []bool{false, true} {
		src := NewDebeziumSource(DebeziumOptions{Partitions: 3, Schemas: schemas, SnapshotOrders: 5, LargeEvery: 7, LargeSize: 6, ResendRatio: 0.2, Seed: 3})
		m := NewModel()
		snap, recs := src.Snapshot()
		m.Apply(snap)
		require.NotEmpty(t, recs)
		assert.Contains(t, string(recs[0].Value), `"snapshot":"first"`)
		assert.Contains(t, string(recs[len(recs)-1].Value), `"snapshot":"last"`)
		keyParts := map[string]int32{}
		var tombstones, resent, largest int
		topicsOfLarge := map[string]bool{}
		for i := 0; i < 300; i++ {
			dt := src.Next()
			m.Apply(dt.Txn)
			largest = max(largest, dt.Events)
			var end map[string]any
			seen := map[string]int{}
			var ids []string
			for j, r := range dt.Records {
				if r.Value == nil {
					tombstones++
					continue
				}
				if r.Topic == src.TransactionTopic() {
					require.Equal(t, int32(0), r.Partition)
					var v map[string]any
					require.NoError(t, json.Unmarshal(r.Value, &v))
					if schemas {
						v = v["payload"].(map[string]any)
					}
					if v["status"] == "END" && end == nil {
						end = v
					}
					continue
				}
				// A key always lands on one partition.
				if p, ok := keyParts[r.Topic+string(r.Key)]; ok {
					require.Equal(t, p, r.Partition, "key %s of %s", r.Key, r.Topic)
				}
				keyParts[r.Topic+string(r.Key)] = r.Partition
				var v map[string]any
				require.NoError(t, json.Unmarshal(r.Value, &v))
				if schemas {
					require.Contains(t, v, "schema")
					v = v["payload"].(map[string]any)
				}
				block := v["transaction"].(map[string]any)
				if block["id"] != dt.Txn.ID || end != nil {
					resent++
					continue
				}
				ids = append(ids, r.Topic)
				seen[strings.TrimPrefix(r.Topic, "dbserver1.")]++
				if dt.Events > 20 {
					topicsOfLarge[r.Topic] = true
				}
				_ = j
			}
			require.NotNil(t, end, "transaction %s has an END", dt.Txn.ID)
			require.EqualValues(t, dt.Events, end["event_count"])
			for _, c := range end["data_collections"].([]any) {
				c := c.(map[string]any)
				assert.EqualValues(t, seen[c["data_collection"].(string)], c["event_count"], "count of %s in %s", c["data_collection"], dt.Txn.ID)
			}
			assert.Positive(t, seen["test.audit_log"], "every transaction writes the unconsumed collection")
		}
		assert.Positive(t, tombstones)
		assert.Positive(t, resent)
		assert.Greater(t, largest, 20)
		assert.Len(t, topicsOfLarge, 4, "large transactions span every topic")
		checkModel(t, m)
	}
}

// Encode renders a Generator transaction as Debezium records that carry the
// same rows: one event per change, deletes with a tombstone, counts in END.
func TestDebeziumEncode(t *testing.T) {
	src := NewDebeziumSource(DebeziumOptions{Partitions: 2, Schemas: true})
	g := NewGenerator(Options{Partitions: 2, Seed: 5, Events: true, DeleteRatio: 0.3})
	for i := 0; i < 50; i++ {
		tx := g.Next(int32(i % 2))
		dt := src.Encode(tx)
		assert.Equal(t, len(tx.Changes), dt.Events)
		data, tombs := 0, 0
		for _, r := range dt.Records {
			switch {
			case r.Topic == src.TransactionTopic():
			case r.Value == nil:
				tombs++
			default:
				data++
			}
		}
		dels := 0
		for _, c := range tx.Changes {
			if c.Delete {
				dels++
			}
		}
		assert.Equal(t, len(tx.Changes), data)
		assert.Equal(t, dels, tombs)
		assert.Contains(t, string(dt.Records[len(dt.Records)-1].Value), `"status":"END"`)
	}
}
