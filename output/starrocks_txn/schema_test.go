package starrocks_txn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
	"github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn/schemasync"
)

// tablesMeta is a StarRocks catalogue of fixed tables for the schema
// manager (schemasync.Meta): changes apply at once.
type tablesMeta struct {
	mu     sync.Mutex
	tables map[string]*schema.Table
	ddl    []string
	// refuse is how many ALTER TABLE statements it refuses, as StarRocks
	// refuses a change definitely, before it applies them.
	refuse int
}

func newTablesMeta() *tablesMeta { return &tablesMeta{tables: map[string]*schema.Table{}} }

func (m *tablesMeta) set(db, table string, cols ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &schema.Table{}
	for _, c := range cols {
		t.Columns = append(t.Columns, schema.Column{Name: c, Type: schema.String, Nullable: true})
	}
	m.tables[db+"."+table] = t
}

func (m *tablesMeta) Columns(_ context.Context, db, table string) (*schema.Table, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tables[db+"."+table]
	if !ok {
		return &schema.Table{}, false, nil
	}
	c := *t
	c.Columns = append([]schema.Column(nil), t.Columns...)
	return &c, true, nil
}

// ExecDDL applies ALTER TABLE … ADD COLUMN (…) at once and refuses the rest.
func (m *tablesMeta) ExecDDL(_ context.Context, db, stmt string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ddl = append(m.ddl, stmt)
	if m.refuse > 0 && strings.HasPrefix(stmt, "ALTER TABLE") {
		m.refuse--
		return &starrocks.DDLError{Statement: stmt, Number: 1064, Message: "refused once"}
	}
	i := strings.Index(stmt, "ADD COLUMN (")
	if i < 0 || !strings.HasPrefix(stmt, "ALTER TABLE `"+db+"`.`") {
		return &starrocks.DDLError{Statement: stmt, Number: 1064, Message: "this catalogue takes only ADD COLUMN"}
	}
	table := strings.SplitN(strings.TrimPrefix(stmt, "ALTER TABLE `"+db+"`.`"), "`", 2)[0]
	t := m.tables[db+"."+table]
	for _, part := range strings.Split(stmt[i+len("ADD COLUMN ("):], ", `") {
		name := strings.SplitN(strings.TrimPrefix(part, "`"), "`", 2)[0]
		t.Columns = append(t.Columns, schema.Column{Name: name, Type: schema.String, Nullable: true})
	}
	return nil
}

func (m *tablesMeta) AlterJobs(context.Context, string, string, int) ([]starrocks.AlterJob, error) {
	return nil, nil
}

// gateStepper is a stepper whose output checks schemas against meta in
// mode.
func gateStepper(t *testing.T, dl bool, mode schemasync.Mode, meta *tablesMeta) *stepper {
	t.Helper()
	st := newStepper(t, "commit_interval: 100ms\nstall_retry_interval: 1s\n", dl)
	book := schemasync.New(meta, schemasync.Config{Mode: mode, PollMin: time.Millisecond, Now: func() time.Time { return st.now }})
	st.o.schemas, st.k.schemas = book, book
	return st
}

// resolve runs the schema check the core asked for last (the Output's
// resolveSchemas, without its goroutine) and hands the verdict back.
func (s *stepper) resolve(i int) error {
	s.t.Helper()
	require.Greater(s.t, len(s.fx.resolving), i, "a schema check was started")
	rc := s.fx.resolving[i]
	var readyAt time.Time
	var err error
	for _, n := range rc.needs {
		v := s.o.schemas.Resolve(context.Background(), rc.t.db, n.table, n.ref)
		if v.Err != nil {
			err = v.Err
			break
		}
		if v.ReadyAt.After(readyAt) {
			readyAt = v.ReadyAt
		}
	}
	s.k.schemasResolved(rc.p, rc.t, readyAt, err, s.now)
	s.check()
	return err
}

