package demo

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/starrocks-txn/benthos-starrocks/internal/metricscap"
)

// Command is the `demo` subcommand. pipeline and schema are the embedded
// examples/demo.yaml and examples/schema.sql; --config and --schema replace
// them.
func Command(pipeline, schema string) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "Run the whole pipeline on this machine: emulator, in-process Kafka, CDC producer, kafka_txn → txn_assembler → starrocks_txn (or, with --format debezium, Debezium topics → debezium_txn → starrocks_txn), then verify through SQL",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "partitions", Value: 4, Usage: "Kafka partitions (source streams)"},
			&cli.Float64Flag{Name: "rate", Value: 200, Usage: "source transactions per second over all partitions"},
			&cli.DurationFlag{Name: "duration", Value: 15 * time.Second, Usage: "how long to produce (Ctrl-C ends earlier)"},
			&cli.Float64Flag{Name: "abort-ratio", Value: 0.1, Usage: "share of producer transactions aborted (never visible)"},
			&cli.BoolFlag{Name: "keep", Usage: "leave the emulator running after the summary and print the mysql command"},
			&cli.StringFlag{Name: "mysql", Value: "127.0.0.1:9030", Usage: "emulator MySQL address (127.0.0.1:0 for a free port)"},
			&cli.StringFlag{Name: "http", Value: "127.0.0.1:0", Usage: "emulator FE HTTP address"},
			&cli.StringFlag{Name: "config", Usage: "pipeline YAML instead of the embedded examples/demo.yaml"},
			&cli.StringFlag{Name: "schema", Usage: "DDL file instead of the embedded examples/schema.sql"},
			&cli.StringFlag{Name: "format", Value: FormatEnvelope, Usage: "source format: envelope (kafka_txn → txn_assembler) or debezium (Debezium topics → debezium_txn)"},
			&cli.BoolFlag{Name: "schema-changes", Value: true, Usage: "with --format debezium: the source changes its tables mid-run (new columns, a new table, wider columns, a dropped column) and the output applies each change in step with the transactions; --schema-changes=false for none"},
			&cli.StringFlag{Name: "starrocks-version", Usage: "the StarRocks release the emulator answers as (3.3, 3.4, 3.5, 4.0 …; default 4.0): below 4.0 there are no multi-table transactions, and the output commits per table (transaction_mode auto), which the summary shows with its commit windows"},
		},
		Action: func(c *cli.Context) error {
			out := c.App.Writer
			if out == nil {
				out = os.Stdout
			}
			p, s := pipeline, schema
			format := c.String("format")
			switch format {
			case FormatEnvelope:
			case FormatDebezium:
				p = DebeziumPipeline
			default:
				return fmt.Errorf("--format %q is not one of %s, %s", format, FormatEnvelope, FormatDebezium)
			}
			if path := c.String("config"); path != "" {
				b, err := os.ReadFile(path)
				if err != nil {
					return fmt.Errorf("reading the pipeline config %s: %w", path, err)
				}
				p = string(b)
			}
			if path := c.String("schema"); path != "" {
				b, err := os.ReadFile(path)
				if err != nil {
					return fmt.Errorf("reading the schema %s: %w", path, err)
				}
				s = string(b)
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts := Options{
				Partitions: int32(c.Int("partitions")), Rate: c.Float64("rate"), Duration: c.Duration("duration"),
				AbortRatio: c.Float64("abort-ratio"), Pipeline: p, Schema: s,
				HTTPAddr: c.String("http"), MySQLAddr: c.String("mysql"), Out: out, Live: true, Terminal: isTerminal(out),
				Seed: uint64(time.Now().UnixNano()), Format: format, StarRocksVersion: c.String("starrocks-version"),
				SchemaChanges: format == FormatDebezium && c.Bool("schema-changes"),
			}
			if format == FormatDebezium {
				fmt.Fprintf(out, "demo: Debezium topics (%d partitions per table, a transaction topic), a snapshot, then %.0f source txns/s for %s\n",
					opts.Partitions, opts.Rate, opts.Duration)
				if opts.SchemaChanges {
					fmt.Fprintf(out, "demo: the source changes its tables at source transactions %v\n", schemaPlan(opts.Rate, opts.Duration))
				}
			} else {
				fmt.Fprintf(out, "demo: %d partitions, %.0f source txns/s for %s, %.0f%% of producer transactions aborted\n",
					opts.Partitions, opts.Rate, opts.Duration, opts.AbortRatio*100)
			}
			r, err := Start(ctx, opts)
			if err != nil {
				return err
			}
			defer r.Close()
			sum, err := r.Run(ctx)
			if sum != nil {
				PrintSummary(out, sum)
			}
			if err != nil {
				return err
			}
			if !sum.TablesMatch || sum.TornReads > 0 || sum.ConsistencyError != "" {
				return fmt.Errorf("verification failed")
			}
			if c.Bool("keep") {
				host, port, _ := strings.Cut(r.MySQLAddr(), ":")
				fmt.Fprintf(out, "\nThe emulator keeps running. Look at the data with:\n  mysql -h %s -P %s -u root test -e 'SELECT * FROM orders LIMIT 10'\nCtrl-C stops it.\n", host, port)
				keep, stopKeep := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
				defer stopKeep()
				<-keep.Done()
			}
			return nil
		},
	}
}

