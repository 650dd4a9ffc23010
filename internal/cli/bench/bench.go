// Package bench is the whole-pipeline comparative benchmark behind
// `benthos-starrocks bench`. For every configuration it pre-produces the same
// transactional CDC workload into a fresh in-process Kafka (kfake), then runs
// kafka_txn → txn_assembler → <output> in this process and measures from the
// first record read until the last one is acknowledged (for starrocks_txn and
// http_client: visible in the emulator). Outputs compared: starrocks_txn into
// the emulator, Benthos's drop (the engine's ceiling) and Benthos's
// http_client doing one plain stream load per table per batch (what users do
// today, without atomicity); starrocks_txn runs twice, with semantic
// at_least_once and exactly_once, so the cost of the progress table shows.
// Every configuration is verified: the tables must equal what the producer
// committed (drop: every record delivered; exactly_once: also the progress
// table holds every partition's last END offset), so a fast wrong result
// cannot pass.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/internal/workload"

	// The components the configurations use.
	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	_ "github.com/starrocks-txn/benthos-starrocks/components"
)

// Output kinds a configuration can load into.
const (
	OutputStarRocksTxn = "starrocks_txn"
	OutputDrop         = "drop"
	OutputHTTPClient   = "http_client"
)

// Inputs a configuration reads with: kafka_txn (the envelope workload, with
// txn_assembler) or debezium_txn (the same rows as Debezium topics).
const (
	InputKafkaTxn    = ""
	InputDebeziumTxn = "debezium_txn"
)

// Delivery semantics of a starrocks_txn configuration (its `semantic` field).
const (
	SemanticAtLeastOnce = "at_least_once"
	SemanticExactlyOnce = "exactly_once"
)

// The exactly_once configuration's pipeline_id and the progress table it
// writes (the output's default name) in the workload's database.
const (
	PipelineID    = "bench"
	ProgressTable = "starrocks_txn_progress"
)

// Defaults of Options.
const (
	DefaultTxns            = 40000
	DefaultPartitions      = 4
	DefaultBatch           = 1000
	DefaultMaxInFlight     = 1024
	DefaultHTTPMaxInFlight = 64
	DefaultBufferSize      = 128 << 20
	DefaultCommitInterval  = time.Second
	DefaultAbortRatio      = 0.05
	// QuickTxns is the workload of --quick.
	QuickTxns = 600
)

// Options configure a benchmark run.
type Options struct {
	// Txns is the number of committed source transactions per configuration
	// (each writes about 5.5 rows over orders, order_items and order_events).
	Txns int
	// Partitions, Batch (kafka_txn batching.count) and MaxInFlight
	// (starrocks_txn max_in_flight) are the defaults every row uses and the
	// sweep varies one at a time.
	Partitions  int
	Batch       int
	MaxInFlight int
	// HTTPMaxInFlight is http_client's max_in_flight.
	HTTPMaxInFlight int
	BufferSize      int
	CommitInterval  time.Duration
	// AbortRatio is the share of Kafka producer transactions aborted (read
	// by nobody, as read_committed filters them).
	AbortRatio float64
	// Sweep adds rows varying max_in_flight, batch size and partitions.
	Sweep bool
	// Seed makes the workload the same in every configuration.
	Seed uint64
	// Progress, when set, receives one line per configuration as it runs.
	Progress func(string)
	// Timeout bounds one configuration's run (default 5 minutes).
	Timeout time.Duration
}

