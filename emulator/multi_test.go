package emulator

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const pfx = "class com.starrocks.common.StarRocksException: "

// TestMultiCurlFlow is the documented curl conversation: begin, two loads to
// two tables, prepare refused, commit, VISIBLE, rows over the MySQL port.
func TestMultiCurlFlow(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MySQLAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	db := openMySQL(t, e)

	t.Log("Given: a multi-table transaction with loads to orders and order_items")
	r := c.begin(multiH("test", "flow1", "timeout", "60"))
	requireStatus(t, r, "OK", "")
	assert.Len(t, r.m, 2, "a multi begin reply is bare: %s", r.raw)
	requireStatus(t, c.load(jsonLoadH("test", "flow1", "orders"), orderRows(1, 3)), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "flow1", "order_items"), itemRows(1, 3)), "OK", "")

	t.Log("When: prepare is attempted, it is refused without side effect")
	requireStatus(t, c.prepare(multiH("test", "flow1")), "FAILED", pfx+"Unsupported operation: TXN_PREPARE")
	assert.Equal(t, "PREPARE", c.state("test", "flow1"))

	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n))
	assert.Equal(t, 0, n, "nothing is visible before commit")

	t.Log("Then: commit makes both tables visible")
	r = c.commit(multiH("test", "flow1"))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, "flow1", r.str("Label"))
	assert.NotZero(t, r.num("TxnId"))
	assert.NotContains(t, r.m, "NumberLoadedRows")
	assert.Equal(t, "VISIBLE", c.state("test", "flow1"))
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n))
	assert.Equal(t, 3, n)
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM order_items WHERE quantity = 2").Scan(&n))
	assert.Equal(t, 3, n)

	ctr := e.Counters()
	assert.Equal(t, int64(1), ctr.Begins)
	assert.Equal(t, int64(2), ctr.Loads)
	assert.Equal(t, int64(1), ctr.Commits)
	assert.Equal(t, int64(1), ctr.Prepares)
	assert.Equal(t, int64(6), ctr.Rows)
	assert.Positive(t, ctr.Bytes)
}

