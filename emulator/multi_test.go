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

// TestMultiTimeout: the transaction times out from BEGIN; later ops answer
// per state.
func TestMultiTimeout(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.DefaultTxnTimeout = 400 * time.Millisecond })
	c := newClient(t, e)

	t.Log("timeout header of 1 s, loads keep coming: still aborted 1 s after BEGIN")
	requireStatus(t, c.begin(multiH("test", "t1", "timeout", "1")), "OK", "")
	start := time.Now()
	for i := 0; time.Since(start) < 700*time.Millisecond; i++ {
		requireStatus(t, c.load(jsonLoadH("test", "t1", "orders"), orderRows(i, 1)), "OK", "")
		time.Sleep(100 * time.Millisecond)
	}
	if time.Since(start) < 900*time.Millisecond {
		assert.Equal(t, "PREPARE", c.state("test", "t1"))
	}
	require.Eventually(t, func() bool { return c.state("test", "t1") == "ABORTED" }, 3*time.Second, 20*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), time.Second)
	id := txnID(t, e, "t1")
	requireStatus(t, c.load(jsonLoadH("test", "t1", "orders"), orderRows(50, 1)), "FAILED", pfx+"stream load task t1 has already been cancelled: transaction timeout after 1000ms")
	requireStatus(t, c.commit(multiH("test", "t1")), "FAILED", fmt.Sprintf("Can not commit CANCELLED transaction %d, label is t1", id))
	requireStatus(t, c.rollback(multiH("test", "t1")), "OK", fmt.Sprintf("Transaction %d has already aborted, label is t1", id))

	t.Log("no timeout header: the default applies")
	requireStatus(t, c.begin(multiH("test", "t2")), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "t2", "orders"), orderRows(1, 1)), "OK", "")
	require.Eventually(t, func() bool { return c.state("test", "t2") == "ABORTED" }, 3*time.Second, 20*time.Millisecond)
	assert.Equal(t, 0, countRows(t, e, "orders"))
}

// TestMultiLabelStates: UNKNOWN until the first load, then PREPARE, VISIBLE
// or ABORTED.
func TestMultiLabelStates(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)
	requireStatus(t, c.begin(multiH("test", "s1")), "OK", "")
	assert.Equal(t, "UNKNOWN", c.state("test", "s1"))
	requireStatus(t, c.load(jsonLoadH("test", "s1", "orders"), orderRows(1, 1)), "OK", "")
	assert.Equal(t, "PREPARE", c.state("test", "s1"))
	requireStatus(t, c.commit(multiH("test", "s1")), "OK", "")
	assert.Equal(t, "VISIBLE", c.state("test", "s1"))

	requireStatus(t, c.begin(multiH("test", "s2")), "OK", "")
	requireStatus(t, c.rollback(multiH("test", "s2")), "OK", "stream load s2 abort")
	assert.Equal(t, "UNKNOWN", c.state("test", "s2"), "never loaded: never registered")

	t.Log("get_load_state errors")
	r := c.do("GET", "/api//get_load_state?label=x", nil, "")
	assert.Equal(t, "No database selected.", r.str("msg"))
	assert.Equal(t, "FAILED", r.str("status"))
	r = c.do("GET", "/api/test/get_load_state", nil, "")
	assert.Equal(t, "No label selected.", r.str("msg"))
	r = c.do("GET", "/api/nodb/get_load_state?label=x", nil, "")
	assert.Equal(t, 200, r.code)
	assert.Equal(t, "unknown database, database=nodb", r.str("msg"))
	r = c.do("GET", "/api/test/get_load_state?label=s1", nil, "")
	assert.Equal(t, `{"state":"VISIBLE","status":"OK","code":"0","msg":"Success","message":"OK"}`, r.raw)
}

// TestRunningTxnLimit: multi counted from the first load, classic at begin.
func TestRunningTxnLimit(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.MaxRunningTxnPerDB = 2 })
	c := newClient(t, e)
	dbID, ok := e.Store().DatabaseID("test")
	require.True(t, ok)
	for _, l := range []string{"m1", "m2", "m3"} {
		requireStatus(t, c.begin(multiH("test", l)), "OK", "")
	}
	requireStatus(t, c.load(jsonLoadH("test", "m1", "orders"), orderRows(1, 1)), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "m2", "orders"), orderRows(2, 1)), "OK", "")
	limitMsg := fmt.Sprintf("current running txns on db %d is 2, larger than limit 2", dbID)
	requireStatus(t, c.load(jsonLoadH("test", "m3", "orders"), orderRows(3, 1)), "FAILED", pfx+limitMsg)
	r := c.commit(multiH("test", "m3"))
	assert.Contains(t, r.str("Message"), "Can not commit CANCELLED transaction", "the limit error aborted m3")
	requireStatus(t, c.begin(hdrs{"db": "test", "label": "k1", "table": "orders"}), "ANALYSIS_ERROR", limitMsg)

	requireStatus(t, c.commit(multiH("test", "m1")), "OK", "")
	requireStatus(t, c.begin(hdrs{"db": "test", "label": "k1", "table": "orders"}), "OK", "")
	requireStatus(t, c.begin(multiH("test", "m4")), "OK", "")
	requireStatus(t, c.load(jsonLoadH("test", "m4", "orders"), orderRows(4, 1)), "FAILED", pfx+limitMsg)
}

