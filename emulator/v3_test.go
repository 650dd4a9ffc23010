package emulator

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// The StarRocks 3.x mode (Config.StarRocksVersion below 4.0): each test names the
// behaviour of docs/notes/starrocks-protocol.md §12 it holds the emulator to.

// pfx3 is how a 3.3 or 3.4 FE prints its exceptions (UserException).
const pfx3 = "class com.starrocks.common.UserException: "

// testClock is a Config.Now a test steps by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// startV3 starts an emulator answering as StarRocks version v.
func startV3(t *testing.T, v string, mod func(*Config)) *Emulator {
	t.Helper()
	return startEmu(t, func(c *Config) {
		c.StarRocksVersion = v
		if mod != nil {
			mod(c)
		}
	})
}

// follow sends a request and, on a 307, sends it again where it points, as curl
// --location-trusted does.
func (c *client) follow(method, url string, h hdrs, body string) resp {
	c.t.Helper()
	r := c.do(method, url, h, body)
	for i := 0; i < 3 && r.code == http.StatusTemporaryRedirect; i++ {
		r = c.do(method, r.hdr.Get("Location"), h, body)
	}
	return r
}

// classicFlow begins, loads n orders from `from` and, when prepare, prepares label.
func classicFlow(t *testing.T, c *client, label string, from, n int, prepare bool) {
	t.Helper()
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", ctlH(label), ""), "OK", "")
	requireStatus(t, c.follow(http.MethodPut, "/api/transaction/load", classicH(label), orderRows(from, n)), "OK", "")
	if prepare {
		requireStatus(t, c.follow(http.MethodPost, "/api/transaction/prepare", ctlH(label), ""), "OK", "")
	}
}

func TestParseVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]srVersion{"": {4, 0, 0}, "3.3": {3, 3, 0}, "3.5.4": {3, 5, 4}, "4.0": {4, 0, 0}, " 4.1.2 ": {4, 1, 2}} {
		v, err := parseVersion(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, v, in)
	}
	for in, msg := range map[string]string{"3": "needs a minor version", "3.x": "not major.minor", "3.5.4.1": "not major.minor",
		"2.5": "older than the emulator models", "3.2.9": "older than the emulator models", "-1.0": "not major.minor"} {
		_, err := parseVersion(in)
		assert.ErrorContains(t, err, msg, in)
	}
	_, err := Start(Config{StarRocksVersion: "3"})
	assert.ErrorContains(t, err, "needs a minor version", "Start refuses a bad version before it listens")
	v33, v35, v354, v40 := srVersion{3, 3, 0}, srVersion{3, 5, 0}, srVersion{3, 5, 4}, srVersion{4, 0, 0}
	assert.False(t, v33.multiTable())
	assert.True(t, v40.multiTable())
	assert.False(t, v35.preparedTimeout(), "3.5 is 3.5.0, before prepared_timeout")
	assert.True(t, v354.preparedTimeout())
	assert.Equal(t, "class com.starrocks.common.UserException: ", v33.exceptionPrefix())
	assert.Equal(t, "class com.starrocks.common.StarRocksException: ", v35.exceptionPrefix())
	assert.Equal(t, "Transaction in processing, please retry later", v33.inProcessingMsg())
	assert.Equal(t, "Transaction is in processing", srVersion{3, 4, 0}.inProcessingMsg())
	assert.Equal(t, errNoPartitionsHaveData, v33.noRowsMsg())
	assert.Equal(t, errNoRowsImported, v35.noRowsMsg())
}

