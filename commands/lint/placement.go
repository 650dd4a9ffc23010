// Package lint is the `lint` subcommand of the project's binary: Benthos's own
// lint, plus the one rule no component spec can express, where the
// txn_assembler processor is placed.
//
// A processor's lint rule sees only its own fields, and Benthos v4.60.0 has no
// config-level lint hook: the main schema's fields can be added to but not
// given rules, and a processor is not told at construction where it was
// placed. So the binary checks placement itself, on the whole config: in
// `lint` (this command, after Benthos's lint) and at start (OnConfigParse, the
// same text). The processor's own guard, an error on every message of a call
// that overlaps another, stays for configs built in code.
package lint

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Assembler is the processor whose placement is checked.
const Assembler = "txn_assembler"

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

// the reason common to every refusal.
const where = "txn_assembler must see every partition's messages in order, one call at a time: put it under input.processors, or under pipeline.processors with pipeline.threads: 1"

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

// judge returns why the assembler cannot run at path, or "" when it can.
func judge(path []string, threads int, threadsKnown bool) string {
	at := strings.Join(path, ".")
	nProcs := 0
	for _, p := range path {
		if p == "processors" {
			nProcs++
		}
	}
	direct := len(path) >= 2 && path[len(path)-2] == "processors" && nProcs == 1
	switch root := path[0]; {
	case root == "input" || root == "input_resources":
		switch {
		case contains(path, "batching"):
			return fmt.Sprintf("%s: %s; here it is a batching policy's processor, which runs on a batch after it was cut", at, where)
		case !direct:
			return fmt.Sprintf("%s: %s; here it is inside another processor, which may split, reorder or run its batches in parallel", at, where)
		}
		return ""
	case root == "pipeline":
		if !direct {
			return fmt.Sprintf("%s: %s; here it is inside another processor, which may split, reorder or run its batches in parallel", at, where)
		}
		if !threadsKnown || threads == 1 {
			return ""
		}
		n := fmt.Sprintf("pipeline.threads is %d", threads)
		if threads < 1 {
			n = fmt.Sprintf("pipeline.threads is %d (one thread per CPU core)", threads)
		}
		return fmt.Sprintf("%s: %s; here %s, so its calls overlap and it fails every message of the overlapping batches", at, where, n)
	case root == "processor_resources":
		return fmt.Sprintf("%s: %s; a processor resource can be used from any place, so its order cannot be checked: write txn_assembler itself under input.processors", at, where)
	case root == "output" || root == "output_resources":
		return fmt.Sprintf("%s: %s; here it is an output's processor, which runs in as many concurrent calls as the output has in flight", at, where)
	default:
		return fmt.Sprintf("%s: %s", at, where)
	}
}

func contains(path []string, s string) bool {
	for _, p := range path {
		if p == s {
			return true
		}
	}
	return false
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
