package workload

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// Source schema changes in step with the traffic (ARCHITECTURE.md §14):
// a SchemaPlan says which of four changes the source makes and from which
// source transaction on. A change holds from its transaction number: that
// transaction and every later one are written under it, and each source
// shows it as it really would (docs/notes/kafka-cdc.md §6) — Debezium as
// new Connect schemas on its data topics (and a new topic for a new table),
// Maxwell as a table-alter or table-create DDL event between two
// transactions of the partition, the envelope format as SCHEMA events in
// the partition's first transaction under the change. Without a plan the
// traffic is what it always was.

// SchemaChangeKind names one planned source schema change.
type SchemaChangeKind string

// The planned changes.
const (
	// ChangeAddColumns adds orders.coupon (VARCHAR(16) NULL) and
	// orders.points (INT NOT NULL DEFAULT 0); every later orders row
	// carries both. StarRocks rows written before read NULL and 0.
	ChangeAddColumns SchemaChangeKind = "add_columns"
	// ChangeNewTable creates shipments (keyed by order_id). Its first
	// transaction also updates the order it ships (a source transaction
	// over an old and the new table); later updates ship some more orders,
	// every transaction of a shipped order rewrites its shipment with the
	// order's status, and a delete deletes it.
	ChangeNewTable SchemaChangeKind = "new_table"
	// ChangeWiden widens order_items.quantity from INT to BIGINT and
	// order_items.product from VARCHAR(16) to VARCHAR(100) characters;
	// later items may hold quantities above 2^31 (priced 0.00, so an
	// order's total stays the sum of its items) and product names longer
	// than the old column took.
	ChangeWiden SchemaChangeKind = "widen"
	// ChangeDropColumn drops orders.updated_at: the source stops sending
	// it, StarRocks keeps it, and rows written after the drop read NULL.
	ChangeDropColumn SchemaChangeKind = "drop_column"
)

// SchemaKinds lists every change in the order DefaultSchemaPlan makes them.
var SchemaKinds = []SchemaChangeKind{ChangeAddColumns, ChangeNewTable, ChangeWiden, ChangeDropColumn}

// TableShipments is the table ChangeNewTable creates.
const TableShipments = "shipments"

// SchemaStep is one change of a plan.
type SchemaStep struct {
	// At is the number of the first source transaction written under the
	// change (1-based: Generator counts every Next over all partitions,
	// DebeziumSource its streamed transactions).
	At   int
	Kind SchemaChangeKind
}

// SchemaPlan is a set of changes; each kind at most once.
type SchemaPlan []SchemaStep

// DefaultSchemaPlan makes every change, evenly spread over the first n
// source transactions: at n/5, 2n/5, 3n/5 and 4n/5.
func DefaultSchemaPlan(n int) SchemaPlan {
	var p SchemaPlan
	for i, k := range SchemaKinds {
		p = append(p, SchemaStep{At: max(1, (i+1)*n/5), Kind: k})
	}
	return p
}

// ParseSchemaPlan reads a plan written as "kind@n,kind@n" (e.g.
// "add_columns@50,new_table@100"), the form a command-line flag takes.
func ParseSchemaPlan(s string) (SchemaPlan, error) {
	var p SchemaPlan
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kind, at, ok := strings.Cut(part, "@")
		n, err := strconv.Atoi(strings.TrimSpace(at))
		if !ok || err != nil {
			return nil, fmt.Errorf("schema change %q: want kind@transaction, e.g. add_columns@50", part)
		}
		p = append(p, SchemaStep{At: n, Kind: SchemaChangeKind(kind)})
	}
	return p, p.Validate()
}

// Validate checks that every step names a known kind, once, at a
// transaction number of at least 1.
func (p SchemaPlan) Validate() error {
	seen := map[SchemaChangeKind]bool{}
	for _, s := range p {
		if !slices.Contains(SchemaKinds, s.Kind) {
			return fmt.Errorf("unknown schema change %q (known: %v)", s.Kind, SchemaKinds)
		}
		if seen[s.Kind] {
			return fmt.Errorf("schema change %q is planned twice", s.Kind)
		}
		seen[s.Kind] = true
		if s.At < 1 {
			return fmt.Errorf("schema change %q at transaction %d: transactions are numbered from 1", s.Kind, s.At)
		}
	}
	return nil
}

