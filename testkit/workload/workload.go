// Package workload generates the orders / order_items source traffic that the
// demo, the end-to-end tests and the benchmarks share, and keeps a model of
// what the source committed so that the target can be checked against it.
//
// Every source transaction touches one order: it creates it with 1–5 items,
// updates it (new status and amounts, items rewritten), or deletes it with its
// items. The order's total_amount always equals the sum of its items'
// quantity × price, so a reader that ever sees an order whose total does not
// match its items, or items without their order, has seen half a source
// transaction. Each transaction also appends one row to the order_events
// DUPLICATE KEY table, which makes duplicates visible. A SchemaPlan
// (schema.go) changes the source's tables mid-stream.
package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Database is the database of the example schema (examples/schema.sql).
const Database = "test"

// Table names of the example schema.
const (
	TableOrders = "orders"
	TableItems  = "order_items"
	TableEvents = "order_events"
)

// Row is one target row as loaded (column name → value). Deletes carry
// "__op": 1.
type Row map[string]any

// Change is one row change of a source transaction.
type Change struct {
	Table  string
	Row    Row
	Delete bool
}

// Txn is one source transaction: all changes of one order, in source order.
type Txn struct {
	Partition int32
	ID        string
	Changes   []Change
	// Schema lists the schema changes the transaction's partition has not
	// carried yet and that hold for this transaction: a source shows them
	// in the partition's stream before the transaction's rows (an
	// envelope SCHEMA event, a Maxwell DDL event). Empty without a plan.
	Schema []SchemaChange
	// Version is the number of planned schema changes in effect when the
	// transaction was written (0: none); SchemaChange.Step counts the same.
	Version int
}

// Options shape the generated traffic.
type Options struct {
	Partitions int32
	// Seed makes the traffic reproducible.
	Seed uint64
	// UpdateRatio and DeleteRatio are the shares of transactions that update
	// or delete an earlier order of the same partition (the rest create one).
	UpdateRatio float64
	DeleteRatio float64
	// Events adds one order_events row per transaction.
	Events bool
	// Tables, when set, replaces the orders schema by that many PRIMARY KEY
	// tables (WideSchema): every transaction writes RowsPerWideTxn rows to
	// tables drawn at random.
	Tables int
	// Schema is the plan of source schema changes (none by default);
	// transactions are counted over every partition, in the order Next is
	// called. Not with Tables.
	Schema SchemaPlan
}

// Generator produces source transactions. It is not safe for concurrent use.
type Generator struct {
	opts   Options
	rng    *rand.Rand
	nextID []int64
	live   [][]int64 // per partition: order ids that exist at the source
	txnSeq []int64
	event  int64
	// orders holds each live order's current row: a delete carries the whole
	// row, as CDC sources send it (StarRocks validates delete rows like
	// upserts, so a key-only delete would be filtered on NOT NULL columns).
	orders map[int64]Row
	// wideLive holds per partition the keys the wide workload wrote.
	wideLive [][]wideKey

	// With a schema plan: the tables as changed so far, the transactions
	// written, the changes made (in step order), how many of them each
	// partition has carried, the partitions whose next transaction is the
	// first under ChangeNewTable, and each shipped order's shipment.
	schema    *schemaState
	count     int
	changes   []SchemaChange
	announced []int
	shipFirst []bool
	shipments map[int64]Row
}

// NewGenerator returns a generator; zero options get sensible defaults.
func NewGenerator(opts Options) *Generator {
	if opts.Partitions <= 0 {
		opts.Partitions = 4
	}
	if opts.UpdateRatio == 0 && opts.DeleteRatio == 0 {
		opts.UpdateRatio, opts.DeleteRatio = 0.25, 0.05
	}
	g := &Generator{
		opts:   opts,
		rng:    rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		nextID: make([]int64, opts.Partitions),
		live:   make([][]int64, opts.Partitions),
		txnSeq: make([]int64, opts.Partitions),
		orders: map[int64]Row{},
	}
	if opts.Tables > 0 {
		g.wideLive = make([][]wideKey, opts.Partitions)
	}
	if len(opts.Schema) > 0 {
		if opts.Tables > 0 {
			panic("workload: a schema plan changes the orders tables, not the wide ones")
		}
		g.schema = newSchemaState(opts.Schema)
		g.announced = make([]int, opts.Partitions)
		g.shipFirst = make([]bool, opts.Partitions)
		g.shipments = map[int64]Row{}
	}
	return g
}

