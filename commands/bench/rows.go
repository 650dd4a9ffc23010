package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
)

// runRow measures row c on the loaded topic tp and verifies it.
func runRow(ctx context.Context, o Options, c Config, tp *loadedTopic, prof *profiler) (Result, error) {
	res := Result{Config: c, SourceTxns: tp.sourceTxns, Rows: tp.rows, Records: tp.records}
	name := slug(fmt.Sprintf("p%d-t%d-%s", c.Topic.Partitions, c.Topic.Tables, c.Name))
	if c.Kind == KindDebezium || c.Debezium {
		// Producing the Debezium topics is untimed, like loading the
		// topic, and outside the row's timeout: on a loaded machine it
		// took the whole of it.
		dbz, err := tp.debeziumView(ctx, o)
		if err != nil {
			return res, err
		}
		res.SourceTxns, res.Rows, res.Records = dbz.sourceTxns, dbz.rows, dbz.records
		tp = dbz
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if c.Kind == KindFranz {
		return runFranz(ctx, res, tp, prof, name)
	}
	if c.Kind == KindProcesses {
		return runProcesses(ctx, o, res, tp, name)
	}
	return runStream(ctx, o, res, tp, prof, name)
}

// settle drops what earlier rows left, so that RSS and the garbage
// collector start from this row.
func settle() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	return readRSS()
}

