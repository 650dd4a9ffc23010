package workload

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/big"
	"math/rand/v2"
	"time"
)

// Debezium traffic: the orders / order_items / order_events tables as a
// Debezium MySQL connector with provide.transaction.metadata=true writes
// them — one topic per table (<prefix>.test.<table>), each with several
// partitions keyed by primary key, and the BEGIN/END events on the
// single-partition transaction topic (<prefix>.transaction). Every source
// transaction also writes one row of test.audit_log, a collection whose
// topic the pipelines do not consume, so its count is in every END.
//
// Unlike Generator, an order keeps the number of items it was created with:
// Debezium only sends deletes of rows that exist, so every transaction of an
// order rewrites all of its rows and an at-least-once replay of an older
// transaction shows that older state whole.

// resendHistory is how many recent transactions a simulated connector
// restart may re-send.
const resendHistory = 200

// DebeziumTable is the collection (db.table) of a target table.
func DebeziumTable(table string) string { return Database + "." + table }

// TableAudit is the source table the pipelines do not consume.
const TableAudit = "audit_log"

// DebeziumOptions shape the Debezium traffic.
type DebeziumOptions struct {
	// Prefix is the connector's topic.prefix (default "dbserver1").
	Prefix string
	// Partitions per data topic (default 3).
	Partitions int32
	// Schemas renders every value as the JsonConverter does with
	// schemas.enable=true ({"schema": …, "payload": …}, decimals as
	// base64, timestamps as epoch numbers). Without it, the payload alone
	// with decimal.handling.mode=string and the temporal columns as SQL
	// text (a temporal converter's output).
	Schemas bool
	// SnapshotOrders orders exist before streaming: the initial snapshot
	// (op r, no transaction block, `last` on its last row).
	SnapshotOrders int
	// LargeEvery makes every n-th source transaction a large one that
	// merges LargeSize order transactions and spans every topic (0: none).
	LargeEvery int
	LargeSize  int
	// ResendRatio is the share of source transactions after which the
	// connector "restarts": 1–3 consecutive transactions of the last 200
	// are sent again (events, BEGIN and END), as Debezium does after a
	// restart from an older flushed offset.
	ResendRatio float64
	// UpdateRatio and DeleteRatio as for Generator (defaults 0.3, 0.1).
	UpdateRatio float64
	DeleteRatio float64
	Seed        uint64
	// Schema is the plan of source schema changes (none by default), by
	// the numbers of streamed transactions (Next). A change shows as new
	// Connect schemas of its table's events (with Schemas; without them,
	// as the rows' keys), a new table as a new topic listed by the END
	// of its first transaction.
	Schema SchemaPlan
}

// Record is one Kafka record of the traffic.
type Record struct {
	Topic     string
	Partition int32
	Key       []byte
	Value     []byte // nil: a tombstone
}

// DebeziumTxn is one source transaction as Debezium wrote it.
type DebeziumTxn struct {
	Txn Txn
	// Records are its Kafka records: BEGIN, the events (with tombstones
	// after deletes) and END, plus any re-sent copies of earlier
	// transactions that follow it.
	Records []Record
	// Events counts its data change events (every collection).
	Events int
	// NewTopics are topics the transaction writes first: the topic of a
	// table a schema change created. Kafka Connect creates a topic when
	// its first record is written; DebeziumProducer does so before the
	// transaction's records.
	NewTopics []string
}

// DebeziumSource generates Debezium traffic. It is not safe for concurrent
// use.
type DebeziumSource struct {
	opts    DebeziumOptions
	rng     *rand.Rand
	next    int64
	live    []int64
	orders  map[int64]Row
	items   map[int64][]Row
	seq     int64
	event   int64
	audit   int64
	recent  [][]Record
	schemas map[string]json.RawMessage
	// With a schema plan (or schema changes Encode carried): the tables
	// as changed so far, whose columns every image shows, and the
	// shipments of shipped orders.
	schema    *schemaState
	current   map[string]*TableDef
	shipments map[int64]Row
}