// typedRow is a data row of partition p whose writer says its source
// table is src (Debezium with schemas does).
func (s *src) typedRow(p, txn, table string, src *schema.Table, body map[string]any, end bool) *service.Message {
	b, _ := json.Marshal(body)
	m := service.NewMessage(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.offset[p]++
	var w contract.Writer
	w.WriteRowFacts(m, contract.Meta{Partition: p, Database: "test", Table: table, TxnID: txn, TxnEnd: end,
		HasSeq: true, Seq: s.seq, SeqSource: s.name, HasOffset: true, SourceOffset: s.offset[p]}, b, contract.RowFacts{Schema: src})
	return m
}

// A transaction whose rows need a new column waits, gated, with every
// later transaction of its partition, while another partition goes on;
// once the column is added they go on in order, and a cycle begun before
// the change cannot take the first (§14.3).
func TestCoreGatesANewSchemaAndOnlyItsPartition(t *testing.T) {
	meta := newTablesMeta()
	meta.set("test", "a", "id", "txn")
	st := gateStepper(t, false, schemasync.Evolve, meta)
	s := newSrc("a1")
	old := &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "txn", Type: schema.String}}, Key: []string{"id"}}
	wider := &schema.Table{Columns: append(append([]schema.Column(nil), old.Columns...), schema.Column{Name: "coupon", Type: schema.Varchar(8)}), Key: []string{"id"}}
	// p1's schema is checked first: then it is known.
	c0 := st.write(s.typedRow("p1", "u0", "a", old, map[string]any{"id": 0, "txn": "u0"}, true))
	require.Len(t, st.fx.resolving, 1)
	require.NoError(t, st.resolve(0))
	// A cycle begun after that first read of a's columns (§14.3: a read
	// showing columns not seen before is a change).
	st.advance(time.Millisecond)
	begunBefore := st.now

	st.advance(time.Second)
	c1 := st.write(s.typedRow("p0", "t1", "a", wider, map[string]any{"id": 1, "txn": "t1", "coupon": "x"}, true))
	c2 := st.write(s.typedRow("p0", "t2", "a", old, map[string]any{"id": 2, "txn": "t2"}, true))
	c3 := st.write(s.typedRow("p1", "u1", "a", old, map[string]any{"id": 3, "txn": "u1"}, true))
	assert.Equal(t, []string{"t1:gated", "t2:gated"}, st.states("a1", "p0"), "t1 needs a column; t2 waits behind it")
	assert.Equal(t, "u1:queued", st.states("a1", "p1")[1], "another partition goes on")
	require.Len(t, st.fx.resolving, 2, "one check, for the first gated transaction")
	assert.Equal(t, "t1", st.fx.resolving[1].t.id)

	st.advance(10 * time.Millisecond)
	require.NoError(t, st.resolve(1))
	assert.Contains(t, meta.ddl[0], "ADD COLUMN (`coupon` VARCHAR(8) NULL)")
	assert.Equal(t, []string{"t1:queued", "t2:active"}, st.states("a1", "p0"), "both go on, in order, once the column is there")
	assert.Len(t, st.fx.resolving, 2, "t2's schema was known")

	q := st.k.dbs["test"]
	taken, fresh := st.k.takeBegunAt(q, nil, false, st.now, begunBefore)
	assert.True(t, fresh, "a cycle begun before the change may not take t1")
	var ids []string
	for _, tx := range taken {
		ids = append(ids, tx.id)
	}
	// u1's schema was known before a's change: its rows fit the columns a
	// cycle begun before it planned a with.
	assert.Equal(t, []string{"u0", "u1"}, ids, "what was queued before t1 is taken; t1 and what follows it wait")
	taken, fresh = st.k.takeBegunAt(q, taken, true, st.now, st.now.Add(time.Millisecond))
	assert.False(t, fresh)
	assert.Len(t, taken, 4, "a cycle begun after the change takes them")
	require.True(t, st.k.startCommit(taken))
	st.k.committed(taken)
	for _, c := range []*call{c0, c1, c2, c3} {
		assert.True(t, returned(c))
	}
}

// In error mode a transaction whose rows name a column the table lacks is
// poisoned naming the table and the column; without dead_letter its
// partition stalls, is tried again every stall_retry_interval, and goes on
// — with the messages held behind it — once the table has the column,
// without a restart (§14.4).
func TestCoreSchemaStallHealsWithoutARestart(t *testing.T) {
	meta := newTablesMeta()
	meta.set("test", "a", "id", "txn")
	st := gateStepper(t, false, schemasync.Error, meta)
	s := newSrc("a1")
	c1 := st.write(s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1", "coupon": "x"}, true))
	err := st.resolve(0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "table test.a has no column coupon")
	p := st.part("a1", "p0")
	require.NotNil(t, p.stalled)
	assert.Contains(t, p.stalled.Error(), `source transaction "t1"`)
	assert.NotEmpty(t, st.fx.logged(logError, "stalled at source transaction", "tried again every stall_retry_interval"))
	c2 := st.write(s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true))
	assert.Len(t, p.held, 1, "a later message waits behind the stall")

	st.k.tick(st.now) // schedules the retry
	st.advance(500 * time.Millisecond)
	st.k.tick(st.now)
	assert.Len(t, st.fx.resolving, 1, "not before stall_retry_interval")
	st.advance(600 * time.Millisecond)
	st.k.tick(st.now)
	require.Len(t, st.fx.resolving, 2, "tried again")
	require.Error(t, st.resolve(1), "still no column")
	require.NotNil(t, p.stalled)

	meta.set("test", "a", "id", "txn", "coupon") // an operator's ALTER TABLE
	st.k.tick(st.now)
	st.advance(1100 * time.Millisecond)
	st.k.tick(st.now)
	require.Len(t, st.fx.resolving, 3)
	require.NoError(t, st.resolve(2))
	assert.Nil(t, p.stalled)
	assert.Equal(t, []string{"t1:queued", "t2:gated"}, st.states("a1", "p0"), "t1 goes on; the held t2, applied behind it, has its own key set to check")
	require.NoError(t, st.resolve(3))
	st.advance(time.Second)
	st.k.tick(st.now)
	assert.Equal(t, []string{"t1:queued", "t2:queued"}, st.states("a1", "p0"))
	txns := st.k.take(st.k.dbs["test"], nil, false, st.now.Add(time.Second))
	require.Len(t, txns, 2)
	require.True(t, st.k.startCommit(txns))
	st.k.committed(txns)
	assert.True(t, returned(c1))
	assert.True(t, returned(c2))
}