// Partitions returns the number of source partitions.
func (g *Generator) Partitions() int32 { return g.opts.Partitions }

// Next returns the next source transaction of partition p. Order ids are
// unique across partitions (id ≡ p mod partitions), so partitions never touch
// the same keys and per-key order is per-partition order.
func (g *Generator) Next(p int32) Txn {
	g.txnSeq[p]++
	t := Txn{Partition: p, ID: fmt.Sprintf("p%d-t%d", p, g.txnSeq[p])}
	if g.opts.Tables > 0 {
		return g.nextWide(t)
	}
	g.count++
	if g.schema != nil {
		g.changes = append(g.changes, g.schema.advance(g.count)...)
		t.Version = g.schema.version()
		if n := g.announced[p]; n < len(g.changes) {
			t.Schema = slices.Clone(g.changes[n:])
			g.announced[p] = len(g.changes)
			for _, c := range t.Schema {
				if c.Kind == ChangeNewTable {
					g.shipFirst[p] = true
				}
			}
		}
	}
	roll := g.rng.Float64()
	live := g.live[p]
	// The partition's first transaction under ChangeNewTable ships an
	// order: an update of an old table and the new table's first row in
	// one source transaction.
	ship := g.shipFirst != nil && g.shipFirst[p]
	if ship {
		g.shipFirst[p] = false
		roll = g.opts.DeleteRatio
	}
	switch {
	case len(live) > 0 && roll < g.opts.DeleteRatio:
		i := g.rng.IntN(len(live))
		id := live[i]
		g.live[p] = append(live[:i], live[i+1:]...)
		del := Row{"__op": 1}
		for k, v := range g.orders[id] {
			del[k] = v
		}
		if def := g.schema.table(TableOrders); def != nil {
			// The source's delete image holds the row as it is now.
			del = def.project(del)
		}
		delete(g.orders, id)
		t.Changes = append(t.Changes, Change{Table: TableOrders, Row: del, Delete: true})
		for item := 1; item <= maxItems; item++ {
			// Deleting a key that does not exist is a no-op, so the
			// transaction removes every item the order could have.
			t.Changes = append(t.Changes, Change{Table: TableItems, Row: Row{"order_id": id, "item_id": item, "__op": 1}, Delete: true})
		}
		if s, ok := g.shipments[id]; ok {
			delete(g.shipments, id)
			t.Changes = append(t.Changes, Change{Table: TableShipments, Row: withOp(s), Delete: true})
		}
		g.addEvent(&t, id, "delete")
	case len(live) > 0 && roll < g.opts.DeleteRatio+g.opts.UpdateRatio:
		id := live[g.rng.IntN(len(live))]
		g.writeOrder(&t, id, fmt.Sprintf("updated-%d", g.txnSeq[p]), true, ship)
		g.addEvent(&t, id, "update")
	default:
		id := g.nextID[p]*int64(g.opts.Partitions) + int64(p) + 1
		g.nextID[p]++
		g.live[p] = append(g.live[p], id)
		g.writeOrder(&t, id, "created", false, ship)
		g.addEvent(&t, id, "create")
	}
	return t
}

const maxItems = 5

var products = []string{"keyboard", "mouse", "monitor", "cable", "dock", "webcam", "headset", "chair"}

