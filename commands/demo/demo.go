// Package demo runs the whole product on one machine: the StarRocks emulator,
// an in-process Kafka cluster, a producer of transactional CDC traffic and the
// real pipeline (kafka_txn → txn_assembler → starrocks_txn) from a YAML file,
// then proves through SQL that every committed source transaction arrived
// whole and that the tables equal what the producer committed.
package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/sirupsen/logrus"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"

	// The plugins the pipeline uses.
	_ "github.com/starrocks-txn/benthos-starrocks/components"
)

// Options configure a demo run.
type Options struct {
	Partitions int32
	// Rate is source transactions per second over all partitions.
	Rate       float64
	Duration   time.Duration
	AbortRatio float64
	// Pipeline is the pipeline YAML (examples/demo.yaml); Schema the DDL.
	Pipeline string
	Schema   string
	// HTTPAddr and MySQLAddr of the emulator ("127.0.0.1:0": free ports).
	HTTPAddr  string
	MySQLAddr string
	// Out receives the status line and the summary.
	Out io.Writer
	// Live prints a status line every second.
	Live bool
	// Terminal rewrites the status line in place (carriage return); else
	// every status is a line of its own, as a log wants.
	Terminal bool
	// Seed makes the traffic reproducible.
	Seed uint64
	// Format is FormatEnvelope (the default) or FormatDebezium.
	Format string
	// SchemaChanges, with FormatDebezium, has the source change its tables
	// mid-run (testkit/workload's SchemaPlan, spread over the run): new
	// orders columns, a new table, wider columns, a dropped column.
	SchemaChanges bool
	// StarRocksVersion is the release the emulator answers as ("": its
	// default, 4.0). Below 4.0 there are no multi-table transactions: the
	// output (transaction_mode auto) commits per table (pertable.go).
	StarRocksVersion string
}

// Summary is the outcome of a run.
type Summary struct {
	Elapsed          time.Duration
	SourceCommitted  int64 // source transactions the producer committed
	SourceAborted    int64 // source transactions the producer aborted
	Records          int64 // Kafka records of committed transactions
	TxnsLoaded       int64 // source transactions the output committed
	RowsLoaded       int64
	Commits          int64 // StarRocks transactions committed
	Loads            int64 // HTTP loads
	Checks           int64 // consistency queries run while loading
	TornReads        int64 // of those, the ones that saw half a transaction
	TablesMatch      bool
	Latencies        []time.Duration
	MySQLAddr        string
	Mismatch         string
	ConsistencyError string
	// SnapshotRows and LargestTxn (events) are set by the Debezium format.
	SnapshotRows int64
	LargestTxn   int64
	// SchemaChanges are the schema changes the source made.
	SchemaChanges []string
	// PerTable is set when the emulator answered as StarRocks 3.x: the
	// output committed each cycle per table, and its commit windows are
	// in Windows (starrocks_txn_commit_window_ns). Partial, Healed and
	// LongestPartial are the reader's partial reads: how many queries saw
	// part of a source transaction, how many such partial streaks healed,
	// the longest; a partial read is a failure only when it did not heal
	// (TornReads, ConsistencyError).
	PerTable       bool
	Windows        []time.Duration
	Partial        int64
	Healed         int64
	LongestPartial time.Duration
}

// Running is a started demo: Wait for its summary, then Close.
type Running struct {
	em      *emulator.Emulator
	kafka   *kafka.Cluster
	prod    *workload.Producer
	dbz     *workload.DebeziumProducer
	schemas *schemaLog
	// planEnd is the source transaction after the last planned schema
	// change (0: none): a run with a duration produces at least that many.
	planEnd int
	model   *workload.Model
	stream  *service.Stream
	metrics *metricscap.Capture
	// closeMetrics closes the pipeline's own metrics exporter, if any.
	closeMetrics func(context.Context) error
	db           *sql.DB
	opts         Options
	start        time.Time

	checks, torn atomic.Int64
	consErr      atomic.Value
	// heal follows partial reads in per-table mode (StarRocksVersion
	// below 4.0), nil otherwise.
	heal *testkit.Heal
}