// TestV3Version: current_version() and @@version_comment are "<version>-<hash>" of the
// version asked for, per emulator (two in one process answer as their own), and so are
// SHOW FRONTENDS and /api/bootstrap.
func TestV3Version(t *testing.T) {
	t.Parallel()
	for _, v := range []struct{ flag, want string }{{"3.3", "3.3.0-emulator"}, {"3.5.4", "3.5.4-emulator"}, {"", "4.0.0-emulator"}} {
		t.Run(v.want, func(t *testing.T) {
			t.Parallel()
			e := startV3(t, v.flag, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
			assert.Equal(t, strings.TrimSuffix(v.want, "-emulator"), e.StarRocksVersion())
			db := openMySQL(t, e)
			for i := 0; i < 3; i++ { // several sessions
				var got string
				require.NoError(t, db.QueryRow("SELECT current_version()").Scan(&got))
				assert.Equal(t, v.want, got)
				require.NoError(t, db.QueryRow("SELECT @@version_comment").Scan(&got))
				assert.Equal(t, v.want, got)
			}
			cols, rows := queryRows(t, db, "SHOW FRONTENDS")
			assert.Equal(t, v.want, column(t, cols, rows[0], "Version"))
			r := newClient(t, e).do(http.MethodGet, "/api/bootstrap", nil, "")
			assert.Equal(t, v.want, r.str("feVersion"))
		})
	}
}

// TestV3MultiBegin is §12.1: a 3.x FE does not know transaction_type, so a multi-table begin
// (no table header) is a classic begin sent to the BE, which the FE's loadTxnBegin refuses
// for its empty table name; no transaction is begun and the label stays free. A multi-table
// load of a label the FE never routed has no node; a commit or rollback of a label it holds
// no transaction of finds none. With a BE the begin is a 307 and the BE's reply; without one
// the FE answers the BE's reply in place.
func TestV3MultiBegin(t *testing.T) {
	t.Parallel()
	for _, withBE := range []bool{true, false} {
		t.Run(fmt.Sprintf("BE %v", withBE), func(t *testing.T) {
			t.Parallel()
			e := startV3(t, "3.3", func(c *Config) {
				c.MySQLAddr = "127.0.0.1:0"
				if withBE {
					c.BEAddr = "127.0.0.1:0"
				}
			})
			c := newClient(t, e)
			r := c.do(http.MethodPost, "/api/transaction/begin", multiH("test", "m1"), "")
			if withBE {
				require.Equal(t, http.StatusTemporaryRedirect, r.code, "the 3.x FE sends every begin to a BE: %s", r.raw)
				require.True(t, strings.HasPrefix(r.hdr.Get("Location"), e.BEURL()+"/api/transaction/begin"), r.hdr.Get("Location"))
				r = c.do(http.MethodPost, r.hdr.Get("Location"), multiH("test", "m1"), "")
				assert.Equal(t, "{\n    \"Status\": \"ANALYSIS_ERROR\",\n    \"Message\": \"unknown table \\\"test.\\\"\"\n}", r.raw, "the BE's to_resp_json")
			}
			requireStatus(t, r, "ANALYSIS_ERROR", `unknown table "test."`)
			assert.Equal(t, "UNKNOWN", c.state("test", "m1"), "no transaction was begun")
			_, rows := queryRows(t, openMySQL(t, e), "SHOW PROC '/transactions/test/running'")
			assert.Empty(t, rows)

			t.Log("a multi-table load, commit and rollback of a label never begun")
			requireStatus(t, c.load(jsonLoadH("test", "never", "orders"), orderRows(1, 1)), "FAILED",
				pfx3+"Transaction with op[load] and label[never] has no node.")
			requireStatus(t, c.commit(multiH("test", "never")), "FAILED", pfx3+"No transaction found by label never")
			requireStatus(t, c.rollback(multiH("test", "never")), "FAILED", pfx3+"No transaction found by label never")
			requireStatus(t, c.prepare(multiH("test", "never")), "FAILED", pfx3+"No transaction found by label never")
			requireStatus(t, c.begin(hdrs{"db": "nodb", "label": "never", "transaction_type": "multi"}), "FAILED", pfx3+"Database[nodb] does not exist.")

			t.Log("the failed begin put m1 in the FE's map: its load reaches the BE, which holds no context")
			requireStatus(t, c.follow(http.MethodPut, "/api/transaction/load", jsonLoadH("test", "m1", "orders"), orderRows(1, 1)),
				"TXN_NOT_EXISTS", "Transaction with label m1 not exists")
			requireStatus(t, c.commit(multiH("test", "m1")), "FAILED", pfx3+"No transaction found by label m1")

			t.Log("the label is free; transaction_type is ignored on every op, prepare included")
			requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", ctlH("m1"), ""), "OK", "")
			requireStatus(t, c.follow(http.MethodPut, "/api/transaction/load", jsonLoadH("test", "m1", "orders"), orderRows(1, 2)), "OK", "")
			r = c.follow(http.MethodPost, "/api/transaction/prepare", multiH("test", "m1"), "")
			requireStatus(t, r, "OK", "")
			assert.Equal(t, int64(2), r.num("NumberLoadedRows"), "an ordinary classic prepare: %s", r.raw)
			assert.Equal(t, "PREPARED", c.state("test", "m1"))
			requireStatus(t, c.follow(http.MethodPost, "/api/transaction/commit", multiH("test", "m1"), ""), "OK", "")
			assert.Equal(t, 2, countRows(t, e, "orders"))
			if withBE {
				t.Log("a 3.x BE does not refuse transaction_type (4.x: test_be_reject_transaction_type)")
				requireStatus(t, c.do(http.MethodPost, e.BEURL()+"/api/transaction/begin", hdrs{"db": "test", "label": "be1", "table": "orders", "transaction_type": "multi"}, ""), "OK", "")
				requireStatus(t, c.do(http.MethodPost, e.BEURL()+"/api/transaction/list2", ctlH("be1"), ""), "INVALID_ARGUMENT", "unsupport transaction operation list2")
			}
		})
	}
	t.Run("3.5 prints StarRocksException", func(t *testing.T) {
		t.Parallel()
		c := newClient(t, startV3(t, "3.5", nil))
		requireStatus(t, c.load(jsonLoadH("test", "never", "orders"), orderRows(1, 1)), "FAILED",
			pfx+"Transaction with op[load] and label[never] has no node.")
	})
}

// TestV3ClassicReplies is §12.3 on a 3.3 FE and BE: the replies of begin, load, prepare,
// commit and rollback (test_prepared_timeout, test_stream_load_basic_txn), labels unique
// per database, the FE's commit of a PREPARED transaction, and 3.3's texts.
func TestV3ClassicReplies(t *testing.T) {
	t.Parallel()
	e := startV3(t, "3.3", func(c *Config) { c.BEAddr = "127.0.0.1:0" })
	require.NoError(t, e.Store().ExecScript("CREATE DATABASE other; CREATE TABLE other.orders (order_id BIGINT NOT NULL, customer_id BIGINT NOT NULL, total_amount DECIMAL(10,2), order_status VARCHAR(32), updated_at DATETIME) PRIMARY KEY(order_id) DISTRIBUTED BY HASH(order_id)"))
	c := newClient(t, e)

	r := c.follow(http.MethodPost, "/api/transaction/begin", ctlH("c1"), "")
	requireStatus(t, r, "OK", "")
	assert.Equal(t, []string{"BeginTxnTimeMs", "Label", "Message", "Status", "TxnId"}, keysOf(r))
	id := r.num("TxnId")
	r = c.follow(http.MethodPost, "/api/transaction/begin", ctlH("c1"), "")
	assert.Equal(t, "{\n    \"Status\": \"LABEL_ALREADY_EXISTS\",\n    \"ExistingJobStatus\": \"\",\n    \"Message\": \"\"\n}", r.raw)
	t.Log("labels are unique per database: a label used in another one begins")
	otherH := hdrs{"db": "other", "label": "c1x", "table": "orders", "format": "json", "strip_outer_array": "true"}
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", otherH, ""), "OK", "")
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", ctlH("c1x"), ""), "LABEL_ALREADY_EXISTS", "") // the one BE holds its context by label
	requireStatus(t, c.follow(http.MethodPut, "/api/transaction/load", otherH, orderRows(100, 1)), "OK", "")
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/commit", otherH, ""), "OK", "")
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", ctlH("c1x"), ""), "OK", "")
	r = c.follow(http.MethodPost, "/api/transaction/begin", otherH, "")
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", "") // the BE context of test's c1x

	r = c.follow(http.MethodPut, "/api/transaction/load", classicH("c1"), orderRows(1, 2))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, []string{"Label", "LoadBytes", "Message", "ReceivedDataTimeMs", "Status", "StreamLoadPlanTimeMs", "TxnId"}, keysOf(r))
	requireStatus(t, c.follow(http.MethodPut, "/api/transaction/load", hdrs{"db": "test", "label": "c1", "table": "order_items"}, itemRows(1, 1)),
		"INVALID_ARGUMENT", "Request table order_items not equal transaction table orders")

	r = c.follow(http.MethodPost, "/api/transaction/prepare", hdrs{"db": "test", "label": "c1", "prepared_timeout": "0"}, "")
	requireStatus(t, r, "OK", "") // 3.3 does not read prepared_timeout
	assert.Equal(t, int64(2), r.num("NumberLoadedRows"))
	assert.Contains(t, r.m, "CommitAndPublishTimeMs")
	assert.Equal(t, "PREPARED", c.state("test", "c1"))

	t.Log("the FE commits a PREPARED transaction itself, no 307")
	r = c.commit(hdrs{"db": "test", "label": "c1"})
	require.Equal(t, http.StatusOK, r.code, r.raw)
	requireStatus(t, r, "OK", "")
	assert.Equal(t, []string{"Label", "Message", "Status", "TxnId"}, keysOf(r), "test_prepared_timeout's commit reply")
	assert.Equal(t, id, r.num("TxnId"))
	assert.Equal(t, 2, countRows(t, e, "orders"))
	requireStatus(t, c.commit(hdrs{"db": "test", "label": "c1"}), "OK", fmt.Sprintf("Transaction %d has already committed, label is c1", id))
	requireStatus(t, c.rollback(hdrs{"db": "test", "label": "c1"}), "FAILED", pfx3+fmt.Sprintf("Can not abort VISIBLE transaction %d, label is c1", id))
	requireStatus(t, c.follow(http.MethodPut, "/api/transaction/load", classicH("c1"), orderRows(5, 1)), "TXN_NOT_EXISTS", "Transaction with label c1 not exists")
	r = c.follow(http.MethodPost, "/api/transaction/begin", ctlH("c1"), "")
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", "Label [c1] has already been used.")
	assert.Equal(t, "FINISHED", r.str("ExistingJobStatus"))

	t.Log("rollback of a running and of a PREPARED transaction; a rolled-back label begins again")
	classicFlow(t, c, "c2", 10, 1, false)
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/rollback", ctlH("c2"), ""), "OK", "")
	r = c.commit(ctlH("c2"))
	requireStatus(t, r, "FAILED", pfx3+fmt.Sprintf("Can not commit ABORTED transaction %d, label is c2", txnIDClassic(t, e, "c2")))
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", ctlH("c2"), ""), "OK", "")
	classicFlow(t, c, "c3", 20, 1, true)
	r = c.rollback(ctlH("c3"))
	requireStatus(t, r, "OK", "")
	assert.NotZero(t, r.num("TxnId"))
	requireStatus(t, c.rollback(ctlH("c3")), "OK", fmt.Sprintf("Transaction %d has already aborted, label is c3", r.num("TxnId")))

	t.Log("an empty commit; a load that imported no rows, with 3.3's text")
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", ctlH("c4"), ""), "OK", "")
	r = c.follow(http.MethodPost, "/api/transaction/commit", ctlH("c4"), "")
	assert.Equal(t, "INTERNAL_ERROR", r.str("Status"), r.raw)
	assert.Contains(t, r.str("Message"), "hasn't send any data yet")
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", ctlH("c5"), ""), "OK", "")
	requireStatus(t, c.follow(http.MethodPut, "/api/transaction/load", classicH("c5"), "[]"), "OK", "")
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/prepare", ctlH("c5"), ""), "INTERNAL_ERROR", errNoPartitionsHaveData)

	t.Log("a busy transaction: 3.3's TXN_IN_PROCESSING text")
	classicFlow(t, c, "c6", 30, 1, false)
	e.mu.Lock()
	e.beContexts["c6"].tables[0].busy = true
	e.mu.Unlock()
	r = c.follow(http.MethodPut, "/api/transaction/load", classicH("c6"), orderRows(31, 1))
	requireStatus(t, r, "TXN_IN_PROCESSING", "Transaction in processing, please retry later")
	e.mu.Lock()
	e.beContexts["c6"].tables[0].busy = false
	e.mu.Unlock()

	t.Log("a commit or prepare of a running transaction goes to the BE it began on")
	r = c.commit(ctlH("c6"))
	require.Equal(t, http.StatusTemporaryRedirect, r.code, r.raw)
	r = c.prepare(ctlH("c6"))
	require.Equal(t, http.StatusTemporaryRedirect, r.code, r.raw)
}