// sorted returns the steps by transaction number (kinds in SchemaKinds
// order at the same number).
func (p SchemaPlan) sorted() SchemaPlan {
	out := slices.Clone(p)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].At != out[j].At {
			return out[i].At < out[j].At
		}
		return slices.Index(SchemaKinds, out[i].Kind) < slices.Index(SchemaKinds, out[j].Kind)
	})
	return out
}

// Has reports whether the plan makes a change of kind k.
func (p SchemaPlan) Has(k SchemaChangeKind) bool {
	for _, s := range p {
		if s.Kind == k {
			return true
		}
	}
	return false
}

// ColumnDef is one column of a source table: its MySQL type as the
// source's DDL declares it, the StarRocks type an explicit schema event
// gives (for the example schema's columns, the type examples/schema.sql
// has), nullability and default, and its Kafka Connect field.
type ColumnDef struct {
	Name      string
	MySQL     string
	StarRocks schema.Type
	Nullable  bool
	// Default is the column's DEFAULT as text (nil: none).
	Default *string
	connect schemaField
}

// TableDef is a source table's definition at one point of the plan.
type TableDef struct {
	Name    string
	Columns []ColumnDef
	Key     []string
}

// Column returns the named column.
func (t *TableDef) Column(name string) (ColumnDef, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return ColumnDef{}, false
}

// StarRocks is the definition in StarRocks types: the body of an explicit
// schema change (ARCHITECTURE.md §14.1).
func (t *TableDef) StarRocks() *schema.Table {
	out := &schema.Table{Key: slices.Clone(t.Key)}
	for _, c := range t.Columns {
		out.Columns = append(out.Columns, schema.Column{Name: c.Name, Type: c.StarRocks, Nullable: c.Nullable, Default: c.Default})
	}
	return out
}

// SchemaChange is one change as a transaction of one partition carries it.
type SchemaChange struct {
	Kind SchemaChangeKind
	// Step is the change's 1-based position in the plan (by transaction
	// number): rows of a transaction whose Txn.Version is at least Step are
	// written under it.
	Step  int
	Table string
	// Old is the table before (nil: the change creates it), New after.
	Old, New *TableDef
	// SQL is the MySQL statement of the change.
	SQL string
}

func text(s string) *string { return &s }

// The source tables before any change. Their StarRocks types are
// examples/schema.sql's; their MySQL types are what a MySQL source of that
// schema declares (VARCHAR in characters, StarRocks's in bytes: its VARCHAR(64) holds a
// VARCHAR(16) of utf8mb4; order_status is wider at the source than
// StarRocks's VARCHAR(32), which holds every status the traffic writes).
func baseTables() map[string]*TableDef {
	return map[string]*TableDef{
		TableOrders: {Name: TableOrders, Key: []string{"order_id"}, Columns: []ColumnDef{
			{Name: "order_id", MySQL: "bigint", StarRocks: schema.BigInt, connect: col("order_id", "int64", false)},
			{Name: "customer_id", MySQL: "bigint", StarRocks: schema.BigInt, connect: col("customer_id", "int64", false)},
			{Name: "total_amount", MySQL: "decimal(10,2)", StarRocks: schema.Decimal(10, 2), Nullable: true, Default: text("0"), connect: decimalCol("total_amount")},
			{Name: "order_status", MySQL: "varchar(32)", StarRocks: schema.Varchar(32), Nullable: true, Default: text(""), connect: col("order_status", "string", true)},
			{Name: "updated_at", MySQL: "datetime", StarRocks: schema.DateTime, Nullable: true, connect: logicalCol("updated_at", "int64", "io.debezium.time.Timestamp")},
		}},
		TableItems: {Name: TableItems, Key: []string{"order_id", "item_id"}, Columns: []ColumnDef{
			{Name: "order_id", MySQL: "bigint", StarRocks: schema.BigInt, connect: col("order_id", "int64", false)},
			{Name: "item_id", MySQL: "int", StarRocks: schema.Int, connect: col("item_id", "int32", false)},
			{Name: "product", MySQL: "varchar(16)", StarRocks: schema.Varchar(64), Nullable: true, Default: text(""), connect: col("product", "string", true)},
			{Name: "quantity", MySQL: "int", StarRocks: schema.Int, Default: text("1"), connect: col("quantity", "int32", false)},
			{Name: "price", MySQL: "decimal(10,2)", StarRocks: schema.Decimal(10, 2), Nullable: true, Default: text("0"), connect: decimalCol("price")},
		}},
	}
}