// Start brings every part up and starts producing and loading. On an
// error it stops what it had started and returns the error, never a
// partly started demo.
func Start(ctx context.Context, o Options) (_ *Running, err error) {
	if o.SchemaChanges && o.Format != FormatDebezium {
		return nil, fmt.Errorf("schema changes mid-run need the Debezium format (--format %s)", FormatDebezium)
	}
	if o.Partitions <= 0 {
		o.Partitions = 4
	}
	if o.HTTPAddr == "" {
		o.HTTPAddr = "127.0.0.1:0"
	}
	if o.MySQLAddr == "" {
		o.MySQLAddr = "127.0.0.1:0"
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	// The SQL engine logs every MySQL connection at info level through the
	// global logrus logger; the demo's reader would drown the status line.
	logrus.SetLevel(logrus.WarnLevel)
	// r is not the named result: every error return sets that to nil,
	// and the deferred cleanup must still reach what r holds.
	r := &Running{opts: o, model: workload.NewModel()}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()

	if r.em, err = emulator.Start(emulator.Config{HTTPAddr: o.HTTPAddr, MySQLAddr: o.MySQLAddr, Schema: o.Schema, StarRocksVersion: o.StarRocksVersion}); err != nil {
		return nil, fmt.Errorf("starting the emulator: %w%s", err, portHint(err, o))
	}
	if perTableVersion(r.em.StarRocksVersion()) {
		r.heal = testkit.NewHeal(perTableHealBound)
	}
	const topic = "cdc"
	// The test kit's Kafka: its fetch guard keeps the aborted transactions
	// the producer writes out of the pipeline's read_committed fetches.
	if r.kafka, err = kafka.Start(kafka.Topic(topic, o.Partitions, nil)); err != nil {
		return nil, err
	}
	brokers := r.kafka.Brokers()
	vars := map[string]string{}
	if o.Format == FormatDebezium {
		if vars, err = r.startDebezium(ctx, brokers); err != nil {
			return nil, err
		}
	} else {
		gen := workload.NewGenerator(workload.Options{Partitions: o.Partitions, Seed: o.Seed, Events: true})
		if r.prod, err = workload.NewProducer(workload.ProducerOptions{
			Brokers: brokers, Topic: topic, AbortRatio: o.AbortRatio, Rate: o.Rate,
		}, gen, r.model); err != nil {
			return nil, err
		}
	}

	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", r.em.MySQLAddr()
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("configuring the MySQL client: %w", err)
	}
	r.db = sql.OpenDB(connector)

	env := service.GlobalEnvironment().Clone()
	for k, v := range map[string]string{
		"KAFKA_BROKERS":           strings.Join(brokers, ","),
		"KAFKA_TOPIC":             topic,
		"KAFKA_GROUP":             "starrocks-demo",
		"STARROCKS_LOAD_URL":      r.em.FEURL(),
		"STARROCKS_MYSQL_ADDRESS": r.em.MySQLAddr(),
		"STARROCKS_USER":          "root",
		"STARROCKS_PASSWORD":      "",
	} {
		vars[k] = v
	}
	section, err := metricsSection(o.Pipeline)
	if err != nil {
		return nil, err
	}
	if r.metrics, r.closeMetrics, err = registerMetrics(env, "demo_metrics", section, vars); err != nil {
		return nil, fmt.Errorf("registering the demo's metrics: %w", err)
	}
	b := env.NewStreamBuilder()
	b.SetEnvVarLookupFunc(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err = b.SetYAML(o.Pipeline); err != nil {
		return nil, fmt.Errorf("reading the pipeline config: %w", err)
	}
	if err = b.SetMetricsYAML("demo_metrics: {}"); err != nil {
		return nil, fmt.Errorf("setting the demo's metrics: %w", err)
	}
	if r.stream, err = b.Build(); err != nil {
		return nil, fmt.Errorf("building the pipeline: %w", err)
	}
	r.start = time.Now()
	return r, nil
}

// MySQLAddr is the emulator's MySQL address.
func (r *Running) MySQLAddr() string { return r.em.MySQLAddr() }

// Run produces for o.Duration (or until ctx ends), lets the pipeline drain,
// verifies the target and returns the summary. The emulator keeps running
// until Close.
func (r *Running) Run(ctx context.Context) (*Summary, error) {
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	streamErr := make(chan error, 1)
	go func() { streamErr <- r.stream.Run(runCtx) }()

	if r.dbz != nil {
		// The snapshot's rows are one-row transactions: the readers start
		// once it is loaded.
		if err := r.debeziumSnapshot(ctx); err != nil {
			return r.summary(), err
		}
	}
	prodCtx, stopProducing := context.WithCancel(ctx)
	if r.opts.Duration > 0 {
		prodCtx, stopProducing = context.WithTimeout(ctx, r.opts.Duration)
	}
	defer stopProducing()
	prodErr := make(chan error, 1)
	go func() {
		if r.dbz != nil {
			err := r.dbz.Produce(prodCtx, 0)
			if n := r.planEnd; err == nil && ctx.Err() == nil && n > 0 && int(r.dbz.Stats.Txns.Load()) < n {
				// A loaded machine produced fewer transactions than the
				// rate makes in the run: go on until every planned schema
				// change is made, and a transaction after the last.
				err = r.dbz.Produce(ctx, n)
			}
			prodErr <- err
			return
		}
		prodErr <- r.prod.Produce(prodCtx, 0)
	}()

	var wg sync.WaitGroup
	checkCtx, stopChecks := context.WithCancel(context.Background())
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.checkLoop(checkCtx)
	}()
	if r.opts.Live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.statusLoop(checkCtx)
		}()
	}

	var runErr error
	select {
	case err := <-prodErr:
		runErr = err
	case err := <-streamErr:
		stopProducing()
		<-prodErr
		if err == nil {
			err = errors.New("the pipeline stopped before the demo ended")
		}
		runErr = err
	}
	if runErr == nil {
		runErr = r.drain(ctx)
	}
	stopChecks()
	wg.Wait()
	if r.opts.Live && r.opts.Terminal {
		fmt.Fprintln(r.opts.Out)
	}

	if err := r.stream.StopWithin(15 * time.Second); err != nil && runErr == nil {
		runErr = fmt.Errorf("stopping the pipeline: %w", err)
	}
	cancelRun()

	s := r.summary()
	verifyCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := r.model.Snapshot()
	got, err := workload.ReadTargetFor(verifyCtx, r.db, want, true)
	if err != nil {
		return s, err
	}
	diffs := workload.Compare(want, got)
	s.TablesMatch = len(diffs) == 0
	s.Mismatch = workload.Detail(diffs)
	if r.heal != nil {
		// Per-table: once drained, nothing may be partial any more, and
		// nothing may have stayed partial for long while loading.
		if err := r.healRound(verifyCtx); err != nil {
			return s, err
		}
		if err := r.heal.Check(true); err != nil {
			s.TornReads++
			s.ConsistencyError = err.Error()
		}
		s.Partial, s.Healed, s.LongestPartial = int64(r.heal.Partial), int64(r.heal.Healed), r.heal.Longest
	}
	torn, orphans, err := workload.CheckConsistency(verifyCtx, r.db)
	if err != nil {
		return s, err
	}
	if torn+orphans > 0 {
		s.TornReads++
		s.ConsistencyError = fmt.Sprintf("final state: %d orders differ from their items, %d items without order", torn, orphans)
	}
	if torn, err := r.checkShipments(verifyCtx); err != nil {
		return s, err
	} else if torn > 0 {
		s.TornReads++
		s.ConsistencyError = fmt.Sprintf("final state: %d shipments without their order's update", torn)
	}
	if v, ok := r.consErr.Load().(string); ok && s.ConsistencyError == "" {
		s.ConsistencyError = v
	}
	return s, runErr
}

