package starrocks_txn

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// Through the emulator: a source transaction whose rows StarRocks rejects
// goes to dead_letter with a reason that names the table, and the column
// and value the error log gives; an all-filtered table is named too.
func TestIntegrationRejectedRowsNameTableColumnAndValue(t *testing.T) {
	e := startEmulator(t)
	s := newSrc("asm")
	item := func(p, txn string, id int, qty any, end bool) *service.Message {
		return s.row(p, txn, "order_items", map[string]any{"order_id": id, "item_id": 1, "quantity": qty}, end)
	}
	order := func(p, txn string, id int, end bool) *service.Message {
		return s.row(p, txn, "orders", map[string]any{"order_id": id, "customer_id": 1, "total_amount": 1}, end)
	}
	batches := []service.MessageBatch{
		// One bad row among good ones, in a transaction over two tables:
		// over max_filter_ratio, with a tracking_url.
		{order("p0", "ratio", 1, false), item("p0", "ratio", 1, 2, false), s.row("p0", "ratio", "order_items", map[string]any{"order_id": 1, "item_id": 2, "quantity": "lots"}, true)},
		// Every row of the only table filtered: no rows imported.
		{item("p1", "allbad", 2, "many", true)},
		// Good neighbours commit.
		{order("p2", "good", 3, false), item("p2", "good", 3, 1, true)},
	}
	errs, _ := poisonStream(t, e, "dl-rejected", batches, 20*time.Second)
	for _, err := range errs {
		require.NoError(t, err)
	}
	d, _ := captures.Load("dl-rejected")
	dl := d.(*fakeDL)
	ids := dl.txnIDs()
	sort.Strings(ids)
	require.Equal(t, []string{"allbad", "ratio"}, ids)
	reasons := map[string]string{}
	dl.mu.Lock()
	for _, b := range dl.batches {
		id, _ := b[0].MetaGet("starrocks_txn_id")
		reasons[id], _ = b[0].MetaGet(deadLetterReasonKey)
	}
	dl.mu.Unlock()
	t.Logf("reasons: %v", reasons)
	assert.Contains(t, reasons["ratio"], "table test.order_items, column quantity", "the table, found from the error log's row")
	assert.Contains(t, reasons["ratio"], `"lots"`, "the value the error log gives")
	assert.Contains(t, reasons["ratio"], "abnormal data more than max filter rate")
	assert.Contains(t, reasons["allbad"], "table test.order_items", "the only table the transaction writes")
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Len(t, rows, 1)
}

// The table a newer FE names in the failure ("Failed to load table T") is
// taken; when nothing tells which of its tables failed, the reason lists
// them.
func TestRejectionNamesTheTable(t *testing.T) {
	f := newFakeSR()
	const url = "http://be:8040/api/_load_error_log?file=e1"
	f.errorLogs[url] = []string{`Error: NULL value in non-nullable column 'price'. Row: [3, NULL]`}
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op != "commit" {
			return nil, false
		}
		for tbl, rows := range ft.pending {
			for _, r := range rows {
				switch r["bad"] {
				case "named":
					ft.state = starrocks.StateAborted
					return srErr("commit", starrocks.ClassPerTxn, fmt.Sprintf("Failed to load table %s: too many filtered rows, tracking_url: %s", tbl, url)), true
				case "anonymous":
					ft.state = starrocks.StateAborted
					return srErr("commit", starrocks.ClassPerTxn, "No rows were imported from upstream"), true
				}
			}
		}
		return nil, false
	}
	dl := &fakeDL{}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	chs := []chan error{
		writeAsync(o, service.MessageBatch{
			s.row("p0", "named", "a", map[string]any{"id": 1, "txn": "named"}, false),
			s.row("p0", "named", "b", map[string]any{"id": 2, "txn": "named", "bad": "named"}, true),
		}),
		writeAsync(o, service.MessageBatch{
			s.row("p1", "anon", "a", map[string]any{"id": 3, "txn": "anon", "bad": "anonymous"}, false),
			s.row("p1", "anon", "b", map[string]any{"id": 4, "txn": "anon"}, true),
		}),
	}
	waitAll(t, chs, 10*time.Second)
	reasons := map[string]string{}
	dl.mu.Lock()
	for _, b := range dl.batches {
		id, _ := b[0].MetaGet("starrocks_txn_id")
		reasons[id], _ = b[0].MetaGet(deadLetterReasonKey)
	}
	dl.mu.Unlock()
	assert.Contains(t, reasons["named"], "in table test.b, column price: Error: NULL value in non-nullable column 'price'")
	assert.Contains(t, reasons["anon"], "in one of the tables test.a, test.b: ")
}
