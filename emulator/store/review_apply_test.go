package store

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReviewApplyTransientKeysAndSnapshots: apply looks every row up by a view of its key
// buffer (setTransient) and the tree copies the key only when it adds it. Commits of
// scattered inserts, updates and deletes of keys of varying length (a VARCHAR key, so a key
// kept as a view would show the bytes of a later, longer or shorter, key) must leave every
// stored key equal to the encoding of its row's key columns, every snapshot taken between
// commits exactly as it was, and a commit that fails on its last row no trace at all.
func TestReviewApplyTransientKeysAndSnapshots(t *testing.T) {
	for _, ddl := range []string{
		"CREATE TABLE db.t (k VARCHAR(32) NOT NULL, v BIGINT) PRIMARY KEY(k)",
		"CREATE TABLE db.t (k VARCHAR(32) NOT NULL, v BIGINT SUM) AGGREGATE KEY(k)",
	} {
		t.Run(ddl[len("CREATE TABLE db.t ("):], func(t *testing.T) {
			s := New()
			require.NoError(t, s.ExecDDL("CREATE DATABASE db"))
			require.NoError(t, s.ExecDDL(ddl))
			pk := s.snap().dbs["db"].tables["t"].schema.KeyType == PrimaryKey
			model := map[string]int64{}
			type frozen struct {
				sn    *snapshot
				model map[string]int64
			}
			var held []frozen
			rng := uint64(7)
			rand := func(n int) int {
				rng ^= rng << 13
				rng ^= rng >> 7
				rng ^= rng << 17
				return int(rng % uint64(n))
			}
			for commit := 0; commit < 40; commit++ {
				var rows []Row
				for j := 0; j < 60; j++ {
					// keys of 1 to 20 bytes, from a small space so rows hit stored keys
					n := rand(300)
					k := fmt.Sprintf("%0*d", 1+n%20, n)
					v := int64(rand(1000))
					if pk && rand(4) == 0 {
						rows = append(rows, Row{Op: OpDelete, Values: []any{k, nil}})
						delete(model, k)
						continue
					}
					rows = append(rows, Row{Values: []any{k, v}})
					if pk {
						model[k] = v
					} else {
						model[k] += v
					}
				}
				before := s.snap()
				if commit%5 == 4 {
					// a commit whose last row does not fit: nothing of it shows
					bad := append(rows, Row{Values: []any{"zz"}})
					require.Error(t, s.Apply([]TableChange{{DB: "db", Table: "t", Rows: bad}}))
					require.Same(t, before, s.snap())
					// undo the model: the commit did not happen
					model = clone(held[len(held)-1].model)
					continue
				}
				require.NoError(t, s.Apply([]TableChange{{DB: "db", Table: "t", Rows: rows}}))
				held = append(held, frozen{sn: s.snap(), model: clone(model)})
			}
			for i, f := range held {
				checkSnapshot(t, f.sn, f.model, fmt.Sprintf("snapshot %d", i))
			}
		})
	}
}

func clone(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checkSnapshot checks table db.t of sn against model, and every stored key against its row.
func checkSnapshot(t *testing.T, sn *snapshot, model map[string]int64, what string) {
	t.Helper()
	tb, err := sn.table("db", "t")
	require.NoError(t, err)
	var keys []string
	tb.rows.ascend(func(key string, v []any) bool {
		k := v[0].(string)
		keys = append(keys, k)
		if want := string(appendRowKey(nil, tb.schema, v)); key != want {
			t.Errorf("%s: row %q is stored under key %q, want %q", what, k, key, want)
		}
		if got := v[1].(int64); got != model[k] {
			t.Errorf("%s: row %q has v %d, want %d", what, k, got, model[k])
		}
		return true
	})
	want := make([]string, 0, len(model))
	for k := range model {
		want = append(want, k)
	}
	sort.Strings(want)
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	assert.Equal(t, want, sorted, "%s: keys", what)
	assert.Equal(t, len(model), tb.rows.len, "%s: len", what)
}
