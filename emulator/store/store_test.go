package store

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func rowsOf(t *testing.T, s *Store, db, table string, cols ...string) [][]any {
	t.Helper()
	rows, err := s.Rows(db, table)
	require.NoError(t, err)
	out := make([][]any, 0, len(rows))
	for _, r := range rows {
		var vals []any
		for _, c := range cols {
			vals = append(vals, r[c])
		}
		out = append(out, vals)
	}
	return out
}

func TestPrimaryKeyOrdering(t *testing.T) {
	cases := []struct {
		name  string
		loads []string // each body is parsed and applied in one Apply, in order
		want  [][]any  // id, req
	}{
		{"later upsert wins", []string{`[{"id":1,"req":1},{"id":1,"req":2}]`}, [][]any{{int64(1), int32(2)}}},
		{"upsert then delete", []string{`[{"id":1,"req":1},{"id":1,"req":1,"__op":1}]`}, [][]any{}},
		{"delete then re-upsert in one change ends upserted", []string{`[{"id":1,"req":1}]`, `[{"id":1,"req":1,"__op":1},{"id":1,"req":3}]`}, [][]any{{int64(1), int32(3)}}},
		{"delete of a missing key is a no-op", []string{`[{"id":9,"req":1,"__op":1},{"id":2,"req":2}]`}, [][]any{{int64(2), int32(2)}}},
		{"key order, not arrival order", []string{`[{"id":3,"req":3},{"id":-1,"req":0},{"id":2,"req":2}]`}, [][]any{{int64(-1), int32(0)}, {int64(2), int32(2)}, {int64(3), int32(3)}}},
		{"across loads", []string{`[{"id":1,"req":1},{"id":2,"req":2}]`, `[{"id":1,"req":1,"__op":1}]`, `[{"id":2,"req":5}]`}, [][]any{{int64(2), int32(5)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := convStore(t)
			for _, body := range c.loads {
				load(t, s, "db", "nn", body, jsonParams(nil))
			}
			assert.Equal(t, c.want, rowsOf(t, s, "db", "nn", "id", "req"))
		})
	}

	// Several changes to one table inside one Apply apply in order too.
	s := convStore(t)
	a, err := s.Parse("db", "nn", []byte(`[{"id":1,"req":1}]`), jsonParams(nil))
	require.NoError(t, err)
	d, err := s.Parse("db", "nn", []byte(`[{"id":1,"req":1,"__op":1}]`), jsonParams(nil))
	require.NoError(t, err)
	u, err := s.Parse("db", "nn", []byte(`[{"id":1,"req":7}]`), jsonParams(nil))
	require.NoError(t, err)
	require.NoError(t, s.Apply([]TableChange{{DB: "db", Table: "nn", Rows: a.Rows}, {DB: "db", Table: "nn", Rows: d.Rows}, {DB: "db", Table: "nn", Rows: u.Rows}}))
	assert.Equal(t, [][]any{{int64(1), int32(7)}}, rowsOf(t, s, "db", "nn", "id", "req"))
}

func TestDuplicateAndUniqueTables(t *testing.T) {
	s := convStore(t)
	load(t, s, "db", "dup", `[{"id":2,"v":"a"},{"id":1,"v":"b"},{"id":2,"v":"a"}]`, jsonParams(nil))
	load(t, s, "db", "dup", `[{"id":2,"v":"c","__op":1}]`, jsonParams(nil))
	assert.Equal(t, [][]any{{int64(2), "a"}, {int64(1), "b"}, {int64(2), "a"}, {int64(2), "c"}}, rowsOf(t, s, "db", "dup", "id", "v"),
		"DUPLICATE KEY keeps every row in insertion order; __op is an unknown key there and the row is appended")

	load(t, s, "db", "uniq", `[{"id":2,"v":"a"},{"id":1,"v":"b"},{"id":2,"v":"c"}]`, jsonParams(nil))
	load(t, s, "db", "uniq", `[{"id":1,"v":"d","__op":1}]`, jsonParams(nil))
	assert.Equal(t, [][]any{{int64(1), "d"}, {int64(2), "c"}}, rowsOf(t, s, "db", "uniq", "id", "v"),
		"UNIQUE KEY replaces by key; __op does not delete")
}

func TestCompositeAndStringKeys(t *testing.T) {
	s := schemaStore(t)
	load(t, s, "test", "order_items", `[{"order_id":2,"item_id":1,"quantity":1},{"order_id":1,"item_id":2},{"order_id":1,"item_id":1,"product":"x"},{"order_id":1,"item_id":2,"product":"y"}]`, jsonParams(nil))
	assert.Equal(t, [][]any{{int64(1), int32(1), "x", int32(1)}, {int64(1), int32(2), "y", int32(1)}, {int64(2), int32(1), "", int32(1)}},
		rowsOf(t, s, "test", "order_items", "order_id", "item_id", "product", "quantity"))

	require.NoError(t, s.ExecDDL("CREATE TABLE test.sk (k VARCHAR(10) NOT NULL, v INT) PRIMARY KEY(k)"))
	load(t, s, "test", "sk", `[{"k":"b","v":1},{"k":"a\u0000b","v":2},{"k":"a","v":3},{"k":"","v":4},{"k":"b","v":5}]`, jsonParams(nil))
	assert.Equal(t, [][]any{{"", int32(4)}, {"a", int32(3)}, {"a\x00b", int32(2)}, {"b", int32(5)}}, rowsOf(t, s, "test", "sk", "k", "v"))
}

func TestPartialUpdate(t *testing.T) {
	s := convStore(t)
	load(t, s, "db", "nn", `[{"id":1,"req":1,"dflt":2,"opt":3,"st":"old"}]`, jsonParams(nil))
	p := jsonParams(map[string]string{"partial_update": "true", "columns": "id,opt"})
	res := load(t, s, "db", "nn", `[{"id":1,"opt":30,"req":999},{"id":2,"opt":40}]`, p)
	require.Len(t, res.Rows, 2)
	assert.Equal(t, []bool{true, false, false, true, false, false}, res.Rows[0].Set)
	assert.Equal(t, [][]any{
		{int64(1), int32(1), int32(2), int32(30), "old"}, // unspecified columns keep their values; req is not in columns
		{int64(2), int32(0), int32(7), int32(40), "x"},   // a new row takes defaults (zero for NOT NULL without default)
	}, rowsOf(t, s, "db", "nn", "id", "req", "dflt", "opt", "st"))

	// without a columns header the keys present in each row are the updated columns
	p = jsonParams(map[string]string{"partial_update": "true"})
	load(t, s, "db", "nn", `[{"id":1,"st":"new"},{"id":2,"__op":1}]`, p)
	assert.Equal(t, [][]any{{int64(1), int32(1), int32(2), int32(30), "new"}}, rowsOf(t, s, "db", "nn", "id", "req", "dflt", "opt", "st"))

	// Go callers may leave unset columns nil: a new row still gets defaults / zero values
	require.NoError(t, s.Apply([]TableChange{{DB: "db", Table: "nn", Rows: []Row{
		{Values: []any{int64(5), nil, nil, int32(1), nil, nil}, Set: []bool{true, false, false, true, false, false}}}}}))
	assert.Equal(t, []any{int64(5), int32(0), int32(7), int32(1), "x"}, rowsOf(t, s, "db", "nn", "id", "req", "dflt", "opt", "st")[1])

	res, err := s.Parse("db", "nn", []byte(`[{"st":"no key"}]`), p)
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.Filtered)
	assert.Contains(t, res.Errors[0], "no value for primary key column 'id'")
}

