package starrocks_txn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/starrocks-txn/benthos-starrocks/internal/bufpool"
)

// The body is the JSON array of the table's rows in transaction order, each
// row as it was admitted, exactly sized: for any transactions and tables.
func TestLoadBodyIsTheRowsAsAnArray(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tables := []string{"a", "b"}
		var txns []*srcTxn
		want := map[string][][]byte{}
		for i := rapid.IntRange(0, 6).Draw(t, "txns"); i > 0; i-- {
			st := &srcTxn{}
			for j := rapid.IntRange(0, 5).Draw(t, "rows"); j > 0; j-- {
				tbl := rapid.SampledFrom(tables).Draw(t, "table")
				s, err := json.Marshal(rapid.String().Draw(t, "s"))
				require.NoError(t, err)
				row := []byte(fmt.Sprintf(`{"id":%d,"s":%s}`, rapid.Int().Draw(t, "id"), s))
				st.appendRow(tbl, row)
				want[tbl] = append(want[tbl], row)
			}
			txns = append(txns, st)
		}
		for _, tbl := range tables {
			body, n := loadBody(txns, tbl)
			require.Equal(t, len(want[tbl]), n)
			if n == 0 {
				require.Nil(t, body)
				continue
			}
			expect := append(append([]byte("["), bytes.Join(want[tbl], []byte(","))...), ']')
			require.True(t, bytes.Equal(expect, body), "%s:\n%s\n%s", tbl, expect, body)
			require.True(t, json.Valid(body), "%s", body)
			require.Equal(t, len(body), cap(body), "sized exactly")
		}
	})
}

// benchTxns is n source transactions of 5 rows of about 100 bytes each, of
// table orders.
func benchTxns(n int) []*srcTxn {
	txns := make([]*srcTxn, n)
	for i := range txns {
		st := &srcTxn{}
		for j := 0; j < 5; j++ {
			st.appendRow("orders", []byte(fmt.Sprintf(`{"order_id":%d,"customer_id":%d,"status":"created","amount":"12.50","note":"a row of a usual size"}`, i, j)))
		}
		txns[i] = st
	}
	return txns
}

// BenchmarkLoadBody measures assembling one table's load body of a cycle
// from its source transactions' rows (5 rows of about 100 bytes each): made
// anew (loadBody), and in a buffer of the pool as loadPending does.
func BenchmarkLoadBody(b *testing.B) {
	for _, n := range []int{200, 2000} {
		txns, rows := benchTxns(n), 5*n
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, got := loadBody(txns, "orders"); got != rows {
					b.Fatal(got)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
		})
		b.Run(fmt.Sprintf("pooled/%d", n), func(b *testing.B) {
			var p bufpool.FreeList
			b.ReportAllocs()
			for b.Loop() {
				size, got := loadBodySize(txns, "orders")
				if got != rows {
					b.Fatal(got)
				}
				body := newPooledBody(&p, fillLoadBody(p.Get(size), txns, "orders"))
				body.Release()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
		})
	}
}
