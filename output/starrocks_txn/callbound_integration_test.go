package starrocks_txn

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
)

// A database whose loads are slower than request_timeout (a busy BE writing
// large bodies) is still loaded while another database of the same output
// keeps committing quick loads. Both databases' workers share the Client,
// and with it one load bound: each quick load halves the bound the slow
// database's timed-out load had just doubled, so every replay of the slow
// database's cycle runs at request_timeout again and never commits.
func TestIntegrationSlowDatabaseBesideAQuickOneStillCommits(t *testing.T) {
	e := startEmulator(t, func(c *emulator.Config) {
		c.Schema += "\nCREATE DATABASE IF NOT EXISTS `quick`;\n" +
			"CREATE TABLE IF NOT EXISTS `quick`.`ev` (`id` BIGINT NOT NULL, `n` BIGINT NOT NULL) ENGINE=OLAP DUPLICATE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 1 PROPERTIES(\"replication_num\" = \"1\");\n"
	})
	require.NoError(t, e.Faults().Add(emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActDelay, DB: "test", Count: 100000, Delay: 700 * time.Millisecond}))

	sb, _ := metricStream(t)
	require.NoError(t, sb.SetLoggerYAML(streamLogYAML()))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  load_urls: [ %s ]
  commit_interval: 200ms
  txn_timeout: 20s
  max_in_flight: 64
  label_state_wait: 500ms
  request_timeout: 300ms
  retry_backoff: { initial_interval: 500ms, max_interval: 1s }
`, e.FEURL())))
	stream, err := sb.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- stream.Run(ctx) }()
	t.Cleanup(func() {
		_ = stream.StopWithin(10 * time.Second)
		cancel()
		<-runDone
	})

	s := newSrc("asm-slowdb")
	// The quick database has a source transaction in every cycle: four
	// partitions, each producing its next one once the last committed.
	qctx, qcancel := context.WithCancel(ctx)
	var qwg sync.WaitGroup
	for p := range 4 {
		qwg.Add(1)
		go func() {
			defer qwg.Done()
			for i := 0; qctx.Err() == nil; i++ {
				m := service.NewMessage([]byte(fmt.Sprintf(`{"id":%d,"n":%d}`, p*1000000+i, i)))
				s.stamp(m, fmt.Sprintf("quick/%d", p), fmt.Sprintf("q%d-%d", p, i), "quick", "ev", true, false)
				if err := produce(qctx, service.MessageBatch{m}); err != nil && qctx.Err() == nil {
					t.Errorf("quick database: %v", err)
					return
				}
			}
		}()
	}

	// One source transaction to the slow database: its load takes 700 ms,
	// 2.3 × request_timeout, well within 8 ×.
	m := service.NewMessage([]byte(`{"event_id":1,"order_id":1,"kind":"created"}`))
	s.stamp(m, "slow/0", "s1", "test", "order_events", true, false)
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	defer scancel()
	start := time.Now()
	err = produce(sctx, service.MessageBatch{m})
	qcancel()
	qwg.Wait()
	c := e.Counters()
	t.Logf("loads %d commits %d rollbacks %d in %v", c.Loads, c.Commits, c.Rollbacks, time.Since(start))
	require.NoError(t, err, "the slow database's source transaction was committed within 20 s")
	rows, err := e.Store().Rows("test", "order_events")
	require.NoError(t, err)
	assert.Len(t, rows, 1)
}