func (o *Options) defaults() {
	if o.Txns <= 0 {
		o.Txns = DefaultTxns
	}
	if o.Partitions <= 0 {
		o.Partitions = DefaultPartitions
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.HTTPMaxInFlight <= 0 {
		o.HTTPMaxInFlight = DefaultHTTPMaxInFlight
	}
	if o.BufferSize <= 0 {
		o.BufferSize = DefaultBufferSize
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = DefaultCommitInterval
	}
	if o.AbortRatio < 0 {
		o.AbortRatio = 0
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
}

// Config is one row of the table.
type Config struct {
	Name        string
	Output      string
	Partitions  int
	Batch       int
	MaxInFlight int
	// Semantic is starrocks_txn's semantic (SemanticAtLeastOnce or
	// SemanticExactlyOnce); empty for the other outputs.
	Semantic string
	// Sweep names the axis a sweep row varies ("" for the comparison rows).
	Sweep string
	// Input is InputKafkaTxn or InputDebeziumTxn.
	Input string
}

// Result is the measured outcome of one configuration.
type Result struct {
	Config
	SourceTxns int64 // committed source transactions in the input
	Rows       int64 // data rows (changes) of those transactions
	Records    int64 // Kafka records read (rows + BEGIN/END events)
	// Batches is the number of input batches kafka_txn delivered.
	Batches int64
	// Starved counts starrocks_txn_max_in_flight_starved: cycles that
	// could not fill because every WriteBatch slot was held.
	Starved int64
	// StartDelay is the time from starting the stream to the first record
	// read (connecting and joining the consumer group); not in Elapsed.
	StartDelay time.Duration
	Elapsed    time.Duration
	// VisP50 and VisP99: for starrocks_txn its own
	// starrocks_txn_visibility_latency_ns per source transaction, measured
	// from the time kafka_txn handed the record to the pipeline (the bench
	// stamps kafka_timestamp_ms with it); for the others the read →
	// acknowledgement time of each record (http_client acknowledges after
	// its load returned, so its rows are visible by then).
	VisP50, VisP99 time.Duration
	LatencySource  string
	Loads          int64 // HTTP load requests the emulator served
	Commits        int64 // StarRocks transactions committed (starrocks_txn)
	PeakRSS        int64 // bytes, sampled VmRSS of the process during the run
	StartRSS       int64 // bytes, VmRSS when the pipeline started
	PeakBuffered   int64 // bytes, peak starrocks_txn_buffered_bytes
	BufferSize     int
	Verified       bool
	Verification   string
	// CommitInterval is starrocks_txn's commit_interval in this run.
	CommitInterval time.Duration
}

// RowsPerSec and TxnsPerSec are the throughputs.
func (r Result) RowsPerSec() float64 { return perSec(r.Rows, r.Elapsed) }

// TxnsPerSec is source transactions per second.
func (r Result) TxnsPerSec() float64 { return perSec(r.SourceTxns, r.Elapsed) }

// RecordsPerBatch is the mean size of the input batches kafka_txn delivered.
func (r Result) RecordsPerBatch() float64 {
	if r.Batches == 0 {
		return 0
	}
	return float64(r.Records) / float64(r.Batches)
}

// ModelBound is the commit-cycle model's ceiling for starrocks_txn in
// records per second: max_in_flight × the mean delivered batch per
// commit_interval (docs/notes/benthos-semantics.md §0.5); 0 for the other outputs.
func (r Result) ModelBound(commitInterval time.Duration) float64 {
	if r.Output != OutputStarRocksTxn || commitInterval <= 0 {
		return 0
	}
	return float64(r.MaxInFlight) * r.RecordsPerBatch() / commitInterval.Seconds()
}

// LoadsPerSec is HTTP loads per second.
func (r Result) LoadsPerSec() float64 { return perSec(r.Loads, r.Elapsed) }

func perSec(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Configs returns the rows a run with o measures, in order.
func Configs(o Options) []Config {
	o.defaults()
	base := Config{Partitions: o.Partitions, Batch: o.Batch, MaxInFlight: o.MaxInFlight}
	mk := func(name, out string, f func(*Config)) Config {
		c := base
		c.Name, c.Output = name, out
		if f != nil {
			f(&c)
		}
		return c
	}
	base.Semantic = SemanticAtLeastOnce
	cs := []Config{
		mk("starrocks_txn → emulator", OutputStarRocksTxn, nil),
		mk("starrocks_txn exactly_once → emulator", OutputStarRocksTxn, func(c *Config) { c.Semantic = SemanticExactlyOnce }),
		mk("drop (engine ceiling)", OutputDrop, func(c *Config) { c.Semantic = "" }),
		mk("http_client plain stream loads", OutputHTTPClient, func(c *Config) { c.MaxInFlight, c.Semantic = o.HTTPMaxInFlight, "" }),
		// The same rows from Debezium topics, beside the kafka_txn row.
		mk("debezium_txn → starrocks_txn → emulator", OutputStarRocksTxn, func(c *Config) { c.Input = InputDebeziumTxn }),
	}
	if !o.Sweep {
		return cs
	}
	for _, v := range around(o.MaxInFlight, 4) {
		cs = append(cs, mk(fmt.Sprintf("sweep max_in_flight=%d", v), OutputStarRocksTxn, func(c *Config) { c.MaxInFlight, c.Sweep = v, "max_in_flight" }))
	}
	for _, v := range around(o.Batch, 4) {
		cs = append(cs, mk(fmt.Sprintf("sweep batch=%d", v), OutputStarRocksTxn, func(c *Config) { c.Batch, c.Sweep = v, "batch" }))
	}
	for _, v := range around(o.Partitions, 2) {
		cs = append(cs, mk(fmt.Sprintf("sweep partitions=%d", v), OutputStarRocksTxn, func(c *Config) { c.Partitions, c.Sweep = v, "partitions" }))
	}
	return cs
}

// around returns v/f, v, v*f (at least 1).
func around(v, f int) []int {
	return []int{max(1, v/f), v, v * f}
}

// Run measures every configuration of o, one after another.
func Run(ctx context.Context, o Options) ([]Result, error) {
	o.defaults()
	// The SQL engine logs every MySQL connection at info level.
	logrus.SetLevel(logrus.WarnLevel)
	var results []Result
	for i, c := range Configs(o) {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf("[%d/%d] %s: partitions %d, batch %d, max_in_flight %d ...", i+1, len(Configs(o)), c.Name, c.Partitions, c.Batch, c.MaxInFlight))
		}
		r, err := runOne(ctx, o, c)
		if err != nil {
			return results, fmt.Errorf("running %s: %w", c.Name, err)
		}
		if o.Progress != nil {
			o.Progress(fmt.Sprintf("      %.0f rows/s, %d rows in %s after %s to the first record, %d input batches (%.0f records each), %d commits, max_in_flight starved %d times; verified: %s",
				r.RowsPerSec(), r.Rows, r.Elapsed.Round(time.Millisecond), r.StartDelay.Round(time.Millisecond), r.Batches, r.RecordsPerBatch(), r.Commits, r.Starved, r.Verification))
		}
		results = append(results, r)
	}
	return results, nil
}

const topic = "cdc"

// runOne pre-produces the workload into a fresh Kafka, runs the pipeline
// until every record is acknowledged, and verifies the result.
func runOne(ctx context.Context, o Options, c Config) (res Result, err error) {
	res = Result{Config: c, BufferSize: o.BufferSize, CommitInterval: o.CommitInterval}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	kafka, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(c.Partitions), topic))
	if err != nil {
		return res, fmt.Errorf("starting the in-process Kafka: %w", err)
	}
	defer kafka.Close()
	brokers := kafka.ListenAddrs()

	model := workload.NewModel()
	gen := workload.NewGenerator(workload.Options{Partitions: int32(c.Partitions), Seed: o.Seed, Events: true})
	if c.Input == InputDebeziumTxn {
		if err := produceDebezium(ctx, brokers, c, o, gen, model, &res); err != nil {
			return res, err
		}
	} else {
		prod, err := workload.NewProducer(workload.ProducerOptions{
			Brokers: brokers, Topic: topic, AbortRatio: o.AbortRatio, TxnsPerKafkaTxn: 50,
			TransactionalID: "bench-producer",
		}, gen, model)
		if err != nil {
			return res, err
		}
		err = prod.Produce(ctx, o.Txns)
		prod.Close()
		if err != nil {
			return res, fmt.Errorf("pre-producing the workload: %w", err)
		}
		if ctx.Err() != nil {
			return res, fmt.Errorf("pre-producing the workload: %w", ctx.Err())
		}
		res.SourceTxns = prod.Stats.Committed.Load()
		res.Records = prod.Stats.Records.Load()
		// Every committed source transaction is a BEGIN, its changes and an
		// END (workload.Envelope).
		res.Rows = res.Records - 2*res.SourceTxns
	}

	var em *emulator.Emulator
	var db *sql.DB
	if c.Output != OutputDrop {
		if em, err = emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: Schema}); err != nil {
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

	m := newMeter(res.Records)
	env := service.GlobalEnvironment().Clone()
	capture, err := metricscap.Register(env, "bench_metrics")
	if err != nil {
		return res, fmt.Errorf("registering the metrics capture: %w", err)
	}
	if err := registerTimedInput(env, m); err != nil {
		return res, fmt.Errorf("registering the timed input: %w", err)
	}
	b := env.NewStreamBuilder()
	feURL, mysqlAddr := "", ""
	if em != nil {
		feURL, mysqlAddr = em.FEURL(), em.MySQLAddr()
	}
	if err := b.SetYAML(PipelineYAML(c, o, strings.Join(brokers, ","), feURL, mysqlAddr)); err != nil {
		return res, fmt.Errorf("reading the pipeline config: %w", err)
	}
	if err := b.SetMetricsYAML("bench_metrics: {}"); err != nil {
		return res, fmt.Errorf("setting the metrics: %w", err)
	}
	if err := b.SetLoggerYAML("level: warn"); err != nil {
		return res, fmt.Errorf("setting the logger: %w", err)
	}
	stream, err := b.Build()
	if err != nil {
		return res, fmt.Errorf("building the pipeline: %w", err)
	}

	// Drop what earlier configurations left so RSS starts from this one.
	runtime.GC()
	debug.FreeOSMemory()
	res.StartRSS = readRSS()
	var before emulator.Counters
	if em != nil {
		before = em.Counters()
	}
	var peakRSS, peakBuf atomic.Int64
	peakRSS.Store(res.StartRSS)
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
			if v := capture.Gauge("starrocks_txn_buffered_bytes"); v > peakBuf.Load() {
				peakBuf.Store(v)
			}
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
			}
		}
	}()

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
		runErr = fmt.Errorf("%d of %d records acknowledged (%d nacked) when the run timed out: %w",
			m.acked.Load(), res.Records, m.nacked.Load(), ctx.Err())
	}
	stopSampling()
	wg.Wait()
	first, last := m.window()
	res.Elapsed = last.Sub(first)
	if !first.IsZero() {
		res.StartDelay = first.Sub(started)
	}
	res.PeakRSS, res.PeakBuffered = peakRSS.Load(), peakBuf.Load()
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
	if runErr != nil {
		return res, runErr
	}

	if em != nil {
		after := em.Counters()
		res.Loads = (after.Loads + after.StreamLoads) - (before.Loads + before.StreamLoads)
	}
	res.Commits = capture.Counter("starrocks_txn_commits")
	res.Starved = capture.Counter("starrocks_txn_max_in_flight_starved")
	res.Batches = m.batches.Load()
	if c.Output == OutputStarRocksTxn {
		lat := capture.Timings("starrocks_txn_visibility_latency_ns")
		res.VisP50, res.VisP99 = metricscap.Quantile(lat, 0.5), metricscap.Quantile(lat, 0.99)
		res.LatencySource = "starrocks_txn_visibility_latency_ns"
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
		if lastEnds, err = LastEndOffsets(verifyCtx, brokers, topic, res.Records); err != nil {
			return res, fmt.Errorf("reading the END offsets back from Kafka: %w", err)
		}
	}
	res.Verified, res.Verification, err = verify(verifyCtx, c, res, m, capture, model, db, lastEnds)
	return res, err
}

