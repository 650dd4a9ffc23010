// Package bench is the comparative benchmark behind `benthos-starrocks
// bench`. It pre-loads a topic of an in-process Kafka (kfake) with a
// transactional CDC workload once, then reads that same topic with every
// configuration, each with its own consumer group and (for the loaders) its
// own fresh emulator, in this process: a raw franz-go consumer, kafka_txn
// into Benthos's drop with and without txn_assembler, the whole pipeline
// (kafka_txn → txn_assembler → starrocks_txn → emulator) with either
// semantic, Benthos's http_client doing one plain stream load per table and
// batch (what people do today, without atomicity), starrocks_txn alone fed a
// contract stream built beforehand, and (--processes) the exactly_once
// pipeline as OS processes of the binary in one consumer group. Each row reports records/s, the
// process's CPU time, allocations and garbage-collector share per record, the
// cores it used and its ratio to kafka_txn → drop on the same topic; a
// partitions sweep and a tables sweep load further topics. Every row is
// verified (the tables must equal what the producer committed; drop: every
// record delivered; exactly_once: also the progress table), so a fast wrong
// result cannot pass.
package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	// The components the configurations use.
	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	_ "github.com/starrocks-txn/benthos-starrocks/components"
)

// Kinds of row.
const (
	// KindFranz reads the topic with a bare franz-go consumer: the floor of
	// Kafka itself in this process.
	KindFranz = "franz"
	// KindDrop is kafka_txn → drop, no processor: the input's own cost.
	KindDrop = "drop"
	// KindAssembler is kafka_txn → txn_assembler → drop.
	KindAssembler = "assembler"
	// KindPipeline is kafka_txn → txn_assembler → starrocks_txn → emulator.
	KindPipeline = "pipeline"
	// KindHTTP is kafka_txn → txn_assembler → http_client plain stream
	// loads → emulator.
	KindHTTP = "http_client"
	// KindOutput is a contract stream built before the row (kafka_txn →
	// txn_assembler, untimed) → starrocks_txn → emulator.
	KindOutput = "output"
	// KindDebezium is debezium_txn → starrocks_txn → emulator on the same
	// source transactions produced as Debezium topics (one per table, and a
	// transaction topic) into the same Kafka: debezium_txn assembles the
	// transactions itself and delivers rows only.
	KindDebezium = "debezium"
	// KindProcesses is the exactly_once pipeline run as OS processes of the
	// binary (Options.Binary) in one consumer group against one emulator
	// of this process (processes.go): Config.Processes of them.
	KindProcesses = "processes"
)

// Kinds lists every kind of row.
var Kinds = []string{KindFranz, KindDrop, KindAssembler, KindPipeline, KindHTTP, KindOutput, KindDebezium, KindProcesses}

// Delivery semantics of a starrocks_txn configuration (its `semantic` field).
const (
	SemanticAtLeastOnce = "at_least_once"
	SemanticExactlyOnce = "exactly_once"
)

// The per-table rows: starrocks_txn's transaction_mode per_table against the
// emulator answering as StarRocks PerTableVersion, which has no multi-table
// transactions (ARCHITECTURE.md §15). Every other row is multi-table.
const (
	ModePerTable    = "per_table"
	PerTableVersion = "3.3"
)

// The exactly_once configuration's pipeline_id and the progress table it
// writes (the output's default name) in the workload's database.
const (
	PipelineID    = "bench"
	ProgressTable = "starrocks_txn_progress"
)

