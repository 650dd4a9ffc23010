package starrocks_txn

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

func TestIntegrationHappyPath(t *testing.T) {
	runOrders(t, nil)
}

func TestIntegrationThroughBERedirects(t *testing.T) {
	// Loads are answered by the FE with a 307 to a BE, as in a cluster.
	c := runOrders(t, nil, func(c *emulator.Config) { c.BEAddr = "127.0.0.1:0" })
	assert.Positive(t, c.Redirects, "loads went through FE → BE redirects")
}

func TestIntegrationFaults(t *testing.T) {
	mid := 300 * time.Millisecond
	f := func(op emulator.Op, act emulator.Action, count int) []faultStep {
		return []faultStep{{after: mid, fault: emulator.Fault{Op: op, Action: act, Count: count}}}
	}
	cases := map[string][]faultStep{
		"load txn_in_processing":               f(emulator.OpLoad, emulator.ActTxnInProcessing, 3),
		"load internal_error":                  f(emulator.OpLoad, emulator.ActInternalError, 2),
		"load txn_not_exists":                  f(emulator.OpLoad, emulator.ActTxnNotExists, 1),
		"load running_txn_limit":               f(emulator.OpLoad, emulator.ActRunningTxnLimit, 1),
		"load http 503":                        f(emulator.OpLoad, emulator.ActHTTPError, 2),
		"load reset":                           f(emulator.OpLoad, emulator.ActReset, 1),
		"load delay":                           {{after: mid, fault: emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActDelay, Count: 3, Delay: 300 * time.Millisecond}}},
		"begin internal_error":                 f(emulator.OpBegin, emulator.ActInternalError, 2),
		"begin label_already_exists":           f(emulator.OpBegin, emulator.ActLabelAlreadyExists, 1),
		"begin reset":                          f(emulator.OpBegin, emulator.ActReset, 1),
		"commit internal_error":                f(emulator.OpCommit, emulator.ActInternalError, 1),
		"commit txn_not_exists":                f(emulator.OpCommit, emulator.ActTxnNotExists, 1),
		"commit http 503":                      f(emulator.OpCommit, emulator.ActHTTPError, 1),
		"commit reset (no side effect)":        f(emulator.OpCommit, emulator.ActReset, 1),
		"commit reports failure but committed": f(emulator.OpCommit, emulator.ActCommitReportFailure, 2),
		"commit reset after commit":            f(emulator.OpCommit, emulator.ActCommitReset, 1),
		"commit no answer":                     {{after: mid, fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitNoAnswer, Count: 1, Delay: 2500 * time.Millisecond}}},
		"commit fails, completes later":        {{after: mid, fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitLate, Count: 1, Delay: 1500 * time.Millisecond}}},
		"commit aborts":                        f(emulator.OpCommit, emulator.ActCommitAbort, 2),
		"get_load_state errors during ambiguous commit": {
			{after: mid, fault: emulator.Fault{Op: emulator.OpGetLoadState, Action: emulator.ActHTTPError, Count: 2}},
			{after: mid, fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitReportFailure, Count: 1}},
		},
		"rollback pending after a failed load": {
			{after: mid, fault: emulator.Fault{Op: emulator.OpRollback, Action: emulator.ActAbortPending, Count: 1, Delay: 500 * time.Millisecond}},
			{after: mid, fault: emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActInternalError, Count: 1}},
		},
		"FE restart": {
			{after: mid, action: func(e *emulator.Emulator) { e.Restart() }},
			{after: 2 * mid, action: func(e *emulator.Emulator) { e.Restart() }},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			// Paced and mostly waiting: run a few at once.
			t.Parallel()
			runOrders(t, steps)
		})
	}
}