// NewDebeziumSource returns a source; zero options get defaults.
func NewDebeziumSource(opts DebeziumOptions) *DebeziumSource {
	if opts.Prefix == "" {
		opts.Prefix = "dbserver1"
	}
	if opts.Partitions <= 0 {
		opts.Partitions = 3
	}
	if opts.UpdateRatio == 0 && opts.DeleteRatio == 0 {
		opts.UpdateRatio, opts.DeleteRatio = 0.3, 0.1
	}
	if opts.LargeSize <= 0 {
		opts.LargeSize = 8
	}
	s := &DebeziumSource{
		opts:   opts,
		rng:    rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5bd1e995)),
		orders: map[int64]Row{},
		items:  map[int64][]Row{},
	}
	s.schemas = map[string]json.RawMessage{}
	for _, t := range []string{TableOrders, TableItems, TableEvents, TableAudit} {
		s.schemas[t] = envelopeSchema(opts.Prefix, t, tableColumns[t])
	}
	s.current, s.shipments = map[string]*TableDef{}, map[int64]Row{}
	if len(opts.Schema) > 0 {
		s.schema = newSchemaState(opts.Schema)
		for _, t := range []string{TableOrders, TableItems} {
			s.setTable(s.schema.table(t))
		}
	}
	return s
}

// setTable makes def the table's current definition: its Connect schema
// and the columns of its images.
func (s *DebeziumSource) setTable(def *TableDef) {
	fields := make([]schemaField, len(def.Columns))
	for i, c := range def.Columns {
		fields[i] = c.connect
	}
	s.schemas[def.Name] = envelopeSchema(s.opts.Prefix, def.Name, fields)
	s.current[def.Name] = def
}

// Topic is the data topic of a table.
func (s *DebeziumSource) Topic(table string) string {
	return s.opts.Prefix + "." + DebeziumTable(table)
}

// TransactionTopic is the transaction metadata topic.
func (s *DebeziumSource) TransactionTopic() string { return s.opts.Prefix + ".transaction" }

// DataTopics are the topics the pipelines consume: with a plan that
// creates shipments, its topic too (which exists from the change on).
func (s *DebeziumSource) DataTopics() []string {
	out := []string{s.Topic(TableOrders), s.Topic(TableItems), s.Topic(TableEvents)}
	if s.opts.Schema.Has(ChangeNewTable) {
		out = append(out, s.Topic(TableShipments))
	}
	return out
}

// AllTopics lists every topic the source writes from the start, with its
// partition count (a topic a schema change creates comes later:
// DebeziumTxn.NewTopics).
func (s *DebeziumSource) AllTopics() map[string]int32 {
	out := map[string]int32{s.TransactionTopic(): 1, s.Topic(TableAudit): s.opts.Partitions}
	for _, t := range []string{TableOrders, TableItems, TableEvents} {
		out[s.Topic(t)] = s.opts.Partitions
	}
	return out
}

// Partitions is the number of partitions of each data topic.
func (s *DebeziumSource) Partitions() int32 { return s.opts.Partitions }

// Snapshot returns the initial snapshot: every row of SnapshotOrders orders
// as op r events, and the transaction of their rows for the model.
func (s *DebeziumSource) Snapshot() (Txn, []Record) {
	var t Txn
	t.ID = "snapshot"
	var changes []Change
	for i := 0; i < s.opts.SnapshotOrders; i++ {
		changes = append(changes, s.create()...)
		changes = append(changes, s.eventRow(s.live[len(s.live)-1], "create"))
	}
	var recs []Record
	for i, c := range changes {
		marker := "true"
		switch {
		case i == len(changes)-1:
			marker = "last"
		case i == 0:
			marker = "first"
		}
		recs = append(recs, s.record(c.Table, c.Row, s.payload('r', c.Table, nil, c.Row, marker, nil)))
	}
	t.Changes = changes
	return t, recs
}

