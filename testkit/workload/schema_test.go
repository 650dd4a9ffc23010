package workload

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPlan makes every change over 80 transactions.
var testPlan = SchemaPlan{{At: 20, Kind: ChangeAddColumns}, {At: 35, Kind: ChangeNewTable}, {At: 50, Kind: ChangeWiden}, {At: 65, Kind: ChangeDropColumn}}

// stepOf is the plan position (1-based, by transaction number) of a kind.
func stepOf(p SchemaPlan, k SchemaChangeKind) int {
	for i, s := range p.sorted() {
		if s.Kind == k {
			return i + 1
		}
	}
	return 0
}

// Each change holds from its transaction number on, in every partition:
// each partition's first transaction at or after it carries it (and no
// other transaction does), and the rows follow it exactly from there —
// coupon and points on every orders row, the new table's first row in a
// transaction that also updates its order, big quantities and long names
// only once widened, no updated_at once dropped.
func TestGeneratorMakesEachChangeAtItsTransaction(t *testing.T) {
	const parts = 3
	g := NewGenerator(Options{Partitions: parts, Seed: 7, Events: true, Schema: testPlan})
	announced := map[int32]map[SchemaChangeKind]int{}
	firstShipment := map[int32]bool{}
	var bulk, long int
	for n := 1; n <= 300; n++ {
		p := int32((n - 1) % parts)
		tx := g.Next(p)
		if announced[p] == nil {
			announced[p] = map[SchemaChangeKind]int{}
		}
		on := map[SchemaChangeKind]bool{}
		for _, s := range testPlan {
			on[s.Kind] = n >= s.At
		}
		wantVersion := 0
		for _, s := range testPlan {
			if on[s.Kind] {
				wantVersion++
			}
		}
		require.Equal(t, wantVersion, tx.Version, "transaction %d", n)
		for _, c := range tx.Schema {
			require.True(t, on[c.Kind], "transaction %d carries %s before its transaction", n, c.Kind)
			require.Zero(t, announced[p][c.Kind], "partition %d carries %s twice", p, c.Kind)
			announced[p][c.Kind] = n
			require.Equal(t, stepOf(testPlan, c.Kind), c.Step)
			require.NotNil(t, c.New)
			assert.Equal(t, c.Kind == ChangeNewTable, c.Old == nil, "only the new table has no old definition")
			assert.NotEmpty(t, c.SQL)
		}
		for _, s := range testPlan {
			if on[s.Kind] {
				// The partition carried it by now: at its first
				// transaction at or after the change.
				first := announced[p][s.Kind]
				require.NotZero(t, first, "partition %d has not carried %s at transaction %d", p, s.Kind, n)
				require.Less(t, first-s.At, parts, "partition %d carried %s at %d, more than a round after %d", p, s.Kind, first, s.At)
			}
		}
		var ordersUpdated, shipped bool
		for _, c := range tx.Changes {
			switch c.Table {
			case TableOrders:
				if c.Delete {
					continue
				}
				ordersUpdated = strings.HasPrefix(c.Row["order_status"].(string), "updated-") || ordersUpdated
				_, coupon := c.Row["coupon"]
				_, points := c.Row["points"]
				assert.Equal(t, on[ChangeAddColumns], coupon && points, "transaction %d: coupon and points", n)
				_, updated := c.Row["updated_at"]
				assert.Equal(t, !on[ChangeDropColumn], updated, "transaction %d: updated_at", n)
			case TableItems:
				if c.Delete {
					continue
				}
				if asInt(c.Row["quantity"]) >= bulkQuantity {
					require.True(t, on[ChangeWiden], "transaction %d: a quantity INT cannot hold before the widening", n)
					assert.Equal(t, "0.00", c.Row["price"])
					bulk++
				}
				if len(c.Row["product"].(string)) > 64 {
					require.True(t, on[ChangeWiden], "transaction %d: a long product before the widening", n)
					long++
				}
			case TableShipments:
				require.True(t, on[ChangeNewTable], "transaction %d writes shipments before the table exists", n)
				shipped = shipped || !c.Delete
			}
		}
		if on[ChangeNewTable] && !firstShipment[p] {
			// The partition's first transaction under the new table
			// ships an order it updates.
			firstShipment[p] = true
			assert.True(t, shipped && ordersUpdated, "transaction %d (partition %d's first with shipments) ships an updated order", n, p)
		}
	}
	assert.Positive(t, bulk)
	assert.Positive(t, long)
	for p := int32(0); p < parts; p++ {
		assert.Len(t, announced[p], len(testPlan), "partition %d carried every change", p)
	}
}