// writeOrder writes the order row and its items (and, under
// ChangeNewTable, its shipment when it is shipped now or was before). On
// update every possible item is rewritten (deleted or upserted) so the
// order's total stays equal to the sum of its items after the transaction,
// whatever it had before.
func (g *Generator) writeOrder(t *Txn, id int64, status string, update, ship bool) {
	n := 1 + g.rng.IntN(maxItems)
	var totalCents int64
	var items []Change
	for item := 1; item <= n; item++ {
		qty := 1 + g.rng.IntN(4)
		cents := int64(100 + g.rng.IntN(50000))
		row := Row{"order_id": id, "item_id": item, "product": products[g.rng.IntN(len(products))]}
		if g.schema.on(ChangeWiden) {
			widenItem(g.rng, row, &qty, &cents)
		} else {
			row["quantity"] = qty
		}
		totalCents += int64(qty) * cents
		row["price"] = centsString(cents)
		items = append(items, Change{Table: TableItems, Row: row})
	}
	if update {
		for item := n + 1; item <= maxItems; item++ {
			items = append(items, Change{Table: TableItems, Row: Row{"order_id": id, "item_id": item, "__op": 1}, Delete: true})
		}
	}
	order := Change{Table: TableOrders, Row: Row{
		"order_id": id, "customer_id": 1000 + g.rng.IntN(9000), "total_amount": centsString(totalCents),
		"order_status": status, "updated_at": "2026-11-29 12:00:00",
	}}
	orderColumns(g.schema, g.rng, order.Row)
	g.orders[id] = order.Row
	// Half the transactions write the items first, so a transaction's END is
	// not always on the table its first row went to.
	if g.rng.IntN(2) == 0 {
		t.Changes = append(t.Changes, order)
		t.Changes = append(t.Changes, items...)
	} else {
		t.Changes = append(t.Changes, items...)
		t.Changes = append(t.Changes, order)
	}
	if !g.schema.on(ChangeNewTable) {
		return
	}
	prev, shipped := g.shipments[id]
	if !shipped && !ship && !(update && g.rng.Float64() < shipRatio) {
		return
	}
	s := shipment(g.rng, id, status, prev)
	g.shipments[id] = s
	t.Changes = append(t.Changes, Change{Table: TableShipments, Row: s})
}

// shipRatio is the share of updates that ship an order not yet shipped.
const shipRatio = 0.3

// orderColumns sets the columns the plan changed on an orders row: under
// ChangeAddColumns a coupon (one in five NULL) and points; under
// ChangeDropColumn no updated_at.
func orderColumns(s *schemaState, rng *rand.Rand, row Row) {
	if s.on(ChangeAddColumns) {
		var coupon any
		if rng.IntN(5) > 0 {
			coupon = fmt.Sprintf("SAVE%d", 5+rng.IntN(50))
		}
		row["coupon"], row["points"] = coupon, rng.IntN(1000)
	}
	if s.on(ChangeDropColumn) {
		delete(row, "updated_at")
	}
}

// widenItem sets quantity and product under ChangeWiden: one item in four
// is a bulk item whose quantity INT cannot hold, priced 0.00 (so the
// order's total still equals its items), one in three has a long name.
func widenItem(rng *rand.Rand, row Row, qty *int, cents *int64) {
	if rng.IntN(4) == 0 {
		*qty, *cents = 0, 0
		row["quantity"] = bulkQuantity + rng.Int64N(1<<20)
	} else {
		row["quantity"] = *qty
	}
	if rng.IntN(3) == 0 {
		row["product"] = longProducts[rng.IntN(len(longProducts))]
	}
}

// shipment is an order's shipment row: its status copies the order's (so a
// reader can tell a shipment seen without its order's update), carrier and
// tracking stay those of its first shipping.
func shipment(rng *rand.Rand, order int64, status string, prev Row) Row {
	if prev != nil {
		return Row{"order_id": order, "carrier": prev["carrier"], "tracking": prev["tracking"], "order_status": status, "shipped_at": prev["shipped_at"]}
	}
	return Row{"order_id": order, "carrier": carriers[rng.IntN(len(carriers))],
		"tracking": fmt.Sprintf("TRK%09d", rng.IntN(1_000_000_000)), "order_status": status, "shipped_at": "2026-11-30 09:30:00"}
}

func (g *Generator) addEvent(t *Txn, id int64, kind string) {
	if !g.opts.Events {
		return
	}
	g.event++
	t.Changes = append(t.Changes, Change{Table: TableEvents, Row: Row{
		"event_id": int64(t.Partition)<<40 | g.event, "order_id": id, "kind": kind, "created_at": "2026-11-29 12:00:00",
	}})
}

func centsString(c int64) string {
	return strconv.FormatInt(c/100, 10) + "." + fmt.Sprintf("%02d", c%100)
}
