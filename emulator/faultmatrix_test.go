package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// matrixOp is one HTTP operation of the fault matrix: setup brings a fresh
// label to the point just before the operation, request builds it, and
// applied reports whether the operation took effect server-side.
type matrixOp struct {
	name    string
	op      Op
	setup   func(c *client, label string)
	request func(e *Emulator, label string) *http.Request
	applied func(t *testing.T, e *Emulator, c *client, label string) bool
}

func newRequest(t *testing.T, method, url string, h hdrs, body string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	r.SetBasicAuth("root", "")
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return r
}

// labelState reads get_load_state without going through the fault queue's
// get_load_state faults (they are all consumed by the time it runs).
func labelState(e *Emulator, db, label string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := e.latestLocked(db, label); t != nil {
		return t.labelState()
	}
	return statusUnknown
}

// matrixOps are the operations of the matrix; v3 leaves out the multi-table ones, which a
// 3.x FE does not have, and reads and cancels a classic transaction instead.
func matrixOps(t *testing.T, v3 bool) []matrixOp {
	orderBody := func(label string) string {
		// one row whose key is derived from the label, so rows are countable
		var id int
		for _, c := range label {
			id = id*31 + int(c)
		}
		return fmt.Sprintf(`[{"order_id":%d,"customer_id":1,"total_amount":"1.00","order_status":"x"}]`, id%1000000)
	}
	state := func(want string) func(t *testing.T, e *Emulator, c *client, label string) bool {
		return func(t *testing.T, e *Emulator, c *client, label string) bool {
			return labelState(e, "test", label) == want
		}
	}
	multiLoaded := func(c *client, label string) {
		c.multiTxn(label, [2]string{"orders", orderBody(label)})
	}
	classicLoaded := func(c *client, label string) {
		requireStatus(c.t, c.begin(ctlH(label)), "OK", "")
		requireStatus(c.t, c.load(classicH(label), orderBody(label)), "OK", "")
	}
	classicPrepared := func(c *client, label string) {
		classicLoaded(c, label)
		requireStatus(c.t, c.prepare(ctlH(label)), "OK", "")
	}
	readSetup := multiLoaded
	if v3 {
		readSetup = classicLoaded
	}
	// loadedRows commits the label (whatever the faulted load did) and
	// tells whether its row arrived.
	loadedRows := func(commit func(c *client, label string)) func(t *testing.T, e *Emulator, c *client, label string) bool {
		return func(t *testing.T, e *Emulator, c *client, label string) bool {
			before := countRows(t, e, "orders")
			commit(c, label)
			return countRows(t, e, "orders") > before
		}
	}
	ops := []matrixOp{
		{
			name: "multi begin", op: OpBegin,
			setup: func(*client, string) {},
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPost, e.FEURL()+"/api/transaction/begin", multiH("test", l), "")
			},
			applied: func(t *testing.T, e *Emulator, c *client, l string) bool {
				e.mu.Lock()
				defer e.mu.Unlock()
				return e.multi[l] != nil
			},
		},
		{
			name: "classic begin", op: OpBegin,
			setup: func(*client, string) {},
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPost, e.FEURL()+"/api/transaction/begin", ctlH(l), "")
			},
			applied: state(statusPrepare),
		},
		{
			name: "multi load", op: OpLoad,
			setup: func(c *client, l string) { requireStatus(c.t, c.begin(multiH("test", l)), "OK", "") },
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPut, e.FEURL()+"/api/transaction/load", jsonLoadH("test", l, "orders"), orderBody(l))
			},
			applied: loadedRows(func(c *client, l string) { c.commit(multiH("test", l)) }),
		},
		{
			name: "classic load", op: OpLoad,
			setup: func(c *client, l string) { requireStatus(c.t, c.begin(ctlH(l)), "OK", "") },
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPut, e.FEURL()+"/api/transaction/load", classicH(l), orderBody(l))
			},
			applied: loadedRows(func(c *client, l string) { c.commit(ctlH(l)) }),
		},
		{
			name: "classic prepare", op: OpPrepare, setup: classicLoaded,
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPost, e.FEURL()+"/api/transaction/prepare", ctlH(l), "")
			},
			applied: state(statusPrepared),
		},
		{
			name: "multi commit", op: OpCommit, setup: multiLoaded,
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPost, e.FEURL()+"/api/transaction/commit", multiH("test", l), "")
			},
			applied: state(statusVisible),
		},
		{
			name: "classic commit", op: OpCommit, setup: classicLoaded,
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPost, e.FEURL()+"/api/transaction/commit", ctlH(l), "")
			},
			applied: state(statusVisible),
		},
		{
			// the FE's own commit (commitPreparedTransaction): the second phase
			name: "classic commit of a prepared label", op: OpCommit, setup: classicPrepared,
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPost, e.FEURL()+"/api/transaction/commit", ctlH(l), "")
			},
			applied: state(statusVisible),
		},
		{
			name: "classic rollback of a prepared label", op: OpRollback, setup: classicPrepared,
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPost, e.FEURL()+"/api/transaction/rollback", ctlH(l), "")
			},
			applied: state(statusAborted),
		},
		{
			name: "multi rollback", op: OpRollback, setup: multiLoaded,
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPost, e.FEURL()+"/api/transaction/rollback", multiH("test", l), "")
			},
			applied: state(statusAborted),
		},
		{
			name: "classic rollback", op: OpRollback, setup: classicLoaded,
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPost, e.FEURL()+"/api/transaction/rollback", ctlH(l), "")
			},
			applied: state(statusAborted),
		},
		{
			name: "get_load_state", op: OpGetLoadState, setup: readSetup,
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodGet, e.FEURL()+"/api/test/get_load_state?label="+l, nil, "")
			},
			// A read: "applied" is that it was answered from the state,
			// which the request counter shows.
			applied: nil,
		},
		{
			name: "cancel", op: OpCancel, setup: readSetup,
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPost, e.FEURL()+"/api/test/"+l+"/_cancel", nil, "")
			},
			applied: state(statusAborted),
		},
		{
			name: "stream_load", op: OpStreamLoad, setup: func(*client, string) {},
			request: func(e *Emulator, l string) *http.Request {
				return newRequest(t, http.MethodPut, e.FEURL()+"/api/test/orders/_stream_load",
					hdrs{"label": l, "format": "json", "strip_outer_array": "true"}, orderBody(l))
			},
			applied: state(statusVisible),
		},
	}
	if !v3 {
		return ops
	}
	classic := ops[:0]
	for _, op := range ops {
		if !strings.HasPrefix(op.name, "multi ") {
			classic = append(classic, op)
		}
	}
	return classic
}

