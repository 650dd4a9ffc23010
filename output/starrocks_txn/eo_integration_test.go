package starrocks_txn

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// emulatorEOOutput builds an exactly_once output as the plugin constructor
// does: the real client and the MySQL connection to the emulator.
func emulatorEOOutput(t *testing.T, e *emulator.Emulator, extra string) (*Output, *service.Resources) {
	t.Helper()
	cl, err := starrocks.New(starrocks.Config{LoadURLs: []string{e.FEURL()}, Username: "root", RequestTimeout: 2 * time.Second})
	require.NoError(t, err)
	o, res := testOutput(t, fmt.Sprintf("commit_interval: 100ms\nsemantic: exactly_once\npipeline_id: it\nmysql_address: %s\nlabel_state_wait: 300ms\nretry_backoff: { initial_interval: 20ms, max_interval: 200ms }\n%s", e.MySQLAddr(), extra), srClient{cl}, nil)
	o.meta, err = starrocks.OpenMeta(e.MySQLAddr(), "root", "")
	require.NoError(t, err)
	o.enableProgress()
	return o, res
}

// restamp re-emits batches as a restarted assembler would: the same
// messages, offsets and (dense, from 1) emission order, a new seq source.
func restamp(batches []service.MessageBatch, source string) []service.MessageBatch {
	out := make([]service.MessageBatch, 0, len(batches))
	for _, b := range batches {
		nb := make(service.MessageBatch, 0, len(b))
		for _, m := range b {
			c := m.Copy()
			meta, _ := contract.Read(c)
			meta.SeqSource = source
			contract.Write(c, meta)
			nb = append(nb, c)
		}
		out = append(out, nb)
	}
	return out
}

func checkOrdersExactlyOnce(t *testing.T, e *emulator.Emulator, w *orderWorkload) {
	t.Helper()
	rows, err := e.Store().Rows("test", "order_events")
	require.NoError(t, err)
	seen := map[int64]int{}
	for _, r := range rows {
		seen[toInt(r["event_id"])]++
	}
	dups := 0
	for _, n := range seen {
		if n > 1 {
			dups += n - 1
		}
	}
	assert.Zero(t, dups, "DUPLICATE KEY order_events: events loaded twice")
	assert.Len(t, seen, w.events, "every event present")
	got := map[int64]int64{}
	rows, err = e.Store().Rows("test", "orders")
	require.NoError(t, err)
	for _, r := range rows {
		got[toInt(r["order_id"])] = toInt(r["customer_id"])
	}
	assert.Equal(t, w.orders, got, "orders equal the model")
}