// drain waits until every committed source transaction is visible.
func (r *Running) drain(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	want := r.model.Snapshot()
	for {
		got, err := workload.ReadTargetFor(ctx, r.db, want, true)
		if err == nil && len(workload.Compare(want, got)) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the target did not reach the committed source state within 60s (%d of %d source transactions loaded)",
				r.metrics.Counter("starrocks_txn_source_txns_committed"), r.summary().SourceCommitted)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the pipeline to drain: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkShipments counts the shipments seen without their order's update
// (0 while the table does not exist: the source has not created it).
func (r *Running) checkShipments(ctx context.Context) (int64, error) {
	if !r.opts.SchemaChanges {
		return 0, nil
	}
	exists, err := workload.TableExists(ctx, r.db, workload.TableShipments)
	if err != nil || !exists {
		return 0, err
	}
	var torn int64
	if err := r.db.QueryRowContext(ctx, workload.ShipmentsConsistencyQuery).Scan(&torn); err != nil {
		return 0, fmt.Errorf("checking shipments: %w", err)
	}
	return torn, nil
}

// checkLoop queries the consistency invariant continuously: a reader must
// never see an order without all its items (nor, with schema changes, a
// shipment without its order's update).
func (r *Running) checkLoop(ctx context.Context) {
	if r.heal != nil {
		r.healLoop(ctx)
		return
	}
	for ctx.Err() == nil {
		torn, orphans, err := workload.CheckConsistency(ctx, r.db)
		if err == nil {
			var ship int64
			if ship, err = r.checkShipments(ctx); ship > 0 {
				r.torn.Add(1)
				r.consErr.Store(fmt.Sprintf("a reader saw %d shipments without their order's update", ship))
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				r.consErr.Store(err.Error())
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		r.checks.Add(1)
		if torn+orphans > 0 {
			r.torn.Add(1)
			r.consErr.Store(fmt.Sprintf("a reader saw %d orders that differ from their items and %d items without order", torn, orphans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *Running) statusLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastTxns, lastRows int64
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			txns := r.metrics.Counter("starrocks_txn_source_txns_committed")
			rows := r.metrics.Counter("starrocks_txn_rows_committed")
			secs := now.Sub(last).Seconds()
			lat := r.metrics.Timings("starrocks_txn_visibility_latency_ns")
			// A Debezium snapshot row has no transaction: the output
			// counts it as a source transaction of its own.
			label := "source txns/s"
			if r.opts.Format == FormatDebezium {
				label = "txns/s (a snapshot row counts one)"
			}
			writeStatus(r.opts.Out, r.opts.Terminal, fmt.Sprintf("%5.0fs  %s %6.0f  rows/s %7.0f  commits %5d  visibility p50 %6s p99 %6s  torn reads %d",
				now.Sub(r.start).Seconds(), label, float64(txns-lastTxns)/secs, float64(rows-lastRows)/secs,
				r.metrics.Counter("starrocks_txn_commits"),
				metricscap.Quantile(lat, 0.5).Round(time.Millisecond), metricscap.Quantile(lat, 0.99).Round(time.Millisecond),
				r.torn.Load()))
			lastTxns, lastRows, last = txns, rows, now
		}
	}
}

// writeStatus writes one status line: on a terminal over the previous one
// (a carriage return, and blanks to clear a longer line), elsewhere as a
// line of its own.
func writeStatus(w io.Writer, terminal bool, line string) {
	if terminal {
		fmt.Fprintf(w, "\r%s   ", line)
		return
	}
	fmt.Fprintln(w, line)
}

func (r *Running) summary() *Summary {
	if r.dbz != nil {
		return r.debeziumSummary()
	}
	return &Summary{
		Elapsed:         time.Since(r.start),
		SourceCommitted: r.prod.Stats.Committed.Load(),
		SourceAborted:   r.prod.Stats.Aborted.Load(),
		Records:         r.prod.Stats.Records.Load(),
		TxnsLoaded:      r.metrics.Counter("starrocks_txn_source_txns_committed"),
		RowsLoaded:      r.metrics.Counter("starrocks_txn_rows_committed"),
		Commits:         r.metrics.Counter("starrocks_txn_commits"),
		Loads:           r.metrics.Counter("starrocks_txn_loads"),
		Checks:          r.checks.Load(),
		TornReads:       r.torn.Load(),
		Latencies:       r.metrics.Timings("starrocks_txn_visibility_latency_ns"),
		MySQLAddr:       r.em.MySQLAddr(),
		PerTable:        r.heal != nil,
		Windows:         r.metrics.Timings("starrocks_txn_commit_window_ns"),
	}
}

// Close stops everything that is still running.
func (r *Running) Close() {
	if r.stream != nil {
		_ = r.stream.StopWithin(5 * time.Second)
	}
	if r.closeMetrics != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = r.closeMetrics(ctx)
		cancel()
	}
	if r.prod != nil {
		r.prod.Close()
	}
	if r.dbz != nil {
		r.dbz.Close()
	}
	if r.kafka != nil {
		r.kafka.Close()
	}
	if r.db != nil {
		r.db.Close()
	}
	if r.em != nil {
		_ = r.em.Close()
	}
}

// portHint tells, for an emulator listener that could not bind because the
// address is taken, which flag moves it to a free port ("" for any other
// error): the default 127.0.0.1:9030 is where a local StarRocks FE, an
// emulator or a demo left with --keep already listens.
func portHint(err error, o Options) string {
	var op *net.OpError
	if !errors.Is(err, syscall.EADDRINUSE) || !errors.As(err, &op) || op.Addr == nil {
		return ""
	}
	flag := ""
	switch addr := op.Addr.String(); {
	case sameAddr(addr, o.MySQLAddr):
		flag = "--mysql"
	case sameAddr(addr, o.HTTPAddr):
		flag = "--http"
	default:
		return "; another process listens there: give --mysql 127.0.0.1:0 and --http 127.0.0.1:0 for free ports"
	}
	return fmt.Sprintf("; another process listens there (a StarRocks FE, an emulator, a demo with --keep?): give %s 127.0.0.1:0 for a free port", flag)
}

// sameAddr reports whether a bound address is the configured one (a host
// name in the flag resolves to the address in the error).
func sameAddr(bound, configured string) bool {
	if bound == configured {
		return true
	}
	_, bp, err1 := net.SplitHostPort(bound)
	ch, cp, err2 := net.SplitHostPort(configured)
	if err1 != nil || err2 != nil || bp != cp || cp == "0" {
		return false
	}
	ips, err := net.LookupHost(ch)
	if err != nil {
		return false
	}
	bh, _, _ := net.SplitHostPort(bound)
	return slices.Contains(ips, bh)
}