func TestIntegrationPoisonedTransactionsGoWholeToDeadLetter(t *testing.T) {
	e := startEmulator(t)
	s := newSrc("asm")
	order := func(p, txn string, id int, extra map[string]any, table string, end bool) *service.Message {
		body := map[string]any{"order_id": id, "customer_id": 1, "total_amount": 1}
		if table == "order_items" {
			body = map[string]any{"order_id": id, "item_id": 1, "quantity": 1}
		}
		for k, v := range extra {
			body[k] = v
		}
		return s.row(p, txn, table, body, end)
	}
	batches := []service.MessageBatch{
		// A processing error on the second message poisons the whole
		// source transaction.
		{order("p0", "errored", 1, nil, "orders", false), order("p0", "errored", 1, map[string]any{"boom": true}, "order_items", true)},
		// A table that does not exist: its source transaction only.
		{order("p1", "missing", 2, nil, "orders", false), s.row("p1", "missing", "no_such_table", map[string]any{"x": 1}, true)},
		// Neighbours in the same partitions commit.
		{order("p0", "good0", 3, nil, "orders", false), order("p0", "good0", 3, nil, "order_items", true)},
		{order("p1", "good1", 4, nil, "order_items", false), order("p1", "good1", 4, nil, "orders", true)},
	}
	errs, metrics := poisonStream(t, e, "dl1", batches, 20*time.Second)
	for _, err := range errs {
		require.NoError(t, err)
	}
	d, _ := captures.Load("dl1")
	dl := d.(*fakeDL)
	ids := dl.txnIDs()
	sort.Strings(ids)
	assert.Equal(t, []string{"errored", "missing"}, ids)
	dl.mu.Lock()
	for _, b := range dl.batches {
		assert.Len(t, b, 2, "a poisoned transaction goes whole")
	}
	dl.mu.Unlock()
	// The metrics tell the same story.
	assert.Equal(t, int64(2), metrics.Counter("starrocks_txn_dead_lettered"))
	assert.Equal(t, int64(2), metrics.Counter("starrocks_txn_source_txns_committed"))
	assert.Equal(t, int64(4), metrics.Counter("starrocks_txn_rows_committed"))
	assert.Positive(t, metrics.Counter("starrocks_txn_commits"))
	assert.Positive(t, metrics.Counter("starrocks_txn_loads"))
	assert.Positive(t, metrics.Counter("starrocks_txn_load_bytes"))
	assert.Len(t, metrics.Timings("starrocks_txn_visibility_latency_ns"), 2)
	assert.NotEmpty(t, metrics.Timings("starrocks_txn_commit_latency_ns"))
	assert.Positive(t, metrics.Peak("starrocks_txn_waiting_write_batches"))
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	var got []int64
	for _, r := range rows {
		got = append(got, toInt(r["order_id"]))
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	assert.Equal(t, []int64{3, 4}, got)
}

func TestIntegrationMissingTableStallsOnlyItsPartition(t *testing.T) {
	e := startEmulator(t)
	s := newSrc("asm")
	batches := []service.MessageBatch{
		{s.row("p0", "missing", "no_such_table", map[string]any{"x": 1}, true)},
		{s.row("p1", "g1", "orders", map[string]any{"order_id": 1, "customer_id": 1, "total_amount": 0}, true)},
		{s.row("p1", "g2", "orders", map[string]any{"order_id": 2, "customer_id": 1, "total_amount": 0}, true)},
		{s.row("p0", "after", "orders", map[string]any{"order_id": 3, "customer_id": 1, "total_amount": 0}, true)},
	}
	errs, metrics := poisonStream(t, e, "", batches, 3*time.Second)
	require.NoError(t, errs[1])
	require.NoError(t, errs[2])
	require.ErrorIs(t, errs[0], context.DeadlineExceeded, "the poisoned transaction is held, never acknowledged")
	require.ErrorIs(t, errs[3], context.DeadlineExceeded, "its partition stalls")
	assert.Equal(t, int64(1), metrics.Peak("starrocks_txn_stalled_partition"), "a metric names the stalled partition")
	assert.Equal(t, int64(1), metrics.Peak("starrocks_txn_stalled_partitions"))
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Len(t, rows, 2)
}

func TestIntegrationDeleteToDuplicateKeyTableIsPoisoned(t *testing.T) {
	e := startEmulator(t)
	s := newSrc("asm")
	batches := []service.MessageBatch{
		// order_events is a DUPLICATE KEY table: StarRocks would append the
		// delete as a row.
		{s.row("p0", "dupdelete", "orders", map[string]any{"order_id": 1, "customer_id": 1, "total_amount": 0}, false),
			s.row("p0", "dupdelete", "order_events", map[string]any{"event_id": 1, "order_id": 1, "kind": "x", "__op": 1}, true)},
		// A delete to a PRIMARY KEY table is fine.
		{s.row("p0", "pkdelete", "orders", map[string]any{"order_id": 2, "customer_id": 1, "__op": 1}, false),
			s.row("p0", "pkdelete", "order_events", map[string]any{"event_id": 2, "order_id": 2, "kind": "y"}, true)},
	}
	errs, _ := poisonStream(t, e, "dl-dup", batches, 20*time.Second, fmt.Sprintf("  mysql_address: %s\n", e.MySQLAddr()))
	for _, err := range errs {
		require.NoError(t, err)
	}
	d, _ := captures.Load("dl-dup")
	assert.Equal(t, []string{"dupdelete"}, d.(*fakeDL).txnIDs())
	rows, err := e.Store().Rows("test", "order_events")
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, int64(2), toInt(rows[0]["event_id"]))
	rows, err = e.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Empty(t, rows, "nothing of the poisoned transaction is visible")
}

