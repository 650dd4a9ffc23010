package starrocks_txn

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
)

// benchEnv enables the throughput comparison; it is a long run, not a unit
// test:
//
//	STARROCKS_TXN_BENCH=1 go test ./output/starrocks_txn -run TestBenchmarkReport -v
//
// STARROCKS_TXN_BENCH_ROWS sets the row count (default 60000) and
// STARROCKS_TXN_BENCH_BATCH the messages per input batch (default 100).
const benchEnv = "STARROCKS_TXN_BENCH"

type benchResult struct {
	name      string
	rows      int
	elapsed   time.Duration
	p50, p99  time.Duration
	loads     int64
	peakHeap  uint64
	committed int
	// From the output's own metrics (starrocks_txn only).
	peakBuffer     int64
	visP50, visP99 time.Duration
	outputCommits  int64
}

// benchBatches builds the same stream for every contender: source
// transactions of 3 rows (orders, order_items, order_events) over 8
// partitions, in batches of size messages.
func benchBatches(rows, size int) ([]service.MessageBatch, int) {
	s := newSrc("bench")
	var msgs []*service.Message
	eventID := 0
	for n := 0; len(msgs) < rows; n++ {
		p := fmt.Sprintf("orders/%d", n%8)
		txn := fmt.Sprintf("%s-%d", p, n)
		id := n
		eventID++
		mk := func(table string, body map[string]any, end bool) {
			b, _ := json.Marshal(body)
			m := service.NewMessage(b)
			s.stamp(m, p, txn, "test", table, end, false)
			msgs = append(msgs, m)
		}
		mk("orders", map[string]any{"order_id": id, "customer_id": n, "total_amount": 1, "order_status": "new"}, false)
		mk("order_items", map[string]any{"order_id": id, "item_id": 1, "product": "p", "quantity": 1, "price": 2.5}, false)
		mk("order_events", map[string]any{"event_id": eventID, "order_id": id, "kind": "created"}, true)
	}
	var batches []service.MessageBatch
	for i := 0; i < len(msgs); i += size {
		j := min(i+size, len(msgs))
		batches = append(batches, msgs[i:j])
	}
	return batches, len(msgs)
}

func runBench(t *testing.T, name, outputYAML string, rows int, e *emulator.Emulator, producers int) benchResult {
	batches, n := benchBatches(rows, envInt(t, benchEnv+"_BATCH", 100))
	sb, metrics := metricStream(t)
	require.NoError(t, sb.SetLoggerYAML("level: "+benchLogLevel()))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(outputYAML))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()

	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	var before emulator.Counters
	if e != nil {
		before = e.Counters()
	}
	lat := make([]time.Duration, len(batches))
	work := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < producers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for idx := range work {
				created := time.Now()
				require.NoError(t, produce(context.Background(), batches[idx]))
				lat[idx] = time.Since(created)
			}
		}()
	}
	for i := range batches {
		work <- i
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	require.NoError(t, stream.StopWithin(10*time.Second))
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r := benchResult{name: name, rows: n, elapsed: elapsed, p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], peakHeap: peak.Load()}
	r.peakBuffer = metrics.Peak("starrocks_txn_buffered_bytes")
	r.outputCommits = metrics.Counter("starrocks_txn_commits")
	if vis := metrics.Timings("starrocks_txn_visibility_latency_ns"); len(vis) > 0 {
		sort.Slice(vis, func(i, j int) bool { return vis[i] < vis[j] })
		r.visP50, r.visP99 = vis[len(vis)/2], vis[len(vis)*99/100]
	}
	if e != nil {
		after := e.Counters()
		r.loads = (after.Loads + after.StreamLoads) - (before.Loads + before.StreamLoads)
		for _, tbl := range []string{"order_events"} {
			got, err := e.Store().Rows("test", tbl)
			require.NoError(t, err)
			r.committed = len(got)
		}
	}
	return r
}

