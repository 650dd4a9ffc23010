//go:build production

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// kafkaCommandNames are the subcommands of the default build that run an
// in-process Kafka (commands_dev.go).
var kafkaCommandNames = []string{"demo", "bench"}

// kafkaCommands, in the production build, stand in for the subcommands that
// need the in-process Kafka: the build links no kfake (ARCHITECTURE.md §2),
// and each says so in one line and exits with status 1.
func kafkaCommands() []*cli.Command {
	cmds := make([]*cli.Command, 0, len(kafkaCommandNames))
	for _, name := range kafkaCommandNames {
		cmds = append(cmds, &cli.Command{
			Name:            name,
			Usage:           "not in this build (-tags production); build without the tag to run it",
			SkipFlagParsing: true,
			Action: func(*cli.Context) error {
				return cli.Exit(fmt.Sprintf("%s is not in this build: it was built with -tags production, which leaves out the commands that run an in-process Kafka; build without the tag (go build .) to run it", name), 1)
			},
		})
	}
	return cmds
}