// Next returns the next source transaction and its records.
func (s *DebeziumSource) Next() DebeziumTxn {
	s.seq++
	n := 1
	if s.opts.LargeEvery > 0 && s.seq%int64(s.opts.LargeEvery) == 0 {
		n = s.opts.LargeSize
	}
	schemaChanges := s.schema.advance(int(s.seq))
	var newTopics []string
	ship := false
	for _, c := range schemaChanges {
		s.setTable(c.New)
		if c.Kind == ChangeNewTable {
			// The first transaction of the new table also updates the
			// order it ships.
			newTopics, ship = append(newTopics, s.Topic(c.Table)), true
		}
	}
	var changes []Change
	var befores []Row
	for i := 0; i < n; i++ {
		cs, bs := s.orderTxn(ship && i == 0)
		changes = append(changes, cs...)
		befores = append(befores, bs...)
	}
	s.audit++
	auditRow := Row{"id": s.audit, "note": fmt.Sprintf("txn %d", s.seq)}
	id := fmt.Sprintf("3e11fa47-71ca-11e1-9e33-c80aa9429562:%d", s.seq)
	txn := DebeziumTxn{Txn: Txn{ID: id, Changes: changes, Schema: schemaChanges, Version: s.schema.version()}, NewTopics: newTopics}

	counts := map[string]int{}
	total := 0
	var recs []Record
	recs = append(recs, s.txnRecord(map[string]any{"status": "BEGIN", "id": id, "ts_ms": 1764417600000, "event_count": nil, "data_collections": nil}))
	emit := func(table string, op byte, before, after Row, keyRow Row) {
		total++
		counts[table]++
		block := map[string]any{"id": id, "total_order": total, "data_collection_order": counts[table]}
		recs = append(recs, s.record(table, keyRow, s.payload(op, table, before, after, "false", block)))
		if op == 'd' {
			recs = append(recs, Record{Topic: s.Topic(table), Partition: s.partitionOf(table, keyRow), Key: s.key(table, keyRow)})
		}
	}
	for i, c := range changes {
		switch {
		case c.Delete:
			emit(c.Table, 'd', befores[i], nil, befores[i])
		case befores[i] != nil:
			emit(c.Table, 'u', befores[i], c.Row, c.Row)
		default:
			emit(c.Table, 'c', nil, c.Row, c.Row)
		}
	}
	emit(TableAudit, 'c', nil, auditRow, auditRow)
	var cols []map[string]any
	for _, table := range []string{TableOrders, TableItems, TableEvents, TableShipments, TableAudit} {
		if counts[table] > 0 {
			cols = append(cols, map[string]any{"data_collection": DebeziumTable(table), "event_count": counts[table]})
		}
	}
	recs = append(recs, s.txnRecord(map[string]any{"status": "END", "id": id, "ts_ms": 1764417600000, "event_count": total, "data_collections": cols}))
	txn.Events = total
	mine := append([]Record(nil), recs...)
	if s.opts.ResendRatio > 0 && len(s.recent) > 0 && s.rng.Float64() < s.opts.ResendRatio {
		// The connector restarts from an older flushed offset: 1–3
		// consecutive transactions from up to resendHistory back come again.
		from := s.rng.IntN(len(s.recent))
		k := 1 + s.rng.IntN(min(3, len(s.recent)-from))
		for _, old := range s.recent[from : from+k] {
			recs = append(recs, old...)
		}
		// A re-sent event of this very transaction too.
		recs = append(recs, mine[1])
	}
	s.recent = append(s.recent, mine)
	if len(s.recent) > resendHistory {
		s.recent = s.recent[1:]
	}
	txn.Records = recs
	return txn
}

// Encode renders any source transaction (e.g. one of Generator's) as the
// Debezium records of one transaction: BEGIN, a create (or, for a delete, a
// delete with the row as its before image and a tombstone) per change in
// order, END. It lets the same rows run through kafka_txn and debezium_txn.
func (s *DebeziumSource) Encode(t Txn) DebeziumTxn {
	s.seq++
	id := fmt.Sprintf("3e11fa47-71ca-11e1-9e33-c80aa9429562:%d", s.seq)
	var newTopics []string
	for _, c := range t.Schema {
		if s.current[c.Table] == nil && c.Old == nil {
			newTopics = append(newTopics, s.Topic(c.Table))
		}
		s.setTable(c.New)
	}
	counts := map[string]int{}
	total := 0
	recs := []Record{s.txnRecord(map[string]any{"status": "BEGIN", "id": id, "ts_ms": 1764417600000, "event_count": nil, "data_collections": nil})}
	for _, c := range t.Changes {
		total++
		counts[c.Table]++
		block := map[string]any{"id": id, "total_order": total, "data_collection_order": counts[c.Table]}
		if c.Delete {
			recs = append(recs, s.record(c.Table, c.Row, s.payload('d', c.Table, c.Row, nil, "false", block)),
				Record{Topic: s.Topic(c.Table), Partition: s.partitionOf(c.Table, c.Row), Key: s.key(c.Table, c.Row)})
			continue
		}
		recs = append(recs, s.record(c.Table, c.Row, s.payload('c', c.Table, nil, c.Row, "false", block)))
	}
	var cols []map[string]any
	for _, table := range []string{TableOrders, TableItems, TableEvents, TableShipments} {
		if counts[table] > 0 {
			cols = append(cols, map[string]any{"data_collection": DebeziumTable(table), "event_count": counts[table]})
		}
	}
	recs = append(recs, s.txnRecord(map[string]any{"status": "END", "id": id, "ts_ms": 1764417600000, "event_count": total, "data_collections": cols}))
	return DebeziumTxn{Txn: Txn{ID: id, Changes: t.Changes, Schema: t.Schema, Version: t.Version}, Records: recs, Events: total, NewTopics: newTopics}
}