// TestFERequestChecks covers docs/notes/starrocks-protocol.md §1.2: op parsing, db/label presence, timeout
// parsing, malformed control bodies, methods.
func TestFERequestChecks(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	cases := []struct {
		name, method, path string
		h                  hdrs
		body               string
		code               int
		status, msg        string
	}{
		{"unknown op", "POST", "/api/transaction/list", multiH("test", "x"), "", 200, "FAILED", pfx + "Unknown transaction operation: list"},
		{"op case-insensitive", "POST", "/api/transaction/BeGiN", multiH("test", "ci1"), "", 200, "OK", ""},
		{"transaction_type case-insensitive", "POST", "/api/transaction/begin", hdrs{"db": "test", "label": "ci2", "transaction_type": "MULTI"}, "", 200, "OK", ""},
		{"missing db", "POST", "/api/transaction/begin", hdrs{"label": "x", "transaction_type": "multi"}, "", 200, "FAILED", pfx + "No database selected."},
		{"missing label", "POST", "/api/transaction/begin", hdrs{"db": "test", "transaction_type": "multi"}, "", 200, "FAILED", pfx + "Empty label."},
		{"missing label classic", "PUT", "/api/transaction/load", hdrs{"db": "test"}, "", 200, "FAILED", pfx + "Empty label."},
		{"bad timeout", "POST", "/api/transaction/begin", multiH("test", "x", "timeout", "abc"), "", 200, "FAILED", `class java.lang.NumberFormatException: For input string: "abc"`},
		{"unknown db", "POST", "/api/transaction/begin", multiH("nodb", "x"), "", 200, "FAILED", pfx + "Database[nodb] does not exist"},
		{"bad label", "POST", "/api/transaction/begin", multiH("test", "a.b"), "", 200, "FAILED", pfx + `Label format error. regex: ^[-\w]{1,128}$, label: a.b`},
		{"long label", "POST", "/api/transaction/begin", multiH("test", strings.Repeat("x", 129)), "", 200, "FAILED", pfx + `Label format error. regex: ^[-\w]{1,128}$, label: ` + strings.Repeat("x", 129)},
		{"128 label", "POST", "/api/transaction/begin", multiH("test", strings.Repeat("y", 128)), "", 200, "OK", ""},
		{"channel_id without channel_num", "POST", "/api/transaction/begin", multiH("test", "x", "channel_id", "0"), "", 200, "FAILED", pfx + "Must provide channel_num when stream load begin."},
		{"channel_num without channel_id", "POST", "/api/transaction/begin", multiH("test", "x", "channel_num", "2"), "", 200, "FAILED", pfx + "Must provide channel_id when stream load begin."},
		{"unknown label classic commit", "POST", "/api/transaction/commit", hdrs{"db": "test", "label": "nolabel"}, "", 200, "FAILED", pfx + "No transaction found with db[test] and label[nolabel]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(tc.method, tc.path, tc.h, tc.body)
			require.Equal(t, tc.code, r.code, r.raw)
			assert.Equal(t, tc.status, r.str("Status"), r.raw)
			assert.Equal(t, tc.msg, r.str("Message"), r.raw)
		})
	}
	t.Run("malformed json body", func(t *testing.T) {
		requireStatus(t, c.begin(multiH("test", "mj")), "OK", "")
		r := c.do("POST", "/api/transaction/commit", multiH("test", "mj"), "{not json")
		assert.Equal(t, http.StatusBadRequest, r.code, r.raw)
		assert.Equal(t, "Malformed json tablets, label is mj", r.str("msg"))
	})
	t.Run("GET is not a transaction method", func(t *testing.T) {
		r := c.do("GET", "/api/transaction/begin", multiH("test", "g"), "")
		assert.Equal(t, http.StatusMethodNotAllowed, r.code)
	})
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.Password = "s3cret" })
	paths := []struct{ method, path string }{
		{"POST", "/api/transaction/begin"},
		{"GET", "/api/test/get_load_state?label=x"},
		{"PUT", "/api/test/orders/_stream_load"},
		{"POST", "/api/test/x/_cancel"},
	}
	for _, p := range paths {
		c := newClient(t, e)
		c.user = ""
		r := c.do(p.method, p.path, multiH("test", "a1"), "")
		require.Equal(t, http.StatusUnauthorized, r.code, p.path)
		assert.Equal(t, `Basic realm=""`, r.hdr.Get("WWW-Authenticate"))
		assert.Equal(t, "FAILED", r.str("status"))
		assert.Equal(t, "1", r.str("code"))
		assert.Equal(t, r.str("msg"), r.str("message"))
		assert.NotEmpty(t, r.str("msg"))

		c.user, c.pass = "root", "wrong"
		r = c.do(p.method, p.path, multiH("test", "a1"), "")
		require.Equal(t, http.StatusUnauthorized, r.code)
		assert.Contains(t, r.str("msg"), "Access denied for user 'root'")
	}
	c := newClient(t, e)
	c.pass = "s3cret"
	requireStatus(t, c.begin(multiH("test", "a1")), "OK", "")
}

// TestMultiBegin is docs/notes/starrocks-protocol.md §5.3.
func TestMultiBegin(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	require.NoError(t, e.Store().ExecScript("CREATE DATABASE other; CREATE TABLE other.t (id BIGINT NOT NULL) PRIMARY KEY(id) DISTRIBUTED BY HASH(id);"))
	c := newClient(t, e)

	requireStatus(t, c.begin(multiH("test", "b1")), "OK", "")
	r := c.begin(multiH("test", "b1"))
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", fmt.Sprintf("Transaction already started with label [b1], txnId: %d", r.num("TxnId")))
	assert.Equal(t, "BEGIN", r.str("ExistingJobStatus"))
	assert.NotZero(t, r.num("TxnId"))
	id := r.num("TxnId")

	t.Log("a multi label is unique across databases")
	r = c.begin(multiH("other", "b1"))
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", fmt.Sprintf("Transaction already started with label [b1], txnId: %d", id))

	t.Log("after a rollback the label cannot be begun again while retained")
	requireStatus(t, c.rollback(multiH("test", "b1")), "OK", "stream load b1 abort")
	r = c.begin(multiH("test", "b1"))
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", fmt.Sprintf("Transaction already started with label [b1], txnId: %d", id))
	assert.Equal(t, "CANCELLED", r.str("ExistingJobStatus"))

	t.Log("after a commit: Label has already been used, FINISHED")
	c.multiTxn("b2", [2]string{"orders", orderRows(1, 1)})
	requireStatus(t, c.commit(multiH("test", "b2")), "OK", "")
	r = c.begin(multiH("test", "b2"))
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", "Label [b2] has already been used.")
	assert.Equal(t, "FINISHED", r.str("ExistingJobStatus"))

	t.Log("a label used by a running classic transaction of another database")
	requireStatus(t, c.begin(hdrs{"db": "other", "label": "b3", "table": "t"}), "OK", "")
	r = c.begin(multiH("test", "b3"))
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", "Label [b3] has already been used.")
	assert.Equal(t, "PREPARE", r.str("ExistingJobStatus"))
	assert.Equal(t, "other", r.str("Db"))
}