// verify checks that the configuration delivered exactly the committed
// workload: for drop every record was acknowledged and none nacked; for the
// loaders the tables equal the model; for starrocks_txn also every source
// transaction was counted committed once; for exactly_once also the progress
// table holds, for every partition, lastEnds (the partition's last END
// offset) as its committed_offset.
func verify(ctx context.Context, c Config, res Result, m *meter, capture *metricscap.Capture, model *workload.Model, db *sql.DB, lastEnds map[string]int64) (bool, string, error) {
	if n := m.nacked.Load(); n > 0 {
		return false, fmt.Sprintf("FAILED: %d records nacked", n), nil
	}
	if got := m.acked.Load(); got != res.Records {
		return false, fmt.Sprintf("FAILED: %d of %d records acknowledged", got, res.Records), nil
	}
	if got := int64(model.Txns()); got != res.SourceTxns {
		return false, fmt.Sprintf("FAILED: the model holds %d source transactions, the producer committed %d", got, res.SourceTxns), nil
	}
	if c.Output == OutputDrop {
		return true, fmt.Sprintf("OK: all %d records delivered", res.Records), nil
	}
	want := model.Snapshot()
	got, err := workload.ReadTarget(ctx, db, true)
	if err != nil {
		return false, "", fmt.Errorf("reading the target tables: %w", err)
	}
	if diff := describeDiff(want, got); diff != "" {
		return false, "FAILED: " + diff, nil
	}
	if c.Output == OutputStarRocksTxn {
		if n := capture.Counter("starrocks_txn_source_txns_committed"); n != res.SourceTxns {
			return false, fmt.Sprintf("FAILED: starrocks_txn committed %d source transactions, the producer %d", n, res.SourceTxns), nil
		}
	}
	ok := fmt.Sprintf("OK: tables = model (%d orders, %d items, %d events)", len(want.Orders), len(want.Items), len(want.Events))
	if c.Semantic != SemanticExactlyOnce {
		return true, ok, nil
	}
	bad, err := CheckProgress(ctx, db, workload.Database, lastEnds)
	if err != nil {
		return false, "", err
	}
	if bad != "" {
		return false, "FAILED: " + bad, nil
	}
	return true, fmt.Sprintf("%s; %s.%s: %d partitions at their last END offset (%d replays dropped)",
		ok, workload.Database, ProgressTable, len(lastEnds), capture.Counter("starrocks_txn_replays_dropped")), nil
}