// orderTxn returns the changes of one order transaction and, per change,
// the row before it (nil for a create). With ship it ships an order (an
// update when there is one to update).
func (s *DebeziumSource) orderTxn(ship bool) ([]Change, []Row) {
	roll := s.rng.Float64()
	if ship {
		roll = s.opts.DeleteRatio
	}
	if len(s.live) > 0 && roll < s.opts.DeleteRatio {
		i := s.rng.IntN(len(s.live))
		id := s.live[i]
		s.live = append(s.live[:i], s.live[i+1:]...)
		var cs []Change
		var bs []Row
		cs = append(cs, Change{Table: TableOrders, Row: withOp(s.orders[id]), Delete: true})
		bs = append(bs, s.orders[id])
		for _, it := range s.items[id] {
			cs = append(cs, Change{Table: TableItems, Row: withOp(it), Delete: true})
			bs = append(bs, it)
		}
		if sh, ok := s.shipments[id]; ok {
			cs = append(cs, Change{Table: TableShipments, Row: withOp(sh), Delete: true})
			bs = append(bs, sh)
			delete(s.shipments, id)
		}
		delete(s.orders, id)
		delete(s.items, id)
		ev := s.eventRow(id, "delete")
		return append(cs, ev), append(bs, nil)
	}
	if len(s.live) > 0 && roll < s.opts.DeleteRatio+s.opts.UpdateRatio {
		id := s.live[s.rng.IntN(len(s.live))]
		oldOrder, oldItems, oldShipment := s.orders[id], s.items[id], s.shipments[id]
		cs := s.writeOrder(id, len(oldItems), fmt.Sprintf("updated-%d", s.seq))
		cs = append(cs, s.ship(id, ship, true)...)
		bs := make([]Row, 0, len(cs)+1)
		for _, c := range cs {
			switch c.Table {
			case TableOrders:
				bs = append(bs, oldOrder)
			case TableShipments:
				bs = append(bs, oldShipment)
			default:
				bs = append(bs, oldItems[asInt(c.Row["item_id"])-1])
			}
		}
		return append(cs, s.eventRow(id, "update")), append(bs, nil)
	}
	cs := s.create()
	cs = append(cs, s.ship(s.live[len(s.live)-1], ship, false)...)
	bs := make([]Row, len(cs)+1)
	return append(cs, s.eventRow(s.live[len(s.live)-1], "create")), bs
}

// ship returns the shipment change of an order just written, under
// ChangeNewTable: when it was shipped before (a rewrite with its new
// status), when ship says so, or for some updates.
func (s *DebeziumSource) ship(id int64, ship, update bool) []Change {
	if !s.schema.on(ChangeNewTable) {
		return nil
	}
	prev, shipped := s.shipments[id]
	if !shipped && !ship && !(update && s.rng.Float64() < shipRatio) {
		return nil
	}
	row := shipment(s.rng, id, fmt.Sprint(s.orders[id]["order_status"]), prev)
	s.shipments[id] = row
	return []Change{{Table: TableShipments, Row: row}}
}

func withOp(r Row) Row {
	out := Row{"__op": 1}
	for k, v := range r {
		out[k] = v
	}
	return out
}

func (s *DebeziumSource) create() []Change {
	s.next++
	id := s.next
	s.live = append(s.live, id)
	return s.writeOrder(id, 1+s.rng.IntN(maxItems), "created")
}

// writeOrder sets an order and all of its n items, and returns the changes
// (the order first or last, at random).
func (s *DebeziumSource) writeOrder(id int64, n int, status string) []Change {
	var total int64
	items := make([]Row, n)
	var cs []Change
	for i := 0; i < n; i++ {
		qty := 1 + s.rng.IntN(4)
		cents := int64(100 + s.rng.IntN(50000))
		items[i] = Row{"order_id": id, "item_id": i + 1, "product": products[s.rng.IntN(len(products))], "quantity": qty}
		if s.schema.on(ChangeWiden) {
			widenItem(s.rng, items[i], &qty, &cents)
		}
		total += int64(qty) * cents
		items[i]["price"] = centsString(cents)
		cs = append(cs, Change{Table: TableItems, Row: items[i]})
	}
	order := Row{"order_id": id, "customer_id": 1000 + s.rng.IntN(9000), "total_amount": centsString(total), "order_status": status, "updated_at": "2026-11-29 12:00:00"}
	orderColumns(s.schema, s.rng, order)
	s.orders[id], s.items[id] = order, items
	oc := Change{Table: TableOrders, Row: order}
	if s.rng.IntN(2) == 0 {
		return append([]Change{oc}, cs...)
	}
	return append(cs, oc)
}

