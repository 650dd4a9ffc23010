package integration

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/emurig"
	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"

	_ "github.com/starrocks-txn/benthos-starrocks/components"
)

// longRun selects the long variants (more restarts, more traffic).
var longRun = os.Getenv("STARROCKS_TXN_LONG") == "1"

// scale picks the short or the long value of a test parameter.
func scale[T any](short, long T) T {
	if longRun {
		return long
	}
	return short
}

// testSeed makes the generated traffic reproducible: STARROCKS_TXN_SEED
// replays a logged run's source transactions (timing still varies).
func testSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("STARROCKS_TXN_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "STARROCKS_TXN_SEED must be an unsigned integer")
		seed = n
	}
	t.Logf("traffic seed %d (STARROCKS_TXN_SEED=%d reproduces it)", seed, seed)
	return seed
}

const topic = "cdc"

// randomMoment waits a random time from lo to hi drawn from rng: when a
// chaos or kill test strikes a running pipeline (a kill, a crash, a fault,
// the next change of a fleet). The wait is real time on purpose: what it
// picks is a moment of a real pipeline's run — a load in flight, a commit
// whose reply is on its way, an offset commit not yet made, a rebalance —
// which no event of the test marks and which the test must not choose; the
// events the test does wait for (a commit seen, partitions assigned) come
// before it, and the checks must hold whatever the moment.
func randomMoment(rng *rand.Rand, lo, hi time.Duration) {
	time.Sleep(lo + time.Duration(rng.Int64N(int64(hi-lo)+1)))
}

// rig is one test's world: the emulator, the Kafka cluster (the test kit's,
// whose fetch guard keeps aborted records out of read_committed fetches)
// and a SQL client.
type rig struct {
	em         *emulator.Emulator
	kafka      *kafka.Cluster
	brokers    []string
	db         *sql.DB
	partitions int32
}

func newRig(t *testing.T, partitions int32) *rig { return newRigAs(t, partitions, "") }

// newRigAs is newRig with the emulator answering as StarRocks version (""
// for its default, 4.0).
func newRigAs(t *testing.T, partitions int32, version string) *rig {
	t.Helper()
	r := &rig{partitions: partitions}
	r.em, r.db = emurig.StartSQL(t, emulator.Config{Schema: emurig.ExampleSchema(t), ReaperInterval: 50 * time.Millisecond, StarRocksVersion: version})
	r.kafka = kafka.New(t, kafka.Topic(topic, partitions, nil))
	r.brokers = r.kafka.Brokers()
	return r
}

// orderVersion is one value of an order: its id and its status, which names
// the source transaction that wrote it ("created" or "updated-<seq>").
type orderVersion struct {
	id     int64
	status string
}

// versionOf orders the values of one order: "created" is 0, "updated-N" is N
// (N grows with the partition's transaction sequence).
func versionOf(status string) int64 {
	if n, ok := strings.CutPrefix(status, "updated-"); ok {
		v, _ := strconv.ParseInt(n, 10, 64)
		return v
	}
	return 0
}

// source is the transactional producer: workload source transactions, a
// random 1–maxPerKafkaTxn of them per Kafka transaction, a share of the
// Kafka transactions aborted. Committed ones go to the model; what only
// aborted ones wrote is remembered so the tests can prove it never appears.
type source struct {
	gen            *workload.Generator
	model          *workload.Model
	cl             *kgo.Client
	rng            *rand.Rand
	abortRatio     float64
	maxPerKafkaTxn int
	next           int32

	mu            sync.Mutex
	abortedOrders map[orderVersion]bool
	abortedEvents map[int64]bool
	// ends is, per partition, the offset of the last record of a committed
	// producer transaction: the END of its last committed source
	// transaction.
	ends map[int32]int64

	committed, aborted, records atomic.Int64
}

func newSource(t *testing.T, r *rig, seed uint64, abortRatio float64) *source {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(r.brokers...),
		kgo.TransactionalID(fmt.Sprintf("integration-%d", seed)),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(30*time.Second),
	)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return &source{
		gen:            workload.NewGenerator(workload.Options{Partitions: r.partitions, Seed: seed, Events: true, UpdateRatio: 0.35, DeleteRatio: 0.1}),
		model:          workload.NewModel(),
		cl:             cl,
		rng:            rand.New(rand.NewPCG(seed, 99)),
		abortRatio:     abortRatio,
		maxPerKafkaTxn: 3,
		abortedOrders:  map[orderVersion]bool{},
		abortedEvents:  map[int64]bool{},
		ends:           map[int32]int64{},
	}
}