// Without a plan nothing changes: no schema changes, version 0, no new
// columns, no shipments.
func TestGeneratorWithoutAPlanKeepsItsTables(t *testing.T) {
	g := NewGenerator(Options{Partitions: 2, Seed: 7, Events: true})
	for i := 0; i < 200; i++ {
		tx := g.Next(int32(i % 2))
		require.Empty(t, tx.Schema)
		require.Zero(t, tx.Version)
		for _, c := range tx.Changes {
			require.NotEqual(t, TableShipments, c.Table)
			require.NotContains(t, c.Row, "coupon")
		}
	}
}

func TestSchemaPlanParsesAndValidates(t *testing.T) {
	p, err := ParseSchemaPlan("add_columns@50, new_table@100,widen@150")
	require.NoError(t, err)
	assert.Equal(t, SchemaPlan{{50, ChangeAddColumns}, {100, ChangeNewTable}, {150, ChangeWiden}}, p)
	for _, bad := range []string{"add_columns", "add_columns@x", "add_columns@0", "rename@5", "widen@5,widen@6", "widen@5x"} {
		_, err := ParseSchemaPlan(bad)
		assert.Error(t, err, bad)
	}
	assert.Equal(t, SchemaPlan{{20, ChangeAddColumns}, {40, ChangeNewTable}, {60, ChangeWiden}, {80, ChangeDropColumn}}, DefaultSchemaPlan(100))
}

// The envelope renders each carried change as a SCHEMA event after
// TXN_BEGIN: the table after the change, in StarRocks types.
func TestEnvelopeCarriesSchemaEvents(t *testing.T) {
	g := NewGenerator(Options{Partitions: 1, Seed: 2, Schema: SchemaPlan{{At: 3, Kind: ChangeAddColumns}}})
	g.Next(0)
	g.Next(0)
	tx := g.Next(0)
	require.Len(t, tx.Schema, 1)
	evs, err := Envelope(tx)
	require.NoError(t, err)
	require.Len(t, evs, len(tx.Changes)+3)
	var ev struct {
		Type, Database, Table, TxnID string
		JSON                         json.RawMessage
	}
	require.NoError(t, json.Unmarshal(evs[1], &ev))
	assert.Equal(t, "SCHEMA", ev.Type)
	assert.Equal(t, TableOrders, ev.Table)
	assert.JSONEq(t, `{"columns":[
		{"name":"order_id","type":"BIGINT","nullable":false},{"name":"customer_id","type":"BIGINT","nullable":false},
		{"name":"total_amount","type":"DECIMAL(10,2)","nullable":true,"default":"0"},
		{"name":"order_status","type":"VARCHAR(32)","nullable":true,"default":""},
		{"name":"updated_at","type":"DATETIME","nullable":true},
		{"name":"coupon","type":"VARCHAR(64)","nullable":true},{"name":"points","type":"INT","nullable":false,"default":"0"}],
		"primary_key":["order_id"]}`, string(ev.JSON))
}

