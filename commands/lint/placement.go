// Package lint is the `lint` subcommand of the project's binary: Benthos's own
// lint, plus the one rule no component spec can express, where the
// txn_assembler processor is placed.
//
// A processor's lint rule sees only its own fields, and Benthos v4.60.0 has no
// config-level lint hook: the main schema's fields can be added to but not
// given rules. So the binary checks placement itself, on the whole config: in
// `lint` (this command, after Benthos's lint) and at start (OnConfigParse, the
// same text). The processor checks where Benthos built it too, so every
// binary refuses these places (processor/txn_assembler/placement.go), but it
// cannot see pipeline.threads until its first call; lint can.
package lint

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/starrocks-txn/benthos-starrocks/internal/placement"
)

// Assembler is the processor whose placement is checked.
const Assembler = placement.Assembler

// Problem is a placement the assembler cannot work in.
type Problem struct {
	// Line and Column of the processor's key in the file (0 when checked
	// from a parsed config).
	Line, Column int
	// Path is the processor's place, dotted (`pipeline.processors.0`).
	Path string
	What string
}

func (p Problem) Error() string { return p.What }

// CheckYAML returns every misplaced txn_assembler of a config file.
func CheckYAML(conf []byte) ([]Problem, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(conf, &doc); err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return checkNode(doc.Content[0]), nil
}

// CheckAny checks a config already parsed into maps and slices (the
// OnConfigParse hook gets one).
func CheckAny(conf any) ([]Problem, error) {
	var n yaml.Node
	if err := n.Encode(conf); err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	ps := checkNode(&n)
	for i := range ps {
		ps[i].Line, ps[i].Column = 0, 0
	}
	return ps, nil
}

func checkNode(root *yaml.Node) []Problem {
	if root.Kind != yaml.MappingNode {
		return nil
	}
	threads, threadsKnown := -1, true
	if p := mapValue(root, "pipeline"); p != nil {
		if t := mapValue(p, "threads"); t != nil {
			n, err := strconv.Atoi(strings.TrimSpace(t.Value))
			if t.Kind != yaml.ScalarNode || err != nil {
				// An interpolation (${THREADS}) cannot be judged from the
				// file; the check at start sees the value.
				threadsKnown = false
			}
			threads = n
		}
	}
	var out []Problem
	var walk func(n *yaml.Node, path []string)
	walk = func(n *yaml.Node, path []string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Value == Assembler && (v.Kind == yaml.MappingNode || v.Tag == "!!null") {
					if what := judge(path, threads, threadsKnown); what != "" {
						out = append(out, Problem{Line: k.Line, Column: k.Column, Path: strings.Join(path, "."), What: what})
					}
					continue
				}
				walk(v, append(path, k.Value))
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, append(path, strconv.Itoa(i)))
			}
		}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; k != "tests" {
			walk(root.Content[i+1], []string{k})
		}
	}
	return out
}

// judge returns why the assembler cannot run at path, or "" when it can
// (internal/placement, the text the processor refuses to start with).
func judge(path []string, threads int, threadsKnown bool) string {
	return placement.Judge(path, threads, threadsKnown)
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