// produce writes source transactions at about rate per second until n of
// them are committed or ctx ends. Run it in its own goroutine.
func (s *source) produce(ctx context.Context, n int, rate float64) error {
	interval := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	for n <= 0 || int(s.committed.Load()) < n {
		k := 1 + s.rng.IntN(s.maxPerKafkaTxn)
		next = next.Add(time.Duration(k) * interval)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(next)):
		}
		batch := make([]workload.Txn, 0, k)
		for i := 0; i < k; i++ {
			batch = append(batch, rewriteAllItems(s.gen.Next(s.next)))
			s.next = (s.next + 1) % s.gen.Partitions()
		}
		if err := s.write(batch, s.rng.Float64() < s.abortRatio); err != nil {
			return err
		}
	}
	return nil
}

// maxItems is the workload's highest item_id.
const maxItems = 5

// rewriteAllItems makes a transaction that creates an order also delete the
// item slots it does not fill (a no-op on a new order), as updates and deletes
// already do. Every source transaction then sets the whole state of its order,
// so an at-least-once replay of an old transaction over newer state shows the
// old state whole rather than a mix the consistency query would count as torn.
func rewriteAllItems(t workload.Txn) workload.Txn {
	filled := map[int64]map[int64]bool{}
	for _, c := range t.Changes {
		id := toInt(c.Row["order_id"])
		if filled[id] == nil {
			filled[id] = map[int64]bool{}
		}
		if c.Table == workload.TableItems {
			filled[id][toInt(c.Row["item_id"])] = true
		}
	}
	for id, items := range filled {
		for item := int64(1); item <= maxItems; item++ {
			if !items[item] {
				t.Changes = append(t.Changes, workload.Change{Table: workload.TableItems,
					Row: workload.Row{"order_id": id, "item_id": item, "__op": 1}, Delete: true})
			}
		}
	}
	return t
}

func (s *source) write(batch []workload.Txn, abort bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("beginning a producer transaction: %w", err)
	}
	var recs []*kgo.Record
	for _, t := range batch {
		evs, err := workload.Envelope(t)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			recs = append(recs, &kgo.Record{Partition: t.Partition, Key: []byte(t.ID), Value: ev})
		}
	}
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("producing source transactions: %w", err)
	}
	end := kgo.TryCommit
	if abort {
		end = kgo.TryAbort
	}
	if err := s.cl.EndTransaction(ctx, end); err != nil {
		return fmt.Errorf("ending a producer transaction: %w", err)
	}
	if abort {
		s.mu.Lock()
		for _, t := range batch {
			for _, c := range t.Changes {
				switch {
				case c.Table == workload.TableOrders && !c.Delete:
					s.abortedOrders[orderVersion{toInt(c.Row["order_id"]), fmt.Sprint(c.Row["order_status"])}] = true
				case c.Table == workload.TableEvents:
					s.abortedEvents[toInt(c.Row["event_id"])] = true
				}
			}
		}
		s.mu.Unlock()
		s.aborted.Add(int64(len(batch)))
		return nil
	}
	for _, t := range batch {
		s.model.Apply(t)
	}
	s.mu.Lock()
	for _, rec := range recs {
		s.ends[rec.Partition] = max(s.ends[rec.Partition], rec.Offset)
	}
	s.mu.Unlock()
	s.committed.Add(int64(len(batch)))
	s.records.Add(int64(len(recs)))
	return nil
}

// background runs produce in a goroutine; wait returns its error.
func (s *source) background(ctx context.Context, n int, rate float64) (wait func() error) {
	done := make(chan error, 1)
	go func() { done <- s.produce(ctx, n, rate) }()
	return func() error { return <-done }
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case int32:
		return int64(x)
	}
	n, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64)
	return n
}

