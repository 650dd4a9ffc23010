package starrocks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// Partitions are user data (a Kafka topic and number, a Debezium
// dbserver1.transaction, whatever a pipeline sets as starrocks_partition):
// a read of many together finds each one's row by its exact name, quotes,
// backslashes, control characters, case and trailing spaces included, and
// never takes one partition's row for another's. Exactly ProgressReadChunk
// partitions are one statement per database, one more are two.
func TestReadProgressOfQuotedPartitionsAtTheChunkBoundary(t *testing.T) {
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: "CREATE DATABASE shop;"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	m, err := starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	ctx := context.Background()
	const table = "quoted_progress"
	require.NoError(t, m.EnsureTables(ctx, "shop", starrocks.TableDef{Name: table, DDL: starrocks.ProgressDDL("shop", table), Columns: starrocks.ProgressColumns}))

	odd := []string{"it's/1", `back\slash/2`, `dq"/3`, "nl\n/4", "dbserver1.transaction", `pct%_/5`, "tab\t/6",
		"uni/é/7", "trail /8", "T/9", `\'/10`, `''/11`, "ctrlz\x1a/12", "cr\r/13", `\\/14`, "nul\x00/15", "sp/16 "}
	type row struct {
		Pipeline  string `json:"pipeline_id"`
		Partition string `json:"source_partition"`
		Through   int64  `json:"committed_offset"`
		TxnEnd    int64  `json:"txn_end_offset"`
	}
	var rows []row
	want := map[string]int64{}
	for i, p := range odd {
		rows = append(rows, row{"pl", p, int64(100 + i), int64(100 + i)})
		want[p] = int64(100 + i)
	}
	// Near misses, held but never asked for: a read that took them for
	// the names above would judge those partitions by another's row.
	for _, p := range []string{"t/9", "trail/8", "trail  /8", `back\\slash/2`, `backslash/2`, "it''s/1", "nul/15", "sp/16", "sp/16  "} {
		rows = append(rows, row{"pl", p, 1, 1})
	}
	body, err := json.Marshal(rows)
	require.NoError(t, err)
	cl, err := starrocks.New(starrocks.Config{LoadURLs: []string{e.FEURL()}, Username: "root", RequestTimeout: 10 * time.Second})
	require.NoError(t, err)
	txn := starrocks.Txn{DB: "shop", Table: table, Label: "quoted"}
	_, err = cl.Begin(ctx, txn)
	require.NoError(t, err)
	_, err = cl.Load(ctx, starrocks.LoadRequest{Txn: txn, Headers: map[string]string{"format": "json", "strip_outer_array": "true"}, Body: body})
	require.NoError(t, err)
	_, err = cl.Commit(ctx, txn)
	require.NoError(t, err)

	counted, counts := countingMeta(t, e.MySQLAddr())
	for _, n := range []int{starrocks.ProgressReadChunk, starrocks.ProgressReadChunk + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			// The odd names first and last, so that both statements
			// of 501 hold some.
			parts := append([]string{}, odd[:8]...)
			for i := 0; len(parts) < n-(len(odd)-8); i++ {
				parts = append(parts, fmt.Sprintf("none/%d", i))
			}
			parts = append(parts, odd[8:]...)
			require.Len(t, parts, n)
			got, err := counted.ReadProgressOf(ctx, table, "pl", parts)
			require.NoError(t, err)
			for _, p := range odd {
				if assert.Len(t, got[p], 1, "%q", p) {
					assert.Equal(t, want[p], got[p][0].Through, "%q", p)
				}
			}
			assert.Len(t, got, len(odd), "only the names asked for, each by its own row")
			assert.Equal(t, map[string]int{"information_schema": 1, "shop": (n + starrocks.ProgressReadChunk - 1) / starrocks.ProgressReadChunk}, counts.take())
		})
	}
}
