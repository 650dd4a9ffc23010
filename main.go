// Command benthos-starrocks is a Benthos binary with every core component plus
// the plugins of this project: the txn_assembler processor, the starrocks_txn
// output and the kafka_txn input. It adds two subcommands: `emulator`, a
// StarRocks-compatible server for local work and tests, and `demo`.
package main

import (
	"context"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
)

func main() {
	service.RunCLI(context.Background(), service.CLIOptAddCommand(emulator.Command()))
}
