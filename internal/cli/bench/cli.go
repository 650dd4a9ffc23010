package bench

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// Command is the `bench` subcommand: one run on this machine, one table.
func Command(schema string) *cli.Command {
	Schema = schema
	return &cli.Command{
		Name:  "bench",
		Usage: "Measure kafka_txn → txn_assembler → starrocks_txn → emulator (at_least_once and exactly_once) against drop and http_client plain stream loads on the same pre-produced Kafka input, and the same rows from Debezium topics through debezium_txn, and print one table",
		Description: `Every configuration gets a fresh in-process Kafka loaded with the same
transactional CDC workload (orders, order_items, order_events; some producer
transactions aborted) and, for the loaders, a fresh emulator. The clock runs
from the first record read to the last one acknowledged, and every
configuration is verified (the tables must equal what the producer committed;
for exactly_once also the progress table must hold every partition's last
END offset). The summary gives exactly_once ÷ at_least_once for throughput
and p50/p99 visibility latency.
--sweep adds rows varying max_in_flight, the input batch size and the
partition count one at a time (÷4, default, ×4; partitions ÷2, ×2).`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "txns", Value: DefaultTxns, Usage: "committed source transactions per configuration (about 5.5 rows each)"},
			&cli.IntFlag{Name: "partitions", Value: DefaultPartitions, Usage: "Kafka partitions (source streams)"},
			&cli.IntFlag{Name: "batch", Value: DefaultBatch, Usage: "kafka_txn batching.count (and http_client's output batch)"},
			&cli.IntFlag{Name: "max-in-flight", Value: DefaultMaxInFlight, Usage: "starrocks_txn max_in_flight"},
			&cli.IntFlag{Name: "http-max-in-flight", Value: DefaultHTTPMaxInFlight, Usage: "http_client max_in_flight"},
			&cli.IntFlag{Name: "buffer-size", Value: DefaultBufferSize, Usage: "starrocks_txn buffer_size in bytes"},
			&cli.DurationFlag{Name: "commit-interval", Value: DefaultCommitInterval, Usage: "starrocks_txn commit_interval"},
			&cli.Float64Flag{Name: "abort-ratio", Value: DefaultAbortRatio, Usage: "share of Kafka producer transactions aborted"},
			&cli.BoolFlag{Name: "sweep", Usage: "also vary max_in_flight, batch size and partitions (starrocks_txn)"},
			&cli.BoolFlag{Name: "quick", Usage: fmt.Sprintf("a small run (%d source transactions) to check that everything works", QuickTxns)},
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
			o := Options{
				Txns: c.Int("txns"), Partitions: c.Int("partitions"), Batch: c.Int("batch"),
				MaxInFlight: c.Int("max-in-flight"), HTTPMaxInFlight: c.Int("http-max-in-flight"),
				BufferSize: c.Int("buffer-size"), CommitInterval: c.Duration("commit-interval"),
				AbortRatio: c.Float64("abort-ratio"), Sweep: c.Bool("sweep"),
				Progress: func(s string) { fmt.Fprintln(errOut, s) },
			}
			if c.Bool("quick") && !c.IsSet("txns") {
				o.Txns = QuickTxns
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(out, "bench: %d source transactions per configuration; %s/%s, %d CPUs, %s; %s\n\n",
				o.Txns, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format(time.RFC3339))
			rs, err := Run(ctx, o)
			WriteTable(out, rs)
			if err != nil {
				return err
			}
			// The plain stream loads are the baseline: a wrong result there
			// is a finding, shown in the table. Ours and the ceiling must
			// verify.
			for _, r := range rs {
				if !r.Verified && r.Output != OutputHTTPClient {
					return fmt.Errorf("%s did not verify: %s", r.Name, r.Verification)
				}
			}
			return nil
		},
	}
}