// Debezium shows each change at its transaction: the orders events'
// Connect schema gains coupon and points (points with its default), the new
// table's first transaction creates its topic, lists it in the END and
// updates the order it ships, the items' quantity becomes int64 and
// product's propagated length grows, updated_at leaves the schema.
func TestDebeziumMakesEachChangeAtItsTransaction(t *testing.T) {
	src := NewDebeziumSource(DebeziumOptions{Partitions: 3, Schemas: true, Seed: 4, Schema: testPlan, LargeEvery: 9, LargeSize: 4, ResendRatio: 0.1})
	m := NewModel()
	assert.Contains(t, src.DataTopics(), src.Topic(TableShipments))
	assert.NotContains(t, src.AllTopics(), src.Topic(TableShipments), "the new table's topic is created by its first transaction")
	fieldsOf := func(r Record) map[string]map[string]any {
		var v struct {
			Schema struct {
				Fields []struct {
					Field  string
					Fields []map[string]any
				}
			}
		}
		require.NoError(t, json.Unmarshal(r.Value, &v))
		out := map[string]map[string]any{}
		for _, f := range v.Schema.Fields {
			if f.Field == "after" {
				for _, c := range f.Fields {
					out[c["field"].(string)] = c
				}
			}
		}
		return out
	}
	for n := 1; n <= 80; n++ {
		dt := src.Next()
		m.Apply(dt.Txn)
		on := func(k SchemaChangeKind) bool { return n >= testPlan[stepOf(testPlan, k)-1].At }
		first := n == testPlan[stepOf(testPlan, ChangeNewTable)-1].At
		assert.Equal(t, first, len(dt.NewTopics) > 0, "transaction %d", n)
		var end map[string]any
		updated, shipped := false, false
		for _, r := range dt.Records {
			if r.Value == nil {
				continue
			}
			if r.Topic == src.TransactionTopic() {
				var v struct{ Payload map[string]any }
				require.NoError(t, json.Unmarshal(r.Value, &v))
				if v.Payload["status"] == "END" && v.Payload["id"] == dt.Txn.ID {
					end = v.Payload
				}
				continue
			}
			if !strings.Contains(string(r.Value), dt.Txn.ID+`"`) {
				continue // a re-sent copy of an earlier transaction
			}
			f := fieldsOf(r)
			switch r.Topic {
			case src.Topic(TableOrders):
				require.Equal(t, on(ChangeAddColumns), f["coupon"] != nil, "transaction %d: coupon in the schema", n)
				if on(ChangeAddColumns) {
					assert.EqualValues(t, 0, f["points"]["default"])
					assert.Equal(t, false, f["points"]["optional"])
				}
				require.Equal(t, !on(ChangeDropColumn), f["updated_at"] != nil, "transaction %d: updated_at in the schema", n)
				updated = updated || strings.Contains(string(r.Value), `"op":"u"`)
			case src.Topic(TableItems):
				wantType, wantLen := "int32", "16"
				if on(ChangeWiden) {
					wantType, wantLen = "int64", "100"
				}
				assert.Equal(t, wantType, f["quantity"]["type"], "transaction %d", n)
				assert.Equal(t, wantLen, f["product"]["parameters"].(map[string]any)["__debezium.source.column.length"])
			case src.Topic(TableShipments):
				require.True(t, on(ChangeNewTable), "transaction %d writes shipments early", n)
				shipped = true
			}
		}
		require.NotNil(t, end, "transaction %d has its END", n)
		if first {
			assert.Equal(t, []string{src.Topic(TableShipments)}, dt.NewTopics)
			assert.True(t, updated && shipped, "the new table's first transaction updates an order and ships it")
			assert.Contains(t, end["data_collections"], map[string]any{"data_collection": "test.shipments", "event_count": 1.0})
		}
	}
	checkModel(t, m)
	s := m.Snapshot()
	assert.True(t, s.HasShipments)
	assert.NotEmpty(t, s.Shipments)
	assert.Equal(t, map[string][]string{TableOrders: {"coupon", "points", "updated_at"}}, s.Columns)
}