// TestV3NodeMapBound: the FE's label → BE map holds 512 labels per BE; a label begun 512
// begins earlier and not used since has no node any more (its transaction still runs).
func TestV3NodeMapBound(t *testing.T) {
	t.Parallel()
	m := newTxnNodeMap(1)
	for i := 0; i < 512; i++ {
		m.put(fmt.Sprint(i))
	}
	assert.True(t, m.get("0"), "a get refreshes 0")
	m.put("512")
	assert.False(t, m.has("1"), "the least recently used went")
	assert.True(t, m.has("0"))
	assert.True(t, m.has("512"))
	assert.Len(t, m.at, 512)

	e := startV3(t, "3.4", nil)
	c := newClient(t, e)
	requireStatus(t, c.begin(ctlH("first")), "OK", "")
	for i := 0; i < 512; i++ {
		require.Equal(t, "OK", c.begin(ctlH(fmt.Sprintf("n%d", i))).str("Status"))
	}
	requireStatus(t, c.load(classicH("first"), orderRows(1, 1)), "FAILED", pfx3+"Transaction with op[load] and label[first] has no node.")
	requireStatus(t, c.commit(ctlH("first")), "FAILED", pfx3+"Transaction with op[commit] and label[first] has no node.")
	assert.Equal(t, "PREPARE", c.state("test", "first"), "the transaction itself still runs")
	requireStatus(t, c.load(classicH("n0"), orderRows(1, 1)), "OK", "")
}