// LastEndOffsets reads the topic from the start with read_committed until it
// has seen records records, and returns the offset of the last TXN_END
// event of every partition that has one, keyed like starrocks_partition
// ("<topic>/<partition>"). That is what the progress table of an
// exactly_once run that loaded everything must hold as committed_offset.
func LastEndOffsets(ctx context.Context, brokers []string, topic string, records int64) (map[string]int64, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	if err != nil {
		return nil, fmt.Errorf("creating the Kafka client: %w", err)
	}
	defer cl.Close()
	ends := map[string]int64{}
	var seen int64
	var decodeErr error
	for seen < records {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%d of %d records read: %w", seen, records, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("fetching %s/%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			var ev struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(r.Value, &ev); err != nil {
				if decodeErr == nil {
					decodeErr = fmt.Errorf("decoding the record at %s/%d offset %d: %w", r.Topic, r.Partition, r.Offset, err)
				}
				return
			}
			if ev.Type != "TXN_END" {
				return
			}
			key := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			if cur, ok := ends[key]; !ok || r.Offset > cur {
				ends[key] = r.Offset
			}
		})
		if decodeErr != nil {
			return nil, decodeErr
		}
	}
	return ends, nil
}

// erNoSuchTable is the MySQL error number of a missing table.
const erNoSuchTable = 1146

