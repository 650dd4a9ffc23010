package emulator

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
)

// Command is the `emulator` subcommand of the project's binary: it runs a
// StarRocks-compatible server until SIGINT or SIGTERM.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "emulator",
		Usage: "Run a StarRocks-compatible server (FE HTTP transaction API, optional BE, MySQL port) for local work and tests",
		Description: "Serves the StarRocks transaction stream-load HTTP API (classic and multi-table),\n" +
			"get_load_state, _cancel and plain stream loads on --http, optionally a BE on --be that\n" +
			"the FE redirects loads to (it also lists its open classic transactions on\n" +
			"/api/transaction/list), and the committed data over the MySQL protocol on --mysql.\n" +
			"Fault injection: POST /_emulator/faults on the --http port.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "http", Value: DefaultHTTPAddr, Usage: "FE HTTP listen address"},
			&cli.StringFlag{Name: "mysql", Value: DefaultMySQLAddr, Usage: "MySQL-protocol listen address ('' for none)"},
			&cli.StringFlag{Name: "be", Usage: "optional BE HTTP listen address; the FE redirects loads to it with 307"},
			&cli.StringFlag{Name: "schema", Usage: "path of a DDL script (CREATE DATABASE / CREATE TABLE) to run at start"},
			&cli.StringFlag{Name: "user", Value: DefaultUser, Usage: "user for HTTP Basic auth and MySQL"},
			&cli.StringFlag{Name: "password", Usage: "password for HTTP Basic auth and MySQL"},
			&cli.DurationFlag{Name: "txn-timeout", Value: DefaultTxnTimeout, Usage: "transaction timeout when a begin has no `timeout` header"},
			&cli.IntFlag{Name: "max-running-txn-per-db", Value: DefaultMaxRunningTxnPerDB, Usage: "max_running_txn_num_per_db"},
			&cli.StringFlag{Name: "data-dir", Usage: "keep committed data and label states in this directory across restarts ('' keeps them in memory)"},
			&cli.StringFlag{Name: "starrocks-version", Usage: "the StarRocks release to answer as: 3.3, 3.4, 3.5, 3.5.4, 4.0 … ('' is 4.0); below 4.0 there are no multi-table transactions, below 3.5.4 no prepared_timeout header"},
			&cli.DurationFlag{Name: "schema-change-time", Value: DefaultSchemaChangeTime, Usage: "how long a schema change job (an ALTER TABLE without fast schema evolution) stays RUNNING"},
			&cli.BoolFlag{Name: "verbose", Usage: "log every transaction step"},
		},
		Action: func(c *cli.Context) error {
			cfg := Config{
				HTTPAddr:           c.String("http"),
				MySQLAddr:          c.String("mysql"),
				BEAddr:             c.String("be"),
				User:               c.String("user"),
				Password:           c.String("password"),
				DefaultTxnTimeout:  c.Duration("txn-timeout"),
				MaxRunningTxnPerDB: c.Int("max-running-txn-per-db"),
				DataDir:            c.String("data-dir"),
				StarRocksVersion:   c.String("starrocks-version"),
				SchemaChangeTime:   c.Duration("schema-change-time"),
			}
			level := slog.LevelInfo
			if c.Bool("verbose") {
				level = slog.LevelDebug
			} else {
				// go-mysql-server logs every connection and query at info
				// level through logrus' standard logger; only --verbose
				// shows them.
				logrus.SetLevel(logrus.WarnLevel)
			}
			cfg.Logger = slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
			if path := c.String("schema"); path != "" {
				b, err := os.ReadFile(path)
				if err != nil {
					return fmt.Errorf("reading the schema file %s: %w", path, err)
				}
				cfg.Schema = string(b)
			}
			em, err := Start(cfg)
			if err != nil {
				return fmt.Errorf("starting the emulator: %w", err)
			}
			out := c.App.Writer
			if out == nil {
				out = os.Stdout
			}
			fmt.Fprintf(out, "starrocks emulator %s listening: fe=%s", em.StarRocksVersion(), em.FEURL())
			if be := em.BEURL(); be != "" {
				fmt.Fprintf(out, " be=%s", be)
			}
			if my := em.MySQLAddr(); my != "" {
				fmt.Fprintf(out, " mysql=%s", my)
			}
			fmt.Fprintln(out)
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			done := make(chan error, 1)
			go func() { done <- em.Close() }()
			select {
			case err := <-done:
				return err
			case <-time.After(10 * time.Second):
				return fmt.Errorf("stopping the emulator: timed out after 10s")
			}
		},
	}
}
