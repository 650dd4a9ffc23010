package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/emurig"
)

// The model follows orders' columns over time as StarRocks holds them: a
// row written before coupon and points were added reads NULL and the
// DEFAULT 0, rows written after read what they carry, a row written after
// updated_at was dropped reads NULL there (StarRocks keeps the column),
// one written before keeps its value; shipments appears with its change.
func TestModelFollowsTheColumnsOverTime(t *testing.T) {
	s := newSchemaState(SchemaPlan{{At: 2, Kind: ChangeAddColumns}, {At: 3, Kind: ChangeNewTable}, {At: 4, Kind: ChangeDropColumn}})
	order := func(id int64, status string, extra Row) Change {
		r := Row{"order_id": id, "customer_id": 7, "total_amount": "1.00", "order_status": status}
		for k, v := range extra {
			r[k] = v
		}
		return Change{Table: TableOrders, Row: r}
	}
	m := NewModel()
	m.KeepVersions()
	at := "2026-11-29 12:00:00"
	m.Apply(Txn{ID: "1", Changes: []Change{order(1, "created", Row{"updated_at": at}), order(2, "created", Row{"updated_at": at})}})
	require.Nil(t, m.Snapshot().Columns, "no change seen: lines as always")
	assert.Equal(t, []string{"1|7|1.00|created", "2|7|1.00|created"}, m.Snapshot().Orders)

	add := s.advance(2)
	m.Apply(Txn{ID: "2", Version: 1, Schema: add, Changes: []Change{order(2, "updated-2", Row{"updated_at": at, "coupon": "SAVE5", "points": 12})}})
	ship := s.advance(3)
	m.Apply(Txn{ID: "3", Version: 2, Schema: ship, Changes: []Change{
		order(3, "created", Row{"updated_at": at, "coupon": nil, "points": 0}),
		{Table: TableShipments, Row: Row{"order_id": 3, "carrier": "ups", "tracking": "T1", "order_status": "created", "shipped_at": at}},
	}})
	drop := s.advance(4)
	m.Apply(Txn{ID: "4", Version: 3, Schema: drop, Changes: []Change{order(4, "created", Row{"coupon": "SAVE9", "points": 3})}})

	snap := m.Snapshot()
	assert.Equal(t, map[string][]string{TableOrders: {"coupon", "points", "updated_at"}}, snap.Columns)
	assert.Equal(t, []string{
		"1|7|1.00|created|coupon=NULL|points=0|updated_at=" + at,
		"2|7|1.00|updated-2|coupon=SAVE5|points=12|updated_at=" + at,
		"3|7|1.00|created|coupon=NULL|points=0|updated_at=" + at,
		"4|7|1.00|created|coupon=SAVE9|points=3|updated_at=NULL",
	}, snap.Orders)
	assert.True(t, snap.HasShipments)
	assert.Equal(t, []string{"3|ups|T1|created|" + at}, snap.Shipments)

	v, ok := m.OrderVersion(1, "created")
	require.True(t, ok)
	assert.Equal(t, ExpectedValue{Value: "NULL"}, v.Columns["coupon"], "written before the column: not carried")
	assert.Equal(t, ExpectedValue{Value: "0"}, v.Columns["points"], "the DEFAULT")
	assert.False(t, v.Shipped)
	v, ok = m.OrderVersion(2, "updated-2")
	require.True(t, ok)
	assert.Equal(t, ExpectedValue{Value: "SAVE5", Written: true}, v.Columns["coupon"])
	v, ok = m.OrderVersion(3, "created")
	require.True(t, ok)
	assert.True(t, v.Shipped, "its transaction wrote its shipment")
	assert.Equal(t, ExpectedValue{Value: "NULL", Written: true}, v.Columns["coupon"], "a NULL the source wrote")
	v, ok = m.OrderVersion(4, "created")
	require.True(t, ok)
	assert.Equal(t, ExpectedValue{Value: "NULL"}, v.Columns["updated_at"], "dropped before: NULL, not carried")
	_, ok = m.OrderVersion(2, "created")
	assert.True(t, ok, "an older value of an order is known too")
	_, ok = m.OrderVersion(5, "created")
	assert.False(t, ok)
}

// A target that lost a new column's values (read back without the column,
// or with NULLs) differs from the model, and the diff names the column and
// counts the values missing; a missing new table is all rows missing.
func TestCompareNamesTheColumnsWhoseValuesAreMissing(t *testing.T) {
	want := Snapshot{
		Orders: []string{
			"1|7|1.00|created|coupon=NULL|points=0",
			"2|7|1.00|updated-2|coupon=SAVE5|points=12",
			"3|7|1.00|updated-3|coupon=SAVE6|points=1",
		},
		Columns:      map[string][]string{TableOrders: {"coupon", "points"}},
		HasShipments: true, Shipments: []string{"3|ups|T1|updated-3|NULL"},
	}
	assert.Empty(t, Compare(want, want))
	got := Snapshot{
		Orders: []string{
			"1|7|1.00|created|coupon=<absent>|points=<absent>",
			"2|7|1.00|updated-2|coupon=<absent>|points=<absent>",
			"3|7|1.00|updated-3|coupon=<absent>|points=<absent>",
		},
	}
	diffs := Compare(want, got)
	require.Len(t, diffs, 2)
	orders := diffs[0]
	assert.Equal(t, TableOrders, orders.Table)
	assert.Equal(t, 3, orders.Stale)
	require.Len(t, orders.Columns, 2)
	assert.Equal(t, ColumnDiff{Column: "coupon", Missing: 2, Wrong: 1, Examples: []string{
		"1: model NULL, target <absent>", "2: model SAVE5, target <absent>", "3: model SAVE6, target <absent>"}}, orders.Columns[0])
	assert.Equal(t, "points", orders.Columns[1].Column)
	assert.Equal(t, 3, orders.Columns[1].Missing)
	assert.Contains(t, orders.Detail(), "column coupon: 2 values missing, 1 different")
	assert.Equal(t, TableShipments, diffs[1].Table)
	assert.Equal(t, 1, diffs[1].Missing)

	got.Orders[1] = "2|7|1.00|updated-2|coupon=NULL|points=12"
	d := DiffTable(TableOrders, ordersKeyFields, want.Orders[1:2], got.Orders[1:2])
	require.Len(t, d.Columns, 1)
	assert.Equal(t, ColumnDiff{Column: "coupon", Missing: 1, Examples: []string{"2: model SAVE5, target NULL"}}, d.Columns[0])
}

