package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"

	_ "github.com/starrocks-txn/benthos-starrocks/components"
)

// The schema changes the traffic carries are well-formed for the project's
// own decoders: txn_assembler reads the envelope's SCHEMA events and
// Maxwell's DDL events into schema changes in the right place of the
// partition's stream, and debezium_txn reads the new Connect schemas into
// each row's source table.

// decoded is one message out of a decoder, with its contract.
type decoded struct {
	meta  contract.Meta
	body  []byte
	facts contract.RowFacts
	typed bool // facts are the writer's
}

// runDecoder runs a stream with the given input (nil: a producer function
// fed with msgs, as records of partition 0 of topic "cdc") and processor
// YAML, and collects what comes out until want messages did.
func runDecoder(t *testing.T, inputYAML, processorYAML string, msgs [][]byte, want int) []decoded {
	t.Helper()
	b := service.NewStreamBuilder()
	var produce service.MessageBatchHandlerFunc
	var err error
	if inputYAML == "" {
		produce, err = b.AddBatchProducerFunc()
	} else {
		err = b.AddInputYAML(inputYAML)
	}
	require.NoError(t, err)
	if processorYAML != "" {
		// One pipeline thread: the txn_assembler refuses a pool of them
		// (it needs each partition's messages in order).
		b.SetThreads(1)
		require.NoError(t, b.AddProcessorYAML(processorYAML))
	}
	var mu sync.Mutex
	var out []decoded
	require.NoError(t, b.AddBatchConsumerFunc(func(_ context.Context, batch service.MessageBatch) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range batch {
			if err := m.GetError(); err != nil {
				return fmt.Errorf("a message was flagged: %w", err)
			}
			meta, err := contract.Read(m)
			if err != nil {
				return err
			}
			body, err := m.AsBytes()
			if err != nil {
				return err
			}
			facts, typed := contract.Parse(m).Row(body)
			out = append(out, decoded{meta: meta, body: append([]byte(nil), body...), facts: facts, typed: typed})
		}
		return nil
	}))
	require.NoError(t, b.SetLoggerYAML("level: warn"))
	stream, err := b.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx) }()
	if produce != nil {
		batch := make(service.MessageBatch, len(msgs))
		for i, body := range msgs {
			m := service.NewMessage(body)
			m.MetaSetMut("kafka_topic", "cdc")
			m.MetaSetMut("kafka_partition", 0)
			m.MetaSetMut("kafka_offset", i)
			batch[i] = m
		}
		require.NoError(t, produce(ctx, batch))
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(out) >= want
	}, 50*time.Second, 10*time.Millisecond, "the decoder emits every message")
	require.NoError(t, stream.StopWithin(10*time.Second))
	<-done
	mu.Lock()
	defer mu.Unlock()
	return out
}

// columnTypes renders a table's columns as "name TYPE [NOT NULL] [=default]".
func columnTypes(t *schema.Table) []string {
	var out []string
	for _, c := range t.Columns {
		s := c.Name + " " + c.Type.String()
		if !c.Nullable {
			s += " NOT NULL"
		}
		if c.Default != nil {
			s += " =" + *c.Default
		}
		out = append(out, s)
	}
	return out
}

// generated is the traffic of one Generator partition under testPlan, up
// to the last change and a few transactions after it.
func generated() []Txn {
	g := NewGenerator(Options{Partitions: 1, Seed: 13, Events: true, UpdateRatio: 0.5, DeleteRatio: 0.1, Schema: testPlan})
	var out []Txn
	for i := 0; i < 75; i++ {
		out = append(out, g.Next(0))
	}
	return out
}