// runFranz reads the whole topic with a bare franz-go consumer
// (read_committed, from the start, no group): Kafka's own floor in this
// process.
func runFranz(ctx context.Context, res Result, tp *loadedTopic, prof *profiler, name string) (Result, error) {
	res.StartRSS = settle()
	res.StartLive = readLiveHeap()
	if err := prof.start(name); err != nil {
		return res, err
	}
	// The client fetches from its creation on: the window starts before
	// it (and so includes connecting, a few milliseconds).
	first := readUsage()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(tp.brokers...),
		kgo.ConsumeTopics(topicName),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxBytes(consumerFetchMaxBytes),
	)
	if err != nil {
		_ = prof.stop(name)
		return res, fmt.Errorf("creating the Kafka client: %w", err)
	}
	defer cl.Close()
	var last usage
	var seen int64
	for seen < tp.records {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			_ = prof.stop(name)
			return res, fmt.Errorf("%d of %d records read: %w", seen, tp.records, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			_ = prof.stop(name)
			return res, fmt.Errorf("fetching %s/%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		n := int64(fs.NumRecords())
		if n == 0 {
			continue
		}
		seen += n
		res.Batches++
		res.Delivered += n
	}
	last = readUsage()
	if err := prof.stop(name); err != nil {
		return res, err
	}
	w := between(first, last)
	res.Elapsed, res.CPU, res.AllocBytes, res.AllocObjects, res.GCShare = w.wall, w.cpu, w.allocBytes, w.allocObj, w.gcShare
	res.Sys, res.MinFaults = w.sys, w.minFaults
	res.PeakRSS = max(res.StartRSS, readRSS())
	res.PeakLive = max(res.StartLive, readLiveHeap())
	res.LatencySource = "-"
	res.Verified = seen == tp.records
	res.Verification = fmt.Sprintf("OK: all %d records read", seen)
	if !res.Verified {
		res.Verification = fmt.Sprintf("FAILED: %d of %d records read", seen, tp.records)
	}
	return res, nil
}

// runStream runs row c as a Benthos stream until the output acknowledged
// every message its input delivered, then verifies it.
func runStream(ctx context.Context, o Options, res Result, tp *loadedTopic, prof *profiler, name string) (Result, error) {
	c := res.Config
	var em *emulator.Emulator
	var db *sql.DB
	if c.Loader() {
		var err error
		version := ""
		if c.Mode == ModePerTable {
			version = PerTableVersion
		}
		if em, err = emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: tp.schema, StarRocksVersion: version}); err != nil {
			return res, fmt.Errorf("starting the emulator: %w", err)
		}
		defer em.Close()
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr = "root", "tcp", em.MySQLAddr()
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return res, fmt.Errorf("configuring the MySQL client: %w", err)
		}
		db = sql.OpenDB(connector)
		defer db.Close()
	}

	want := tp.records
	var pre *prebuilt
	if c.Kind == KindOutput {
		var err error
		if pre, err = buildContractStream(ctx, c, tp); err != nil {
			return res, fmt.Errorf("building the contract stream: %w", err)
		}
		want = pre.msgs
	}

	m := newMeter(want)
	m.rate = c.Rate
	env := service.GlobalEnvironment().Clone()
	capture, err := metricscap.Register(env, "bench_metrics")
	if err != nil {
		return res, fmt.Errorf("registering the metrics capture: %w", err)
	}
	if err := registerTimedInput(env, m); err != nil {
		return res, fmt.Errorf("registering the timed input: %w", err)
	}
	if pre != nil {
		if err := registerPrebuiltInput(env, pre); err != nil {
			return res, fmt.Errorf("registering the pre-built input: %w", err)
		}
	}
	feURL, mysqlAddr := "", ""
	if em != nil {
		feURL, mysqlAddr = em.FEURL(), em.MySQLAddr()
	}
	stream, err := buildStream(env, PipelineYAML(c, o, "bench-"+name, strings.Join(tp.brokers, ","), feURL, mysqlAddr))
	if err != nil {
		return res, err
	}

	res.StartRSS = settle()
	heap := newHeapAtPeak(o.HeapProfile, name)
	if err := heap.takeBase(); err != nil {
		return res, err
	}
	var before emulator.Counters
	if em != nil {
		before = em.Counters()
	}
	res.StartLive = readLiveHeap()
	var peakRSS, peakBuf, peakInFlight, peakLive atomic.Int64
	peakRSS.Store(res.StartRSS)
	peakLive.Store(res.StartLive)
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(25 * time.Millisecond)
		defer t.Stop()
		for {
			if v := readRSS(); v > peakRSS.Load() {
				peakRSS.Store(v)
			}
			if v := readLiveHeap(); v > peakLive.Load() {
				peakLive.Store(v)
			}
			if v := capture.Gauge("starrocks_txn_buffered_bytes"); v > peakBuf.Load() {
				peakBuf.Store(v)
			}
			if v := m.read.Load() - m.acked.Load(); v > peakInFlight.Load() {
				peakInFlight.Store(v)
				heap.offer(v, func() (int64, int64) { return m.read.Load(), m.acked.Load() })
			}
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
			}
		}
	}()

	if err := prof.start(name); err != nil {
		stopSampling()
		wg.Wait()
		return res, err
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	streamErr := make(chan error, 1)
	started := time.Now()
	go func() { streamErr <- stream.Run(runCtx) }()

	var runErr error
	select {
	case <-m.done:
	case err := <-streamErr:
		if err == nil {
			err = errors.New("the pipeline stopped before it delivered every record")
		}
		runErr = err
	case <-ctx.Done():
		runErr = fmt.Errorf("%d of %d messages acknowledged (%d nacked) when the run timed out: %w",
			m.acked.Load(), want, m.nacked.Load(), ctx.Err())
	}
	profErr := prof.stop(name)
	stopSampling()
	wg.Wait()
	if line, err := heap.write(); err != nil && profErr == nil {
		profErr = err
	} else if line != "" && o.Progress != nil {
		o.Progress("      " + line)
	}
	if w, ok := m.measured(); ok {
		res.Elapsed, res.CPU, res.AllocBytes, res.AllocObjects, res.GCShare = w.wall, w.cpu, w.allocBytes, w.allocObj, w.gcShare
		res.Sys, res.MinFaults = w.sys, w.minFaults
	}
	if first := m.startedAt(); !first.IsZero() {
		res.StartDelay = first.Sub(started)
	}
	res.PeakRSS, res.PeakBuffered, res.PeakInFlight, res.PeakLive = peakRSS.Load(), peakBuf.Load(), peakInFlight.Load(), peakLive.Load()
	// A finished run stops gracefully; an interrupted or failed one (whose
	// held batches may never commit) does not wait long.
	stopWithin := 15 * time.Second
	if runErr != nil {
		stopWithin = 3 * time.Second
	}
	if err := stream.StopWithin(stopWithin); err != nil && runErr == nil {
		runErr = fmt.Errorf("stopping the pipeline: %w", err)
	}
	stopRun()
	if runErr == nil {
		runErr = profErr
	}
	if runErr != nil {
		return res, runErr
	}

	if em != nil {
		after := em.Counters()
		res.Loads = (after.Loads + after.StreamLoads) - (before.Loads + before.StreamLoads)
		res.Commits = after.Committed - before.Committed
	}
	res.Starved = capture.Counter("starrocks_txn_max_in_flight_starved")
	res.Batches, res.Delivered = m.batches.Load(), m.read.Load()
	res.PaceWait = time.Duration(m.paceWait.Load())
	span, last := m.reads()
	res.ReadSpan, res.LastBatch = span, int64(last)
	if c.StarRocksTxn() {
		lat := capture.Timings("starrocks_txn_visibility_latency_ns")
		res.VisP50, res.VisP99 = metricscap.Quantile(lat, 0.5), metricscap.Quantile(lat, 0.99)
		res.LatencySource = "starrocks_txn_visibility_latency_ns"
		cl := capture.Timings("starrocks_txn_commit_latency_ns")
		res.CommitP50, res.CommitP99 = metricscap.Quantile(cl, 0.5), metricscap.Quantile(cl, 0.99)
		if w := capture.Timings("starrocks_txn_commit_window_ns"); len(w) > 0 {
			res.Windows = len(w)
			res.WindowP50, res.WindowP99, res.WindowMax = metricscap.Quantile(w, 0.5), metricscap.Quantile(w, 0.99), metricscap.Quantile(w, 1)
		}
	} else {
		res.VisP50, res.VisP99 = m.quantile(0.5), m.quantile(0.99)
		res.LatencySource = "read → ack"
	}

	verifyCtx, cancelVerify := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelVerify()
	var lastEnds map[string]int64
	if c.Semantic == SemanticExactlyOnce {
		// What the progress table must hold, read from Kafka itself rather
		// than from anything the pipeline saw.
		if lastEnds, err = LastEndOffsets(verifyCtx, tp.brokers, topicName, tp.records); err != nil {
			return res, fmt.Errorf("reading the END offsets back from Kafka: %w", err)
		}
	}
	res.Verified, res.Verification, err = verify(verifyCtx, c, res, m, capture, tp, db, lastEnds)
	return res, err
}

