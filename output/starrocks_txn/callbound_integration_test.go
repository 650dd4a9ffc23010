package starrocks_txn

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
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
  schema_evolution: ignore
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

// A table whose big loads take longer than request_timeout (the BE's time
// grows with the body) while its small loads are quick: the first big load
// times out and its cycle is replayed with a grown bound, and the big loads
// of later cycles get that bound too. The quick small loads streamed between
// them (the same table, other partitions) must not shrink it back, or every
// big source transaction costs a timed-out load and a replay of its cycle.
func TestIntegrationBigLoadsKeepTheirBoundBesideSmallOnes(t *testing.T) {
	e := startEmulator(t)
	target, err := url.Parse(e.FEURL())
	require.NoError(t, err)
	// In front of the FE: a load is held 1 ms per 200 bytes of body, about
	// 650 ms for a big source transaction (2.2 × request_timeout: the first
	// one runs out at 300 ms and at 600 ms, then gets 1.2 s) and nothing for
	// a small one.
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/transaction/load" && r.ContentLength > 0 {
			select {
			case <-time.After(time.Duration(r.ContentLength) * time.Millisecond / 200):
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	sb, metrics := metricStream(t)
	require.NoError(t, sb.SetLoggerYAML(streamLogYAML()))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  schema_evolution: ignore
  load_urls: [ %s ]
  commit_interval: 200ms
  txn_timeout: 30s
  max_in_flight: 64
  request_timeout: 300ms
  retry_backoff: { initial_interval: 100ms, max_interval: 200ms }
`, proxy.URL)))
	stream, err := sb.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- stream.Run(ctx) }()
	t.Cleanup(func() {
		_ = stream.StopWithin(10 * time.Second)
		cancel()
		<-runDone
	})

	s := newSrc("asm-bigsmall")
	var nextID atomic.Int64
	event := func(p, txn string, end bool) *service.Message {
		m := service.NewMessage([]byte(fmt.Sprintf(`{"event_id":%d,"order_id":1,"kind":"created","created_at":"2024-01-01 00:00:00"}`, nextID.Add(1))))
		s.stamp(m, p, txn, "test", "order_events", end, false)
		return m
	}
	// Small source transactions to the same table, all along, each sent
	// once the previous one was acknowledged (committed).
	qctx, qcancel := context.WithCancel(ctx)
	var qwg sync.WaitGroup
	for p := range 3 {
		qwg.Add(1)
		go func() {
			defer qwg.Done()
			for i := 0; qctx.Err() == nil; i++ {
				b := service.MessageBatch{event(fmt.Sprintf("small/%d", p), fmt.Sprintf("s%d-%d", p, i), true)}
				if err := produce(qctx, b); err != nil && qctx.Err() == nil {
					t.Errorf("small transactions: %v", err)
					return
				}
			}
		}()
	}
	// Big source transactions, one after the other: 1500 rows, about 130 KB.
	const bigs, rows = 8, 1500
	for i := range bigs {
		b := make(service.MessageBatch, rows)
		for r := range rows {
			b[r] = event("big/0", fmt.Sprintf("b%d", i), r == rows-1)
		}
		bctx, bcancel := context.WithTimeout(ctx, 30*time.Second)
		err := produce(bctx, b)
		bcancel()
		require.NoError(t, err, "big source transaction %d", i)
	}
	qcancel()
	qwg.Wait()
	retries := metrics.Counter("starrocks_txn_cycle_retries")
	t.Logf("%d big source transactions: %d cycle replays, %d rollbacks", bigs, retries, e.Counters().Rollbacks)
	assert.LessOrEqual(t, retries, int64(3), "a big load timed out in most cycles: the small loads shrank its bound back to request_timeout")
}
