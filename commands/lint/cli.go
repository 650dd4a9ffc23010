package lint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/urfave/cli/v2"
)

// Builtin runs Benthos's own lint subcommand with args (everything after
// `lint`) and returns its exit code.
type Builtin func(args []string) int

// Command is the `lint` subcommand: Benthos's lint (every flag and target
// form it takes), then the placement check on the same YAML files.
func Command(builtin Builtin) *cli.Command {
	return &cli.Command{
		Name:            "lint",
		Usage:           "Parse configs and report any linting errors, including a misplaced txn_assembler",
		SkipFlagParsing: true,
		Description: `Runs Benthos's lint (see its flags with: lint --help), then checks that every
txn_assembler processor sits where it sees each partition in order: under
input.processors, or under pipeline.processors with pipeline.threads: 1.
Exits with status 1 if any linting error was found. Also warns (without
failing) when a kafka_txn → starrocks_txn config cannot make rows visible
within the output's commit_interval, or gives the input no way to know where
source transactions end, and explains starrocks_txn's transaction_mode when
per_table keeps no decision record (no writer rows) or prepared_timeout is set
for multi_table, which prepares nothing. Warns too when starrocks_txn is
exactly_once behind a txn_assembler without source_offset and nothing in the
config gives its messages kafka_offset: every transaction would be refused.`,
		Action: func(c *cli.Context) error {
			stderr := c.App.ErrWriter
			if stderr == nil {
				stderr = os.Stderr
			}
			if code := Run(c.Args().Slice(), stderr, builtin); code != 0 {
				return cli.Exit("", code)
			}
			return nil
		},
	}
}

// Run lints like the command and returns its exit code.
func Run(args []string, stderr io.Writer, builtin Builtin) int {
	code := builtin(args)
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			return code
		}
	}
	for _, path := range Targets(args) {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // Benthos's lint has reported it.
		}
		problems, err := CheckYAML(raw)
		if err != nil {
			continue // Benthos's lint has reported it.
		}
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s(%d,%d) %s\n", path, p.Line, p.Column, p.What)
			code = max(code, 1)
		}
		// Warnings: the config runs, but not within its commit_interval.
		warnings, _ := CheckCycleYAML(raw)
		for _, p := range warnings {
			fmt.Fprintf(stderr, "%s(%d,%d) %s\n", path, p.Line, p.Column, p.What)
		}
	}
	return code
}

// flags of Benthos's lint that take a value; -r/--resources files are
// linted as well.
var valueFlags = map[string]bool{"r": true, "resources": true, "e": true, "env-file": true, "t": true, "templates": true}

// Targets returns the YAML files a lint command line names: its file
// arguments (globs expanded, a trailing `...` walked for .yaml and .yml
// files) and its -r/--resources files. Markdown targets are left to
// Benthos's lint.
func Targets(args []string) []string {
	var raw []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			raw = append(raw, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			raw = append(raw, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !valueFlags[name] {
			continue
		}
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		if name == "r" || name == "resources" {
			raw = append(raw, value)
		}
	}
	var out []string
	for _, t := range raw {
		out = append(out, expand(t)...)
	}
	return out
}

func expand(t string) []string {
	isYAML := func(p string) bool { return strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") }
	if dir, ok := strings.CutSuffix(t, "..."); ok {
		if dir == "" {
			dir = "."
		}
		var out []string
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && isYAML(p) {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	matches, err := filepath.Glob(t)
	if err != nil || len(matches) == 0 {
		matches = []string{t}
	}
	var out []string
	for _, m := range matches {
		if !strings.HasSuffix(m, ".md") {
			out = append(out, m)
		}
	}
	return out
}

// OnConfigParse refuses to start a config the placement check refuses, with
// the lint's text. Pass it to service.CLIOptOnConfigParse.
func OnConfigParse(conf *service.ParsedConfig) error {
	v, err := conf.FieldAny()
	if err != nil {
		return fmt.Errorf("reading the config for the txn_assembler placement check: %w", err)
	}
	problems, err := CheckAny(v)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range problems {
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}