// buildStream builds a stream from yaml in env, with warnings only and the
// metrics captured.
func buildStream(env *service.Environment, yaml string) (*service.Stream, error) {
	b := env.NewStreamBuilder()
	if err := b.SetYAML(yaml); err != nil {
		return nil, fmt.Errorf("reading the pipeline config: %w", err)
	}
	if err := b.SetMetricsYAML("bench_metrics: {}"); err != nil {
		return nil, fmt.Errorf("setting the metrics: %w", err)
	}
	if err := b.SetLoggerYAML("level: warn"); err != nil {
		return nil, fmt.Errorf("setting the logger: %w", err)
	}
	stream, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("building the pipeline: %w", err)
	}
	return stream, nil
}

// buildContractStream reads the whole topic through kafka_txn →
// txn_assembler, untimed, and keeps what the assembler emitted: the input of
// the row that measures starrocks_txn alone.
func buildContractStream(ctx context.Context, c Config, tp *loadedTopic) (*prebuilt, error) {
	env := service.GlobalEnvironment().Clone()
	b := env.NewStreamBuilder()
	if err := b.SetLoggerYAML("level: warn"); err != nil {
		return nil, err
	}
	if err := b.AddInputYAML(fmt.Sprintf(`
kafka_txn:
  seed_brokers: [ %q ]
  topics: [ %q ]
  consumer_group: bench-prebuild
  checkpoint_limit: 100000
  batching:
    count: %d
    period: 50ms
processors:
  - txn_assembler:
      format: envelope
`, strings.Join(tp.brokers, ","), topicName, c.Batch)); err != nil {
		return nil, err
	}
	// The assembler drops each BEGIN: what comes out is the records less
	// one per source transaction.
	want := tp.records - tp.sourceTxns
	p := &prebuilt{}
	done := make(chan struct{})
	var once sync.Once
	if err := b.AddBatchConsumerFunc(func(_ context.Context, batch service.MessageBatch) error {
		for _, msg := range batch {
			if err := msg.GetError(); err != nil {
				return fmt.Errorf("the assembler flagged a message of the workload: %w", err)
			}
		}
		p.mu.Lock()
		p.batches = append(p.batches, batch)
		p.msgs += int64(len(batch))
		if p.msgs >= want {
			once.Do(func() { close(done) })
		}
		p.mu.Unlock()
		return nil
	}); err != nil {
		return nil, err
	}
	stream, err := b.Build()
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- stream.Run(runCtx) }()
	select {
	case <-done:
	case err := <-errc:
		if err == nil {
			err = errors.New("the stream stopped early")
		}
		return nil, err
	case <-ctx.Done():
		p.mu.Lock()
		n := p.msgs
		p.mu.Unlock()
		return nil, fmt.Errorf("%d of %d messages after the timeout: %w", n, want, ctx.Err())
	}
	if err := stream.StopWithin(10 * time.Second); err != nil {
		return nil, fmt.Errorf("stopping the stream: %w", err)
	}
	if p.msgs != want {
		return nil, fmt.Errorf("the assembler emitted %d messages, want %d", p.msgs, want)
	}
	return p, nil
}