// TestV3PreparedExpiry is §12.3 on both sides of 3.5.4: before, prepared_timeout is ignored
// and a PREPARED transaction lives prepared_transaction_default_timeout_second (86400, ADMIN
// SET FRONTEND CONFIG changes it, also for those already prepared) in whole seconds from its
// prepare; from 3.5.4 the header sets its own. Either way it ends ABORTED "timeout by txn
// manager" (test_prepared_timeout). A running transaction keeps its begin's timeout.
func TestV3PreparedExpiry(t *testing.T) {
	t.Parallel()
	reason := func(e *Emulator, label string) string {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.latestLocked("test", label).reason
	}
	aborted := func(t *testing.T, c *client, label string) {
		t.Helper()
		require.Eventually(t, func() bool { return c.state("test", label) == "ABORTED" }, 10*time.Second, 10*time.Millisecond, label)
	}
	// stays runs a reaper round at the test clock's time (what the reaper's next round
	// does) and checks label is still PREPARED.
	stays := func(t *testing.T, e *Emulator, c *client, label string) {
		t.Helper()
		e.reap(e.now())
		assert.Equal(t, "PREPARED", c.state("test", label))
	}
	for _, v := range []string{"3.3", "3.5"} {
		t.Run(v+": the config, not the header", func(t *testing.T) {
			t.Parallel()
			clk := newTestClock()
			e := startV3(t, v, func(c *Config) { c.Now = clk.Now; c.MySQLAddr = "127.0.0.1:0" })
			c := newClient(t, e)
			classicFlow(t, c, "p1", 1, 1, false)
			requireStatus(t, c.prepare(hdrs{"db": "test", "label": "p1", "prepared_timeout": "1"}), "OK", "")
			clk.Add(2 * time.Second)
			stays(t, e, c, "p1")
			clk.Add(86400*time.Second - 2*time.Second + 999*time.Millisecond)
			stays(t, e, c, "p1") // 86400.999 s: (now - prepared) / 1000 = 86400, not above
			clk.Add(time.Millisecond)
			aborted(t, c, "p1")
			assert.Equal(t, txnTimeoutByManager, reason(e, "p1"))
			requireStatus(t, c.commit(ctlH("p1")), "FAILED", e.ver.exceptionPrefix()+fmt.Sprintf("Can not commit ABORTED transaction %d, label is p1", txnIDClassic(t, e, "p1")))

			t.Log("ADMIN SET FRONTEND CONFIG moves the deadline of a transaction already prepared")
			classicFlow(t, c, "p2", 2, 1, true)
			clk.Add(30 * time.Second)
			stays(t, e, c, "p2")
			_, err := openMySQL(t, e).Exec("ADMIN SET FRONTEND CONFIG ('prepared_transaction_default_timeout_second' = '10')")
			require.NoError(t, err)
			aborted(t, c, "p2")
			cols, rows := queryRows(t, openMySQL(t, e), "SHOW PROC '/transactions/test/finished'")
			assert.Len(t, cols, 14, "no prepared columns before 3.5.4")
			var got []string
			for _, r := range rows {
				got = append(got, column(t, cols, r, "Label")+"|"+column(t, cols, r, "TransactionStatus")+"|"+column(t, cols, r, "Reason"))
			}
			assert.Equal(t, []string{"p1|ABORTED|timeout by txn manager", "p2|ABORTED|timeout by txn manager"}, got)
		})
	}
	t.Run("3.5.4: the header", func(t *testing.T) {
		t.Parallel()
		clk := newTestClock()
		e := startV3(t, "3.5.4", func(c *Config) { c.Now = clk.Now; c.MySQLAddr = "127.0.0.1:0" })
		c := newClient(t, e)
		classicFlow(t, c, "h1", 1, 1, false)
		requireStatus(t, c.prepare(hdrs{"db": "test", "label": "h1", "prepared_timeout": "0"}), "INVALID_ARGUMENT", "Invalid prepared_timeout: 0")
		requireStatus(t, c.prepare(hdrs{"db": "test", "label": "h1", "prepared_timeout": "1"}), "OK", "")
		classicFlow(t, c, "h2", 2, 1, true) // no header: 86400 s, fixed at its prepare
		classicFlow(t, c, "h3", 3, 1, false)
		requireStatus(t, c.prepare(hdrs{"db": "test", "label": "h3", "prepared_timeout": "300"}), "OK", "")
		cols, rows := queryRows(t, openMySQL(t, e), "SHOW PROC '/transactions/test/running'")
		require.Len(t, rows, 3)
		for i, want := range []string{"1000", "86400000", "300000"} {
			assert.Equal(t, want, column(t, cols, rows[i], "PreparedTimeoutMs"), column(t, cols, rows[i], "Label"))
			assert.NotEqual(t, "NULL", column(t, cols, rows[i], "PreparedTime"))
		}
		clk.Add(time.Second)
		stays(t, e, c, "h1")
		clk.Add(time.Millisecond)
		aborted(t, c, "h1")
		assert.Equal(t, txnTimeoutByManager, reason(e, "h1"))
		_, err := openMySQL(t, e).Exec("ADMIN SET FRONTEND CONFIG ('prepared_transaction_default_timeout_second' = '10')")
		require.NoError(t, err)
		clk.Add(298 * time.Second) // 299.001 s since the prepares
		stays(t, e, c, "h2")       // its timeout was fixed at its prepare
		stays(t, e, c, "h3")
		clk.Add(time.Second)
		aborted(t, c, "h3")
		requireStatus(t, c.commit(ctlH("h2")), "OK", "")
	})
	t.Run("a running transaction keeps its timeout", func(t *testing.T) {
		t.Parallel()
		clk := newTestClock()
		e := startV3(t, "3.3", func(c *Config) { c.Now = clk.Now })
		c := newClient(t, e)
		requireStatus(t, c.begin(hdrs{"db": "test", "label": "r1", "table": "orders", "timeout": "5"}), "OK", "")
		requireStatus(t, c.load(classicH("r1"), orderRows(1, 1)), "OK", "")
		clk.Add(4 * time.Second)
		e.reap(e.now())
		assert.Equal(t, "PREPARE", c.state("test", "r1"))
		clk.Add(2 * time.Second)
		aborted(t, c, "r1")
		assert.Equal(t, "transaction is aborted by timeout.", reason(e, "r1"), "3.3's text (3.4 on: … timeout 5 seconds.)")
	})
}