func TestApplyErrorsLeaveNothing(t *testing.T) {
	s := convStore(t)
	before := s.Version()
	res, err := s.Parse("db", "nn", []byte(`[{"id":1,"req":1}]`), jsonParams(nil))
	require.NoError(t, err)
	err = s.Apply([]TableChange{{DB: "db", Table: "nn", Rows: res.Rows}, {DB: "db", Table: "missing", Rows: res.Rows}})
	require.ErrorIs(t, err, ErrUnknownTable)
	err = s.Apply([]TableChange{{DB: "db", Table: "nn", Rows: res.Rows}, {DB: "db", Table: "dup", Rows: []Row{{Values: []any{int64(1)}}}}})
	require.ErrorContains(t, err, "row 0 has 1 values, table has 2 columns")
	assert.Equal(t, before, s.Version())
	assert.Empty(t, rowsOf(t, s, "db", "nn", "id"))
	_, err = s.Rows("db", "missing")
	require.ErrorIs(t, err, ErrUnknownTable)
}

// TestAtomicVisibilityGoAPI: writers commit the same ids to two tables in one Apply while
// readers call Rows on both tables through one pinned snapshot and on the store directly.
func TestAtomicVisibilityGoAPI(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript(`CREATE DATABASE db; CREATE TABLE db.a (id BIGINT NOT NULL) PRIMARY KEY(id); CREATE TABLE db.b (id BIGINT NOT NULL, x INT) DUPLICATE KEY(id)`))
	const commits, perCommit = 300, 7
	var stop atomic.Bool
	var wg sync.WaitGroup
	var checks atomic.Int64
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				a, b, err := s.snapshotRows("db", "a", "b")
				if !assert.NoError(t, err) || !assert.Equal(t, len(a), len(b), "a snapshot shows both tables of a commit or neither") {
					return
				}
				checks.Add(1)
			}
		}()
	}
	c := 0
	// commit at least `commits` times and until the readers have checked enough snapshots
	for ; c < commits || (checks.Load() < 100 && c < 50000); c++ {
		var ra, rb []Row
		for i := 0; i < perCommit; i++ {
			id := int64(c*perCommit + i)
			ra = append(ra, Row{Values: []any{id}})
			rb = append(rb, Row{Values: []any{id, int32(i)}})
		}
		require.NoError(t, s.Apply([]TableChange{{DB: "db", Table: "a", Rows: ra}, {DB: "db", Table: "b", Rows: rb}}))
		if c%50 == 0 {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	assert.GreaterOrEqual(t, checks.Load(), int64(100))
	assert.Len(t, rowsOf(t, s, "db", "a", "id"), c*perCommit)
}

// snapshotRows counts two tables' rows in one pinned snapshot.
func (s *Store) snapshotRows(db, t1, t2 string) ([][]any, [][]any, error) {
	sn := s.snap()
	var out [2][][]any
	for i, name := range []string{t1, t2} {
		t, err := sn.table(db, name)
		if err != nil {
			return nil, nil, err
		}
		t.rows.ascend(func(_ string, v []any) bool { out[i] = append(out[i], v); return true })
	}
	return out[0], out[1], nil
}

func TestBtreeAppendsFillNodes(t *testing.T) {
	tr := newBtree()
	const n = 64 * 100
	for i := 0; i < n; i++ {
		tr.set(string(appendSeqKey(nil, uint64(i))), []any{i})
	}
	leaves := 0
	var walk func(*bnode)
	walk = func(b *bnode) {
		if b.leaf() {
			leaves++
			return
		}
		for _, k := range b.kids {
			walk(k)
		}
	}
	walk(tr.root)
	assert.LessOrEqual(t, leaves, n/maxLeaf+2, "append-only inserts keep leaves full")
}

// setMaybeTransient sets k to v either as a kept key (set) or, as apply does, as a view of a
// buffer that is overwritten right after the call (setTransient): a tree that kept the view
// instead of a copy would show the overwritten bytes.
func setMaybeTransient(rt *rapid.T, tr *btree, k string, v int) bool {
	if !rapid.Bool().Draw(rt, "transient") {
		return tr.set(k, []any{v})
	}
	buf := []byte(k)
	replaced := tr.setTransient(unsafe.String(unsafe.SliceData(buf), len(buf)), []any{v})
	for i := range buf {
		buf[i] = '~'
	}
	return replaced
}

// TestBtreeModel checks the copy-on-write B+tree against a map, including that a clone taken
// earlier never changes (what snapshot readers rely on).
func TestBtreeModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tr := newBtree()
		model := map[string]int{}
		var frozen []*btree
		var frozenModels []map[string]int
		n := rapid.IntRange(1, 1500).Draw(rt, "ops")
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("%04d", rapid.IntRange(0, 400).Draw(rt, "key"))
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0, 1, 2:
				_, had := model[k]
				assert.Equal(rt, had, tr.delete(k))
				delete(model, k)
			case 4:
				k = fmt.Sprintf("z%06d", i) // ascending: appends at the right end
				assert.False(rt, setMaybeTransient(rt, tr, k, i))
				model[k] = i
			case 3:
				frozen = append(frozen, tr)
				cp := map[string]int{}
				for k, v := range model {
					cp[k] = v
				}
				frozenModels = append(frozenModels, cp)
				tr = tr.clone()
			default:
				_, had := model[k]
				assert.Equal(rt, had, setMaybeTransient(rt, tr, k, i))
				model[k] = i
			}
		}
		check := func(tr *btree, model map[string]int) {
			keys := make([]string, 0, len(model))
			for k := range model {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var got []string
			tr.ascend(func(k string, v []any) bool {
				got = append(got, k)
				if v[0] != model[k] {
					rt.Fatalf("key %s: got %v want %v", k, v[0], model[k])
				}
				return true
			})
			if len(keys) == 0 {
				keys = nil
			}
			if fmt.Sprint(got) != fmt.Sprint(keys) {
				rt.Fatalf("keys differ: got %v want %v", got, keys)
			}
			if tr.len != len(model) {
				rt.Fatalf("len %d want %d", tr.len, len(model))
			}
			for k, v := range model {
				got, ok := tr.get(k)
				if !ok || got[0] != v {
					rt.Fatalf("get %s = %v %v", k, got, ok)
				}
			}
			c := newCursor(tr)
			cnt := 0
			for {
				if _, ok := c.next(); !ok {
					break
				}
				cnt++
			}
			if cnt != len(model) {
				rt.Fatalf("cursor saw %d rows, want %d", cnt, len(model))
			}
		}
		check(tr, model)
		for i := range frozen {
			check(frozen[i], frozenModels[i])
		}
	})
}

