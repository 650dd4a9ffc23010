package emulator

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// transaction_type: multi reaches only the multi task's channel, never a
// classic context that has the same label.
func TestMultiLoadRoutedByTransactionType(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.BEAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	beLoad := e.BEURL() + "/api/transaction/load"

	t.Log("Given: a multi transaction with a loaded channel, rolled back; then a classic begin with the label")
	requireStatus(t, c.begin(multiH("test", "rt1")), "OK", "")
	r := c.load(jsonLoadH("test", "rt1", "orders"), orderRows(1, 1))
	require.Equal(t, http.StatusTemporaryRedirect, r.code, r.raw)
	requireStatus(t, c.do("PUT", r.hdr.Get("Location"), jsonLoadH("test", "rt1", "orders"), orderRows(1, 1)), "OK", "")
	requireStatus(t, c.rollback(multiH("test", "rt1")), "OK", "stream load rt1 abort")
	r = c.begin(ctlH("rt1"))
	require.Equal(t, http.StatusTemporaryRedirect, r.code, r.raw)
	r = c.do("POST", r.hdr.Get("Location"), ctlH("rt1"), "")
	requireStatus(t, r, "OK", "")
	classicID := r.num("TxnId")

	t.Log("When: a multi load for the label reaches the BE")
	r = c.do("PUT", beLoad, jsonLoadH("test", "rt1", "orders"), orderRows(2, 5))

	t.Log("Then: it lands in the cancelled multi channel, not in the classic transaction")
	requireStatus(t, r, "ABORTED", "current transaction is aborted")
	requireStatus(t, c.do("PUT", beLoad, jsonLoadH("test", "rt2", "orders"), orderRows(2, 1)), "TXN_NOT_EXISTS",
		"Transaction with label rt2 not exists")
	r = c.do("PUT", beLoad, classicH("rt1"), orderRows(10, 1))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, classicID, r.num("TxnId"))
	r = c.commit(ctlH("rt1"))
	require.Equal(t, http.StatusTemporaryRedirect, r.code, r.raw)
	r = c.do("POST", r.hdr.Get("Location"), ctlH("rt1"), "")
	requireStatus(t, r, "OK", "")
	assert.Equal(t, int64(1), r.num("NumberLoadedRows"), r.raw)
	assert.Equal(t, 1, countRows(t, e, "orders"))
}

// TestMultiSizeLimitsPerChannel is §5.4: in multi mode the BE context is
// the channel (label, table, 0), so the JSON-size and body-size limits
// count one table's loads, not the whole transaction's.
func TestMultiSizeLimitsPerChannel(t *testing.T) {
	t.Parallel()
	orders, items := orderRows(1, 4000), itemRows(1, 4000)
	require.Less(t, 3*len(orders), 1<<20)
	require.Greater(t, 3*len(orders)+len(items), 1<<20, "the transaction as a whole exceeds 1 MB")
	cases := []struct {
		name   string
		mod    func(*Config)
		prefix string
	}{
		{"json batch size", func(c *Config) { c.JSONMaxBatchMB = 1 }, "The size of this batch exceed the max size [1048576] of json type data data ["},
		{"body size", func(c *Config) { c.StreamingLoadMaxMB = 1 }, "body size "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startEmu(t, tc.mod)
			c := newClient(t, e)
			c.multiTxn("pc")
			for i := 0; i < 3; i++ {
				requireStatus(t, c.load(jsonLoadH("test", "pc", "orders"), orders), "OK", "")
			}
			t.Log("another table's channel starts its own count")
			requireStatus(t, c.load(jsonLoadH("test", "pc", "order_items"), items), "OK", "")
			t.Log("the orders channel still hits its limit")
			r := c.load(jsonLoadH("test", "pc", "orders"), orders)
			assert.Equal(t, "INTERNAL_ERROR", r.str("Status"), r.raw)
			assert.True(t, strings.HasPrefix(r.str("Message"), tc.prefix), r.raw)
			requireStatus(t, c.commit(multiH("test", "pc")), "OK", "")
			assert.Equal(t, 4000, countRows(t, e, "orders"))
			assert.Equal(t, 4000, countRows(t, e, "order_items"))
		})
	}
	t.Run("classic counts the whole transaction", func(t *testing.T) {
		t.Parallel()
		e := startEmu(t, func(c *Config) { c.JSONMaxBatchMB = 1 })
		c := newClient(t, e)
		requireStatus(t, c.begin(ctlH("pcc")), "OK", "")
		for i := 0; i < 3; i++ {
			requireStatus(t, c.load(classicH("pcc"), orders), "OK", "")
		}
		r := c.load(classicH("pcc"), orders)
		assert.Equal(t, "INTERNAL_ERROR", r.str("Status"), r.raw)
		assert.True(t, strings.HasPrefix(r.str("Message"), "The size of this batch exceed the max size [1048576]"), r.raw)
	})
}