// TestV3RestartKeepsPrepared is §12.4 for an FE restart (POST /_emulator/restart): PREPARED
// transactions survive and the FE commits or rolls them back although its label → BE map is
// gone; the running ones, which a 3.x FE does not journal, are forgotten (UNKNOWN, not
// listed, "No transaction found by label"), while the BE, which did not restart, still
// holds their contexts.
func TestV3RestartKeepsPrepared(t *testing.T) {
	t.Parallel()
	e := startV3(t, "3.3", func(c *Config) { c.BEAddr = "127.0.0.1:0"; c.MySQLAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	classicFlow(t, c, "k-prep", 1, 2, true)
	classicFlow(t, c, "k-prep2", 3, 1, true)
	classicFlow(t, c, "k-run", 4, 1, false)
	classicFlow(t, c, "k-done", 5, 1, true)
	requireStatus(t, c.commit(ctlH("k-done")), "OK", "")

	r := c.do(http.MethodPost, "/_emulator/restart", nil, "")
	require.Equal(t, http.StatusOK, r.code, r.raw)

	assert.Equal(t, "PREPARED", c.state("test", "k-prep"))
	assert.Equal(t, "UNKNOWN", c.state("test", "k-run"), "a running transaction is not journaled")
	assert.Equal(t, "VISIBLE", c.state("test", "k-done"))
	cols, rows := queryRows(t, openMySQL(t, e), "SHOW PROC '/transactions/test/running'")
	var running []string
	for _, r := range rows {
		running = append(running, column(t, cols, r, "Label")+"|"+column(t, cols, r, "TransactionStatus"))
	}
	assert.Equal(t, []string{"k-prep|PREPARED", "k-prep2|PREPARED"}, running, "what a client finds its prepared labels by")

	t.Log("commit and rollback of PREPARED ones: the FE, without the map")
	r = c.commit(ctlH("k-prep"))
	requireStatus(t, r, "OK", "")
	requireStatus(t, c.rollback(ctlH("k-prep2")), "OK", "")
	assert.Equal(t, 3, countRows(t, e, "orders"))

	t.Log("the forgotten running transaction")
	requireStatus(t, c.load(classicH("k-run"), orderRows(9, 1)), "FAILED", pfx3+"Transaction with op[load] and label[k-run] has no node.")
	requireStatus(t, c.commit(ctlH("k-run")), "FAILED", pfx3+"No transaction found by label k-run")
	requireStatus(t, c.prepare(ctlH("k-run")), "FAILED", pfx3+"No transaction found by label k-run")
	requireStatus(t, c.rollback(ctlH("k-run")), "FAILED", pfx3+"No transaction found by label k-run")
	r = c.follow(http.MethodPost, "/api/transaction/begin", ctlH("k-run"), "")
	assert.Equal(t, "LABEL_ALREADY_EXISTS", r.str("Status"), "the BE still holds its context: %s", r.raw)
	r = c.do(http.MethodPost, e.BEURL()+"/api/transaction/prepare", ctlH("k-run"), "")
	assert.Equal(t, "ANALYSIS_ERROR", r.str("Status"), r.raw)
	assert.Contains(t, r.str("Message"), "transaction not found: ", "the FE no longer knows it")
	t.Log("its BE context is gone with that failure: the label begins again")
	requireStatus(t, c.follow(http.MethodPost, "/api/transaction/begin", ctlH("k-run"), ""), "OK", "")
	assert.Equal(t, "PREPARE", c.state("test", "k-run"))
}

// TestV3DataDirRestart: a process restart with --data-dir (FE and BE restart) keeps PREPARED
// transactions, which commit, and forgets the running ones, whose labels are then free.
func TestV3DataDirRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e1 := startV3(t, "3.3", func(c *Config) { c.DataDir = dir })
	c := newClient(t, e1)
	classicFlow(t, c, "d-prep", 1, 2, true)
	classicFlow(t, c, "d-run", 3, 1, false)
	require.NoError(t, e1.Close())
	for i := 0; i < 2; i++ { // and a second life: nothing forgotten comes back
		e := startV3(t, "3.3", func(c *Config) { c.DataDir = dir })
		c := newClient(t, e)
		assert.Equal(t, "UNKNOWN", c.state("test", "d-run"))
		if i == 0 {
			assert.Equal(t, "PREPARED", c.state("test", "d-prep"))
			requireStatus(t, c.commit(ctlH("d-prep")), "OK", "")
		}
		assert.Equal(t, "VISIBLE", c.state("test", "d-prep"))
		assert.Equal(t, 2, countRows(t, e, "orders"))
		requireStatus(t, c.commit(ctlH("d-run")), "FAILED", pfx3+"No transaction found by label d-run")
		require.NoError(t, e.Close())
	}
	e := startV3(t, "3.3", func(c *Config) { c.DataDir = dir })
	c = newClient(t, e)
	classicFlow(t, c, "d-run", 3, 1, true)
	requireStatus(t, c.commit(ctlH("d-run")), "OK", "")
	assert.Equal(t, 3, countRows(t, e, "orders"))
}

// TestCommandStarRocksVersion: the emulator subcommand's --starrocks-version, and its refusal
// of a version it does not model.
func TestCommandStarRocksVersion(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	app := &cli.App{Name: "test", Commands: []*cli.Command{Command()}, Writer: &out, ErrWriter: &out}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, []string{"test", "emulator", "--http", "127.0.0.1:0", "--mysql", "", "--be", "127.0.0.1:0",
			"--starrocks-version", "3.3"})
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
	assert.Contains(t, out.String(), "starrocks emulator 3.3.0 listening")
	c := &client{t: t, base: fe, user: "root", hc: &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	r := c.begin(hdrs{"db": "d", "label": "cli3", "transaction_type": "multi"})
	requireStatus(t, r, "FAILED", pfx3+"Database[d] does not exist.")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the emulator command did not stop")
	}

	err := app.Run([]string{"test", "emulator", "--http", "127.0.0.1:0", "--mysql", "", "--starrocks-version", "2.5"})
	assert.ErrorContains(t, err, "starting the emulator: the StarRocks version 2.5.0 is older than the emulator models")
}
