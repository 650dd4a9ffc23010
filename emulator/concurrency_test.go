package emulator

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
)

// TestAtomicVisibility: readers querying over MySQL during many multi-table
// commits never see a partial transaction. Every transaction writes one
// order and two items per order, so items = 2 × orders in every snapshot.
func TestAtomicVisibility(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	db := openMySQL(t, e)
	const writers, perWriter, ordersPerTxn = 4, 15, 3

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var reads, finalReads, violations atomic.Int64
	var rwg sync.WaitGroup
	for i := 0; i < 3; i++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for ctx.Err() == nil {
				var o, it int
				err := db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM order_items)").Scan(&o, &it)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("query: %v", err)
					}
					return
				}
				reads.Add(1)
				if o == writers*perWriter*ordersPerTxn {
					finalReads.Add(1)
				}
				if it != 2*o {
					violations.Add(1)
					t.Errorf("partial transaction visible: %d orders, %d items", o, it)
				}
			}
		}()
	}
	var wwg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			c := newClient(t, e)
			for i := 0; i < perWriter; i++ {
				label := fmt.Sprintf("w%d_%d", w, i)
				base := (w*perWriter + i) * ordersPerTxn
				var items strings.Builder
				items.WriteByte('[')
				for k := 0; k < ordersPerTxn; k++ {
					if k > 0 {
						items.WriteByte(',')
					}
					fmt.Fprintf(&items, `{"order_id":%d,"item_id":1},{"order_id":%d,"item_id":2}`, base+k, base+k)
				}
				items.WriteByte(']')
				if r := c.begin(multiH("test", label)); r.str("Status") != "OK" {
					t.Errorf("begin: %s", r.raw)
					return
				}
				// Items first, orders second: a reader between the two
				// loads would see items without orders if loads leaked.
				if r := c.load(jsonLoadH("test", label, "order_items"), items.String()); r.str("Status") != "OK" {
					t.Errorf("load: %s", r.raw)
					return
				}
				if r := c.load(jsonLoadH("test", label, "orders"), orderRows(base, ordersPerTxn)); r.str("Status") != "OK" {
					t.Errorf("load: %s", r.raw)
					return
				}
				if r := c.commit(multiH("test", label)); r.str("Status") != "OK" {
					t.Errorf("commit: %s", r.raw)
					return
				}
			}
		}()
	}
	wwg.Wait()
	// The readers observe the final state too.
	testkit.WaitFor(t, 30*time.Second, func() bool { return finalReads.Load() >= 3 }, "reads of the final state")
	cancel()
	rwg.Wait()
	assert.Zero(t, violations.Load())
	assert.Positive(t, reads.Load())
	var o, it int
	require.NoError(t, db.QueryRow("SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM order_items)").Scan(&o, &it))
	assert.Equal(t, writers*perWriter*ordersPerTxn, o)
	assert.Equal(t, 2*o, it)
	t.Logf("%d reads during %d commits", reads.Load(), writers*perWriter)
}

// TestOrderWithinTransaction: rows of one table apply in arrival order,
// across loads (upsert then delete then re-upsert of one key).
func TestOrderWithinTransaction(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	c.multiTxn("ord",
		[2]string{"orders", `[{"order_id":1,"customer_id":1,"order_status":"a"}]`},
		[2]string{"orders", `[{"order_id":1,"customer_id":1,"__op":1}]`},
		[2]string{"orders", `[{"order_id":1,"customer_id":1,"order_status":"c"},{"order_id":2,"customer_id":1,"order_status":"x"},{"order_id":2,"customer_id":1,"__op":1}]`},
	)
	requireStatus(t, c.commit(multiH("test", "ord")), "OK", "")
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "c", rows[0]["order_status"])
}

// TestCompressedLoad: lz4_frame and gzip bodies are decoded.
func TestCompressedLoad(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	c.multiTxn("cz")
	var gz bytes.Buffer
	zw := newGzipWriter(&gz)
	_, _ = zw.Write([]byte(orderRows(1, 3)))
	require.NoError(t, zw.Close())
	requireStatus(t, c.load(jsonLoadH("test", "cz", "orders", "compression", "gzip"), gz.String()), "OK", "")
	var lz bytes.Buffer
	lw := newLZ4Writer(&lz)
	_, _ = lw.Write([]byte(itemRows(1, 2)))
	require.NoError(t, lw.Close())
	requireStatus(t, c.load(jsonLoadH("test", "cz", "order_items", "compression", "lz4_frame"), lz.String()), "OK", "")
	requireStatus(t, c.commit(multiH("test", "cz")), "OK", "")
	assert.Equal(t, 3, countRows(t, e, "orders"))
	assert.Equal(t, 2, countRows(t, e, "order_items"))

	c.multiTxn("cz2")
	h := jsonLoadH("test", "cz2", "orders", "compression", "gzip")
	h["Content-Encoding"] = "gzip"
	requireStatus(t, c.load(h, gz.String()), "FAILED", pfx+"Only one of http header content-encoding and compression can be set")
}

// TestBodySizeLimits: the JSON limit is cumulative over the loads of one
// BE context (here the orders channel of a multi transaction).
func TestBodySizeLimits(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.JSONMaxBatchMB = 1 })
	c := newClient(t, e)
	c.multiTxn("sz")
	big := orderRows(1, 4000) // ~300 KB
	requireStatus(t, c.load(jsonLoadH("test", "sz", "orders"), big), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "sz", "orders"), big), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "sz", "orders"), big), "OK", "")
	r := c.load(jsonLoadH("test", "sz", "orders"), big)
	assert.Equal(t, "INTERNAL_ERROR", r.str("Status"), r.raw)
	assert.Contains(t, r.str("Message"), "Set ignore_json_size to skip the check")
	requireStatus(t, c.commit(multiH("test", "sz")), "OK", "")
}

func TestCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	schema := dir + "/schema.sql"
	require.NoError(t, os.WriteFile(schema, []byte(schemaSQL(t)), 0o600))
	var out syncBuffer
	app := &cli.App{Name: "test", Commands: []*cli.Command{Command()}, Writer: &out, ErrWriter: &out}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, []string{"test", "emulator", "--http", "127.0.0.1:0", "--mysql", "", "--be", "127.0.0.1:0", "--schema", schema})
	}()
	var fe string
	require.Eventually(t, func() bool {
		s := out.String()
		i := strings.Index(s, "fe=")
		if i < 0 {
			return false
		}
		fe = strings.Fields(s[i+3:])[0]
		return true
	}, 10*time.Second, 10*time.Millisecond)
	assert.Contains(t, out.String(), "be=http://127.0.0.1:")
	req, _ := http.NewRequest(http.MethodPost, fe+"/api/transaction/begin", nil)
	req.SetBasicAuth("root", "")
	req.Header.Set("db", "test")
	req.Header.Set("label", "cli1")
	req.Header.Set("transaction_type", "multi")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, logrus.WarnLevel, logrus.GetLevel(), "without --verbose go-mysql-server's info lines are silenced")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the emulator command did not stop")
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testlog.Buffer