// streamLoad loads JSON rows into one table of the emulator with a plain
// stream load.
func streamLoad(t *testing.T, feURL, table, label string, rows ...Row) {
	t.Helper()
	body, err := json.Marshal(rows)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPut, feURL+"/api/"+Database+"/"+table+"/_stream_load", bytes.NewReader(body))
	require.NoError(t, err)
	req.SetBasicAuth("root", "")
	req.Header.Set("label", label)
	req.Header.Set("format", "json")
	req.Header.Set("strip_outer_array", "true")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	reply, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(reply), `"Status":"Success"`, "loading %s: %s", table, reply)
}

// What ReadTargetFor reads back from StarRocks (the emulator) after the
// changes renders as the model does: DECIMAL and DATETIME text, the added
// columns' DEFAULT and NULL in older rows, NULL in a row loaded without the
// dropped column, the new table; a target without a new column's values
// differs, naming the column.
func TestReadTargetRendersTheChangedTablesAsTheModel(t *testing.T) {
	em, db := emurig.StartSQL(t, emulator.Config{Schema: emurig.ExampleSchema(t)})
	ctx := context.Background()
	s := newSchemaState(SchemaPlan{{At: 2, Kind: ChangeAddColumns}, {At: 3, Kind: ChangeNewTable}, {At: 4, Kind: ChangeDropColumn}})
	m := NewModel()
	at := "2026-11-29 12:00:00"
	order := func(id int64, status string, extra Row) Row {
		r := Row{"order_id": id, "customer_id": 7, "total_amount": "12.30", "order_status": status}
		for k, v := range extra {
			r[k] = v
		}
		return r
	}
	apply := func(table string, version int, schema []SchemaChange, rows ...Row) {
		tx := Txn{ID: fmt.Sprint(version), Version: version, Schema: schema}
		for _, r := range rows {
			tx.Changes = append(tx.Changes, Change{Table: table, Row: r})
		}
		m.Apply(tx)
		streamLoad(t, em.FEURL(), table, fmt.Sprintf("l%d-%s", version, table), rows...)
	}
	apply(TableOrders, 0, nil, order(1, "created", Row{"updated_at": at}), order(2, "created", Row{"updated_at": at}))
	before := m.Snapshot()

	// What the output does for the changes (ARCHITECTURE.md §14.2).
	_, err := db.ExecContext(ctx, "ALTER TABLE test.orders ADD COLUMN (coupon VARCHAR(64) NULL, points INT NULL DEFAULT \"0\")")
	require.NoError(t, err)
	add := s.advance(2)
	apply(TableOrders, 1, add, order(2, "updated-2", Row{"updated_at": at, "coupon": "SAVE5", "points": 12}))
	ship := s.advance(3)
	ddl, err := schema.CreateTableSQL(Database, TableShipments, ship[0].New.StarRocks(), map[string]string{"replication_num": "1"})
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, ddl)
	require.NoError(t, err)
	apply(TableShipments, 2, ship, Row{"order_id": 2, "carrier": "ups", "tracking": "T1", "order_status": "updated-2", "shipped_at": at})
	apply(TableOrders, 3, s.advance(4), order(3, "created", Row{"coupon": nil, "points": 0}))

	want := m.Snapshot()
	got, err := ReadTargetFor(ctx, db, want, true)
	require.NoError(t, err)
	assert.Empty(t, Compare(want, got), Detail(Compare(want, got)))
	assert.Equal(t, []string{
		"1|7|12.30|created|coupon=NULL|points=0|updated_at=" + at,
		"2|7|12.30|updated-2|coupon=SAVE5|points=12|updated_at=" + at,
		"3|7|12.30|created|coupon=NULL|points=0|updated_at=NULL",
	}, got.Orders)
	assert.Equal(t, []string{"2|ups|T1|updated-2|" + at}, got.Shipments)

	// The plain reader still reads the fixed fields only.
	plain, err := ReadTarget(ctx, db, true)
	require.NoError(t, err)
	assert.Len(t, plain.Orders, 3)
	assert.Equal(t, "1|7|12.30|created", plain.Orders[0])
	assert.NotEmpty(t, Compare(before, plain), "the plain reader sees the rows loaded later")

	// A table without the new columns differs, naming them.
	_, err = db.ExecContext(ctx, "ALTER TABLE test.orders DROP COLUMN coupon")
	require.NoError(t, err)
	testkit.WaitFor(t, 10*time.Second, func() bool {
		got, err = ReadTargetFor(ctx, db, want, true)
		require.NoError(t, err)
		return strings.Contains(got.Orders[0], "coupon=<absent>")
	}, "the drop of coupon is visible")
	diffs := Compare(want, got)
	require.Len(t, diffs, 1)
	require.Len(t, diffs[0].Columns, 1)
	assert.Equal(t, "coupon", diffs[0].Columns[0].Column)
	assert.Equal(t, 1, diffs[0].Columns[0].Missing, "the one coupon written is missing")
}