func (s *DebeziumSource) eventRow(order int64, kind string) Change {
	s.event++
	return Change{Table: TableEvents, Row: Row{"event_id": s.event, "order_id": order, "kind": kind, "created_at": "2026-11-29 12:00:00"}}
}

// keyColumns are each table's primary key.
var keyColumns = map[string][]string{
	TableOrders: {"order_id"}, TableItems: {"order_id", "item_id"}, TableEvents: {"event_id"}, TableAudit: {"id"},
	TableShipments: {"order_id"},
}

func (s *DebeziumSource) key(table string, r Row) []byte {
	k := map[string]any{}
	for _, c := range keyColumns[table] {
		k[c] = r[c]
	}
	b, _ := json.Marshal(k)
	return b
}

// partitionOf hashes the key, as Kafka's default partitioner does (with
// another hash): one key always lands on one partition.
func (s *DebeziumSource) partitionOf(table string, r Row) int32 {
	h := fnv.New32a()
	_, _ = h.Write(s.key(table, r))
	return int32(h.Sum32() % uint32(s.opts.Partitions))
}

func (s *DebeziumSource) record(table string, r Row, value []byte) Record {
	return Record{Topic: s.Topic(table), Partition: s.partitionOf(table, r), Key: s.key(table, r), Value: value}
}

func (s *DebeziumSource) txnRecord(v map[string]any) Record {
	var body any = v
	if s.opts.Schemas {
		body = map[string]any{"schema": json.RawMessage(txnSchema), "payload": v}
	}
	b, _ := json.Marshal(body)
	return Record{Topic: s.TransactionTopic(), Partition: 0, Key: []byte(fmt.Sprintf(`{"id":%q}`, v["id"])), Value: b}
}

// payload renders one change event envelope.
func (s *DebeziumSource) payload(op byte, table string, before, after Row, snapshot string, block map[string]any) []byte {
	env := map[string]any{
		"before": s.image(table, before),
		"after":  s.image(table, after),
		"op":     string(op),
		"ts_ms":  1764417600125,
		"source": map[string]any{
			"version": "2.7.0.Final", "connector": "mysql", "name": s.opts.Prefix, "ts_ms": 1764417600000,
			"snapshot": snapshot, "db": Database, "table": table, "server_id": 223344,
		},
		"transaction": block,
	}
	var body any = env
	if s.opts.Schemas {
		body = map[string]any{"schema": s.schemas[table], "payload": env}
	}
	b, _ := json.Marshal(body)
	return b
}

// image renders a row as Debezium does: without "__op"; with schemas,
// decimals as base64 unscaled bytes and timestamps as epoch numbers.
func (s *DebeziumSource) image(table string, r Row) any {
	if r == nil {
		return nil
	}
	if def := s.current[table]; def != nil {
		// Images show the table's columns as they are now.
		r = def.project(r)
	}
	out := map[string]any{}
	for k, v := range r {
		if k == "__op" {
			continue
		}
		out[k] = v
	}
	if !s.opts.Schemas {
		return out
	}
	for k, v := range out {
		if v == nil {
			continue
		}
		switch columnKind(table, k) {
		case "decimal":
			out[k] = decimalBase64(v.(string))
		case "timestamp":
			t, _ := time.Parse(time.DateTime, v.(string))
			out[k] = t.UnixMilli()
		case "microtimestamp":
			t, _ := time.Parse(time.DateTime, v.(string))
			out[k] = t.UnixMicro()
		}
	}
	return out
}

func columnKind(table, col string) string {
	switch table + "." + col {
	case TableOrders + ".total_amount", TableItems + ".price":
		return "decimal"
	case TableOrders + ".updated_at", TableShipments + ".shipped_at":
		return "timestamp"
	case TableEvents + ".created_at":
		return "microtimestamp"
	}
	return ""
}