// sourceColumn marks a string field with the source type and length, as
// Debezium's column.propagate.source.type does (docs/notes/kafka-cdc.md
// §6): the only way a Connect schema tells a VARCHAR's length.
func sourceColumn(f schemaField, typ string, length int) schemaField {
	f.Parameters = map[string]string{
		"__debezium.source.column.type":   typ,
		"__debezium.source.column.length": fmt.Sprint(length),
		"__debezium.source.column.name":   f.Field,
	}
	return f
}

// schemaState is a source's tables as the plan has changed them so far.
type schemaState struct {
	plan   SchemaPlan // sorted
	done   int        // steps applied
	tables map[string]*TableDef
	active map[SchemaChangeKind]bool
}

func newSchemaState(plan SchemaPlan) *schemaState {
	if err := plan.Validate(); err != nil {
		panic(fmt.Sprintf("workload: %v", err))
	}
	s := &schemaState{plan: plan.sorted(), tables: baseTables(), active: map[SchemaChangeKind]bool{}}
	if plan.Has(ChangeWiden) {
		// The source propagates product's type, so its widening shows
		// in the Connect schema (docs/notes/kafka-cdc.md §6).
		items := s.tables[TableItems]
		for i := range items.Columns {
			if items.Columns[i].Name == "product" {
				items.Columns[i].connect = sourceColumn(items.Columns[i].connect, "VARCHAR", 16)
			}
		}
	}
	return s
}

// on reports whether a change is in effect.
func (s *schemaState) on(k SchemaChangeKind) bool { return s != nil && s.active[k] }

// version is the number of steps in effect.
func (s *schemaState) version() int {
	if s == nil {
		return 0
	}
	return s.done
}

// table returns a table's current definition (nil: none, or no plan).
func (s *schemaState) table(name string) *TableDef {
	if s == nil {
		return nil
	}
	return s.tables[name]
}

// advance applies every step whose transaction number is at most txn and
// returns the changes it made.
func (s *schemaState) advance(txn int) []SchemaChange {
	if s == nil {
		return nil
	}
	var out []SchemaChange
	for s.done < len(s.plan) && s.plan[s.done].At <= txn {
		step := s.plan[s.done]
		s.done++
		s.active[step.Kind] = true
		out = append(out, s.apply(step.Kind, s.done))
	}
	return out
}

