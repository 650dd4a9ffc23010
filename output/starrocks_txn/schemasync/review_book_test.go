package schemasync

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// countingMeta counts the column reads.
type countingMeta struct {
	*fakeMeta
	reads atomic.Int64
}

func (c *countingMeta) Columns(ctx context.Context, db, table string) (*schema.Table, bool, error) {
	c.reads.Add(1)
	return c.fakeMeta.Columns(ctx, db, table)
}

// TestReviewTwoLiveSchemasOfATableStayKnown: after a source's ALTER, a
// lagging partition still sends the old schema while the others send the
// new one, so both are live for as long as the lag lasts. Each Resolve reads
// the columns into a new *schema.Table, and remember forgets every identity
// checked against the previous read whenever that pointer differs — always —
// so the two schemas evict each other: every transaction that alternates
// between them is gated and costs an information_schema read (and moves Gen,
// emptying the output's known-cache). docs/schema-changes.md promises "one
// information_schema read per new schema per table".
func TestReviewTwoLiveSchemasOfATableStayKnown(t *testing.T) {
	f := newFakeMeta()
	m := &countingMeta{fakeMeta: f}
	f.tables["d.t"] = &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "v", Type: schema.Int, Nullable: true}}, Key: []string{"id"}}
	b := New(m, Config{Mode: Evolve})
	old := &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "v", Type: schema.Int, Nullable: true}}, Key: []string{"id"}}
	newer := &schema.Table{Columns: append(append([]schema.Column(nil), old.Columns...), schema.Column{Name: "w", Type: schema.Int, Nullable: true}), Key: []string{"id"}}

	require.NoError(t, b.Resolve(context.Background(), "d", "t", Ref{Typed: newer}).Err)
	reads := m.reads.Load()
	for range 10 {
		for _, ref := range []Ref{{Typed: old}, {Typed: newer}} {
			if !b.Known("d", "t", ref) {
				require.NoError(t, b.Resolve(context.Background(), "d", "t", ref).Err)
			}
		}
	}
	assert.LessOrEqual(t, m.reads.Load()-reads, int64(1), "the old schema is read once, then both stay known while the columns do not change")
}

// TestReviewAFieldWhoseCaseDiffersFromItsColumnIsNotTakenAsLoaded: the book
// matches source fields to columns ignoring case (schema.Table.Column, "as
// StarRocks does") — right for DDL, where StarRocks's column names are
// case-insensitive, wrong for what a JSON load keeps: StarRocks's JSON
// reader matches keys to columns exactly (the emulator's review test), so a
// source field "Coupon" against a column "coupon" (a table created by hand
// in lower case, or a case-only rename at the source) is dropped on every
// row. In error mode the book must refuse it naming the column (and in
// ignore mode count it); in evolve mode it cannot add it (the name exists
// ignoring case): it must poison, or the output must send the key in the
// column's case. Today every mode takes the rows, and the values are lost
// silently.
func TestReviewAFieldWhoseCaseDiffersFromItsColumnIsNotTakenAsLoaded(t *testing.T) {
	for _, mode := range []Mode{Error, Evolve} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFakeMeta()
			f.tables["d.t"] = &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "coupon", Type: schema.Varchar(8), Nullable: true}}, Key: []string{"id"}}
			b := New(f, Config{Mode: mode})
			src := &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "Coupon", Type: schema.Varchar(8), Nullable: true}}, Key: []string{"id"}}
			v := b.Resolve(context.Background(), "d", "t", Ref{Typed: src})
			require.Error(t, v.Err, "rows whose Coupon StarRocks would drop are taken as loadable")
			assert.Contains(t, v.Err.Error(), "Coupon")

			untyped := Ref{Keys: 42, KeyNames: []string{"id", "Coupon"}}
			v = b.Resolve(context.Background(), "d", "t", untyped)
			require.Error(t, v.Err, "an untyped row's key Coupon is taken as the column coupon")
		})
	}
}