// A source transaction still open — part of its messages applied — when
// the partition stalls on an earlier one whose ALTER TABLE StarRocks
// refused stays whole: once the stall is tried again and the change goes
// through, the rest of it (held behind the stall) completes it, and it is
// loaded whole, after the earlier one, with every call acknowledged. With
// exactly_once (the partition's progress read first) as without it.
func TestCoreTransactionOpenAtASchemaStallGoesOnWhole(t *testing.T) {
	for _, exactly := range []bool{false, true} {
		t.Run(map[bool]string{false: "at_least_once", true: "exactly_once"}[exactly], func(t *testing.T) {
			meta := newTablesMeta()
			meta.set("test", "a", "id", "txn")
			meta.refuse = 1
			st := gateStepper(t, false, schemasync.Evolve, meta)
			st.k.learns = exactly
			s := newSrc("a1")
			wider := &schema.Table{Key: []string{"id"}, Columns: []schema.Column{
				{Name: "id", Type: schema.BigInt}, {Name: "txn", Type: schema.String}, {Name: "coupon", Type: schema.Varchar(8), Nullable: true}}}
			c1 := st.write(s.typedRow("p0", "t1", "a", wider, map[string]any{"id": 1, "txn": "t1", "coupon": "x"}, false), s.marker("p0", "t1", false))
			if exactly {
				require.True(t, st.k.progressRead("p0", st.k.progressGen["p0"], progressEntry{}, st.now))
			}
			require.Len(t, st.fx.resolving, 1, "t1 needs the column")
			// t2 begins while t1's change is under way.
			c2 := st.write(s.typedRow("p0", "t2", "a", wider, map[string]any{"id": 2, "txn": "t2", "coupon": "y"}, false))
			assert.Equal(t, []string{"t1:gated", "t2:open"}, st.states("a1", "p0"))

			err := st.resolve(0)
			require.Error(t, err, "StarRocks refused the ALTER")
			assert.Equal(t, "t1", stalledAt(st.k, "a1", "p0"))
			c3 := st.write(s.typedRow("p0", "t2", "a", wider, map[string]any{"id": 3, "txn": "t2", "coupon": "z"}, false), s.marker("p0", "t2", false))
			assert.Len(t, st.part("a1", "p0").held, 2, "the rest of t2 waits behind the stall")

			st.k.tick(st.now) // schedules the retry
			st.advance(1100 * time.Millisecond)
			st.k.tick(st.now)
			require.Len(t, st.fx.resolving, 2, "tried again after stall_retry_interval")
			require.NoError(t, st.resolve(1), "the ALTER goes through")
			assert.Equal(t, "", stalledAt(st.k, "a1", "p0"))
			assert.Len(t, meta.ddl, 2, "one ALTER refused, one applied")

			st.advance(time.Second)
			st.k.tick(st.now)
			txns := st.k.take(st.k.dbs["test"], nil, false, st.now.Add(time.Second))
			var got []string
			for _, tx := range txns {
				got = append(got, fmt.Sprintf("%s:%d rows", tx.id, len(tx.rowsOf("a"))))
			}
			assert.Equal(t, []string{"t1:1 rows", "t2:2 rows"}, got, "t2 is loaded whole, once, after t1")
			require.True(t, st.k.startCommit(txns))
			st.k.committed(txns)
			st.check()
			for i, c := range []*call{c1, c2, c3} {
				assert.True(t, returned(c), "call %d acknowledged", i+1)
			}
			assert.Empty(t, st.part("a1", "p0").order, "nothing of the partition left unresolved")
		})
	}
}