// TestLoadParamsComparedParsed is §2.2: the BE caches a context's parsed
// parameters, so later loads are compared by parsed value, not by header
// text.
func TestLoadParamsComparedParsed(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	c.multiTxn("pp", [2]string{"orders", orderRows(1, 1)})
	equal := []struct {
		name string
		h    hdrs
	}{
		{"strip_outer_array case", jsonLoadH("test", "pp", "orders", "strip_outer_array", "TRUE")},
		{"format case", jsonLoadH("test", "pp", "orders", "format", "JSON")},
		{"explicit defaults", jsonLoadH("test", "pp", "orders", "strict_mode", "false", "max_filter_ratio", "0", "ignore_json_size", "false")},
	}
	for i, tc := range equal {
		t.Run(tc.name, func(t *testing.T) {
			requireStatus(t, c.load(tc.h, orderRows(10+i, 1)), "OK", "")
		})
	}
	differ := []struct {
		name string
		h    hdrs
		msg  string
	}{
		{"strip_outer_array false", jsonLoadH("test", "pp", "orders", "strip_outer_array", "false"), "load request not equal last."},
		{"strict_mode on", jsonLoadH("test", "pp", "orders", "strict_mode", "TRUE"), "load request not equal last."},
		{"unparsed header added", jsonLoadH("test", "pp", "orders", "ignore_json_size", "true"), "load request not equal last."},
		{"invalid value", jsonLoadH("test", "pp", "orders", "strict_mode", "maybe"), "Invalid strict mode format. Must be bool type"},
	}
	for i, tc := range differ {
		t.Run(tc.name, func(t *testing.T) {
			requireStatus(t, c.load(tc.h, orderRows(20+i, 1)), "INVALID_ARGUMENT", tc.msg)
		})
	}
	t.Log("unparsed headers compare by parsed value too: ignore_json_size TRUE equals true")
	c.multiTxn("pq", [2]string{"orders", orderRows(30, 1)})
	requireStatus(t, c.load(jsonLoadH("test", "pq", "order_items", "ignore_json_size", "true"), itemRows(30, 1)), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "pq", "order_items", "ignore_json_size", "TRUE"), itemRows(31, 1)), "OK", "")
	requireStatus(t, c.commit(multiH("test", "pq")), "OK", "")

	t.Log("classic contexts compare the same way")
	requireStatus(t, c.begin(ctlH("pc1")), "OK", "")
	requireStatus(t, c.load(classicH("pc1"), orderRows(40, 1)), "OK", "")
	requireStatus(t, c.load(classicH("pc1", "strip_outer_array", "True"), orderRows(41, 1)), "OK", "")
	requireStatus(t, c.commit(ctlH("pc1")), "OK", "")

	requireStatus(t, c.commit(multiH("test", "pp")), "OK", "")
	assert.Equal(t, 7, countRows(t, e, "orders"), "1+3 (pp) + 1 (pq) + 2 (pc1)")
}

// TestMultiRollbackCommitted is §5.6: both final committed states (COMMITED
// and FINISHED) answer "Can not abort VISIBLE transaction".
func TestMultiRollbackCommitted(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	c.multiTxn("rc", [2]string{"orders", orderRows(1, 1)})
	requireStatus(t, c.commit(multiH("test", "rc")), "OK", "")
	id := txnID(t, e, "rc")
	want := fmt.Sprintf("Can not abort VISIBLE transaction %d, label is rc", id)
	requireStatus(t, c.rollback(multiH("test", "rc")), "FAILED", want)
	e.mu.Lock()
	e.multi["rc"].state = stateCommitted // committed, publish not finished
	e.mu.Unlock()
	requireStatus(t, c.rollback(multiH("test", "rc")), "FAILED", want)
}

// sendAsync sends req in the background; the returned func waits for the
// reply.
func sendAsync(t *testing.T, req *http.Request) func() resp {
	t.Helper()
	done := make(chan resp, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if !assert.NoError(t, err) {
			done <- resp{}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		done <- resp{code: res.StatusCode, raw: string(b)}
	}()
	return func() resp { return <-done }
}
