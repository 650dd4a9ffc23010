package workload

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Model is the target state that the committed source transactions imply.
// It is safe for concurrent use.
//
// With a schema plan the model follows each table's columns over time, as
// StarRocks holds them once the output applied the changes (ARCHITECTURE.md
// §14): a column added by a change reads its DEFAULT (NULL without one) in
// rows written before the change (docs/notes/starrocks-protocol.md §11.5),
// a dropped column stays and reads NULL in rows written after the drop (an
// upsert without it), and the new table holds what its rows say. A row
// written before an ADD COLUMN but loaded after it (another partition's,
// with several partitions; an at-least-once replay) has no key for the new
// column: the emulator gives it the DEFAULT, as the model does, while what
// StarRocks does there is unverified (docs/notes/starrocks-protocol.md
// §11.8). With one ordered stream (Maxwell's partition, a Debezium
// connector) and exactly_once, no such row is loaded.
type Model struct {
	mu        sync.Mutex
	orders    map[int64]modelRow
	items     map[[2]int64]Row
	shipments map[int64]Row
	events    map[int64]int
	wide      map[string]map[int64]string
	txns      int
	// history holds, per table, the schema changes seen, by step.
	history map[string][]SchemaChange
	// versions, when kept (KeepVersions), is every committed value of
	// every order.
	versions map[orderKey]orderValue
}

// modelRow is a row and the plan version it was written under.
type modelRow struct {
	row     Row
	version int
}

type orderKey struct {
	id     int64
	status string
}

type orderValue struct {
	modelRow
	shipped bool
}

// NewModel returns an empty model.
func NewModel() *Model {
	return &Model{orders: map[int64]modelRow{}, items: map[[2]int64]Row{}, shipments: map[int64]Row{},
		events: map[int64]int{}, wide: map[string]map[int64]string{}, history: map[string][]SchemaChange{}}
}

// KeepVersions makes the model remember every committed value of every
// order (its id and status name the source transaction that wrote it), for
// OrderVersion: a reader checks each order value it sees against it.
func (m *Model) KeepVersions() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.versions == nil {
		m.versions = map[orderKey]orderValue{}
	}
}