// The assembler reads each SCHEMA event as a schema change of its table,
// in the transaction that carries it and before its rows, whose body is the
// definition the generator made; the rows after it carry the new columns.
func TestAssemblerReadsTheEnvelopesSchemaEvents(t *testing.T) {
	txns := generated()
	var msgs [][]byte
	rows := 0
	for _, tx := range txns {
		evs, err := Envelope(tx)
		require.NoError(t, err)
		msgs = append(msgs, evs...)
		rows += len(tx.Schema) + len(tx.Changes) + 1 // the END marker
	}
	out := runDecoder(t, "", "txn_assembler: { format: envelope }", msgs, rows)
	require.Len(t, out, rows)
	i := 0
	for _, tx := range txns {
		for _, c := range tx.Schema {
			d := out[i]
			i++
			require.True(t, d.meta.SchemaChange, "transaction %s: the SCHEMA event of %s is a schema change", tx.ID, c.Kind)
			assert.Equal(t, tx.ID, d.meta.TxnID, "in its transaction")
			assert.Equal(t, Database+"."+c.Table, d.meta.Database+"."+d.meta.Table)
			var def schema.Table
			require.NoError(t, json.Unmarshal(d.body, &def))
			assert.Equal(t, columnTypes(c.New.StarRocks()), columnTypes(&def))
			assert.Equal(t, c.New.Key, def.Key)
		}
		for _, c := range tx.Changes {
			d := out[i]
			i++
			require.False(t, d.meta.SchemaChange)
			require.Equal(t, c.Table, d.meta.Table, "transaction %s", tx.ID)
			var row map[string]any
			require.NoError(t, json.Unmarshal(d.body, &row))
			if !c.Delete {
				for k := range c.Row {
					assert.Contains(t, row, k)
				}
			}
		}
		require.True(t, out[i].meta.TxnEnd)
		i++
	}
}

// Maxwell's DDL events become schema changes of their own transaction
// (ddl@<offset>), between two transactions of the partition, with the
// StarRocks types the assembler maps from def and sql: the added columns
// typed (points with its default), the new table whole, the widened
// columns wider, the dropped column gone.
func TestAssemblerReadsMaxwellsDDLEvents(t *testing.T) {
	txns := generated()
	var msgs [][]byte
	want := 0
	for i, tx := range txns {
		evs, err := Maxwell(tx, int64(1000+i))
		require.NoError(t, err)
		msgs = append(msgs, evs...)
		want += len(evs)
	}
	out := runDecoder(t, "", "txn_assembler: { format: maxwell }", msgs, want)
	require.Len(t, out, want)
	i := 0
	for n, tx := range txns {
		for _, c := range tx.Schema {
			d := out[i]
			i++
			require.True(t, d.meta.SchemaChange, "the %s DDL is a schema change", c.Kind)
			assert.Equal(t, fmt.Sprintf("ddl@%d", i-1), d.meta.TxnID, "a transaction of its own")
			assert.True(t, d.meta.TxnEnd)
			assert.Equal(t, c.Table, d.meta.Table)
			var def schema.Table
			require.NoError(t, json.Unmarshal(d.body, &def))
			cols := strings.Join(columnTypes(&def), ", ")
			var names []string
			for _, col := range def.Columns {
				names = append(names, col.Name)
			}
			var wantNames []string
			for _, col := range c.New.Columns {
				wantNames = append(wantNames, col.Name)
			}
			assert.Equal(t, wantNames, names, "%s: the columns after the change", c.Kind)
			assert.Equal(t, c.New.Key, def.Key)
			switch c.Kind {
			case ChangeAddColumns:
				assert.Contains(t, cols, "coupon VARCHAR(64)")
				assert.Contains(t, cols, "points INT =0")
			case ChangeNewTable:
				assert.Equal(t, columnTypes(c.New.StarRocks()), columnTypes(&def), "the new table as its CREATE TABLE defines it")
			case ChangeWiden:
				assert.Contains(t, cols, "quantity BIGINT")
				assert.Contains(t, cols, "product VARCHAR(400)")
			case ChangeDropColumn:
				assert.NotContains(t, cols, "updated_at")
			}
		}
		for j, c := range tx.Changes {
			d := out[i]
			i++
			require.False(t, d.meta.SchemaChange)
			require.Equal(t, strconv.Itoa(1000+n), d.meta.TxnID)
			require.Equal(t, c.Table, d.meta.Table)
			require.Equal(t, j == len(tx.Changes)-1, d.meta.TxnEnd)
			assert.Equal(t, c.Delete, d.facts.Delete)
		}
	}
}