// outcome is what the client of one faulted request saw.
type outcome struct {
	err     error
	code    int
	status  string // Status / status of the JSON reply
	elapsed time.Duration
}

// send makes one request on a fresh connection: on a reused one, net/http
// retries an idempotent request (get_load_state) that was reset, and the
// second try would hide the fault.
func send(t *testing.T, r *http.Request, timeout time.Duration) outcome {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start := time.Now()
	res, err := hc.Do(r)
	if err != nil {
		return outcome{err: err, elapsed: time.Since(start)}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	o := outcome{err: err, code: res.StatusCode, elapsed: time.Since(start)}
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		if s, ok := m["Status"].(string); ok {
			o.status = s
		} else if s, ok := m["status"].(string); ok {
			o.status = s
		}
	}
	return o
}

// TestFaultMatrixHTTP runs every HTTP operation the output uses under each
// outcome a remote call can have — refused definitely, not applied and
// reset, applied and the reply lost, applied and the reply after the
// client's timeout (and after a patient client's wait), slow — and checks
// both sides: what the client saw and whether the operation took effect.
func TestFaultMatrixHTTP(t *testing.T) {
	t.Parallel()
	const late = 400 * time.Millisecond
	type cell struct {
		name    string
		fault   func(op Op) Fault
		timeout time.Duration
		applied bool
		check   func(t *testing.T, o outcome)
	}
	transportErr := func(t *testing.T, o outcome) { require.Error(t, o.err, "the client sees no reply") }
	cells := []cell{
		{"refused", func(op Op) Fault { return Fault{Op: op, Action: ActInternalError} }, 5 * time.Second, false,
			func(t *testing.T, o outcome) {
				require.NoError(t, o.err)
				assert.Equal(t, http.StatusOK, o.code)
				assert.Contains(t, []string{"INTERNAL_ERROR", "FAILED", "Fail"}, o.status)
			}},
		{"reset", func(op Op) Fault { return Fault{Op: op, Action: ActReset} }, 5 * time.Second, false, transportErr},
		{"reply_lost", func(op Op) Fault { return Fault{Op: op, Action: ActReplyLost} }, 5 * time.Second, true, transportErr},
		{"<op>_reply_lost", func(op Op) Fault { return Fault{Op: op, Action: Action(string(op) + "_reply_lost")} }, 5 * time.Second, true, transportErr},
		{"reply_late past the client's timeout", func(op Op) Fault { return Fault{Op: op, Action: ActReplyLate, Delay: 5 * time.Second} },
			late, true, func(t *testing.T, o outcome) {
				require.Error(t, o.err, "the client gave up first")
				assert.GreaterOrEqual(t, o.elapsed, late)
			}},
		{"reply_late to a patient client", func(op Op) Fault { return Fault{Op: op, Action: ActReplyLate, Delay: late} },
			10 * time.Second, true, func(t *testing.T, o outcome) {
				require.NoError(t, o.err)
				assert.Equal(t, http.StatusOK, o.code)
				assert.Contains(t, []string{"OK", "Success"}, o.status, "the normal reply, late")
				assert.GreaterOrEqual(t, o.elapsed, late)
			}},
		{"no_answer", func(op Op) Fault { return Fault{Op: op, Action: ActNoAnswer} }, late, true, transportErr},
		{"slow", func(op Op) Fault { return Fault{Op: op, Action: ActDelay, Delay: late} }, 10 * time.Second, true,
			func(t *testing.T, o outcome) {
				require.NoError(t, o.err)
				assert.Contains(t, []string{"OK", "Success"}, o.status)
				assert.GreaterOrEqual(t, o.elapsed, late)
			}},
	}
	var n atomic.Int64
	for _, version := range []string{"", "3.3"} {
		for _, op := range matrixOps(t, version != "") {
			// One emulator per operation: the cells of one operation run in
			// order (a fault is taken by the next matching request), the
			// operations in parallel.
			name := op.name
			if version != "" {
				name = version + " " + name
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				e := startEmu(t, func(c *Config) { c.StarRocksVersion = version })
				for _, cl := range cells {
					t.Run(cl.name, func(t *testing.T) {
						c := newClient(t, e)
						label := fmt.Sprintf("fm%d", n.Add(1))
						op.setup(c, label)
						before := e.Counters().LabelStates
						require.NoError(t, e.Faults().Add(cl.fault(op.op)))
						cl.check(t, send(t, op.request(e, label), cl.timeout))
						assert.Empty(t, e.Faults().Pending(), "the fault fired")
						if op.applied == nil {
							assert.Equal(t, before+1, e.Counters().LabelStates)
							return
						}
						if cl.applied {
							require.Eventually(t, func() bool { return op.applied(t, e, c, label) }, 5*time.Second, 10*time.Millisecond,
								"the operation took effect")
						} else {
							assert.False(t, op.applied(t, e, c, label), "the operation did not take effect")
						}
					})
				}
			})
		}
	}
}