// CheckProgress compares the progress table of database with want
// (starrocks_partition → the END offset of its last source transaction):
// every partition of want must have a row of PipelineID whose
// committed_offset equals it, and there must be no row of another
// partition. It returns "" when the table matches, else what differs.
func CheckProgress(ctx context.Context, db *sql.DB, database string, want map[string]int64) (string, error) {
	if len(want) == 0 {
		return "no partition to check: the workload has no committed source transaction", nil
	}
	q := fmt.Sprintf("SELECT source_partition, committed_offset FROM `%s`.`%s` WHERE pipeline_id = ?", database, ProgressTable)
	rows, err := db.QueryContext(ctx, q, PipelineID)
	if myErr := (*mysql.MySQLError)(nil); errors.As(err, &myErr) && myErr.Number == erNoSuchTable {
		return fmt.Sprintf("%s.%s does not exist: the output wrote no progress (was it run with semantic exactly_once?)", database, ProgressTable), nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the progress table %s.%s: %w", database, ProgressTable, err)
	}
	got := map[string]int64{}
	for rows.Next() {
		var part string
		var off int64
		if err := rows.Scan(&part, &off); err != nil {
			_ = rows.Close()
			return "", fmt.Errorf("reading the progress table %s.%s: %w", database, ProgressTable, err)
		}
		got[part] = off
	}
	if err := rows.Close(); err != nil {
		return "", fmt.Errorf("reading the progress table %s.%s: %w", database, ProgressTable, err)
	}
	if len(got) == 0 {
		return fmt.Sprintf("%s.%s holds no progress row of pipeline %q (want %d partitions)", database, ProgressTable, PipelineID, len(want)), nil
	}
	var diffs []string
	for _, part := range slices.Sorted(maps.Keys(want)) {
		off, ok := got[part]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: no row (want committed_offset %d)", part, want[part]))
		case off != want[part]:
			diffs = append(diffs, fmt.Sprintf("%s: committed_offset %d, want %d (the last END offset)", part, off, want[part]))
		}
	}
	for _, part := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[part]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: unexpected row (committed_offset %d) of a partition with no source transaction", part, got[part]))
		}
	}
	if len(diffs) > 0 {
		return fmt.Sprintf("%s.%s: %s", database, ProgressTable, strings.Join(diffs, "; ")), nil
	}
	return "", nil
}