// reader queries the emulator over the MySQL port while the pipeline runs.
// Every round runs workload.ConsistencyQuery (one statement: orders whose
// total differs from their items, items without their order — non-zero means
// half a source transaction was visible) and reads every order's value.
// With checkOrder it also fails when an order's version goes back or a
// deleted order comes back (per-key order, as a reader sees it).
type reader struct {
	db         *sql.DB
	checkOrder bool
	// heal, when set (per-table mode, pertable_test.go), takes the partial
	// reads instead of torn: they pass while they heal.
	heal *testkit.Heal

	rounds   atomic.Int64
	torn     atomic.Int64 // rounds that saw half a source transaction
	problems []string
	versions map[int64]int64
	gone     map[int64]bool
	lastErr  string
	// seen is every order value a round read; seenMu guards it, so that
	// a test can ask while the reader runs (saw).
	seenMu sync.Mutex
	seen   map[orderVersion]bool

	cancel context.CancelFunc
	done   chan struct{}
}

func startReader(db *sql.DB, checkOrder bool) *reader { return startReaderWith(db, checkOrder, nil) }

// startReaderWith is startReader whose partial reads go to heal when it is
// set (per-table mode): they pass while they heal.
func startReaderWith(db *sql.DB, checkOrder bool, heal *testkit.Heal) *reader {
	ctx, cancel := context.WithCancel(context.Background())
	rd := &reader{db: db, checkOrder: checkOrder, heal: heal, versions: map[int64]int64{}, gone: map[int64]bool{},
		seen: map[orderVersion]bool{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rd.done)
		for ctx.Err() == nil {
			// A round every 5 ms (50 ms after an error): a reader that
			// keeps reading while the pipeline loads, stopped at once.
			pause := 5 * time.Millisecond
			if err := rd.round(ctx); err != nil && ctx.Err() == nil {
				rd.lastErr = err.Error()
				pause = 50 * time.Millisecond
			}
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}()
	return rd
}

func (rd *reader) problem(format string, args ...any) {
	if len(rd.problems) < 20 {
		rd.problems = append(rd.problems, fmt.Sprintf(format, args...))
	}
}

func (rd *reader) round(ctx context.Context) error {
	if rd.heal != nil {
		if err := healRound(ctx, rd.db, rd.heal); err != nil {
			return err
		}
		rd.rounds.Add(1)
		return rd.orders(ctx, rd.rounds.Load())
	}
	torn, orphans, err := workload.CheckConsistency(ctx, rd.db)
	if err != nil {
		return err
	}
	n := rd.rounds.Add(1)
	if torn+orphans > 0 {
		rd.torn.Add(1)
		rd.problem("round %d: %d orders differ from their items, %d items without their order", n, torn, orphans)
	}
	return rd.orders(ctx, n)
}

// orders reads every order's value: what was seen, and with checkOrder
// whether an order went back or came back after its delete.
func (rd *reader) orders(ctx context.Context, n int64) error {
	rows, err := rd.db.QueryContext(ctx, "SELECT order_id, order_status FROM test.orders")
	if err != nil {
		return fmt.Errorf("reading orders: %w", err)
	}
	defer rows.Close()
	present := map[int64]bool{}
	for rows.Next() {
		var id int64
		var status string
		if err := rows.Scan(&id, &status); err != nil {
			return fmt.Errorf("scanning orders: %w", err)
		}
		present[id] = true
		rd.seenMu.Lock()
		rd.seen[orderVersion{id, status}] = true
		rd.seenMu.Unlock()
		v := versionOf(status)
		if prev, ok := rd.versions[id]; ok && rd.checkOrder && v < prev {
			rd.problem("round %d: order %d went back from version %d to %d", n, id, prev, v)
		}
		if rd.checkOrder && rd.gone[id] {
			rd.problem("round %d: order %d came back after its delete was visible", n, id)
		}
		rd.versions[id] = max(v, rd.versions[id])
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading orders: %w", err)
	}
	for id := range rd.versions {
		if !present[id] {
			rd.gone[id] = true
		}
	}
	return nil
}

// saw counts the order values read so far that match.
func (rd *reader) saw(match func(orderVersion) bool) int {
	rd.seenMu.Lock()
	defer rd.seenMu.Unlock()
	n := 0
	for v := range rd.seen {
		if match(v) {
			n++
		}
	}
	return n
}

// stop ends the reader; its results are safe to read afterwards.
func (rd *reader) stop() {
	rd.cancel()
	<-rd.done
}

// pipeOpts shape one pipeline (stream) of the test.
type pipeOpts struct {
	group string
	// batchCount is the input's batching count: small, so that source
	// transactions (5–9 messages with BEGIN and END) span several batches.
	batchCount  int
	exactlyOnce bool
	// writerRows sets pipeline_id and mysql_address with at_least_once:
	// the output keeps writer rows and checks other writers' transactions.
	writerRows bool
	// transactionMode is the output's transaction_mode ("": its default).
	transactionMode string
	// commitPeriod is the input's offset commit period (default 100ms).
	commitPeriod time.Duration
	// isolation is the input's isolation_level (default read_committed).
	isolation string
	// processors replaces the txn_assembler under input.processors (YAML
	// list items indented for that place).
	processors string
	// spanBatches has the input cut batches by count alone, so that source
	// transactions span several batches: the batching policy gets a
	// processor, which hands it to Benthos's batcher (one partition per
	// batch, no cut at transaction ends), and no check. Without it the
	// input delivers whole source transactions (the assembler, or the
	// check, says where they end).
	spanBatches bool
}

const assemblerYAML = `    - txn_assembler:
        format: envelope
`

func (r *rig) pipelineYAML(o pipeOpts) string {
	if o.commitPeriod == 0 {
		o.commitPeriod = 100 * time.Millisecond
	}
	if o.isolation == "" {
		o.isolation = "read_committed"
	}
	if o.processors == "" {
		o.processors = assemblerYAML
	}
	cut := "      check: this.type == \"TXN_END\"\n"
	if o.spanBatches {
		cut = "      processors: [ { noop: {} } ]\n"
	}
	// Every pipeline checks its rows' schemas (schema_evolution's
	// default, evolve, reads the columns over mysql_address).
	eo := fmt.Sprintf("    mysql_address: %s\n", r.em.MySQLAddr())
	if o.exactlyOnce {
		// The output creates its progress table in every database it
		// writes, before the first commit there.
		eo += "    semantic: exactly_once\n    pipeline_id: integration\n"
	} else if o.writerRows {
		eo += "    pipeline_id: integration\n"
	}
	if o.transactionMode != "" {
		eo += "    transaction_mode: " + o.transactionMode + "\n"
	}
	return fmt.Sprintf(`
input:
  kafka_txn:
    seed_brokers: [ %q ]
    topics: [ %s ]
    consumer_group: %s
    isolation_level: %s
    checkpoint_limit: 10000
    commit_period: %s
    revoke_timeout: 3s
    session_timeout: 1500ms
    rebalance_timeout: 8s
    heartbeat_interval: 300ms
    fetch_max_wait: 50ms
    batching:
      count: %d
      period: 20ms
%s  processors:
%s    - integration_probe: {}
output:
  starrocks_txn:
    load_urls: [ %q ]
    commit_interval: 200ms
    txn_timeout: 10s
    max_in_flight: 512
    request_timeout: 3s
    label_state_wait: 500ms
    sequence_gap_timeout: 2s
    retry_backoff: { initial_interval: 20ms, max_interval: 300ms }
%s
shutdown_timeout: 5s
`, strings.Join(r.brokers, ","), topic, o.group, o.isolation, o.commitPeriod, o.batchCount, cut, o.processors, r.em.FEURL(), eo)
}

// probe sits after the assembler and records, per source transaction, how
// many input batches carried it, and which partitions the pipeline read.
type probe struct {
	mu         sync.Mutex
	batches    int
	txnBatches map[string]int
	lastBatch  map[string]int
	partitions map[string]bool
}

func newProbe() *probe {
	return &probe{txnBatches: map[string]int{}, lastBatch: map[string]int{}, partitions: map[string]bool{}}
}

func (p *probe) ProcessBatch(_ context.Context, b service.MessageBatch) ([]service.MessageBatch, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batches++
	for _, m := range b {
		part, _ := m.MetaGet(contract.KeyPartition)
		id, _ := m.MetaGet(contract.KeyTxnID)
		k := part + "|" + id
		p.partitions[part] = true
		if p.lastBatch[k] != p.batches {
			p.lastBatch[k] = p.batches
			p.txnBatches[k]++
		}
	}
	return []service.MessageBatch{b}, nil
}

func (*probe) Close(context.Context) error { return nil }

// spanning counts source transactions that came in more than one batch.
func (p *probe) spanning() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.txnBatches {
		if c > 1 {
			n++
		}
	}
	return n
}