// debezium_txn reads the changed Connect schemas into each row's source
// table: from the change's transaction on, orders has coupon and points
// (NOT NULL, DEFAULT 0) and later no updated_at, order_items a BIGINT
// quantity and a VARCHAR(400) product (VARCHAR(64) before), and shipments,
// read from the topic its first transaction created, is keyed by order_id.
// Every transaction comes out whole.
func TestDebeziumInputReadsTheChangedSchemas(t *testing.T) {
	src := NewDebeziumSource(DebeziumOptions{Partitions: 2, Schemas: true, Seed: 21, Schema: testPlan})
	c := kafka.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, CreateDebeziumTopics(ctx, c.Brokers(), src))
	model := NewModel()
	prod, err := NewDebeziumProducer(DebeziumProducerOptions{Brokers: c.Brokers()}, src, model)
	require.NoError(t, err)
	defer prod.Close()
	require.NoError(t, prod.Produce(ctx, 80))
	var txns []Txn
	rows := 0
	// The model of each transaction, to count its rows.
	check := NewDebeziumSource(DebeziumOptions{Partitions: 2, Schemas: true, Seed: 21, Schema: testPlan})
	for i := 0; i < 80; i++ {
		tx := check.Next().Txn
		txns = append(txns, tx)
		rows += len(tx.Changes)
	}
	out := runDecoder(t, fmt.Sprintf(`
debezium_txn:
  seed_brokers: [ %q ]
  topics: [ %s ]
  transaction_topic: %s
  consumer_group: decode
  missing_events_timeout: 2s
`, c.Brokers()[0], strings.Join(src.DataTopics(), ", "), src.TransactionTopic()), "", nil, rows)
	require.Len(t, out, rows)
	seq := func(id string) int {
		_, n, _ := strings.Cut(id, ":")
		v, err := strconv.Atoi(n)
		require.NoError(t, err)
		return v
	}
	byTxn := map[string]int{}
	for _, d := range out {
		n := seq(d.meta.TxnID)
		byTxn[d.meta.TxnID]++
		require.True(t, d.typed, "the input vouches for the row it built")
		require.NotNil(t, d.facts.Schema, "a row decoded with schemas carries its source table")
		cols := columnTypes(d.facts.Schema)
		all := strings.Join(cols, ", ")
		on := func(k SchemaChangeKind) bool { return n >= testPlan[stepOf(testPlan, k)-1].At }
		switch d.meta.Table {
		case TableOrders:
			if on(ChangeAddColumns) {
				assert.Contains(t, cols, "points INT NOT NULL =0", "transaction %d", n)
				assert.Contains(t, all, "coupon VARCHAR", "transaction %d", n)
			} else {
				assert.NotContains(t, all, "coupon", "transaction %d", n)
			}
			assert.Equal(t, !on(ChangeDropColumn), strings.Contains(all, "updated_at DATETIME"), "transaction %d: updated_at", n)
		case TableItems:
			if on(ChangeWiden) {
				assert.Contains(t, cols, "quantity BIGINT NOT NULL", "transaction %d", n)
				assert.Contains(t, cols, "product VARCHAR(400)", "transaction %d", n)
			} else {
				assert.Contains(t, cols, "quantity INT NOT NULL", "transaction %d", n)
				assert.Contains(t, cols, "product VARCHAR(64)", "transaction %d", n)
			}
		case TableShipments:
			require.True(t, on(ChangeNewTable))
			assert.Equal(t, []string{"order_id"}, d.facts.Schema.Key, "transaction %d: %s", n, d.body)
			assert.Contains(t, cols, "order_id BIGINT NOT NULL")
			assert.Contains(t, cols, "shipped_at DATETIME")
		}
	}
	for _, tx := range txns {
		assert.Equal(t, len(tx.Changes), byTxn[tx.ID], "transaction %s whole", tx.ID)
	}
}
