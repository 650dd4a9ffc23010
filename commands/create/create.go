// Package create is the `create` subcommand of the project's binary. It
// prints a config for an expression of inputs/processors/outputs exactly as
// Benthos's own `create` does (the same schema marshaller, defaults and
// examples), with one difference: when the expression names txn_assembler, the
// processors go under input.processors, where each partition is seen in order
// by one call at a time. Benthos's `create` puts every processor under
// pipeline.processors with threads: -1, where the assembler's calls overlap;
// the binary's lint refuses that placement. And a field without a default is
// left empty (required) or out (optional), never given the spec's first
// example as a value, which Benthos's marshaller does.
package create

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/starrocks-txn/benthos-starrocks/commands/lint"
)

// Command is the `create` subcommand.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "create",
		Usage: "Create a new config",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "small", Aliases: []string{"s"}, Usage: "Print only the main components of a config (input, pipeline, output) and omit all fields marked as advanced."},
		},
		Description: `Prints a new config to stdout containing the components of an expression:
three comma-separated lists of inputs, processors and outputs divided by
forward slashes:

  create kafka_txn/txn_assembler/starrocks_txn
  create file,http_server/mapping/http_client

When the processors include txn_assembler they are placed under
input.processors, where the assembler sees each partition in order.
A field without a default is never given an example as its value: a
required one is printed empty and marked "No default (required)" (fill it
in; lint names each one still empty), an optional one is left out and named
in a comment.`,
		Action: func(c *cli.Context) error {
			out := c.App.Writer
			if out == nil {
				out = os.Stdout
			}
			conf, err := Generate(service.GlobalEnvironment(), c.Args().First(), c.Bool("small"))
			if err != nil {
				return err
			}
			_, err = io.WriteString(out, conf)
			return err
		},
	}
}

// Generate returns the config `create` prints for expression.
func Generate(env *service.Environment, expression string, small bool) (string, error) {
	conf := map[string]any{
		"input":    map[string]any{"stdin": map[string]any{}},
		"pipeline": map[string]any{"processors": []any{}},
		"output":   map[string]any{"stdout": map[string]any{}},
	}
	if expression != "" {
		if err := addExpression(env, conf, expression); err != nil {
			return "", fmt.Errorf("generate error: %w", err)
		}
	}
	schema := env.FullConfigSchema("", "")
	if small {
		schema = env.CoreConfigSchema("", "")
	}
	m := schema.NewStreamConfigMarshaller().SetHydrateExamples(true).SetOmitDeprecated(true)
	if small {
		m.SetFieldFilter(func(v *service.FieldView, _ any) bool { return !v.IsAdvanced() })
	}
	s, err := m.AnyToYAML(conf)
	if err != nil {
		return "", fmt.Errorf("generate error: %w", err)
	}
	if s, err = withoutExamples(s); err != nil {
		return "", fmt.Errorf("generate error: %w", err)
	}
	return s + "\n", nil
}

// The line comments Benthos's marshaller puts on a field without a default.
const (
	requiredComment = "No default (required)"
	optionalComment = "No default (optional)"
)

// withoutExamples returns conf without the example values Benthos's
// marshaller puts into fields that have no default. It hydrates such a field
// with the first example of its spec, which reads as a value chosen for the
// user: `consumer_group: starrocks-loader` makes every pipeline created from
// the template share one consumer group, and `database: analytics` on
// debezium_txn would move every row. A required field is set to the zero
// value of its type and keeps its "No default (required)" comment, so the
// user sees what to fill in; an optional one is left out — a value,
// even an empty one, is not the same as no value (an empty compression is
// refused, an empty key is a key) — and named in a comment where it was.
func withoutExamples(conf string) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(conf), &doc); err != nil {
		return "", fmt.Errorf("reading the generated config: %w", err)
	}
	blankExamples(&doc)
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return "", fmt.Errorf("writing the generated config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("writing the generated config: %w", err)
	}
	return b.String(), nil
}

func lineComment(n *yaml.Node) string { return strings.TrimLeft(n.LineComment, "# ") }

func blankExamples(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		var kept []*yaml.Node
		var unset []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
				switch lineComment(v) {
				case optionalComment:
					unset = append(unset, k.Value)
					continue
				case requiredComment:
					zero(v)
				}
			}
			if len(unset) > 0 {
				k.HeadComment = strings.TrimSpace(k.HeadComment + "\n" + unsetComment(unset))
				unset = nil
			}
			kept = append(kept, k, v)
		}
		if len(unset) > 0 {
			n.FootComment = strings.TrimSpace(n.FootComment + "\n" + unsetComment(unset))
		}
		n.Content = kept
	}
	for _, c := range n.Content {
		blankExamples(c)
	}
}

func unsetComment(names []string) string {
	return "optional, not set (no default): " + strings.Join(names, ", ")
}

// zero sets a scalar to the zero value of its type.
func zero(n *yaml.Node) {
	switch n.Tag {
	case "!!int":
		n.Value = "0"
	case "!!float":
		n.Value = "0.0"
	case "!!bool":
		n.Value = "false"
	default:
		n.Tag, n.Value, n.Style = "!!str", "", yaml.DoubleQuotedStyle
	}
}

func addExpression(env *service.Environment, conf map[string]any, expression string) error {
	var kinds [3][]string
	for i, part := range strings.Split(expression, "/") {
		if i > 2 {
			return errors.New("more component separators than expected")
		}
		for _, t := range strings.Split(part, ",") {
			if t = strings.TrimSpace(t); t != "" {
				kinds[i] = append(kinds[i], t)
			}
		}
	}
	has := [3]func(string) bool{
		func(t string) bool { _, ok := env.GetInputConfig(t); return ok },
		func(t string) bool { _, ok := env.GetProcessorConfig(t); return ok },
		func(t string) bool { _, ok := env.GetOutputConfig(t); return ok },
	}
	names := [3]string{"input", "processor", "output"}
	var lists [3][]any
	for i, ts := range kinds {
		for _, t := range ts {
			if !has[i](t) {
				return fmt.Errorf("unrecognised %s type '%v'", names[i], t)
			}
			lists[i] = append(lists[i], map[string]any{"type": t})
		}
	}
	switch len(lists[0]) {
	case 0:
	case 1:
		conf["input"] = lists[0][0]
	default:
		conf["input"] = map[string]any{"broker": map[string]any{"inputs": lists[0]}}
	}
	if len(lists[1]) > 0 {
		if slices.Contains(kinds[1], lint.Assembler) {
			input := conf["input"].(map[string]any)
			input["processors"] = lists[1]
		} else {
			conf["pipeline"] = map[string]any{"processors": lists[1]}
		}
	}
	switch len(lists[2]) {
	case 0:
	case 1:
		conf["output"] = lists[2][0]
	default:
		conf["output"] = map[string]any{"broker": map[string]any{"outputs": lists[2]}}
	}
	return nil
}
