//go:build !production

package main

import (
	_ "embed"

	"github.com/urfave/cli/v2"

	"github.com/starrocks-txn/benthos-starrocks/commands/bench"
	"github.com/starrocks-txn/benthos-starrocks/commands/demo"
)

var (
	//go:embed examples/demo.yaml
	demoPipeline string
	//go:embed examples/schema.sql
	demoSchema string
)

// kafkaCommands are the subcommands that run an in-process Kafka (kfake,
// through testkit/kafka): `demo` and `bench`. The default build has them, so
// that `go run . demo` works from a checkout; commands_production.go is the
// build without them.
func kafkaCommands() []*cli.Command {
	return []*cli.Command{demo.Command(demoPipeline, demoSchema), bench.Command(demoSchema)}
}