// Through a real stream and the emulator: the tail of a source transaction
// of a fenced assignment is acknowledged without being applied and counted
// in starrocks_txn_stale_epoch_messages; the next assignment commits.
func TestIntegrationStaleEpochIsReleasedUnapplied(t *testing.T) {
	e := startEmulator(t)
	sb, metrics := metricStream(t)
	require.NoError(t, sb.SetLoggerYAML("level: none"))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	name := t.Name()
	// A fresh capture per run: -count=N runs the same name again.
	registries.Delete(name)
	t.Cleanup(func() { registries.Delete(name) })
	require.NoError(t, sb.AddProcessorYAML("starrocks_txn_test_registry: { name: "+name+" }"))
	require.NoError(t, sb.AddOutputYAML(`
starrocks_txn:
  schema_evolution: ignore
  load_urls: [ `+e.FEURL()+` ]
  commit_interval: 200ms
  max_in_flight: 16
`))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()
	t.Cleanup(func() { _ = stream.StopWithin(time.Second) })
	var reg *registry.Registry
	require.Eventually(t, func() bool {
		v, ok := registries.Load(name)
		if ok {
			reg = v.(*registry.Registry)
		}
		return ok
	}, 5*time.Second, 5*time.Millisecond, "the stream built its processors")

	order := func(s *src, txn string, id int, end bool) *service.Message {
		return s.row("p0", txn, "orders", map[string]any{"order_id": id, "customer_id": 1, "total_amount": 1}, end)
	}
	s := newSrc("asm")
	e1 := reg.Assign("p0")
	head := withEpoch(e1, order(s, "T", 1, false))
	tail := withEpoch(e1, order(s, "T", 2, true))
	headDone := make(chan error, 1)
	go func() { headDone <- produce(context.Background(), head) }()
	require.Eventually(t, func() bool { return metrics.Gauge("starrocks_txn_buffered_bytes") > 0 }, 10*time.Second, 5*time.Millisecond,
		"the head of T is admitted (its row is buffered)")
	require.NoError(t, reg.Fence(context.Background(), "p0"))
	select {
	case err := <-headDone:
		require.NoError(t, err, "the fence releases the head with success")
	case <-time.After(2 * time.Second):
		t.Fatal("the fence did not release the head")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.NoError(t, produce(ctx, tail), "the stale tail is acknowledged at once")
	assert.Equal(t, int64(1), metrics.Counter("starrocks_txn_stale_epoch_messages"))

	// The new assignment re-reads T whole and commits it.
	e2 := reg.Assign("p0")
	s2 := newSrc("asm-2")
	require.NoError(t, produce(ctx, withEpoch(e2, order(s2, "T", 1, false), order(s2, "T", 2, true))))
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Len(t, rows, 2)
	assert.Equal(t, int64(1), metrics.Counter("starrocks_txn_source_txns_committed"), "only the new assignment's T committed")
}

// Through the emulator: a source transaction to a database that does not
// exist goes to dead_letter (StarRocks refuses the begin with
// "Database[...] does not exist"), and the rest goes on.
func TestIntegrationMissingDatabaseGoesToDeadLetter(t *testing.T) {
	e := startEmulator(t)
	s := newSrc("asm")
	bad := s.row("p0", "nodb-txn", "orders", map[string]any{"order_id": 1, "customer_id": 1, "total_amount": 0}, true)
	bad.MetaSetMut(contract.KeyDatabase, "nodb")
	batches := []service.MessageBatch{
		{bad},
		{s.row("p1", "good", "orders", map[string]any{"order_id": 2, "customer_id": 1, "total_amount": 0}, true)},
	}
	errs, _ := poisonStream(t, e, "dl-nodb", batches, 10*time.Second,
		"  retry_backoff: { initial_interval: 20ms, max_interval: 200ms }\n")
	require.NoError(t, errs[0], "dead-lettered, then acknowledged")
	require.NoError(t, errs[1])
	d, _ := captures.Load("dl-nodb")
	assert.Equal(t, []string{"nodb-txn"}, d.(*fakeDL).txnIDs())
	reason, _ := d.(*fakeDL).batches[0][0].MetaGet(deadLetterReasonKey)
	assert.Contains(t, reason, "nodb")
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Len(t, rows, 1)
}

// TestIntegrationChaosSoak runs a longer stream under a random fault every
// 150 ms, FE restarts included. It is a soak, behind STARROCKS_TXN_SOAK=1.
func TestIntegrationChaosSoak(t *testing.T) {
	if os.Getenv("STARROCKS_TXN_SOAK") == "" {
		t.Skip("set STARROCKS_TXN_SOAK=1 to run the chaos soak")
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	menu := []emulator.Fault{
		{Op: emulator.OpLoad, Action: emulator.ActTxnInProcessing, Count: 2},
		{Op: emulator.OpLoad, Action: emulator.ActInternalError},
		{Op: emulator.OpLoad, Action: emulator.ActReset},
		{Op: emulator.OpLoad, Action: emulator.ActHTTPError},
		{Op: emulator.OpBegin, Action: emulator.ActInternalError},
		{Op: emulator.OpCommit, Action: emulator.ActInternalError},
		{Op: emulator.OpCommit, Action: emulator.ActCommitReportFailure},
		{Op: emulator.OpCommit, Action: emulator.ActCommitReset},
		{Op: emulator.OpCommit, Action: emulator.ActCommitLate, Delay: time.Second},
		{Op: emulator.OpCommit, Action: emulator.ActCommitAbort},
		{Op: emulator.OpGetLoadState, Action: emulator.ActHTTPError},
		{Op: emulator.OpRollback, Action: emulator.ActAbortPending, Delay: 500 * time.Millisecond},
	}
	var steps []faultStep
	for at := 200 * time.Millisecond; at < 20*time.Second; at += 150 * time.Millisecond {
		if rng.Intn(10) == 0 {
			steps = append(steps, faultStep{after: at, action: func(e *emulator.Emulator) { e.Restart() }})
			continue
		}
		steps = append(steps, faultStep{after: at, fault: menu[rng.Intn(len(menu))]})
	}
	runOrdersSized(t, 8, 150, 20*time.Second, steps)
}

// A load streamed between commits that StarRocks applied but whose reply
// the client never saw (dropped, or later than request_timeout) is never
// sent again under the same label: the DUPLICATE KEY order_events table
// holds every event once (runOrdersWith checks the tables against the
// model and a concurrent reader for partial transactions).
func TestIntegrationAmbiguousStreamedLoadNeverDoubles(t *testing.T) {
	// A commit interval long enough for loads to stream between commits,
	// and a short request timeout.
	out := `  commit_interval: 1s
  txn_timeout: 10s
  max_in_flight: 64
  label_state_wait: 500ms
  request_timeout: 400ms
  retry_backoff: { initial_interval: 20ms, max_interval: 200ms }
`
	cases := map[string]emulator.Fault{
		"load_reply_lost": {Op: emulator.OpLoad, Table: "order_events", Action: emulator.ActLoadReplyLost, Count: 1},
		"reply_late":      {Op: emulator.OpLoad, Table: "order_events", Action: emulator.ActReplyLate, Count: 1, Delay: 900 * time.Millisecond},
		"no_answer":       {Op: emulator.OpLoad, Table: "order_events", Action: emulator.ActNoAnswer, Count: 1},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runOrdersWith(t, ordersRun{partitions: 4, txns: 15, pace: 2 * time.Second, output: out,
				steps: []faultStep{{after: 300 * time.Millisecond, fault: f}}})
		})
	}
}