func (p *probe) partitionsSeen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for k := range p.partitions {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// syncBuffer collects a pipeline's log lines; they are printed when the test
// fails.
type syncBuffer struct{ testlog.Buffer }

// tail is the last n lines written.
func (s *syncBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimSpace(s.String()), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// len is how many bytes were written so far.
func (s *syncBuffer) len() int { return s.Len() }

// from returns what was written after the first off bytes.
func (s *syncBuffer) from(off int) string { return s.From(off) }

// pipeline is one running stream.
type pipeline struct {
	name    string
	stream  *service.Stream
	metrics *metricscap.Capture
	probe   *probe
	logs    *syncBuffer
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

func (r *rig) startPipeline(t *testing.T, name string, o pipeOpts) *pipeline {
	t.Helper()
	p, err := launch(name, r.pipelineYAML(o))
	require.NoError(t, err)
	p.cleanupOnEnd(t)
	return p
}

// launch builds and runs a stream from yaml, with the metrics capture and
// the probe; the caller stops it (cleanupOnEnd does at the end of a test).
func launch(name, yaml string, plugins ...func(*service.Environment) error) (*pipeline, error) {
	p := &pipeline{name: name, probe: newProbe(), logs: &syncBuffer{}, done: make(chan error, 1)}
	env := service.GlobalEnvironment().Clone()
	var err error
	if p.metrics, err = metricscap.Register(env, "integration_metrics"); err != nil {
		return nil, err
	}
	for _, register := range plugins {
		if err := register(env); err != nil {
			return nil, err
		}
	}
	if err := env.RegisterBatchProcessor("integration_probe",
		service.NewConfigSpec().Summary("Records how batches carry source transactions."),
		func(*service.ParsedConfig, *service.Resources) (service.BatchProcessor, error) { return p.probe, nil }); err != nil {
		return nil, err
	}
	b := env.NewStreamBuilder()
	if err := b.SetYAML(yaml); err != nil {
		return nil, fmt.Errorf("pipeline %s: %w", name, err)
	}
	if err := b.SetMetricsYAML("integration_metrics: {}"); err != nil {
		return nil, err
	}
	b.SetLogger(slog.New(slog.NewTextHandler(p.logs, &slog.HandlerOptions{Level: pipelineLogLevel()})))
	if p.stream, err = b.Build(); err != nil {
		return nil, fmt.Errorf("pipeline %s: %w", name, err)
	}
	var ctx context.Context
	ctx, p.cancel = context.WithCancel(context.Background())
	go func() { p.done <- p.stream.Run(ctx) }()
	return p, nil
}

// pipelineLogLevel is what the pipelines' logs keep: warnings and errors,
// or everything from info up with STARROCKS_TXN_TEST_LOG=info (to diagnose a
// failure; the logs are printed when a test fails).
func pipelineLogLevel() slog.Level {
	if os.Getenv("STARROCKS_TXN_TEST_LOG") == "info" {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// cleanupOnEnd prints the pipeline's last log lines when t failed and kills
// it if it still runs when t ends.
func (p *pipeline) cleanupOnEnd(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last log lines of pipeline %s:\n%s", p.name, p.logs.tail(40))
		}
		if !p.stopped {
			p.kill()
		}
	})
}

// stop stops the pipeline gracefully within d.
func (p *pipeline) stop(t *testing.T, d time.Duration) {
	t.Helper()
	p.stopped = true
	require.NoError(t, p.stream.StopWithin(d), "pipeline %s stops gracefully", p.name)
	p.cancel()
}

// kill stops the pipeline hard: in-flight acknowledgements are dropped and
// WriteBatch contexts cancelled, as close to a process kill as one process
// gets (the Kafka client still leaves the group when the input closes).
func (p *pipeline) kill() {
	p.stopped = true
	_ = p.stream.StopWithin(time.Millisecond)
	p.cancel()
}

// crash stops p the way a killed process stops: hard (acknowledgements in
// flight are dropped, WriteBatch contexts cancelled), and with no offset
// commit and no group leave reaching Kafka from the moment of the kill — the
// broker refuses them until the dead stream has closed, so its member stays
// in the group until its session times out, as a crashed one does.
func (r *rig) crash(p *pipeline) {
	var blackout atomic.Bool
	blackout.Store(true)
	refuse := func(key kmsg.Key, build func(kmsg.Request) kmsg.Response) {
		r.kafka.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			if !blackout.Load() {
				r.kafka.DropControl()
				return nil, nil, false
			}
			r.kafka.KeepControl()
			return build(req), nil, true
		})
	}
	refuse(kmsg.OffsetCommit, func(kreq kmsg.Request) kmsg.Response {
		req := kreq.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.SetVersion(req.GetVersion())
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.GroupAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	})
	refuse(kmsg.LeaveGroup, func(kreq kmsg.Request) kmsg.Response {
		req := kreq.(*kmsg.LeaveGroupRequest)
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.SetVersion(req.GetVersion())
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	})
	p.kill()
	// Wait until the dead stream has closed before the broker behaves again.
	_ = p.stream.StopWithin(20 * time.Second)
	blackout.Store(false)
}

