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
// DUPLICATE KEY table, which makes duplicates visible.
package workload

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
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
	roll := g.rng.Float64()
	live := g.live[p]
	switch {
	case len(live) > 0 && roll < g.opts.DeleteRatio:
		i := g.rng.IntN(len(live))
		id := live[i]
		g.live[p] = append(live[:i], live[i+1:]...)
		del := Row{"__op": 1}
		for k, v := range g.orders[id] {
			del[k] = v
		}
		delete(g.orders, id)
		t.Changes = append(t.Changes, Change{Table: TableOrders, Row: del, Delete: true})
		for item := 1; item <= maxItems; item++ {
			// Deleting a key that does not exist is a no-op, so the
			// transaction removes every item the order could have.
			t.Changes = append(t.Changes, Change{Table: TableItems, Row: Row{"order_id": id, "item_id": item, "__op": 1}, Delete: true})
		}
		g.addEvent(&t, id, "delete")
	case len(live) > 0 && roll < g.opts.DeleteRatio+g.opts.UpdateRatio:
		id := live[g.rng.IntN(len(live))]
		g.writeOrder(&t, id, fmt.Sprintf("updated-%d", g.txnSeq[p]), true)
		g.addEvent(&t, id, "update")
	default:
		id := g.nextID[p]*int64(g.opts.Partitions) + int64(p) + 1
		g.nextID[p]++
		g.live[p] = append(g.live[p], id)
		g.writeOrder(&t, id, "created", false)
		g.addEvent(&t, id, "create")
	}
	return t
}

const maxItems = 5

var products = []string{"keyboard", "mouse", "monitor", "cable", "dock", "webcam", "headset", "chair"}

// writeOrder writes the order row and its items. On update every possible item
// is rewritten (deleted or upserted) so the order's total stays equal to the
// sum of its items after the transaction, whatever it had before.
func (g *Generator) writeOrder(t *Txn, id int64, status string, update bool) {
	n := 1 + g.rng.IntN(maxItems)
	var totalCents int64
	var items []Change
	for item := 1; item <= n; item++ {
		qty := 1 + g.rng.IntN(4)
		cents := int64(100 + g.rng.IntN(50000))
		totalCents += int64(qty) * cents
		items = append(items, Change{Table: TableItems, Row: Row{
			"order_id": id, "item_id": item, "product": products[g.rng.IntN(len(products))],
			"quantity": qty, "price": centsString(cents),
		}})
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

// Model is the target state that the committed source transactions imply.
// It is safe for concurrent use.
type Model struct {
	mu     sync.Mutex
	orders map[int64]Row
	items  map[[2]int64]Row
	events map[int64]int
	wide   map[string]map[int64]string
	txns   int
}

// NewModel returns an empty model.
func NewModel() *Model {
	return &Model{orders: map[int64]Row{}, items: map[[2]int64]Row{}, events: map[int64]int{}, wide: map[string]map[int64]string{}}
}

// Apply records a committed source transaction.
func (m *Model) Apply(t Txn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.txns++
	for _, c := range t.Changes {
		switch c.Table {
		case TableOrders:
			id := asInt(c.Row["order_id"])
			if c.Delete {
				delete(m.orders, id)
			} else {
				m.orders[id] = c.Row
			}
		case TableItems:
			k := [2]int64{asInt(c.Row["order_id"]), asInt(c.Row["item_id"])}
			if c.Delete {
				delete(m.items, k)
			} else {
				m.items[k] = c.Row
			}
		case TableEvents:
			m.events[asInt(c.Row["event_id"])]++
		default:
			m.applyWide(c)
		}
	}
}

// Txns returns the number of committed source transactions recorded.
func (m *Model) Txns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.txns
}

// Snapshot is a comparable rendering of a set of tables: one line per row,
// sorted.
type Snapshot struct {
	Orders []string
	Items  []string
	Events []string
}

// Snapshot renders the model.
func (m *Model) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s Snapshot
	for _, r := range m.orders {
		s.Orders = append(s.Orders, OrderLine(asInt(r["order_id"]), asInt(r["customer_id"]), fmt.Sprint(r["total_amount"]), fmt.Sprint(r["order_status"])))
	}
	for _, r := range m.items {
		s.Items = append(s.Items, ItemLine(asInt(r["order_id"]), asInt(r["item_id"]), fmt.Sprint(r["product"]), asInt(r["quantity"]), fmt.Sprint(r["price"])))
	}
	for id, n := range m.events {
		for i := 0; i < n; i++ {
			s.Events = append(s.Events, strconv.FormatInt(id, 10))
		}
	}
	s.sort()
	return s
}

func (s *Snapshot) sort() {
	sort.Strings(s.Orders)
	sort.Strings(s.Items)
	sort.Strings(s.Events)
}

// OrderLine and ItemLine render rows the same way for the model and for what
// a query returns.
func OrderLine(id, customer int64, total, status string) string {
	return fmt.Sprintf("%d|%d|%s|%s", id, customer, total, status)
}

// ItemLine renders an order_items row.
func ItemLine(order, item int64, product string, qty int64, price string) string {
	return fmt.Sprintf("%d|%d|%s|%d|%s", order, item, product, qty, price)
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case int32:
		return int64(x)
	case float64:
		return int64(x)
	case json.Number:
		n, _ := x.Int64()
		return n
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}
