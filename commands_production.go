//go:build production

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// localCommandsLeftOut are the subcommands of the default build for work on
// one machine (commands_dev.go), each with what this build leaves out.
var localCommandsLeftOut = []struct{ name, what string }{
	{"demo", "the commands that run an in-process Kafka"},
	{"bench", "the commands that run an in-process Kafka"},
	{"kafka", "the commands that run an in-process Kafka"},
	{"produce", "the sample-data producer, a tool for local work"},
}

// localCommands, in the production build, stand in for the subcommands for
// local work: the build links no kfake (ARCHITECTURE.md §2) and writes no
// sample data, and each says so in one line and exits with status 1.
func localCommands() []*cli.Command {
	cmds := make([]*cli.Command, 0, len(localCommandsLeftOut))
	for _, c := range localCommandsLeftOut {
		cmds = append(cmds, &cli.Command{
			Name:            c.name,
			Usage:           "not in this build (-tags production); build without the tag to run it",
			SkipFlagParsing: true,
			Action: func(*cli.Context) error {
				return cli.Exit(fmt.Sprintf("%s is not in this build: it was built with -tags production, which leaves out %s; build without the tag (go build .) to run it", c.name, c.what), 1)
			},
		})
	}
	return cmds
}