// The emulator commits a cycle but the reply is lost (no answer, or the
// connection reset); the pipeline then restarts and is handed every message
// again, as Kafka would after a crash before the offset commit. Every row is
// in StarRocks once.
func TestIntegrationExactlyOnceLostCommitReplyThenRestart(t *testing.T) {
	for _, act := range []emulator.Action{emulator.ActCommitNoAnswer, emulator.ActCommitReset} {
		t.Run(string(act), func(t *testing.T) {
			e := startEmulator(t)
			w := newOrderWorkload(time.Now().UnixNano()%1000, 3, 12)
			half := len(w.batches) / 2

			first, _ := emulatorEOOutput(t, e, "")
			// The writer's first commit is its anchor (the writer row alone),
			// the second the first cycle of data: the fault hits both, and
			// the anchor's outcome is found by its label.
			require.NoError(t, e.Faults().Add(emulator.Fault{Op: emulator.OpCommit, Action: act, Count: 2, Delay: 5 * time.Second}))
			var chs []chan error
			for _, b := range w.batches[:half] {
				chs = append(chs, writeAsync(first, b))
			}
			require.Eventually(t, func() bool { return len(e.Faults().Pending()) == 0 }, 10*time.Second, 5*time.Millisecond, "the fault fired")
			// The commit is in StarRocks; the crash comes before any reply
			// (no_answer) or once the output learned the outcome (reset:
			// Close waits for the commit in flight to resolve): either way
			// Kafka never heard of it.
			require.NoError(t, first.Close(context.Background()))
			for _, ch := range chs {
				<-ch
			}
			committedBefore, err := e.Store().Rows("test", "order_events")
			require.NoError(t, err)
			require.NotEmpty(t, committedBefore, "the first pipeline's commit is visible")

			second, res := emulatorEOOutput(t, e, "")
			chs = nil
			for _, b := range restamp(w.batches, "asm-restarted") {
				chs = append(chs, writeAsync(second, b))
			}
			waitAll(t, chs, 20*time.Second)
			checkOrdersExactlyOnce(t, e, w)

			// The progress table holds each partition's last END offset.
			db, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/?interpolateParams=true")
			require.NoError(t, err)
			defer db.Close()
			// Read together, as the output reads the partitions of an
			// assignment: one statement per database.
			parts := slices.Sorted(maps.Keys(w.txnsOfPart))
			held, err := metaProgress{meta: starrocks.NewMeta(db), table: defaultProgressTable}.read(context.Background(), "it", parts)
			require.NoError(t, err)
			for _, p := range parts {
				pe, ok := held[p]
				require.True(t, ok && pe.hasThrough, p)
				c, ok := registry.Get(res).Committed(p)
				require.True(t, ok)
				assert.Equal(t, c, pe.through, "%s: the durable progress equals the published committed-through offset", p)
				off, ok, err := registry.Get(res).Progress(context.Background(), p)
				require.NoError(t, err)
				assert.True(t, ok)
				assert.Equal(t, pe.through, off, "the input reads the same progress through the registry")
			}
			_, ok, err := registry.Get(res).Progress(context.Background(), "orders/99")
			require.NoError(t, err)
			assert.False(t, ok)
		})
	}
}

// The progress table is created over the MySQL port when missing; a table
// of that name with another layout is refused with the DDL.
func TestIntegrationProgressTableCreatedAndChecked(t *testing.T) {
	e := startEmulator(t)
	db, err := sql.Open("mysql", "root@tcp("+e.MySQLAddr()+")/?interpolateParams=true")
	require.NoError(t, err)
	defer db.Close()
	ps := metaProgress{meta: starrocks.NewMeta(db), table: "eo_progress", partitions: true}
	require.NoError(t, ps.ensure(context.Background(), "test"))
	require.NoError(t, ps.ensure(context.Background(), "test"), "idempotent")
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.columns WHERE TABLE_SCHEMA = 'test' AND TABLE_NAME = 'eo_progress' AND COLUMN_KEY = 'PRI'").Scan(&n))
	assert.Equal(t, 2, n, "PRIMARY KEY (pipeline_id, source_partition)")

	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.columns WHERE TABLE_SCHEMA = 'test' AND TABLE_NAME = 'eo_progress_writers' AND COLUMN_KEY = 'PRI'").Scan(&n))
	assert.Equal(t, 2, n, "the writers table: PRIMARY KEY (pipeline_id, writer)")

	// Writer rows alone (at_least_once with pipeline_id): no progress table.
	require.NoError(t, metaProgress{meta: starrocks.NewMeta(db), table: "alo_progress"}.ensure(context.Background(), "test"))
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE TABLE_SCHEMA = 'test' AND TABLE_NAME IN ('alo_progress', 'alo_progress_writers')").Scan(&n))
	assert.Equal(t, 1, n, "only alo_progress_writers")

	require.NoError(t, e.Store().ExecDDL("CREATE TABLE test.old_progress (source_partition VARCHAR(255) NOT NULL, committed_offset BIGINT NOT NULL) PRIMARY KEY (source_partition) DISTRIBUTED BY HASH (source_partition)"))
	err = metaProgress{meta: starrocks.NewMeta(db), table: "old_progress", partitions: true}.ensure(context.Background(), "test")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "without the columns")
	assert.Contains(t, err.Error(), "CREATE TABLE IF NOT EXISTS `test`.`old_progress`")
}