// With dead_letter a transaction refused for its schema goes there whole,
// and the partition goes on with the next one.
func TestCoreSchemaRefusalIsDeadLettered(t *testing.T) {
	meta := newTablesMeta()
	meta.set("test", "a", "id", "txn")
	st := gateStepper(t, true, schemasync.Error, meta)
	s := newSrc("a1")
	st.write(s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1", "coupon": "x"}, true))
	st.write(s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true))
	require.Error(t, st.resolve(0))
	assert.Equal(t, []string{"t1:poisoned", "t2:gated"}, st.states("a1", "p0"), "the next transaction is checked")
	require.NoError(t, st.resolve(1))
	assert.Equal(t, []string{"t1:poisoned", "t2:queued"}, st.states("a1", "p0"), "and goes on")
	require.Len(t, st.k.dlQueued(), 1)
	assert.Contains(t, st.k.dlQueued()[0].poison.Error(), "coupon")
}

// A schema change alone (a Maxwell DDL event) is a transaction without
// rows: it is applied in its partition's order, then resolved, and the
// committed-through offset passes it.
func TestCoreASchemaChangeAloneIsResolvedAfterItsCheck(t *testing.T) {
	meta := newTablesMeta()
	meta.set("test", "a", "id", "txn")
	st := gateStepper(t, false, schemasync.Ignore, meta)
	s := newSrc("a1")
	def, _ := json.Marshal(schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "coupon", Type: schema.Varchar(8)}}, Key: []string{"id"}})
	m := service.NewMessage(def)
	s.mu.Lock()
	s.seq++
	s.offset["p0"]++
	contract.Write(m, contract.Meta{Partition: "p0", Database: "test", Table: "a", TxnID: "ddl@1", TxnEnd: true, SchemaChange: true,
		HasSeq: true, Seq: s.seq, SeqSource: s.name, HasOffset: true, SourceOffset: s.offset["p0"]})
	s.mu.Unlock()
	c := st.write(m)
	assert.Equal(t, []string{"ddl@1:gated"}, st.states("a1", "p0"))
	require.NoError(t, st.resolve(0))
	assert.True(t, returned(c), "checked, it is resolved: nothing to load")
	assert.Equal(t, []int64{1}, st.fx.published["p0"])
}

// A schema change whose body is not a table definition poisons its
// transaction, naming what is wrong.
func TestCoreABadSchemaChangeIsPoisoned(t *testing.T) {
	st := gateStepper(t, true, schemasync.Evolve, newTablesMeta())
	s := newSrc("a1")
	m := service.NewMessage([]byte(`{"columns":[{"name":"id","type":"NOPE(1"}]}`))
	s.mu.Lock()
	s.seq++
	contract.Write(m, contract.Meta{Partition: "p0", Database: "test", Table: "a", TxnID: "ddl@1", TxnEnd: true, SchemaChange: true,
		HasSeq: true, Seq: s.seq, SeqSource: s.name, HasOffset: true, SourceOffset: 1})
	s.mu.Unlock()
	st.write(m)
	assert.Equal(t, []string{"ddl@1:poisoned"}, st.states("a1", "p0"))
	assert.True(t, strings.Contains(st.k.dlQueued()[0].poison.Error(), "table definition"), fmt.Sprint(st.k.dlQueued()[0].poison))
}

// A row its writer vouched for without its schema or its keys' hash
// (Debezium without schemas) is checked by its keys all the same: under
// error mode a field the table lacks poisons the transaction, naming it —
// unchecked, StarRocks would drop the field's values silently.
func TestCoreVouchedRowWithoutSchemaIsCheckedByItsKeys(t *testing.T) {
	meta := newTablesMeta()
	meta.set("test", "a", "id", "txn")
	st := gateStepper(t, true, schemasync.Error, meta)
	s := newSrc("a1")
	b, _ := json.Marshal(map[string]any{"id": 1, "txn": "t1", "coupon": "x"})
	m := service.NewMessage(b)
	s.mu.Lock()
	s.seq++
	s.offset["p0"]++
	var w contract.Writer
	w.WriteRowFacts(m, contract.Meta{Partition: "p0", Database: "test", Table: "a", TxnID: "t1", TxnEnd: true,
		HasSeq: true, Seq: s.seq, SeqSource: s.name, HasOffset: true, SourceOffset: s.offset["p0"]}, b, contract.RowFacts{})
	s.mu.Unlock()
	st.write(m)
	require.Len(t, st.fx.resolving, 1, "the row is checked")
	err := st.resolve(0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "coupon")
	assert.Equal(t, []string{"t1:poisoned"}, st.states("a1", "p0"))
}