// target reads the final tables.
func (r *rig) target(ctx context.Context) (workload.Snapshot, error) {
	return workload.ReadTarget(ctx, r.db, true)
}

// compare checks got against the model (testkit/workload's comparison):
// orders and items must be equal; events must equal the model exactly or,
// with atLeastOnce, hold every committed event at least once and nothing
// else. It returns the tables that differ, and the duplicated events.
func compare(want, got workload.Snapshot, atLeastOnce bool) ([]workload.TableDiff, int) {
	if atLeastOnce {
		return workload.CompareAtLeastOnce(want, got)
	}
	return workload.Compare(want, got), 0
}

// waitConverged waits until the target equals the model of the committed
// source (see compare) and returns the duplicated events.
func (r *rig) waitConverged(t *testing.T, src *source, atLeastOnce bool, within time.Duration) int {
	t.Helper()
	want := src.model.Snapshot()
	var last string
	var dups int
	if !testkit.Poll(within, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got, err := r.target(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		var mismatch []workload.TableDiff
		mismatch, dups = compare(want, got, atLeastOnce)
		last = workload.Detail(mismatch)
		return len(mismatch) == 0
	}) {
		require.Failf(t, "the target never matched the committed source",
			"after %v (%d source transactions committed): %s", within, src.model.Txns(), last)
	}
	return dups
}