// A commit whose reply is lost and whose label StarRocks forgets at once
// (label_keep_max_num: here every finished label is evicted as soon as it
// is final) never stalls the database: with exactly_once or writer rows
// the rows the label carried settle it (every event once); without them it
// is taken as not committed after unknown_commit_timeout, replayed, and
// counted (every event at least once). A commit refused while its label
// stays PREPARE is sent again within about a second, not after
// label_state_wait.
func TestIntegrationForgottenCommitNeverStalls(t *testing.T) {
	evict := func(ctx context.Context, e *emulator.Emulator) {
		for ctx.Err() == nil {
			e.EvictLabels("test")
			// Real time: StarRocks evicts labels on its own clock, beside
			// the stream; this evicts each about as soon as it is final.
			time.Sleep(2 * time.Millisecond)
		}
	}
	const timing = `  commit_interval: 200ms
  txn_timeout: 5s
  max_in_flight: 64
  label_state_wait: 500ms
  request_timeout: 2s
  unknown_commit_timeout: 500ms
  retry_backoff: { initial_interval: 20ms, max_interval: 300ms }
`
	// The label-state queries come late enough for the eviction to have
	// happened.
	lost := []faultStep{
		{after: 300 * time.Millisecond, fault: emulator.Fault{Op: emulator.OpGetLoadState, Action: emulator.ActDelay, Count: 2, Delay: 50 * time.Millisecond}},
		{after: 300 * time.Millisecond, fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitReplyLost, Count: 2}},
	}
	cases := map[string]struct {
		output     string
		dups       bool
		unknown    bool
		steps      []faultStep
		noEviction bool
	}{
		"at_least_once": {output: timing, dups: true, unknown: true, steps: lost},
		"writer rows":   {output: timing + "  pipeline_id: it\n  mysql_address: $MYSQL\n", steps: lost},
		"exactly_once":  {output: timing + "  semantic: exactly_once\n  pipeline_id: it\n  mysql_address: $MYSQL\n", steps: lost},
		"refused while PREPARE, label_state_wait 1h": {
			// The emulator leaves a commit it refused with INTERNAL_ERROR
			// PREPARE until txn_timeout: long enough that waiting for it
			// misses the run's deadline.
			output:     strings.NewReplacer("label_state_wait: 500ms", "label_state_wait: 1h", "txn_timeout: 5s", "txn_timeout: 60s").Replace(timing),
			steps:      []faultStep{{after: 300 * time.Millisecond, fault: emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActInternalError, Count: 3}}},
			noEviction: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var m *metricscap.Capture
			r := ordersRun{partitions: 4, txns: 15, pace: 1500 * time.Millisecond, output: tc.output,
				steps: tc.steps, during: evict, duplicateEvents: tc.dups, metrics: &m}
			if tc.noEviction {
				r.during = nil
			}
			runOrdersWith(t, r)
			if tc.unknown {
				assert.Positive(t, m.Counter("starrocks_txn_unknown_commits"), "the commits taken as not committed are counted")
			} else {
				assert.Zero(t, m.Counter("starrocks_txn_unknown_commits"), "every forgotten commit was settled from its rows")
			}
			assert.Positive(t, m.Peak("starrocks_txn_unresolved_commits"), "the commit in doubt showed")
			assert.Zero(t, m.Gauge("starrocks_txn_unresolved_commits"))
		})
	}
}