// decimalBase64 renders "12.34" (scale 2) as Kafka Connect's Decimal: the
// unscaled value in Java's BigInteger.toByteArray form, base64.
func decimalBase64(s string) string {
	n, ok := new(big.Int).SetString(removeDot(s), 10)
	if !ok {
		return s
	}
	return base64.StdEncoding.EncodeToString(twosComplement(n))
}

func removeDot(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '.' {
			out = append(out, s[i])
		}
	}
	return string(out)
}

// twosComplement is the shortest big-endian two's complement form of n.
func twosComplement(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	l := (n.BitLen() + 8) / 8
	v := new(big.Int).Add(n, new(big.Int).Lsh(big.NewInt(1), uint(8*l)))
	b := v.Bytes()
	for len(b) < l {
		b = append([]byte{0xff}, b...)
	}
	return b
}

// Connect schemas of the JsonConverter's schemas.enable=true output.
type schemaField struct {
	Type       string            `json:"type"`
	Optional   bool              `json:"optional"`
	Name       string            `json:"name,omitempty"`
	Version    int               `json:"version,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	Default    any               `json:"default,omitempty"`
	Field      string            `json:"field,omitempty"`
	Fields     []schemaField     `json:"fields,omitempty"`
	Items      *schemaField      `json:"items,omitempty"`
}

func col(field, typ string, optional bool) schemaField {
	return schemaField{Type: typ, Optional: optional, Field: field}
}

func decimalCol(field string) schemaField {
	return schemaField{Type: "bytes", Optional: true, Name: "org.apache.kafka.connect.data.Decimal", Version: 1,
		Parameters: map[string]string{"scale": "2", "connect.decimal.precision": "10"}, Field: field}
}

func logicalCol(field, typ, name string) schemaField {
	return schemaField{Type: typ, Optional: true, Name: name, Version: 1, Field: field}
}

var tableColumns = map[string][]schemaField{
	TableOrders: {col("order_id", "int64", false), col("customer_id", "int64", false), decimalCol("total_amount"),
		col("order_status", "string", true), logicalCol("updated_at", "int64", "io.debezium.time.Timestamp")},
	TableItems: {col("order_id", "int64", false), col("item_id", "int32", false), col("product", "string", true),
		col("quantity", "int32", false), decimalCol("price")},
	TableEvents: {col("event_id", "int64", false), col("order_id", "int64", false), col("kind", "string", false),
		logicalCol("created_at", "int64", "io.debezium.time.MicroTimestamp")},
	TableAudit: {col("id", "int64", false), col("note", "string", true)},
}

// envelopeSchema is the Connect schema of a table's change events whose
// rows have the given fields.
func envelopeSchema(prefix, table string, fields []schemaField) json.RawMessage {
	value := func(field string) schemaField {
		return schemaField{Type: "struct", Optional: true, Name: prefix + "." + Database + "." + table + ".Value", Field: field, Fields: fields}
	}
	source := schemaField{Type: "struct", Name: "io.debezium.connector.mysql.Source", Field: "source", Fields: []schemaField{
		col("version", "string", false), col("connector", "string", false), col("name", "string", false), col("ts_ms", "int64", false),
		{Type: "string", Optional: true, Name: "io.debezium.data.Enum", Version: 1, Field: "snapshot",
			Parameters: map[string]string{"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"}},
		col("db", "string", false), col("table", "string", true), col("server_id", "int64", false),
	}}
	block := schemaField{Type: "struct", Optional: true, Name: "event.block", Version: 1, Field: "transaction", Fields: []schemaField{
		col("id", "string", false), col("total_order", "int64", false), col("data_collection_order", "int64", false),
	}}
	env := schemaField{Type: "struct", Name: prefix + "." + Database + "." + table + ".Envelope", Version: 2, Fields: []schemaField{
		value("before"), value("after"), source, col("op", "string", false), col("ts_ms", "int64", true), block,
	}}
	b, _ := json.Marshal(env)
	return b
}

var txnSchema = func() []byte {
	s := schemaField{Type: "struct", Name: "io.debezium.connector.common.TransactionMetadataValue", Version: 1, Fields: []schemaField{
		col("status", "string", false), col("id", "string", false), col("event_count", "int64", true),
		{Type: "array", Optional: true, Field: "data_collections", Items: &schemaField{Type: "struct", Name: "event.collection", Version: 1,
			Fields: []schemaField{col("data_collection", "string", false), col("event_count", "int64", false)}}},
		col("ts_ms", "int64", false),
	}}
	b, _ := json.Marshal(s)
	return b
}()
