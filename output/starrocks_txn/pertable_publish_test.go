package starrocks_txn

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// A per-table cycle one of whose commits StarRocks answers before it is
// visible (commit_late: the publish pending) is acknowledged once the label
// is COMMITTED — durable, visible in its turn (ARCHITECTURE.md §15.1). The
// next cycles commit the same tables meanwhile, rewriting the same keys;
// StarRocks publishes a table's versions in commit order, so the late
// commit never undoes them: once everything is visible, the latest values
// win — of a data table (a data part late) and of the writers table (the
// decision late: the writer row must name the latest cycle, or a
// successor would settle the cycles by an older one, §15.2; the row's
// merge_condition on label_number keeps it too, whatever the order of
// publication, so that case fails only when both are gone).
//
// The late commit stays pending until the emulator closes (the delay is
// cut short then, and everything committed is applied in commit order), so
// every later cycle commits while it is pending: deterministic, whatever
// the machine's load. The later cycles' commits are held behind it; the
// output resolves each by its label state, either when its request_timeout
// passes first or on the FE's "publish timeout" reply.
func TestPerTableLateCommitNeverUndoesALaterCycle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		label string // the commit answered late
		// requestTimeout: below the FE's 20 s publish wait the client
		// gives up first; above it the FE answers "publish timeout".
		requestTimeout time.Duration
		// versions is how many source transactions (one cycle each) run;
		// each after the late one is held, 20 s when the FE answers.
		versions int64
	}{
		{"data_part", ptDataLabel, 2 * time.Second, 3},
		{"decision", ptCycleLabel, 2 * time.Second, 3},
		{"data_part_publish_timeout_reply", ptDataLabel, 30 * time.Second, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := ptEmulator(t)
			runLateCommitCycles(t, e, tc.label, tc.requestTimeout, tc.versions)
		})
	}
}

// runLateCommitCycles sends source transactions one after the other, each
// upserting order 1 with its version (customer_id) after the first commit
// matching label was answered late, and checks what holds at each moment.
func runLateCommitCycles(t *testing.T, e *emulator.Emulator, label string, requestTimeout time.Duration, versions int64) {
	require.NoError(t, e.Faults().Add(emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitLate, Label: label, Count: 1, Delay: time.Hour}))
	db, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/test")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })

	sb, _ := metricStream(t)
	logs := &syncLog{}
	sb.SetLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  load_urls: [ %s ]
  transaction_mode: per_table
  pipeline_id: late
  mysql_address: %s
  commit_interval: 100ms
  txn_timeout: 60s
  label_state_wait: 500ms
  request_timeout: %s
  retry_backoff: { initial_interval: 20ms, max_interval: 300ms }
`, e.FEURL(), e.MySQLAddr(), requestTimeout)))
	stream, err := sb.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	go func() { _ = stream.Run(ctx) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stream log:\n%s", tail(logs.String(), 60))
		}
	})

	s := newSrc("late")
	for v := int64(1); v <= versions; v++ {
		txn := fmt.Sprintf("t%d", v)
		b := service.MessageBatch{s.row("p0", txn, "orders", map[string]any{"order_id": 1, "customer_id": v, "total_amount": 0, "order_status": "new"}, true)}
		require.NoError(t, produce(ctx, b), "source transaction %d acknowledged", v)
		// Acknowledged means committed: every label of the output still
		// running is COMMITTED (its publish pending), but for the next
		// cycle's decision, begun with the cycle.
		for l, st := range procLabels(t, db, "test", "running") {
			if _, _, seq := starrocks.SplitSeqLabel(l); seq && st == string(starrocks.StatePrepare) {
				continue
			}
			assert.Equal(t, string(starrocks.StateCommitted), st, "after source transaction %d: label %s", v, l)
		}
	}
	// The late commit is still pending: its cycle is acknowledged, not yet
	// visible.
	running := procLabels(t, db, "test", "running")
	assert.NotEmpty(t, running, "the late commit is still pending")
	decisions := committedDecisions(t, db)

	// Closing the emulator ends the late commit's delay: everything
	// committed becomes visible, in commit order. It closes before the
	// stream, whose clean close would forget the writer row.
	require.NoError(t, e.Close())
	_ = stream.StopWithin(10 * time.Second)
	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, versions, toInt(rows[0]["customer_id"]), "the latest version of order 1 is visible, not the late commit's")

	writers, err := e.Store().Rows("test", writersTable(defaultProgressTable))
	require.NoError(t, err)
	require.Len(t, writers, 1, "one writer")
	top := int64(0)
	for _, l := range decisions {
		top = max(top, seqOf(l))
	}
	// A later label than those seen committed may have committed since
	// (an anchor): never an earlier one.
	assert.GreaterOrEqual(t, toInt(writers[0]["label_number"]), top, "the writer row names the latest committed cycle, not an earlier one (decisions %v, row %v)", decisions, writers[0])
}

// committedDecisions are the decision (and anchor) labels of the output
// that StarRocks committed: COMMITTED or VISIBLE.
func committedDecisions(t *testing.T, db *sql.DB) []string {
	var out []string
	for _, which := range []string{"running", "finished"} {
		for l, st := range procLabels(t, db, "test", which) {
			if _, _, seq := starrocks.SplitSeqLabel(l); seq && starrocks.LabelState(st).Committed() {
				out = append(out, l)
			}
		}
	}
	return out
}

func seqOf(label string) int64 {
	_, n, _ := starrocks.SplitSeqLabel(label)
	return n
}