// Defaults of Options.
const (
	// DefaultTxns is the workload of the issue that set the targets (about
	// 1.2 M records): long enough that the last commit interval — up to
	// commit_interval of waiting for the final cycle's commit — is a small
	// part of a loader's clock (at 40 000 it was a third of it on a quiet
	// machine).
	DefaultTxns            = 160000
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
	// Txns is the number of committed source transactions per topic (the
	// orders workload writes about 5.5 rows each, the wide one 5).
	Txns int
	// Partitions are the partition counts of the topics: every row runs on
	// the first, and kafka_txn → drop, the assembler row and the
	// at_least_once pipeline also on each further one (the sweep).
	Partitions []int
	// Tables, when set, adds a topic per count of the wide workload
	// (workload.WideSchema) at the first partition count, read by
	// kafka_txn → drop and the at_least_once pipeline.
	Tables []int
	// Batch is kafka_txn's batching.count (and http_client's output batch).
	Batch int
	// MaxInFlight is starrocks_txn's max_in_flight (0: the output's
	// default), HTTPMaxInFlight http_client's.
	MaxInFlight     int
	HTTPMaxInFlight int
	// BufferSize (0: the output's default) and CommitInterval of
	// starrocks_txn.
	BufferSize     int
	CommitInterval time.Duration
	// AbortRatio is the share of Kafka producer transactions aborted (read
	// by nobody, as read_committed filters them).
	AbortRatio float64
	// Seed makes the workload the same on every topic.
	Seed uint64
	// Kinds, when set, runs only rows of these kinds (tests use it).
	Kinds []string
	// CPUProfile and MemProfile, when set, are path prefixes: each row
	// writes <prefix>-<row>.pprof.
	CPUProfile, MemProfile string
	// HeapProfile, when set, is a path prefix: each row of a Benthos
	// stream writes the heap profiles at its start and at its peak of
	// records in flight (heapprof.go).
	HeapProfile string
	// Progress, when set, receives one line per row as it runs.
	Progress func(string)
	// Timeout bounds one row's run (default 5 minutes).
	Timeout time.Duration
	// Rate, when positive, adds to each at_least_once pipeline row a copy
	// whose input is paced to this many records/s: with the topic read as
	// fast as it goes, records queue behind the backlog inside the pipeline
	// and the visibility latency measures that queue; paced below capacity
	// it measures how fresh a pipeline that keeps up is.
	Rate int
	// Processes, when positive, adds on the first topic the exactly_once
	// pipeline run as OS processes of Binary in one consumer group: a row
	// with one process and, when Processes > 1, one with Processes (the
	// fleet's throughput beside one process's, measured alike).
	Processes int
	// ProcessMemLimit, when set, is the GOMEMLIMIT of the process rows'
	// processes (as Go reads it, e.g. "400MiB"; ParseMemLimit): what a
	// pipeline process's peak RSS is at full speed under a memory limit,
	// and what the limit costs it in CPU. The bench's own process is not
	// limited.
	ProcessMemLimit string
	// Binary is the executable the process rows run (the bench's own
	// binary: its default build has every component).
	Binary string
}