// apply makes one change to the tables.
func (s *schemaState) apply(k SchemaChangeKind, step int) SchemaChange {
	clone := func(t *TableDef) *TableDef {
		c := *t
		c.Columns = slices.Clone(t.Columns)
		c.Key = slices.Clone(t.Key)
		return &c
	}
	switch k {
	case ChangeAddColumns:
		old := s.tables[TableOrders]
		t := clone(old)
		points := col("points", "int32", false)
		points.Default = 0
		t.Columns = append(t.Columns,
			ColumnDef{Name: "coupon", MySQL: "varchar(16)", StarRocks: schema.Varchar(64), Nullable: true, connect: col("coupon", "string", true)},
			ColumnDef{Name: "points", MySQL: "int", StarRocks: schema.Int, Default: text("0"), connect: points})
		s.tables[TableOrders] = t
		return SchemaChange{Kind: k, Step: step, Table: TableOrders, Old: old, New: t,
			SQL: "ALTER TABLE `test`.`orders` ADD COLUMN `coupon` VARCHAR(16) NULL, ADD COLUMN `points` INT NOT NULL DEFAULT 0"}
	case ChangeNewTable:
		t := &TableDef{Name: TableShipments, Key: []string{"order_id"}, Columns: []ColumnDef{
			{Name: "order_id", MySQL: "bigint", StarRocks: schema.BigInt, connect: col("order_id", "int64", false)},
			{Name: "carrier", MySQL: "varchar(16)", StarRocks: schema.Varchar(64), Nullable: true, connect: col("carrier", "string", true)},
			{Name: "tracking", MySQL: "varchar(32)", StarRocks: schema.Varchar(128), Nullable: true, connect: col("tracking", "string", true)},
			{Name: "order_status", MySQL: "varchar(32)", StarRocks: schema.Varchar(128), Nullable: true, connect: col("order_status", "string", true)},
			{Name: "shipped_at", MySQL: "datetime", StarRocks: schema.DateTime, Nullable: true, connect: logicalCol("shipped_at", "int64", "io.debezium.time.Timestamp")},
		}}
		s.tables[TableShipments] = t
		return SchemaChange{Kind: k, Step: step, Table: TableShipments, New: t,
			SQL: "CREATE TABLE `test`.`shipments` (`order_id` BIGINT NOT NULL, `carrier` VARCHAR(16) NULL, `tracking` VARCHAR(32) NULL, " +
				"`order_status` VARCHAR(32) NULL, `shipped_at` DATETIME NULL, PRIMARY KEY (`order_id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"}
	case ChangeWiden:
		old := s.tables[TableItems]
		t := clone(old)
		for i, c := range t.Columns {
			switch c.Name {
			case "quantity":
				t.Columns[i].MySQL, t.Columns[i].StarRocks, t.Columns[i].connect = "bigint", schema.BigInt, col("quantity", "int64", false)
			case "product":
				t.Columns[i].MySQL, t.Columns[i].StarRocks = "varchar(100)", schema.Varchar(400)
				t.Columns[i].connect = sourceColumn(col("product", "string", true), "VARCHAR", 100)
			}
		}
		s.tables[TableItems] = t
		return SchemaChange{Kind: k, Step: step, Table: TableItems, Old: old, New: t,
			SQL: "ALTER TABLE `test`.`order_items` MODIFY COLUMN `quantity` BIGINT NOT NULL DEFAULT 1, MODIFY COLUMN `product` VARCHAR(100) NULL DEFAULT ''"}
	case ChangeDropColumn:
		old := s.tables[TableOrders]
		t := clone(old)
		t.Columns = slices.DeleteFunc(t.Columns, func(c ColumnDef) bool { return c.Name == "updated_at" })
		s.tables[TableOrders] = t
		return SchemaChange{Kind: k, Step: step, Table: TableOrders, Old: old, New: t,
			SQL: "ALTER TABLE `test`.`orders` DROP COLUMN `updated_at`"}
	}
	panic(fmt.Sprintf("workload: unknown schema change %q", k))
}

// project renders a row image under a table's current definition, as a
// source that reads the row now shows it: the definition's columns only,
// a column the row lacks with its default (nil: none). "__op" is kept.
func (t *TableDef) project(r Row) Row {
	out := Row{}
	if v, ok := r["__op"]; ok {
		out["__op"] = v
	}
	for _, c := range t.Columns {
		if v, ok := r[c.Name]; ok {
			out[c.Name] = v
			continue
		}
		out[c.Name] = defaultValue(c)
	}
	return out
}

// defaultValue is a column's default as a row value (nil: none).
func defaultValue(c ColumnDef) any {
	if c.Default == nil {
		return nil
	}
	if c.connect.Default != nil {
		return c.connect.Default
	}
	return *c.Default
}

// Values of the changed columns.
var (
	carriers = []string{"ups", "dhl", "fedex", "usps", "postnl"}
	// longProducts are product names longer than the 64 bytes the
	// StarRocks column took before ChangeWiden.
	longProducts = []string{
		"mechanical keyboard with hot-swappable switches and a detachable braided cable",
		"ultrawide curved monitor, 34 inches, with a height-adjustable stand and USB-C hub",
		"noise-cancelling wireless headset with a boom microphone and a charging dock",
	}
)

// bulkQuantity is the smallest quantity of a bulk item: above what INT
// holds, so only a widened column takes it.
const bulkQuantity = int64(1) << 31
