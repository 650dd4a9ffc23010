package kafka

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Command is the `kafka` subcommand.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "kafka",
		Usage: "Run a Kafka broker on this machine for local work (in-process, with transactions and consumer groups), until Ctrl-C",
		Description: `Runs the in-process Kafka the demo and the tests use (kfake, with this
project's read_committed fetch guard), on a TCP address, so that the shipped
configs run on this machine against it and the emulator:

  benthos-starrocks kafka --topics cdc:4                  # one terminal
  benthos-starrocks emulator --schema examples/schema.sql # another
  benthos-starrocks -c config/envelope.yaml               # a third
  benthos-starrocks produce --format envelope --txns 200  # sample source transactions

It is a test double: one broker, no replication, no security. Without
--data-dir it keeps everything in memory and forgets it when it stops.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: DefaultAddr, Usage: "address to listen on and advertise to clients (127.0.0.1:0: a free port)"},
			&cli.StringFlag{Name: "topics", Usage: "topics to create, comma-separated name[:partitions] (e.g. cdc:4,maxwell:1); clients may create more"},
			&cli.StringFlag{Name: "data-dir", Usage: "keep topics, records, transactions and group offsets in this directory across restarts (default: memory only)"},
		},
		Action: func(c *cli.Context) error {
			out := c.App.Writer
			if out == nil {
				out = os.Stdout
			}
			topics, err := ParseTopics(c.String("topics"))
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			b, err := Start(Options{Addr: c.String("addr"), Topics: topics, DataDir: c.String("data-dir")})
			if err != nil {
				return err
			}
			defer b.Close()
			PrintStarted(out, b, c.String("data-dir"))
			<-ctx.Done()
			fmt.Fprintln(out, "kafka: stopped")
			return nil
		},
	}
}

// PrintStarted writes what a started broker offers: its address, where its
// data lives and its topics.
func PrintStarted(w io.Writer, b *Broker, dataDir string) {
	keep := "memory only: everything is gone when it stops (--data-dir keeps it)"
	if dataDir != "" {
		keep = "data kept in " + dataDir
	}
	fmt.Fprintf(w, "kafka: listening on %s (in-process Kafka for local work, not for production; %s)\n", b.Addr(), keep)
	for _, t := range b.Created {
		fmt.Fprintf(w, "  topic %s: %d partition%s, created\n", t.Name, t.Partitions, plural(t.Partitions))
	}
	for _, t := range b.Kept {
		fmt.Fprintf(w, "  topic %s: %d partition%s, kept from %s\n", t.Name, t.Partitions, plural(t.Partitions), dataDir)
	}
	fmt.Fprintf(w, "Point clients at it with KAFKA_BROKERS=%s (the shipped configs' default is localhost:9092). Ctrl-C stops it.\n", b.Addr())
}

func plural(n int32) string {
	if n == 1 {
		return ""
	}
	return "s"
}