// Database names come from the data: many that do not exist are each
// dead-lettered once, with an error naming the database; their begins are
// not retried, and no metric series is named after them (a database's
// metrics are labelled with its name only once StarRocks began a
// transaction in it). TestMaxDatabasesBoundsTheWorkers covers the limit.
func TestIntegrationManyMissingDatabasesStayBounded(t *testing.T) {
	e := startEmulator(t)
	s := newSrc("asm")
	var batches []service.MessageBatch
	for i := 0; i < 12; i++ {
		m := s.row(fmt.Sprintf("p%d", i), fmt.Sprintf("nodb-%d", i), "orders", map[string]any{"order_id": i, "customer_id": 1, "total_amount": 0}, true)
		m.MetaSetMut(contract.KeyDatabase, fmt.Sprintf("nodb_%d", i))
		batches = append(batches, service.MessageBatch{m})
	}
	batches = append(batches, service.MessageBatch{s.row("q0", "good", "orders", map[string]any{"order_id": 100, "customer_id": 1, "total_amount": 0}, true)})
	errs, metrics := poisonStream(t, e, "dl-manydb", batches, 20*time.Second,
		"  retry_backoff: { initial_interval: 20ms, max_interval: 100ms }\n")
	for _, err := range errs {
		require.NoError(t, err)
	}
	d, _ := captures.Load("dl-manydb")
	dl := d.(*fakeDL)
	assert.Len(t, dl.txnIDs(), 12, "every transaction to a missing database is dead-lettered, once")
	dl.mu.Lock()
	for _, b := range dl.batches {
		reason, _ := b[0].MetaGet(deadLetterReasonKey)
		assert.Contains(t, reason, "does not exist")
	}
	dl.mu.Unlock()
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	assert.Len(t, rows, 1)
	begins := e.Counters().Begins
	// Real time: that no begin is retried is a claim about a while, several
	// of the workers' ticks and backoffs long, with nothing else to wait for.
	time.Sleep(500 * time.Millisecond)
	assert.LessOrEqual(t, e.Counters().Begins-begins, int64(2), "no begin retried into a missing database (the one live database may begin its next cycle)")
	for _, name := range []string{"starrocks_txn_cycle_retries", "starrocks_txn_rollbacks", "starrocks_txn_commits"} {
		for _, series := range metrics.Series(name) {
			assert.NotContains(t, series, "nodb", "%s has a series named after a database that does not exist", name)
		}
	}
	assert.NotEmpty(t, metrics.Series("starrocks_txn_cycle_retries"), "the refused begins are counted")
}

