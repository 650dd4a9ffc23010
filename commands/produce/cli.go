package produce

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// Command is the `produce` subcommand.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "produce",
		Usage: "Write sample source transactions to Kafka in the envelope, Maxwell or Debezium format, for the tables of examples/schema.sql",
		Description: `Writes source transactions of an order system (orders, their items, an
event log: the tables of examples/schema.sql, database test) to a Kafka, in
the format a shipped config reads, and prints what the tables hold once
they are loaded:

  --format envelope   config/envelope.yaml, examples/demo.yaml (topic cdc)
  --format maxwell    config/maxwell.yaml (topic maxwell)
  --format debezium   config/debezium.yaml (topics <prefix>.test.orders, …,
                      <prefix>.transaction; set DEBEZIUM_TOPICS as printed)

Envelope and Maxwell transactions are written one Kafka transaction each,
every source transaction in one partition (partitions in turn); a missing
topic is created. The same --seed and partitions write the same
transactions.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "brokers", Value: "127.0.0.1:9092", Usage: "Kafka brokers, comma-separated"},
			&cli.StringFlag{Name: "format", Value: FormatEnvelope, Usage: "envelope, maxwell or debezium"},
			&cli.StringFlag{Name: "topic", Usage: "the topic (envelope: cdc, maxwell: maxwell, the shipped configs' defaults)"},
			&cli.IntFlag{Name: "partitions", Usage: "partitions of a topic it creates (default 4; debezium: of each data topic, default 3)"},
			&cli.StringFlag{Name: "prefix", Value: "dbserver1", Usage: "debezium: the connector's topic.prefix"},
			&cli.IntFlag{Name: "txns", Value: 100, Usage: "source transactions to write"},
			&cli.Float64Flag{Name: "rate", Usage: "source transactions per second (0: as fast as it goes)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "the sample's seed"},
		},
		Action: func(c *cli.Context) error {
			out := c.App.Writer
			if out == nil {
				out = os.Stdout
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := Run(ctx, Options{
				Brokers: splitBrokers(c.String("brokers")), Format: c.String("format"), Topic: c.String("topic"),
				Partitions: int32(c.Int("partitions")), Prefix: c.String("prefix"), Txns: c.Int("txns"),
				Rate: c.Float64("rate"), Seed: c.Uint64("seed"),
			})
			if res != nil {
				PrintResult(out, res)
			}
			return err
		},
	}
}

// PrintResult writes what a run wrote and what the tables then hold.
func PrintResult(w io.Writer, r *Result) {
	parts := fmt.Sprintf("%d partitions", r.Partitions)
	if r.Partitions == 1 {
		parts = "1 partition"
	}
	if len(r.Topics) > 1 {
		parts += " each"
	}
	fmt.Fprintf(w, "produce: %d source transactions (%d Kafka records) in the %s format to %s (%s)\n",
		r.Txns, r.Records, r.Format, strings.Join(r.Topics, ", "), parts)
	if r.TransactionTopic != "" {
		fmt.Fprintf(w, "  and their BEGIN/END events to %s; config/debezium.yaml reads them with\n  DEBEZIUM_TOPICS=%s\n",
			r.TransactionTopic, strings.Join(r.Topics, ","))
	}
	s := r.Model.Snapshot()
	fmt.Fprintf(w, "Loaded into empty tables (examples/schema.sql), they leave %s.%s %d rows, %s.%s %d rows and %s.%s %d rows:\n",
		workload.Database, workload.TableOrders, len(s.Orders), workload.Database, workload.TableItems, len(s.Items),
		workload.Database, workload.TableEvents, len(s.Events))
	fmt.Fprintf(w, "  mysql -h 127.0.0.1 -P 9030 -u root -e 'SELECT COUNT(*) FROM %s.%s'\n", workload.Database, workload.TableOrders)
}