// TestLabelRetention: finished labels are kept by count and by age.
func TestLabelRetention(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.LabelKeepMax = 2 })
	c := newClient(t, e)
	for _, l := range []string{"k1", "k2", "k3"} {
		c.multiTxn(l, [2]string{"orders", orderRows(1, 1)})
		requireStatus(t, c.commit(multiH("test", l)), "OK", "")
	}
	assert.Equal(t, "UNKNOWN", c.state("test", "k1"), "beyond the count")
	assert.Equal(t, "VISIBLE", c.state("test", "k2"))
	requireStatus(t, c.begin(multiH("test", "k1")), "OK", "")

	e2 := startEmu(t, func(c *Config) { c.LabelKeepMaxAge = time.Second })
	c2 := newClient(t, e2)
	c2.multiTxn("a1", [2]string{"orders", orderRows(1, 1)})
	requireStatus(t, c2.commit(multiH("test", "a1")), "OK", "")
	assert.Equal(t, "VISIBLE", c2.state("test", "a1"))
	require.Eventually(t, func() bool { return c2.state("test", "a1") == "UNKNOWN" }, 3*time.Second, 20*time.Millisecond)
	requireStatus(t, c2.begin(multiH("test", "a1")), "OK", "")
}

// TestMultiRegistrationLabelCheck is docs/notes/starrocks-protocol.md §5.7: the multi transaction is admitted
// (label check, then running limit) when its first load registers it; a
// label taken meanwhile by a classic transaction of the db fails that load
// with LabelAlreadyUsedException and aborts the whole multi transaction,
// and the classic transaction receives nothing.
func TestMultiRegistrationLabelCheck(t *testing.T) {
	t.Parallel()
	e := startEmu(t, nil)
	c := newClient(t, e)

	t.Log("Given: a begun multi transaction (not registered yet) and a classic begin with its label")
	requireStatus(t, c.begin(multiH("test", "lc1")), "OK", "")
	assert.Equal(t, "UNKNOWN", c.state("test", "lc1"))
	r := c.begin(ctlH("lc1"))
	requireStatus(t, r, "OK", "")
	classicID := r.num("TxnId")

	t.Log("When: the multi transaction's first load registers it")
	r = c.load(jsonLoadH("test", "lc1", "orders"), orderRows(1, 2))

	t.Log("Then: the label check fails the load and aborts the multi transaction")
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", "Label [lc1] has already been used.")
	assert.Equal(t, []string{"ExistingJobStatus", "Message", "Status"}, keysOf(r))
	assert.Equal(t, "RUNNING", r.str("ExistingJobStatus"))
	multiID := txnID(t, e, "lc1")
	requireStatus(t, c.commit(multiH("test", "lc1")), "FAILED",
		fmt.Sprintf("Can not commit CANCELLED transaction %d, label is lc1", multiID))

	t.Log("And: the classic transaction got none of the multi rows and still works")
	r = c.load(classicH("lc1"), orderRows(10, 1))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, classicID, r.num("TxnId"))
	r = c.commit(ctlH("lc1"))
	requireStatus(t, r, "OK", "")
	assert.Equal(t, int64(1), r.num("NumberLoadedRows"), r.raw)
	assert.Equal(t, 1, countRows(t, e, "orders"))

	t.Log("A label the classic path committed meanwhile reports FINISHED")
	requireStatus(t, c.begin(multiH("test", "lc2")), "OK", "")
	requireStatus(t, c.begin(ctlH("lc2")), "OK", "")
	requireStatus(t, c.load(classicH("lc2"), orderRows(20, 1)), "OK", "")
	requireStatus(t, c.commit(ctlH("lc2")), "OK", "")
	r = c.load(jsonLoadH("test", "lc2", "orders"), orderRows(30, 1))
	requireStatus(t, r, "LABEL_ALREADY_EXISTS", "Label [lc2] has already been used.")
	assert.Equal(t, "FINISHED", r.str("ExistingJobStatus"))
	requireStatus(t, c.rollback(multiH("test", "lc2")), "OK",
		fmt.Sprintf("Transaction %d has already aborted, label is lc2", txnID(t, e, "lc2")))
	assert.Equal(t, "VISIBLE", c.state("test", "lc2"))
	assert.Equal(t, 2, countRows(t, e, "orders"))
}

// TestMultiLoadRoutedByTransactionType: on the BE, a load carrying
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

// TestMultiSizeLimitsPerChannel is docs/notes/starrocks-protocol.md §5.4: in multi mode the BE context is
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

// TestLoadParamsComparedParsed is docs/notes/starrocks-protocol.md §2.2: the BE caches a context's parsed
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

// TestMultiRollbackCommitted is docs/notes/starrocks-protocol.md §5.6: both final committed states (COMMITED
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