func TestApplyNormalizesGoValues(t *testing.T) {
	s := convStore(t)
	sc, _ := s.Table("db", "conv")
	vals := make([]any, len(sc.Columns))
	set := func(col string, v any) { vals[sc.ColumnIndex(col)] = v }
	set("id", 1) // int -> int64
	set("ti", int64(-5))
	set("si", uint8(7))
	set("i", int64(9))
	set("l", 12)
	set("d", "1.234") // rounded to the scale
	set("f", 1.5)
	set("g", float32(2.5))
	set("bo", 1)
	set("v", []byte("ab"))
	set("dt", time.Date(2024, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)))
	set("ts", "2024-01-02 03:04:05")
	set("j", map[string]any{"a": 1})
	require.NoError(t, s.Apply([]TableChange{{DB: "db", Table: "conv", Rows: []Row{{Values: vals}}}}))
	rows, err := s.Rows("db", "conv")
	require.NoError(t, err)
	r := rows[0]
	assert.Equal(t, int64(1), r["id"])
	assert.Equal(t, int8(-5), r["ti"])
	assert.Equal(t, int16(7), r["si"])
	assert.Equal(t, int32(9), r["i"])
	assert.True(t, decimal.NewFromInt(12).Equal(r["l"].(decimal.Decimal)))
	assert.Equal(t, "1.23", r["d"].(decimal.Decimal).StringFixed(2))
	assert.Equal(t, float32(1.5), r["f"])
	assert.Equal(t, 2.5, r["g"])
	assert.Equal(t, true, r["bo"])
	assert.Equal(t, "ab", r["v"])
	assert.Equal(t, time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), r["dt"])
	assert.Equal(t, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), r["ts"])
	assert.Equal(t, `{"a":1}`, r["j"])

	bad := []struct {
		col  string
		v    any
		want string
	}{
		{"ti", 300, "value 300 is out of range for TINYINT"},
		{"v", "abcde", "longer than VARCHAR(4)"},
		{"i", 1.5, "a float64 value does not fit INT"},
		{"d", "12345", `value "12345" does not fit DECIMAL(5,2)`},
		{"id", nil, "NULL value in non-nullable column 'id'"},
		{"j", "{", "does not fit JSON"},
	}
	for _, c := range bad {
		vals := make([]any, len(sc.Columns))
		vals[0] = int64(2)
		vals[sc.ColumnIndex(c.col)] = c.v
		err := s.Apply([]TableChange{{DB: "db", Table: "conv", Rows: []Row{{Values: vals}}}})
		require.Error(t, err, c.col)
		assert.Contains(t, err.Error(), c.want)
	}
	assert.Len(t, rowsOf(t, s, "db", "conv", "id"), 1, "failed Applies changed nothing")
}