// racingMeta lets another writer's statement land just before this
// writer's first ALTER (after this writer read the columns).
type racingMeta struct {
	*fakeMeta
	other string
}

func (r *racingMeta) ExecDDL(ctx context.Context, db, stmt string) error {
	if r.other != "" {
		other := r.other
		r.other = ""
		if err := r.fakeMeta.ExecDDL(ctx, db, other); err != nil {
			return err
		}
	}
	return r.fakeMeta.ExecDDL(ctx, db, stmt)
}

// TestReviewTwoWritersRacingToAddColumnsBothGoOn: two writers of one table
// (two processes of a fleet, each with a partition) whose sources are one
// change apart: A's rows add coupon, B's add coupon and points. B reads the
// columns (neither is there), A's ADD COLUMN (coupon) — fast schema
// evolution, FINISHED at once — lands, then B's ADD COLUMN (coupon, points)
// is refused ("Can not add column which already exists"). Resolve reads the
// table once more, sees that points is still missing, and — because one
// statement was refused — gives up with the refusal: B's source transaction
// is poisoned (dead-lettered whole when dead_letter is set) although nothing
// is wrong with it, and the ALTER that would add points was never tried.
// A refusal that the table's new state explains (what it says exists now
// exists) must lead to a new plan, not a poison.
func TestReviewTwoWritersRacingToAddColumnsBothGoOn(t *testing.T) {
	f := newFakeMeta()
	f.tables["d.t"] = &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}}, Key: []string{"id"}}
	m := &racingMeta{fakeMeta: f, other: "ALTER TABLE `d`.`t` ADD COLUMN (`coupon` VARCHAR(8) NULL)"}
	b := New(m, Config{Mode: Evolve, PollMin: time.Millisecond})
	src := &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "coupon", Type: schema.Varchar(8), Nullable: true}, {Name: "points", Type: schema.Int, Nullable: true}}, Key: []string{"id"}}
	v := b.Resolve(context.Background(), "d", "t", Ref{Typed: src})
	require.NoError(t, v.Err, "statements: %q", f.statements())
	cols, _, _ := f.Columns(context.Background(), "d", "t")
	_, ok := cols.Column("points")
	assert.True(t, ok, "points was added")
}

// TestReviewAColumnDroppedInStarRocksIsNoticed: once a schema is known it
// stays known until Invalidate, which runs only for a stall (and a load that
// fails). A JSON load never fails for a key the table lacks — StarRocks skips
// it — so when an operator drops a column, or drops and recreates the table
// without it, while the pipeline runs, every later value of that field is
// dropped silently, in every mode (evolve would add it back, error would
// refuse, ignore would count it), until the process restarts. The book must
// check again now and then (or on a signal such as the table's schema
// version) so that a known schema does not stay known forever.
func TestReviewAColumnDroppedInStarRocksIsNoticed(t *testing.T) {
	f := newFakeMeta()
	f.tables["d.t"] = &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "coupon", Type: schema.Varchar(8), Nullable: true}}, Key: []string{"id"}}
	now := time.Unix(1000, 0)
	b := New(f, Config{Mode: Error, Now: func() time.Time { return now }})
	src := &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}, {Name: "coupon", Type: schema.Varchar(8), Nullable: true}}, Key: []string{"id"}}
	require.NoError(t, b.Resolve(context.Background(), "d", "t", Ref{Typed: src}).Err)
	require.True(t, b.Known("d", "t", Ref{Typed: src}))

	// An operator recreates the table without coupon.
	f.set("d", "t", &schema.Table{Columns: []schema.Column{{Name: "id", Type: schema.BigInt}}, Key: []string{"id"}})
	now = now.Add(time.Hour)
	assert.False(t, b.Known("d", "t", Ref{Typed: src}), "an hour later the rows carrying coupon are still loaded unchecked: StarRocks drops every value")
}
