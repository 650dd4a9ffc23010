package bench

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// Sweep is what --sweep sets: the partitions and tables sweeps.
var (
	SweepPartitions = []int{4, 64, 256}
	SweepTables     = []int{3, 12, 48}
)

// Command is the `bench` subcommand: one run on this machine, one table.
func Command(schema string) *cli.Command {
	Schema = schema
	return &cli.Command{
		Name:  "bench",
		Usage: "Read one pre-loaded Kafka topic with franz-go, kafka_txn → drop, kafka_txn → txn_assembler → drop, the whole pipeline into the emulator (at_least_once and exactly_once), http_client plain stream loads, starrocks_txn alone and the same transactions from Debezium topics through debezium_txn, and print one table with each row's records/s, CPU, allocations and ratio to kafka_txn → drop",
		Description: `A topic of an in-process Kafka is loaded once with a transactional CDC
workload (orders, order_items, order_events; some producer transactions
aborted); every row then reads that same topic with its own consumer group
and, for the loaders, a fresh emulator. The clock runs from the first record
read to the last one acknowledged, and every row is verified (the tables must
equal what the producer committed; for exactly_once also the progress table
must hold every partition's last END offset). CPU time, allocations and the
garbage collector's share are the whole process's over the same window.
--partitions 4,64,256 loads a topic per count (every row on the first;
kafka_txn → drop, the assembler and the pipeline on the others); --tables
3,12,48 adds topics of a workload over that many tables (--sweep: both).
--processes N adds the exactly_once pipeline run as OS processes of this
binary in one consumer group against one emulator, on the first topic: a row
with one process and one with N, both measured from the outside (their
metrics), so that the fleet's rows/s stands beside one process's; and
debezium_txn → starrocks_txn on the same source transactions as one OS
process (a connector's commit order is read by one), measured alike: the
pipelines' own CPU and allocations per row, without the bench's Kafka and
emulator.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "txns", Value: DefaultTxns, Usage: "committed source transactions per topic (about 5.5 rows each)"},
			&cli.IntFlag{Name: "rate", Usage: "also run each at_least_once pipeline row with its input paced to this many records/s (below capacity: its visibility latency is then the pipeline's freshness, not the backlog's wait)"},
			&cli.StringFlag{Name: "partitions", Value: strconv.Itoa(DefaultPartitions), Usage: "Kafka partitions, a comma-separated list: a topic per count"},
			&cli.StringFlag{Name: "tables", Usage: "table counts of the wide workload, a comma-separated list: a topic per count (at the first partition count)"},
			&cli.BoolFlag{Name: "sweep", Usage: "--partitions " + joinInts(SweepPartitions) + " --tables " + joinInts(SweepTables)},
			&cli.IntFlag{Name: "batch", Value: DefaultBatch, Usage: "kafka_txn batching.count (and http_client's output batch)"},
			&cli.IntFlag{Name: "max-in-flight", Usage: "starrocks_txn max_in_flight (default: the output's)"},
			&cli.IntFlag{Name: "http-max-in-flight", Value: DefaultHTTPMaxInFlight, Usage: "http_client max_in_flight"},
			&cli.IntFlag{Name: "buffer-size", Usage: "starrocks_txn buffer_size in bytes (default: the output's)"},
			&cli.DurationFlag{Name: "commit-interval", Value: DefaultCommitInterval, Usage: "starrocks_txn commit_interval"},
			&cli.Float64Flag{Name: "abort-ratio", Value: DefaultAbortRatio, Usage: "share of Kafka producer transactions aborted"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of each row to `PREFIX`-<row>.pprof"},
			&cli.StringFlag{Name: "memprofile", Usage: "write the allocation profile after each row to `PREFIX`-<row>.pprof (cumulative: compare two with go tool pprof -base)"},
			&cli.StringFlag{Name: "heapprofile", Usage: "write heap profiles of each pipeline row to `PREFIX`-<row>-start.pprof (after its start's GC) and PREFIX-<row>.pprof (at its peak of records in flight; each candidate forces a GC, so the row's timings are disturbed): go tool pprof -base the first the second shows what the records in flight hold"},
			&cli.BoolFlag{Name: "quick", Usage: fmt.Sprintf("a small run (%d source transactions) to check that everything works", QuickTxns)},
			&cli.IntFlag{Name: "processes", Usage: "also run the exactly_once pipeline as OS processes of this binary in one consumer group against one emulator, on the first topic: a row with 1 process and one with `N`, measured alike (from the outside: their metrics), so that the fleet's rows/s stands beside one process's of the same run"},
			&cli.StringFlag{Name: "process-memlimit", Usage: "GOMEMLIMIT of the --processes rows' processes (e.g. `400MiB`; the bench's own process keeps its own): their peak RSS at full speed under that limit, and its CPU cost"},
			&cli.StringFlag{Name: "only", Usage: "run only rows of these kinds, comma-separated: " + strings.Join(Kinds, ", ") + " (for profiling one)"},
		},
		Action: func(c *cli.Context) error {
			out := c.App.Writer
			if out == nil {
				out = os.Stdout
			}
			errOut := c.App.ErrWriter
			if errOut == nil {
				errOut = os.Stderr
			}
			parts, err := parseInts(c.String("partitions"))
			if err != nil {
				return fmt.Errorf("--partitions: %w", err)
			}
			tables, err := parseInts(c.String("tables"))
			if err != nil {
				return fmt.Errorf("--tables: %w", err)
			}
			if c.Bool("sweep") {
				if !c.IsSet("partitions") {
					parts = SweepPartitions
				}
				if !c.IsSet("tables") {
					tables = SweepTables
				}
			}
			o := Options{
				Txns: c.Int("txns"), Rate: c.Int("rate"), Partitions: parts, Tables: tables, Batch: c.Int("batch"),
				MaxInFlight: c.Int("max-in-flight"), HTTPMaxInFlight: c.Int("http-max-in-flight"),
				BufferSize: c.Int("buffer-size"), CommitInterval: c.Duration("commit-interval"),
				AbortRatio: c.Float64("abort-ratio"), CPUProfile: c.String("cpuprofile"), MemProfile: c.String("memprofile"), HeapProfile: c.String("heapprofile"),
				Progress:  func(s string) { fmt.Fprintln(errOut, s) },
				Processes: c.Int("processes"),
			}
			if o.Processes < 0 {
				return fmt.Errorf("--processes: %d is not a positive number", o.Processes)
			}
			if v := c.String("process-memlimit"); v != "" {
				if o.Processes == 0 {
					return fmt.Errorf("--process-memlimit: it limits the processes of --processes, which is not set")
				}
				if _, err := ParseMemLimit(v); err != nil {
					return fmt.Errorf("--process-memlimit: %w", err)
				}
				o.ProcessMemLimit = v
			}
			if o.Processes > 0 {
				bin, err := os.Executable()
				if err != nil {
					return fmt.Errorf("--processes: finding this binary to run it: %w", err)
				}
				o.Binary = bin
			}
			if only := c.String("only"); only != "" {
				for _, k := range strings.Split(only, ",") {
					k = strings.TrimSpace(k)
					if !slices.Contains(Kinds, k) {
						return fmt.Errorf("--only: %q is not a row kind (%s)", k, strings.Join(Kinds, ", "))
					}
					o.Kinds = append(o.Kinds, k)
				}
			}
			if o.HeapProfile != "" {
				// A finer sample than the default 512 KiB, so that the
				// owners of a few hundred bytes per record are counted
				// closely (heapprof.go); before the topics are loaded.
				runtime.MemProfileRate = heapProfileRate
			}
			if c.Bool("quick") && !c.IsSet("txns") {
				o.Txns = QuickTxns
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			start := time.Now()
			fmt.Fprintf(out, "bench: %d source transactions per topic; %s/%s, %d CPUs, %s, GOGC=%s GOMEMLIMIT=%s; %s; load average %s\n\n",
				o.Txns, runtime.GOOS, runtime.GOARCH, cpuCount(), runtime.Version(), envOr("GOGC", "100"), envOr("GOMEMLIMIT", "off"),
				start.UTC().Format(time.RFC3339), loadAverage())
			rs, err := Run(ctx, o)
			WriteTable(out, rs)
			fmt.Fprintf(out, "\nload average at the end (after %s): %s\n", time.Since(start).Round(time.Second), loadAverage())
			if err != nil {
				return err
			}
			// The plain stream loads are the baseline: a wrong result there
			// is a finding, shown in the table. Every other row must verify.
			for _, r := range rs {
				if !r.Verified && r.Kind != KindHTTP {
					return fmt.Errorf("%s (%s) did not verify: %s", r.Name, r.Topic, r.Verification)
				}
			}
			return nil
		},
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// parseInts reads a comma-separated list of positive numbers ("" is none).
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
