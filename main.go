// Command benthos-starrocks is a Benthos binary with every core component plus
// the plugins of this project: the txn_assembler processor, the starrocks_txn
// output, the kafka_txn input and output and a prometheus metrics exporter.
// It adds three subcommands: `emulator`, a StarRocks-compatible server for
// local work and tests; `demo`, which runs the whole pipeline on this machine
// and verifies the result; and `bench`, the comparative benchmark.
package main

import (
	"context"
	_ "embed"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/cli/bench"
	"github.com/starrocks-txn/benthos-starrocks/internal/cli/demo"

	_ "github.com/starrocks-txn/benthos-starrocks/components"
)

var (
	//go:embed examples/demo.yaml
	demoPipeline string
	//go:embed examples/schema.sql
	demoSchema string
)

func main() {
	service.RunCLI(context.Background(),
		service.CLIOptAddCommand(emulator.Command()),
		service.CLIOptAddCommand(demo.Command(demoPipeline, demoSchema)),
		service.CLIOptAddCommand(bench.Command(demoSchema)),
	)
}