// isTerminal reports whether w is a terminal: the status line is then
// rewritten in place, and printed as plain lines into a file or a pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// PrintSummary writes the verified summary and a latency histogram.
func PrintSummary(w io.Writer, s *Summary) {
	fmt.Fprintf(w, "\nsummary after %s\n", s.Elapsed.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  producer: %d source transactions committed, %d aborted (%d Kafka records)\n", s.SourceCommitted, s.SourceAborted, s.Records)
	if s.SnapshotRows > 0 || s.LargestTxn > 0 {
		fmt.Fprintf(w, "            Debezium: before them a snapshot of %d rows (no transaction: each row loads as one of its own); the largest source transaction %d events\n", s.SnapshotRows, s.LargestTxn)
	}
	if s.SnapshotRows > 0 {
		fmt.Fprintf(w, "  loaded:   %d source transactions and the %d snapshot rows, %d rows in all, in %d StarRocks commits and %d HTTP loads\n", s.TxnsLoaded, s.SnapshotRows, s.RowsLoaded, s.Commits, s.Loads)
	} else {
		fmt.Fprintf(w, "  loaded:   %d source transactions, %d rows, in %d StarRocks commits and %d HTTP loads\n", s.TxnsLoaded, s.RowsLoaded, s.Commits, s.Loads)
	}
	for _, c := range s.SchemaChanges {
		fmt.Fprintf(w, "  schema:   %s\n", c)
	}
	if s.TxnsLoaded > 0 && s.Commits > 0 {
		note := ""
		if s.SnapshotRows > 0 {
			note = " (the snapshot's commits included)"
		}
		fmt.Fprintf(w, "            %.1f source transactions per StarRocks transaction%s\n", float64(s.TxnsLoaded)/float64(s.Commits), note)
	}
	verdict := "OK: tables equal what the producer committed; no aborted transaction visible"
	if !s.TablesMatch {
		verdict = "FAILED: tables differ from what the producer committed: " + s.Mismatch
	}
	fmt.Fprintf(w, "  tables:   %s\n", verdict)
	cons := fmt.Sprintf("OK: %d consistency queries while loading, none saw half a source transaction", s.Checks)
	if s.PerTable {
		cons = fmt.Sprintf("OK: %d consistency queries while loading; %d saw part of a source transaction inside a commit window (%d partial streaks, all healed, the longest in %s); none once the cycles were done",
			s.Checks, s.Partial, s.Healed, s.LongestPartial.Round(time.Millisecond))
	}
	if s.TornReads > 0 || s.ConsistencyError != "" {
		cons = fmt.Sprintf("FAILED: %d of %d queries saw half a source transaction: %s", s.TornReads, s.Checks, s.ConsistencyError)
		if s.PerTable {
			cons = fmt.Sprintf("FAILED: a source transaction stayed partly visible outside a commit window: %s", s.ConsistencyError)
		}
	}
	fmt.Fprintf(w, "  readers:  %s\n", cons)
	if s.PerTable {
		fmt.Fprintf(w, "  per-table (StarRocks 3.x: no multi-table transactions): each cycle's tables prepared together, then committed (with writer rows, after a decision record)\n")
		if len(s.Windows) > 0 {
			fmt.Fprintf(w, "  commit window (first to last COMMIT of a cycle: a reader may see part of a source transaction within it), %d cycles: p50 %s, p99 %s, max %s\n",
				len(s.Windows), fmtWindow(metricscap.Quantile(s.Windows, 0.5)), fmtWindow(metricscap.Quantile(s.Windows, 0.99)), fmtWindow(metricscap.Quantile(s.Windows, 1)))
		}
	}
	if len(s.Latencies) == 0 {
		return
	}
	counted := fmt.Sprintf("%d source transactions", len(s.Latencies))
	if s.SnapshotRows > 0 {
		counted = fmt.Sprintf("%d transactions at the output: the source's and the %d snapshot rows, one each", len(s.Latencies), s.SnapshotRows)
	}
	fmt.Fprintf(w, "  visibility latency (Kafka record time → StarRocks commit), %s: p50 %s, p99 %s, max %s\n",
		counted, metricscap.Quantile(s.Latencies, 0.5).Round(time.Millisecond),
		metricscap.Quantile(s.Latencies, 0.99).Round(time.Millisecond), metricscap.Quantile(s.Latencies, 1).Round(time.Millisecond))
	bounds := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second,
		1500 * time.Millisecond, 2 * time.Second, 3 * time.Second, 5 * time.Second}
	counts := make([]int, len(bounds)+1)
	for _, d := range s.Latencies {
		i := 0
		for i < len(bounds) && d > bounds[i] {
			i++
		}
		counts[i]++
	}
	peak := 1
	for _, n := range counts {
		peak = max(peak, n)
	}
	for i, n := range counts {
		label := "  > " + bounds[len(bounds)-1].String()
		if i < len(bounds) {
			label = "<= " + bounds[i].String()
		}
		fmt.Fprintf(w, "    %8s %-40s %d\n", label, strings.Repeat("#", n*40/peak), n)
	}
}

// fmtWindow prints a commit window: microseconds below 10 ms.
func fmtWindow(d time.Duration) string {
	if d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
