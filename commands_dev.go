//go:build !production

package main

import (
	_ "embed"

	"github.com/urfave/cli/v2"

	"github.com/starrocks-txn/benthos-starrocks/commands/bench"
	"github.com/starrocks-txn/benthos-starrocks/commands/demo"
	"github.com/starrocks-txn/benthos-starrocks/commands/kafka"
	"github.com/starrocks-txn/benthos-starrocks/commands/produce"
)

var (
	//go:embed examples/demo.yaml
	demoPipeline string
	//go:embed examples/schema.sql
	demoSchema string
)

// localCommands are the subcommands for work on one machine: `demo`,
// `bench` and `kafka`, which run an in-process Kafka (kfake, through
// testkit/kafka), and `produce`, which writes sample source transactions.
// The default build has them, so that `go run . demo` works from a
// checkout; commands_production.go is the build without them.
func localCommands() []*cli.Command {
	return []*cli.Command{demo.Command(demoPipeline, demoSchema), bench.Command(demoSchema), kafka.Command(), produce.Command()}
}