// TestMultiLoad is docs/notes/starrocks-protocol.md §5.4.
func TestMultiLoad(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	require.NoError(t, e.Store().ExecScript("CREATE DATABASE other; CREATE TABLE other.orders (order_id BIGINT NOT NULL) PRIMARY KEY(order_id) DISTRIBUTED BY HASH(order_id);"))
	c := newClient(t, e)

	t.Run("unknown label", func(t *testing.T) {
		requireStatus(t, c.load(jsonLoadH("test", "nol", "orders"), orderRows(1, 1)), "FAILED", pfx+"stream load task nol does not exist")
	})
	t.Run("reply has no row counts", func(t *testing.T) {
		requireStatus(t, c.begin(multiH("test", "l1")), "OK", "")
		body := orderRows(1, 2)
		r := c.load(jsonLoadH("test", "l1", "orders"), body)
		requireStatus(t, r, "OK", "")
		keys := make([]string, 0, len(r.m))
		for k := range r.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		assert.Equal(t, []string{"Label", "LoadBytes", "Message", "ReceivedDataTimeMs", "Status", "StreamLoadPlanTimeMs", "TxnId"}, keys)
		assert.Equal(t, int64(len(body)), r.num("LoadBytes"))
		assert.Equal(t, "l1", r.str("Label"))
	})
	t.Run("per-table parameters fixed by the first load", func(t *testing.T) {
		r := c.load(jsonLoadH("test", "l1", "orders", "max_filter_ratio", "0.5"), orderRows(3, 1))
		requireStatus(t, r, "INVALID_ARGUMENT", "load request not equal last.")
		t.Log("another table may use other headers")
		requireStatus(t, c.load(jsonLoadH("test", "l1", "order_items", "max_filter_ratio", "0.5"), itemRows(1, 1)), "OK", "")
		t.Log("the rejected load ingested nothing and did not abort the transaction")
		requireStatus(t, c.commit(multiH("test", "l1")), "OK", "")
		assert.Equal(t, 2, countRows(t, e, "orders"))
	})
	t.Run("wrong db aborts", func(t *testing.T) {
		c.multiTxn("l2", [2]string{"orders", orderRows(10, 1)})
		requireStatus(t, c.load(jsonLoadH("other", "l2", "orders"), orderRows(11, 1)), "FAILED", pfx+"Request database other not equal transaction database test")
		assert.Equal(t, "ABORTED", c.state("test", "l2"))
		r := c.load(jsonLoadH("test", "l2", "orders"), orderRows(11, 1))
		requireStatus(t, r, "FAILED", pfx+"stream load task l2 has already been cancelled: LOAD exception: Request database other not equal transaction database test")
	})
	t.Run("unknown table aborts", func(t *testing.T) {
		c.multiTxn("l3", [2]string{"orders", orderRows(20, 1)})
		requireStatus(t, c.load(jsonLoadH("test", "l3", "nope"), orderRows(21, 1)), "FAILED", pfx+"Failed to find table nope in db test")
		assert.Equal(t, "ABORTED", c.state("test", "l3"))
		r := c.commit(multiH("test", "l3"))
		requireStatus(t, r, "FAILED", fmt.Sprintf("Can not commit CANCELLED transaction %d, label is l3", txnID(t, e, "l3")))
	})
	t.Run("bad header on a first load aborts", func(t *testing.T) {
		c.multiTxn("l4")
		requireStatus(t, c.load(jsonLoadH("test", "l4", "orders", "strict_mode", "maybe"), orderRows(30, 1)), "FAILED", pfx+"Invalid strict mode format. Must be bool type")
		r := c.load(jsonLoadH("test", "l4", "orders"), orderRows(30, 1))
		assert.Equal(t, "FAILED", r.str("Status"))
		assert.Contains(t, r.str("Message"), "stream load task l4 has already been cancelled")
	})
	t.Run("after commit", func(t *testing.T) {
		c.multiTxn("l5", [2]string{"orders", orderRows(40, 1)})
		requireStatus(t, c.commit(multiH("test", "l5")), "OK", "")
		requireStatus(t, c.load(jsonLoadH("test", "l5", "orders"), orderRows(41, 1)), "FAILED", pfx+"stream load task l5 has already been finished")
	})
}