// checkReader asserts what the concurrent reader saw: it ran, never saw half
// a source transaction (nor, with checkOrder, an order going back), and never
// saw an order value that only an aborted producer transaction wrote.
func checkReader(t *testing.T, rd *reader, src *source) {
	t.Helper()
	require.Greater(t, rd.rounds.Load(), int64(10), "the reader must run while loading (last error: %s)", rd.lastErr)
	require.Empty(t, rd.problems, "what the concurrent reader saw")
	if rd.heal != nil {
		require.NoError(t, rd.heal.Check(true), "partial reads (per-table mode): %s", rd.heal)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	var aborted []string
	for v := range rd.seen {
		if src.abortedOrders[v] {
			aborted = append(aborted, fmt.Sprintf("order %d %q", v.id, v.status))
		}
	}
	require.Empty(t, aborted, "order values written only by aborted producer transactions were visible")
}

// checkNoAbortedEvents asserts that no order_events row of an aborted
// producer transaction is in the target.
func checkNoAbortedEvents(t *testing.T, r *rig, src *source) {
	t.Helper()
	got, err := r.target(context.Background())
	require.NoError(t, err)
	src.mu.Lock()
	defer src.mu.Unlock()
	require.NotEmpty(t, src.abortedEvents, "the run must include aborted producer transactions")
	for _, e := range got.Events {
		id, err := strconv.ParseInt(e, 10, 64)
		require.NoError(t, err)
		require.False(t, src.abortedEvents[id], "event %d of an aborted producer transaction is in order_events", id)
	}
}
