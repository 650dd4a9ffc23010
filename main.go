// Command benthos-starrocks is a Benthos binary with every core component plus
// the plugins of this project: the txn_assembler processor, the starrocks_txn
// output, the kafka_txn input and output and a prometheus metrics exporter. It
// adds subcommands: `emulator`, a StarRocks-compatible server for local work
// and tests; `kafka`, a Kafka broker for local work; `produce`, which writes
// sample source transactions in each supported format; `demo`, which runs
// the whole pipeline on this machine and verifies the result; `bench`, the
// comparative benchmark; and `inspect`, which prints a pipeline's progress
// and writer rows from StarRocks. It
// replaces two of Benthos's: `create`, which puts txn_assembler under
// input.processors, and `lint`, which also refuses a txn_assembler placed
// where it cannot see each partition in order (the same check runs when a
// config starts).
//
// `demo`, `bench` and `kafka` run an in-process Kafka (the test kit's
// kfake), and `produce` writes sample source transactions: the default build
// has them, a build with `-tags production` leaves them out and links no
// kfake (commands_dev.go, commands_production.go; ARCHITECTURE.md §2). The
// subcommands live in commands/; this file only wires them.
package main

import (
	"context"
	"os"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/commands/create"
	"github.com/starrocks-txn/benthos-starrocks/commands/inspect"
	"github.com/starrocks-txn/benthos-starrocks/commands/lint"
	"github.com/starrocks-txn/benthos-starrocks/commands/version"
	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/exitstatus"
	"github.com/starrocks-txn/benthos-starrocks/internal/shutdown"

	// Benthos's io and pure components and every plugin: the set a custom
	// binary gets from the same import.
	_ "github.com/starrocks-txn/benthos-starrocks/components/all"
)

// options are the CLI options every run of the binary shares.
func options() []service.CLIOptFunc {
	return []service.CLIOptFunc{
		service.CLIOptOnConfigParse(lint.OnConfigParse),
	}
}

// benthosLint runs Benthos's own lint subcommand in this process.
func benthosLint(args []string) int {
	bin := "benthos-starrocks"
	if len(os.Args) > 0 {
		bin = os.Args[0]
	}
	opts := append(options(), service.CLIOptSetArgs(append([]string{bin, "lint"}, args...)...))
	code, err := service.RunCLIToCode(context.Background(), opts...)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
	}
	return code
}

func main() {
	// Benthos's own --version prints only its version; this binary's names
	// the project and both versions, whatever the file is called (and
	// leaves the engine version Benthos reports elsewhere alone).
	if version.Requested(os.Args[1:]) {
		version.Print(os.Stdout)
		return
	}
	// Outputs still waiting to connect give up at once on SIGTERM instead of
	// holding the stop for most of shutdown_timeout (internal/shutdown).
	shutdown.NotifyOnSignals()
	// A pipeline stopped at start by an error no retry fixes exits within
	// a second, not after most of shutdown_timeout (internal/exitstatus).
	exitstatus.ExitAfterFailure(os.Args[1:])
	if code := runCLI(context.Background(), commands()...); code != 0 {
		os.Exit(code)
	}
}

// commands are the subcommands this binary adds to Benthos's: those of
// every build, and those for work on one machine (localCommands: the
// in-process Kafka and the sample producer, of the default build only).
func commands() []service.CLIOptFunc {
	opts := []service.CLIOptFunc{service.CLIOptAddCommand(emulator.Command())}
	for _, c := range localCommands() {
		opts = append(opts, service.CLIOptAddCommand(c))
	}
	return append(opts,
		service.CLIOptAddCommand(create.Command()),
		service.CLIOptAddCommand(lint.Command(benthosLint)),
		service.CLIOptAddCommand(inspect.Command()),
	)
}

// runCLI runs Benthos's CLI and returns the exit status: Benthos's own, or 1
// when a component stopped the pipeline because of an error no retry fixes
// (internal/exitstatus), which Benthos would end with status 0 like a
// pipeline that finished.
func runCLI(ctx context.Context, opts ...service.CLIOptFunc) int {
	code, err := service.RunCLIToCode(ctx, append(options(), opts...)...)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
	}
	if stopped := exitstatus.Take(); stopped != nil && code == 0 {
		code = 1
	}
	return code
}