func txnID(t testing.TB, e *Emulator, label string) int64 {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	tx := e.multi[label]
	require.NotNil(t, tx, label)
	return tx.id
}

// slowBody is a request body the test releases by hand.
type slowBody struct {
	first   string
	started chan struct{}
	release chan struct{}
	rest    string
	stage   int
}

func (s *slowBody) Read(p []byte) (int, error) {
	switch s.stage {
	case 0:
		s.stage = 1
		close(s.started)
		return copy(p, s.first), nil
	case 1:
		<-s.release
		s.stage = 2
		return copy(p, s.rest), nil
	}
	return 0, io.EOF
}

// TestMultiConcurrentLoads: a second load of the same (label, table) while
// one is in flight gets TXN_IN_PROCESSING and ingests nothing; another table
// loads concurrently.
func TestMultiConcurrentLoads(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	c.multiTxn("cl")
	body := orderRows(1, 2)
	sb := &slowBody{first: body[:10], rest: body[10:], started: make(chan struct{}), release: make(chan struct{})}
	req, err := http.NewRequest(http.MethodPut, e.FEURL()+"/api/transaction/load", sb)
	require.NoError(t, err)
	req.SetBasicAuth("root", "")
	for k, v := range jsonLoadH("test", "cl", "orders") {
		req.Header.Set(k, v)
	}
	req.ContentLength = int64(len(body))
	waitFirst := sendAsync(t, req)
	<-sb.started
	// Wait until the emulator marked the channel busy.
	require.Eventually(t, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		tl := e.multi["cl"].byTable["orders"]
		return tl != nil && tl.busy
	}, 5*time.Second, 5*time.Millisecond)
	r := c.load(jsonLoadH("test", "cl", "orders"), orderRows(100, 5))
	requireStatus(t, r, "TXN_IN_PROCESSING", "Transaction is in processing")
	assert.Equal(t, "cl", r.str("Label"))
	requireStatus(t, c.load(jsonLoadH("test", "cl", "order_items"), itemRows(1, 2)), "OK", "")
	close(sb.release)
	first := waitFirst()
	assert.Contains(t, first.raw, `"Status":"OK"`)
	requireStatus(t, c.commit(multiH("test", "cl")), "OK", "")
	assert.Equal(t, 2, countRows(t, e, "orders"), "the rejected load ingested nothing")
	assert.Equal(t, 2, countRows(t, e, "order_items"))
}

var wrapRe = regexp.MustCompile(`^STREAM_LOAD_TASK:\d+, label\{([-\w]+)\}, error_msg\{cancel stream task for exception: (.*)\}$`)