// TestFaultValidation: every action names the ops it fits, aliases keep
// their op, and MySQL-only fields stay on op mysql.
func TestFaultValidation(t *testing.T) {
	t.Parallel()
	for _, op := range httpOps {
		for _, a := range []Action{ActReplyLost, ActReplyLate, ActNoAnswer, ActReset, ActDelay, ActInternalError} {
			assert.NoError(t, Fault{Op: op, Action: a}.Validate(), "%s on %s", a, op)
		}
		assert.NoError(t, Fault{Op: op, Action: Action(string(op) + "_reply_lost")}.Validate())
		assert.ErrorContains(t, Fault{Op: op, Action: ActSQLError}.Validate(), `only applies to op "mysql"`)
	}
	assert.ErrorContains(t, Fault{Op: OpLoad, Action: ActCommitReplyLost}.Validate(), `only applies to op "commit"`)
	assert.ErrorContains(t, Fault{Op: OpMySQL, Action: ActInternalError}.Validate(), "does not apply to op mysql")
	assert.ErrorContains(t, Fault{Op: OpLoad, Action: ActReset, Statement: "x"}.Validate(), "only applies to op mysql")
	assert.ErrorContains(t, Fault{Op: OpMySQL, Action: ActReset, Statement: "("}.Validate(), "not a valid regular expression")
	assert.ErrorContains(t, Fault{Op: "list", Action: ActReset}.Validate(), "unknown")
	assert.NoError(t, Fault{Op: OpCommit, Action: ActCommitReset}.Validate(), "the older names keep working")
	assert.NoError(t, Fault{Op: OpCommit, Action: ActCommitNoAnswer}.Validate())
	assert.Equal(t, ActReplyLost, ActCommitReset.canonical())
	assert.Equal(t, ActReplyLost, ActLoadReplyLost.canonical())
	assert.Equal(t, ActNoAnswer, ActCommitNoAnswer.canonical())
}

// TestFaultReplyLostWithBE: with a BE, the load fault fires where the load
// is applied (the BE), after the FE's redirect; the rows are in the
// transaction although the client saw a reset.
func TestFaultReplyLostWithBE(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.BEAddr = "127.0.0.1:0" })
	c := newClient(t, e)
	requireStatus(t, c.begin(multiH("test", "rb")), "OK", "")
	require.NoError(t, e.Faults().Add(Fault{Op: OpLoad, Action: ActLoadReplyLost}))
	r := c.load(jsonLoadH("test", "rb", "orders"), orderRows(1, 3))
	require.Equal(t, http.StatusTemporaryRedirect, r.code, "the FE redirects; the fault waits for the BE")
	require.Len(t, e.Faults().Pending(), 1)
	o := send(t, newRequest(t, http.MethodPut, r.hdr.Get("Location"), jsonLoadH("test", "rb", "orders"), orderRows(1, 3)), 5*time.Second)
	require.Error(t, o.err)
	requireStatus(t, c.commit(multiH("test", "rb")), "OK", "")
	assert.Equal(t, 3, countRows(t, e, "orders"), "the load whose reply was lost was applied")
}