// Apply records a committed source transaction.
func (m *Model) Apply(t Txn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.txns++
	for _, c := range t.Schema {
		h := m.history[c.Table]
		if !slices.ContainsFunc(h, func(x SchemaChange) bool { return x.Step == c.Step }) {
			h = append(h, c)
			sort.Slice(h, func(i, j int) bool { return h[i].Step < h[j].Step })
			m.history[c.Table] = h
		}
	}
	var shipped []int64
	for _, c := range t.Changes {
		switch c.Table {
		case TableOrders:
			id := asInt(c.Row["order_id"])
			if c.Delete {
				delete(m.orders, id)
			} else {
				m.orders[id] = modelRow{c.Row, t.Version}
			}
		case TableItems:
			k := [2]int64{asInt(c.Row["order_id"]), asInt(c.Row["item_id"])}
			if c.Delete {
				delete(m.items, k)
			} else {
				m.items[k] = c.Row
			}
		case TableShipments:
			id := asInt(c.Row["order_id"])
			if c.Delete {
				delete(m.shipments, id)
			} else {
				m.shipments[id] = c.Row
				shipped = append(shipped, id)
			}
		case TableEvents:
			m.events[asInt(c.Row["event_id"])]++
		default:
			m.applyWide(c)
		}
	}
	if m.versions == nil {
		return
	}
	for _, c := range t.Changes {
		if c.Table == TableOrders && !c.Delete {
			id := asInt(c.Row["order_id"])
			m.versions[orderKey{id, fmt.Sprint(c.Row["order_status"])}] = orderValue{modelRow{c.Row, t.Version}, slices.Contains(shipped, id)}
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
	// Shipments are the rows of the table ChangeNewTable creates; a
	// snapshot has the table when HasShipments is set.
	Shipments    []string
	HasShipments bool
	// Columns names, per table, the columns its lines render after their
	// fixed fields, each as "|name=value" (NULL: "NULL"; a column the table
	// lacks: "<absent>"): the columns a schema plan added or dropped. None
	// without a plan, so lines are as they always were.
	Columns map[string][]string
}

// Rendering of the extra columns.
const (
	nullText   = "NULL"
	absentText = "<absent>"
)

// Snapshot renders the model.
func (m *Model) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s Snapshot
	extra := m.extraColumns()
	if len(extra) > 0 {
		s.Columns = extra
	}
	for _, r := range m.orders {
		line := OrderLine(asInt(r.row["order_id"]), asInt(r.row["customer_id"]), fmt.Sprint(r.row["total_amount"]), fmt.Sprint(r.row["order_status"]))
		s.Orders = append(s.Orders, line+m.renderExtra(TableOrders, extra[TableOrders], r))
	}
	for _, r := range m.items {
		line := ItemLine(asInt(r["order_id"]), asInt(r["item_id"]), fmt.Sprint(r["product"]), asInt(r["quantity"]), fmt.Sprint(r["price"]))
		s.Items = append(s.Items, line+m.renderExtra(TableItems, extra[TableItems], modelRow{row: r}))
	}
	for id, n := range m.events {
		for i := 0; i < n; i++ {
			s.Events = append(s.Events, strconv.FormatInt(id, 10))
		}
	}
	if len(m.history[TableShipments]) > 0 {
		s.HasShipments = true
		for _, r := range m.shipments {
			s.Shipments = append(s.Shipments, ShipmentLine(r))
		}
	}
	s.sort()
	return s
}

func (s *Snapshot) sort() {
	sort.Strings(s.Orders)
	sort.Strings(s.Items)
	sort.Strings(s.Events)
	sort.Strings(s.Shipments)
}

// baseColumns are the columns a table's line renders as fixed fields.
var baseColumns = map[string][]string{
	TableOrders:    {"order_id", "customer_id", "total_amount", "order_status"},
	TableItems:     {"order_id", "item_id", "product", "quantity", "price"},
	TableShipments: {"order_id", "carrier", "tracking", "order_status", "shipped_at"},
}

// extraColumns is, per table the plan changed the columns of (a table it
// created aside), every column of any of its definitions that is not a
// fixed field, sorted by name.
func (m *Model) extraColumns() map[string][]string {
	out := map[string][]string{}
	for table, h := range m.history {
		if table == TableShipments {
			continue
		}
		names := map[string]bool{}
		for _, c := range h {
			for _, def := range []*TableDef{c.Old, c.New} {
				if def == nil {
					continue
				}
				for _, col := range def.Columns {
					if !slices.Contains(baseColumns[table], col.Name) {
						names[col.Name] = true
					}
				}
			}
		}
		for n := range names {
			out[table] = append(out[table], n)
		}
		sort.Strings(out[table])
	}
	return out
}

// renderExtra renders the extra columns of a row.
func (m *Model) renderExtra(table string, cols []string, r modelRow) string {
	var sb strings.Builder
	for _, c := range cols {
		v, _ := m.expected(table, c, r)
		sb.WriteString("|" + c + "=" + v)
	}
	return sb.String()
}

// expected is what StarRocks holds in column c of a row written under
// version r.version, and whether the row carries the column: its value when
// it does; else the column's DEFAULT (NULL without one) when the column was
// added after the row was written; else NULL (a column dropped before).
func (m *Model) expected(table, c string, r modelRow) (string, bool) {
	if v, ok := r.row[c]; ok {
		return renderValue(v), true
	}
	h := m.history[table]
	for _, ch := range h {
		if ch.Step <= r.version || ch.Old == nil || ch.New == nil {
			continue
		}
		_, before := ch.Old.Column(c)
		after, now := ch.New.Column(c)
		if !before && now {
			if after.Default == nil {
				return nullText, false
			}
			return *after.Default, false
		}
	}
	return nullText, false
}

// renderValue renders a row value as a line field.
func renderValue(v any) string {
	switch x := v.(type) {
	case nil:
		return nullText
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
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

// ShipmentLine renders a shipments row.
func ShipmentLine(r Row) string {
	return fmt.Sprintf("%d|%s|%s|%s|%s", asInt(r["order_id"]), renderValue(r["carrier"]), renderValue(r["tracking"]),
		renderValue(r["order_status"]), renderValue(r["shipped_at"]))
}

// OrderVersion is what a reader must see of one committed value of an
// order (KeepVersions).
type OrderVersion struct {
	// Columns holds, per extra column of orders (Snapshot.Columns), the
	// value StarRocks must show with this order value, and whether the
	// source transaction wrote it: a snapshot that shows the order value
	// without such a column lost it.
	Columns map[string]ExpectedValue
	// Shipped is set when the transaction that wrote the value wrote the
	// order's shipment too (with the same status).
	Shipped bool
}

// ExpectedValue is one column's value as a reader must see it.
type ExpectedValue struct {
	Value   string
	Written bool
}

// OrderVersion returns what a reader must see with the order value (id,
// status), false when no committed transaction wrote it (yet).
func (m *Model) OrderVersion(id int64, status string) (OrderVersion, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.versions[orderKey{id, status}]
	if !ok {
		return OrderVersion{}, false
	}
	out := OrderVersion{Columns: map[string]ExpectedValue{}, Shipped: v.shipped}
	for _, c := range m.extraColumns()[TableOrders] {
		val, written := m.expected(TableOrders, c, v.modelRow)
		out.Columns[c] = ExpectedValue{Value: val, Written: written}
	}
	return out, true
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