func TestMergeCondition(t *testing.T) {
	s := New()
	require.NoError(t, s.ExecScript(`CREATE DATABASE db;
		CREATE TABLE db.m (id BIGINT NOT NULL, ver INT, ts DATETIME, v VARCHAR(10)) PRIMARY KEY(id);
		CREATE TABLE db.d (id BIGINT NOT NULL, ver INT) DUPLICATE KEY(id)`))
	p := jsonParams(map[string]string{"merge_condition": "ver"})
	load(t, s, "db", "m", `[{"id":1,"ver":5,"v":"a"},{"id":2,"ver":null,"v":"n"}]`, p)
	load(t, s, "db", "m", `[{"id":1,"ver":4,"v":"older"},{"id":1,"ver":5,"v":"same"},{"id":2,"ver":1,"v":"over null"},{"id":3,"ver":0,"v":"new"}]`, p)
	assert.Equal(t, [][]any{{int64(1), int32(5), "same"}, {int64(2), int32(1), "over null"}, {int64(3), int32(0), "new"}}, rowsOf(t, s, "db", "m", "id", "ver", "v"))
	load(t, s, "db", "m", `[{"id":1,"ver":0,"__op":1}]`, p)
	assert.Len(t, rowsOf(t, s, "db", "m", "id"), 2, "deletes ignore merge_condition")

	pt := jsonParams(map[string]string{"merge_condition": "ts"})
	load(t, s, "db", "m", `[{"id":3,"ts":"2024-01-02 00:00:00","v":"t1"}]`, pt)
	load(t, s, "db", "m", `[{"id":3,"ts":"2024-01-01 23:59:59","v":"t0"}]`, pt)
	assert.Equal(t, "t1", rowsOf(t, s, "db", "m", "v")[1][0])

	for _, c := range []struct{ table, col, want string }{
		{"m", "id", "must not be a primary key column"},
		{"m", "nope", "Unknown column 'nope' in merge_condition"},
		{"d", "ver", "merge_condition is only supported by PRIMARY KEY tables"},
	} {
		_, err := s.Parse("db", c.table, []byte(`[]`), jsonParams(map[string]string{"merge_condition": c.col}))
		require.ErrorContains(t, err, c.want)
	}
}