func (o *Options) defaults() {
	if o.Txns <= 0 {
		o.Txns = DefaultTxns
	}
	if len(o.Partitions) == 0 {
		o.Partitions = []int{DefaultPartitions}
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.MaxInFlight < 0 {
		o.MaxInFlight = 0
	}
	if o.HTTPMaxInFlight <= 0 {
		o.HTTPMaxInFlight = DefaultHTTPMaxInFlight
	}
	if o.BufferSize < 0 {
		o.BufferSize = 0
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

// Topic is one pre-loaded topic: its partition count and, for the wide
// workload, its table count (0: the orders workload).
type Topic struct {
	Partitions int
	Tables     int
}

func (t Topic) String() string {
	if t.Tables > 0 {
		return fmt.Sprintf("%d partitions, %d tables", t.Partitions, t.Tables)
	}
	return fmt.Sprintf("%d partitions", t.Partitions)
}

// Config is one row of the table.
type Config struct {
	Name  string
	Kind  string
	Topic Topic
	// Semantic is starrocks_txn's semantic for the pipeline and output
	// rows; empty otherwise.
	Semantic string
	Batch    int
	// MaxInFlight is the output's max_in_flight (starrocks_txn: 0 is its
	// default; http_client: its own).
	MaxInFlight int
	// Rate, when positive, paces the row's input to this many records/s
	// (Options.Rate): the row measures freshness below capacity, not
	// throughput.
	Rate int
	// Mode is starrocks_txn's transaction_mode: "" (multi-table, against
	// the default emulator) or ModePerTable (against the emulator as
	// StarRocks PerTableVersion).
	Mode string
	// Processes is the number of OS processes of a KindProcesses row.
	Processes int
	// Debezium makes a KindProcesses row debezium_txn → starrocks_txn on
	// the Debezium topics of the same source transactions (KindDebezium's
	// topics), instead of kafka_txn → txn_assembler → starrocks_txn.
	Debezium bool
	// SchemaEvolution is starrocks_txn's schema_evolution: "" (its
	// default, evolve: the rows' schemas checked against StarRocks) or
	// SchemaIgnore, the row beside it that measures what the checks cost.
	SchemaEvolution string
}

// Loader reports whether the row loads into an emulator.
func (c Config) Loader() bool {
	return c.Kind == KindPipeline || c.Kind == KindHTTP || c.Kind == KindOutput || c.Kind == KindDebezium || c.Kind == KindProcesses
}

// StarRocksTxn reports whether the row's output is starrocks_txn.
func (c Config) StarRocksTxn() bool {
	return c.Kind == KindPipeline || c.Kind == KindOutput || c.Kind == KindDebezium || c.Kind == KindProcesses
}

// rowName names a row.
func rowName(kind, semantic string) string {
	switch kind {
	case KindFranz:
		return "franz-go consumer (no Benthos)"
	case KindDrop:
		return "kafka_txn → drop"
	case KindAssembler:
		return "kafka_txn → txn_assembler → drop"
	case KindHTTP:
		return "kafka_txn → txn_assembler → http_client stream loads"
	case KindOutput:
		return "contract stream (pre-built) → starrocks_txn"
	case KindDebezium:
		return "debezium_txn → starrocks_txn (same txns, Debezium topics)"
	}
	if semantic == SemanticExactlyOnce {
		return "kafka_txn → txn_assembler → starrocks_txn exactly_once"
	}
	return "kafka_txn → txn_assembler → starrocks_txn"
}

// SchemaIgnore is schema_evolution: ignore, no schema checks.
const SchemaIgnore = "ignore"

// noSchemaChecks makes c the row that runs without schema checks.
func noSchemaChecks(c Config) Config {
	c.SchemaEvolution = SchemaIgnore
	c.Name += " (schema_evolution: ignore)"
	return c
}

// perTable makes c a per-table row.
func perTable(c Config) Config {
	c.Mode = ModePerTable
	c.Name += " per_table (StarRocks " + PerTableVersion + ")"
	return c
}

// Topics returns the topics a run with o loads, in order.
func Topics(o Options) []Topic {
	o.defaults()
	var ts []Topic
	for _, p := range o.Partitions {
		ts = append(ts, Topic{Partitions: p})
	}
	for _, n := range o.Tables {
		ts = append(ts, Topic{Partitions: o.Partitions[0], Tables: n})
	}
	return ts
}

// Configs returns the rows a run with o measures on topic t, in order.
func Configs(o Options, t Topic) []Config {
	o.defaults()
	mk := func(kind, semantic string) Config {
		c := Config{Name: rowName(kind, semantic), Kind: kind, Topic: t, Semantic: semantic, Batch: o.Batch, MaxInFlight: o.MaxInFlight}
		if kind == KindHTTP {
			c.MaxInFlight = o.HTTPMaxInFlight
		}
		return c
	}
	var cs []Config
	switch {
	case t.Tables > 0:
		cs = []Config{mk(KindDrop, ""), mk(KindPipeline, SemanticAtLeastOnce)}
	case t.Partitions != o.Partitions[0]:
		cs = []Config{mk(KindDrop, ""), mk(KindAssembler, ""), mk(KindPipeline, SemanticAtLeastOnce)}
	default:
		cs = []Config{
			mk(KindFranz, ""),
			mk(KindDrop, ""),
			mk(KindAssembler, ""),
			mk(KindPipeline, SemanticAtLeastOnce),
			noSchemaChecks(mk(KindPipeline, SemanticAtLeastOnce)),
			mk(KindPipeline, SemanticExactlyOnce),
			perTable(mk(KindPipeline, SemanticAtLeastOnce)),
			perTable(mk(KindPipeline, SemanticExactlyOnce)),
			mk(KindHTTP, ""),
			mk(KindOutput, SemanticAtLeastOnce),
			mk(KindDebezium, SemanticAtLeastOnce),
			noSchemaChecks(mk(KindDebezium, SemanticAtLeastOnce)),
		}
	}
	if o.Processes > 0 && t.Tables == 0 && t.Partitions == o.Partitions[0] {
		counts := []int{1}
		if o.Processes > 1 {
			counts = append(counts, o.Processes)
		}
		for _, n := range counts {
			c := mk(KindProcesses, SemanticExactlyOnce)
			c.Processes = n
			c.Name = processesName(n, o.ProcessMemLimit)
			cs = append(cs, c)
		}
		// Debezium's commit order is global: one process reads a
		// connector, so its row is one process, beside the first.
		c := mk(KindProcesses, SemanticExactlyOnce)
		c.Processes, c.Debezium = 1, true
		c.Name = debeziumProcessName(o.ProcessMemLimit)
		cs = append(cs, c)
	}
	if o.Rate > 0 {
		var paced []Config
		for _, c := range cs {
			paced = append(paced, c)
			if c.Kind == KindPipeline && c.Semantic == SemanticAtLeastOnce && c.Mode == "" && c.SchemaEvolution == "" {
				c.Rate = o.Rate
				c.Name += fmt.Sprintf(", paced at %d records/s", o.Rate)
				paced = append(paced, c)
			}
		}
		cs = paced
	}
	if len(o.Kinds) == 0 {
		return cs
	}
	var out []Config
	for _, c := range cs {
		for _, k := range o.Kinds {
			if c.Kind == k {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// Run loads each topic of o and measures its rows, one after another.
func Run(ctx context.Context, o Options) ([]Result, error) {
	o.defaults()
	// The SQL engine logs every MySQL connection at info level.
	logrus.SetLevel(logrus.WarnLevel)
	prof := &profiler{cpuPrefix: o.CPUProfile, memPrefix: o.MemProfile}
	var results []Result
	topics := Topics(o)
	total := 0
	for _, t := range topics {
		total += len(Configs(o, t))
	}
	i := 0
	for _, t := range topics {
		cs := Configs(o, t)
		if len(cs) == 0 {
			continue
		}
		tp, err := loadTopic(ctx, o, t)
		if err != nil {
			return results, fmt.Errorf("loading the topic (%s): %w", t, err)
		}
		var dropRate float64
		for _, c := range cs {
			i++
			if o.Progress != nil {
				o.Progress(fmt.Sprintf("[%d/%d] %s, %s ...", i, total, c.Name, t))
			}
			r, err := runRow(ctx, o, c, tp, prof)
			if err != nil {
				tp.close()
				return results, fmt.Errorf("running %s (%s): %w", c.Name, t, err)
			}
			if c.Kind == KindDrop {
				dropRate = r.RecordsPerSec()
			}
			r.DropRecordsPerSec = dropRate
			if o.Progress != nil && c.Kind == KindProcesses {
				o.Progress(processProgress(r))
			} else if o.Progress != nil {
				o.Progress(fmt.Sprintf("      %.0f records/s (%.0f rows/s), %.2f µs CPU and %.0f B in %.1f allocations per record, %.2f cores; %d rows in %s after %s to the first record; verified: %s",
					r.RecordsPerSec(), r.RowsPerSec(), r.CPUPerRecord(), r.BytesPerRecord(), r.AllocsPerRecord(), r.Cores(),
					r.Rows, r.Elapsed.Round(time.Millisecond), r.StartDelay.Round(time.Millisecond), r.Verification))
			}
			results = append(results, r)
		}
		tp.close()
	}
	return results, nil
}

// processProgress is the progress line of a process row; its allocations
// and GC share only when read at both ends of its window (RuntimeMeasured).
func processProgress(r Result) string {
	alloc := "no allocation or GC figures (a process did not answer a poll at an end of the window)"
	if r.RuntimeMeasured {
		alloc = fmt.Sprintf("%.0f B in %.1f allocations per record, GC %.0f %%", r.BytesPerRecord(), r.AllocsPerRecord(), 100*r.GCShare)
	}
	return fmt.Sprintf("      %.0f records/s (%.0f rows/s), %.2f µs CPU per record, %s (the processes'), %.2f cores; %d rows in %s after %s to the first record; verified: %s",
		r.RecordsPerSec(), r.RowsPerSec(), r.CPUPerRecord(), alloc, r.Cores(), r.Rows, r.Elapsed.Round(time.Millisecond), r.StartDelay.Round(time.Millisecond), r.Verification)
}