// TestMultiCommit is docs/notes/starrocks-protocol.md §5.5: replies by state and the data-quality checks.
func TestMultiCommit(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)

	t.Run("unknown label", func(t *testing.T) {
		requireStatus(t, c.commit(multiH("test", "nope")), "FAILED", pfx+"stream load task nope does not exist")
	})
	t.Run("no loads: OK, as StarRocks answers (test_multi_txn_edge_cases)", func(t *testing.T) {
		c.multiTxn("c0")
		r := c.commit(multiH("test", "c0"))
		requireStatus(t, r, "OK", "")
		assert.NotContains(t, r.m, "ChannelId", "no table, no channel entries")
		c.multiTxn("c0r")
		requireStatus(t, c.rollback(multiH("test", "c0r")), "OK", "stream load c0r abort")
	})
	t.Run("committed twice", func(t *testing.T) {
		c.multiTxn("c1", [2]string{"orders", orderRows(1, 2)})
		requireStatus(t, c.commit(multiH("test", "c1")), "OK", "")
		id := txnID(t, e, "c1")
		r := c.commit(multiH("test", "c1"))
		requireStatus(t, r, "OK", fmt.Sprintf("Transaction %d has already committed, label is c1", id))
		assert.Equal(t, "c1", r.str("Label"))
		assert.Equal(t, id, r.num("TxnId"))
	})
	t.Run("a table with zero loaded rows aborts everything", func(t *testing.T) {
		c.multiTxn("c2", [2]string{"order_items", itemRows(500, 2)}, [2]string{"orders", badOrderRows(500, 2)})
		r := c.commit(multiH("test", "c2"))
		require.Equal(t, "FAILED", r.str("Status"), r.raw)
		m := wrapRe.FindStringSubmatch(r.str("Message"))
		require.NotNil(t, m, r.str("Message"))
		assert.Equal(t, "c2", m[1])
		// newer builds name the table and its rejected rows (test_multi_table_all_rows_rejected_tracking)
		require.True(t, strings.HasPrefix(m[2], "Failed to load table orders: "+errNoRowsImported+", tracking_url: http://"), m[2])
		log := c.do("GET", m[2][strings.Index(m[2], "http://"):], nil, "")
		assert.Contains(t, log.raw, "customer_id", "the error log names the column")
		assert.Equal(t, "ABORTED", c.state("test", "c2"))
		assert.Equal(t, 2, countRows(t, e, "orders"), "nothing of c2 is visible")
		assert.Equal(t, 0, countRows(t, e, "order_items"))
		assert.Equal(t, "c2", r.str("Label"))
		assert.Contains(t, r.m, "ChannelId")
		assert.Contains(t, r.m, "Prepared Channel Num")
	})
	t.Run("filtered over the ratio", func(t *testing.T) {
		mixed := "[" + strings.Trim(orderRows(600, 1), "[]") + "," + strings.Trim(badOrderRows(601, 1), "[]") + "]"
		c.multiTxn("c3", [2]string{"orders", mixed})
		r := c.commit(multiH("test", "c3"))
		m := wrapRe.FindStringSubmatch(r.str("Message"))
		require.NotNil(t, m, r.raw)
		require.True(t, strings.HasPrefix(m[2], "Failed to load table orders: abnormal data more than max filter rate, tracking_url: http://"), m[2])
		url := strings.TrimPrefix(m[2], "Failed to load table orders: abnormal data more than max filter rate, tracking_url: ")
		log := c.do("GET", url, nil, "")
		assert.Equal(t, http.StatusOK, log.code)
		assert.NotEmpty(t, log.raw, "the error log lists the filtered row")
		assert.Equal(t, "ABORTED", c.state("test", "c3"))

		t.Log("with max_filter_ratio 0.5 the same data commits")
		requireStatus(t, c.begin(multiH("test", "c3b")), "OK", "")
		requireStatus(t, c.load(jsonLoadH("test", "c3b", "orders", "max_filter_ratio", "0.5"), mixed), "OK", "")
		requireStatus(t, c.commit(multiH("test", "c3b")), "OK", "")
		assert.Equal(t, 3, countRows(t, e, "orders"))
	})
	t.Run("delete rows count as loaded", func(t *testing.T) {
		c.multiTxn("c4", [2]string{"orders", `[{"order_id":600,"customer_id":7,"__op":1}]`})
		requireStatus(t, c.commit(multiH("test", "c4")), "OK", "")
		assert.Equal(t, 2, countRows(t, e, "orders"))
	})
	t.Run("malformed document surfaces at commit", func(t *testing.T) {
		c.multiTxn("c5", [2]string{"orders", orderRows(700, 1)}, [2]string{"orders", `[{"order_id":`})
		r := c.commit(multiH("test", "c5"))
		m := wrapRe.FindStringSubmatch(r.str("Message"))
		require.NotNil(t, m, r.raw)
		assert.NotEqual(t, errNoRowsImported, m[2])
		assert.Equal(t, "ABORTED", c.state("test", "c5"))
	})
	t.Run("cancelled", func(t *testing.T) {
		c.multiTxn("c6", [2]string{"orders", orderRows(800, 1)})
		requireStatus(t, c.rollback(multiH("test", "c6")), "OK", "stream load c6 abort")
		requireStatus(t, c.commit(multiH("test", "c6")), "FAILED", fmt.Sprintf("Can not commit CANCELLED transaction %d, label is c6", txnID(t, e, "c6")))
	})
	t.Run("aborting", func(t *testing.T) {
		c.multiTxn("c7", [2]string{"orders", orderRows(900, 1)})
		require.NoError(t, e.Faults().Add(Fault{Op: OpRollback, Action: ActAbortPending, Delay: 1500 * time.Millisecond}))
		requireStatus(t, c.rollback(multiH("test", "c7")), "OK", "stream load c7 abort initiated, rollback pending (background retry will continue)")
		id := txnID(t, e, "c7")
		requireStatus(t, c.commit(multiH("test", "c7")), "FAILED", fmt.Sprintf("Transaction %d is aborting (reason: user rollback), label is c7", id))
		requireStatus(t, c.rollback(multiH("test", "c7")), "OK", fmt.Sprintf("Transaction %d abort is already in progress, label is c7. Background retry will continue.", id))
		requireStatus(t, c.load(jsonLoadH("test", "c7", "orders"), orderRows(901, 1)), "FAILED", pfx+"stream load task c7 is aborting: user rollback")
		assert.Equal(t, "PREPARE", c.state("test", "c7"))
		require.Eventually(t, func() bool { return c.state("test", "c7") == "ABORTED" }, 5*time.Second, 20*time.Millisecond)
	})
	t.Run("committing", func(t *testing.T) {
		c.multiTxn("c8", [2]string{"orders", orderRows(1000, 1)})
		require.NoError(t, e.Faults().Add(Fault{Op: OpCommit, Action: ActCommitLate, Delay: 1500 * time.Millisecond}))
		r := c.commit(multiH("test", "c8"))
		assert.Equal(t, "FAILED", r.str("Status"), r.raw)
		id := txnID(t, e, "c8")
		requireStatus(t, c.commit(multiH("test", "c8")), "FAILED", fmt.Sprintf("Transaction %d is already committing, label is c8", id))
		requireStatus(t, c.rollback(multiH("test", "c8")), "FAILED", fmt.Sprintf("Can not abort transaction %d during committing, label is c8", id))
		requireStatus(t, c.load(jsonLoadH("test", "c8", "orders"), orderRows(1001, 1)), "FAILED", pfx+"stream load task c8 is committing, can not accept new loads")
		assert.Equal(t, "PREPARE", c.state("test", "c8"))
		require.Eventually(t, func() bool { return c.state("test", "c8") == "VISIBLE" }, 5*time.Second, 20*time.Millisecond)
		requireStatus(t, c.commit(multiH("test", "c8")), "OK", fmt.Sprintf("Transaction %d has already committed, label is c8", id))
	})
}

// TestMultiRollback is docs/notes/starrocks-protocol.md §5.6.
func TestMultiRollback(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	requireStatus(t, c.rollback(multiH("test", "zz")), "FAILED", pfx+"stream load taskzzdoes not exist")

	c.multiTxn("r1", [2]string{"orders", orderRows(1, 1)})
	requireStatus(t, c.rollback(multiH("test", "r1")), "OK", "stream load r1 abort")
	assert.Equal(t, "ABORTED", c.state("test", "r1"))
	id := txnID(t, e, "r1")
	r := c.rollback(multiH("test", "r1"))
	requireStatus(t, r, "OK", fmt.Sprintf("Transaction %d has already aborted, label is r1", id))
	assert.Equal(t, "r1", r.str("Label"))
	assert.Equal(t, id, r.num("TxnId"))
	assert.Equal(t, 0, countRows(t, e, "orders"))

	c.multiTxn("r2", [2]string{"orders", orderRows(1, 1)})
	requireStatus(t, c.commit(multiH("test", "r2")), "OK", "")
	requireStatus(t, c.rollback(multiH("test", "r2")), "FAILED", fmt.Sprintf("Can not abort VISIBLE transaction %d, label is r2", txnID(t, e, "r2")))
}