// A partition that stalls again and again, each time at another source
// transaction, keeps one series of starrocks_txn_stalled_partition: the
// metric is labelled with the partition only (Benthos cannot delete a
// series; a label per transaction id would grow without bound). It is 1
// while the partition is stalled and 0 once a fence released it.
func TestIntegrationStalledPartitionSeriesAreBounded(t *testing.T) {
	e := startEmulator(t)
	sb, metrics := metricStream(t)
	require.NoError(t, sb.SetLoggerYAML("level: none"))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	name := t.Name()
	registries.Delete(name)
	t.Cleanup(func() { registries.Delete(name) })
	require.NoError(t, sb.AddProcessorYAML("starrocks_txn_test_registry: { name: "+name+" }"))
	require.NoError(t, sb.AddOutputYAML(`
starrocks_txn:
  schema_evolution: ignore
  load_urls: [ `+e.FEURL()+` ]
  commit_interval: 100ms
  max_in_flight: 16
`))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()
	t.Cleanup(func() { _ = stream.StopWithin(time.Second) })
	var reg *registry.Registry
	require.Eventually(t, func() bool {
		v, ok := registries.Load(name)
		if ok {
			reg = v.(*registry.Registry)
		}
		return ok
	}, 5*time.Second, 5*time.Millisecond)
	s := newSrc("asm")
	for i := 0; i < 4; i++ {
		done := make(chan error, 1)
		batch := service.MessageBatch{s.row("p0", fmt.Sprintf("bad-%d", i), "no_such_table", map[string]any{"x": i}, true)}
		go func() { done <- produce(context.Background(), batch) }()
		require.Eventually(t, func() bool { return metrics.Gauge("starrocks_txn_stalled_partition") == 1 }, 5*time.Second, 5*time.Millisecond, "stall %d", i)
		require.NoError(t, reg.Fence(context.Background(), "p0"))
		require.NoError(t, <-done, "the fence releases the stalled transaction")
		assert.Zero(t, metrics.Gauge("starrocks_txn_stalled_partition"))
	}
	assert.Equal(t, int64(4), metrics.Counter("starrocks_txn_partition_stalls"))
	series := metrics.Series("starrocks_txn_stalled_partition")
	require.Len(t, series, 1, "one series per partition, whatever transaction it stalled at: %v", series)
	assert.True(t, strings.HasSuffix(series[0], ",p0"), series[0])
}

// A StarRocks that answers every load slower than request_timeout (a busy
// BE writing large bodies) is still loaded: each load that ran out of its
// bound is replayed under a new label with a doubled bound (up to 8 ×
// request_timeout), instead of timing out at the same bound forever. Every
// event is there once (the timed-out loads were applied under tainted
// labels that were rolled back, never committed).
func TestIntegrationEveryLoadSlowerThanRequestTimeoutStillCommits(t *testing.T) {
	out := `  commit_interval: 200ms
  txn_timeout: 20s
  max_in_flight: 64
  label_state_wait: 500ms
  request_timeout: 300ms
  retry_backoff: { initial_interval: 20ms, max_interval: 200ms }
`
	var m *metricscap.Capture
	runOrdersWith(t, ordersRun{partitions: 2, txns: 8, pace: 500 * time.Millisecond, output: out, metrics: &m,
		steps: []faultStep{{after: 0, fault: emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActDelay, Count: 100000, Delay: 700 * time.Millisecond}}}})
}