func describeDiff(want, got workload.Snapshot) string {
	var parts []string
	for _, t := range []struct {
		name      string
		keyFields int
		want, got []string
	}{
		{workload.TableOrders, 1, want.Orders, got.Orders},
		{workload.TableItems, 2, want.Items, got.Items},
		{workload.TableEvents, 0, want.Events, got.Events},
	} {
		if slices.Equal(t.want, t.got) {
			continue
		}
		d := diffTable(t.keyFields, t.want, t.got)
		parts = append(parts, fmt.Sprintf("%s: %d rows missing, %d stale (an older version of the row is visible), %d unexpected",
			t.name, d.missing, d.stale, d.unexpected))
	}
	return strings.Join(parts, "; ")
}

type tableDiff struct{ missing, stale, unexpected int }

// diffTable compares two renderings of a table whose lines start with
// keyFields "|"-separated key fields (0: the whole line is the key and
// duplicates count as unexpected).
func diffTable(keyFields int, want, got []string) tableDiff {
	key := func(line string) string {
		if keyFields == 0 {
			return line
		}
		f := strings.SplitN(line, "|", keyFields+1)
		return strings.Join(f[:min(keyFields, len(f))], "|")
	}
	type versions struct{ want, got map[string]int }
	byKey := map[string]*versions{}
	at := func(k string) *versions {
		v := byKey[k]
		if v == nil {
			v = &versions{want: map[string]int{}, got: map[string]int{}}
			byKey[k] = v
		}
		return v
	}
	for _, l := range want {
		at(key(l)).want[l]++
	}
	for _, l := range got {
		at(key(l)).got[l]++
	}
	var d tableDiff
	for _, v := range byKey {
		nw, ng := 0, 0
		for _, n := range v.want {
			nw += n
		}
		for _, n := range v.got {
			ng += n
		}
		switch {
		case ng == 0:
			d.missing += nw
		case nw == 0 || ng > nw:
			d.unexpected += ng - nw
		case !maps.Equal(v.want, v.got):
			d.stale += nw
		}
	}
	return d
}

// readRSS returns the process's resident set size (VmRSS) in bytes, 0 where
// /proc is not available.
func readRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Bytes()
		if !bytes.HasPrefix(line, []byte("VmRSS:")) {
			continue
		}
		fields := strings.Fields(string(line[len("VmRSS:"):]))
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// weightedQuantile is the nearest-rank q-quantile of samples each counted n
// times.
func weightedQuantile(s []latencySample, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b latencySample) int { return int(a.d - b.d) })
	var total int64
	for _, x := range s {
		total += int64(x.n)
	}
	rank := int64(q * float64(total))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for _, x := range s {
		seen += int64(x.n)
		if seen >= rank {
			return x.d
		}
	}
	return s[len(s)-1].d
}