func TestBenchmarkReport(t *testing.T) {
	if os.Getenv(benchEnv) == "" {
		t.Skipf("set %s=1 to run the throughput comparison", benchEnv)
	}
	rows := envInt(t, benchEnv+"_ROWS", 60000)
	const bufferSize = 128 << 20

	var results []benchResult
	results = append(results, runBench(t, "drop (the pre-built stream, no output work)", "drop: {}\n", rows, nil, 64))

	e1 := startEmulator(t)
	results = append(results, runBench(t, "starrocks_txn", fmt.Sprintf(`
starrocks_txn:
  schema_evolution: ignore
  load_urls: [ %s ]
  commit_interval: 1s
  max_in_flight: 1024
  buffer_size: %d
`, e1.FEURL(), bufferSize), rows, e1, 1024))
	e1c := e1.Counters()

	// The same stream with semantic exactly_once: a progress row per
	// partition and commit, loaded under the same label, and the progress
	// read before each partition's first message.
	e3 := startEmulator(t)
	results = append(results, runBench(t, "starrocks_txn exactly_once", fmt.Sprintf(`
starrocks_txn:
  load_urls: [ %s ]
  commit_interval: 1s
  max_in_flight: 1024
  buffer_size: %d
  semantic: exactly_once
  pipeline_id: bench
  mysql_address: %s
`, e3.FEURL(), bufferSize, e3.MySQLAddr()), rows, e3, 1024))

	e2 := startEmulator(t)
	results = append(results, runBench(t, "http_client per-batch stream loads", fmt.Sprintf(`
http_client:
  url: '%s/api/test/${! @starrocks_table }/_stream_load'
  verb: PUT
  headers:
    format: json
    strip_outer_array: "true"
  basic_auth: { enabled: true, username: root, password: "" }
  max_in_flight: 64
  batching:
    count: %d
    processors:
      - group_by_value: { value: '${! @starrocks_table }' }
      - archive: { format: json_array }
`, e2.FEURL(), envInt(t, benchEnv+"_BATCH", 100)), rows, e2, 64))

	t.Logf("| output | rows | rows/s | p50 visibility | p99 visibility | HTTP loads/s | peak heap (MiB) |")
	t.Logf("|---|---|---|---|---|---|---|")
	for _, r := range results {
		t.Logf("| %s | %d | %.0f | %v | %v | %.1f | %.0f |", r.name, r.rows, float64(r.rows)/r.elapsed.Seconds(),
			r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), float64(r.loads)/r.elapsed.Seconds(), float64(r.peakHeap)/(1<<20))
	}
	st := results[1]
	t.Logf("starrocks_txn own metrics: %d commits (%.2f/s), %d begins; visibility latency per source transaction p50 %v p99 %v; peak buffered %.1f MiB of buffer_size %d MiB",
		st.outputCommits, float64(st.outputCommits)/st.elapsed.Seconds(), e1c.Begins, st.visP50.Round(time.Millisecond), st.visP99.Round(time.Millisecond), float64(st.peakBuffer)/(1<<20), bufferSize>>20)
	t.Logf("p50/p99 columns: batch creation to acknowledgement (= visible in StarRocks for both loaders); peak heap is the whole test process, emulator and pre-built input included")
	eo := results[2]
	t.Logf("at_least_once vs exactly_once: %.0f vs %.0f rows/s (%.0f%%), p50 %v vs %v, p99 %v vs %v, per-transaction visibility p50 %v vs %v, loads/s %.1f vs %.1f",
		float64(st.rows)/st.elapsed.Seconds(), float64(eo.rows)/eo.elapsed.Seconds(), 100*st.elapsed.Seconds()/eo.elapsed.Seconds(),
		st.p50.Round(time.Millisecond), eo.p50.Round(time.Millisecond), st.p99.Round(time.Millisecond), eo.p99.Round(time.Millisecond),
		st.visP50.Round(time.Millisecond), eo.visP50.Round(time.Millisecond), float64(st.loads)/st.elapsed.Seconds(), float64(eo.loads)/eo.elapsed.Seconds())
	require.Equal(t, rows/3, results[1].committed, "starrocks_txn committed every event")
	require.Equal(t, rows/3, results[2].committed, "starrocks_txn exactly_once committed every event once")
}

func benchLogLevel() string {
	if v := os.Getenv(benchEnv + "_LOG"); v != "" {
		return v
	}
	return "warn"
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	return n
}
