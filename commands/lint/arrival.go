package lint

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// The arrival check warns about a config whose starrocks_txn output is
// exactly_once while its txn_assembler can only number messages by arrival:
// without source_offset the assembler takes the kafka_offset metadata, and
// without that a per-partition counter that starts at 0 again at every
// start — no source position, so the output refuses every transaction
// numbered by it (ARCHITECTURE.md §7). It warns only when the file shows
// that no message can carry an offset: no input that could be a Kafka
// input, no input defined elsewhere (a resource of another file), and no
// mention of kafka_offset or starrocks_source_offset (a mapping that sets
// one). It never refuses: an input template of another file may still read
// Kafka, and a mapping may set metadata from data; the fix it names
// (source_offset) is right in either case.

// msgArrivalCounter is the warning's text.
const msgArrivalCounter = "txn_assembler has no source_offset and nothing in this config gives its messages kafka_offset (no Kafka input): it numbers them by arrival (0, 1, 2 …, from 0 again at every start), which is no source position, so starrocks_txn semantic exactly_once refuses every source transaction (to dead_letter, or its partition stalls); set source_offset to the source's position (a whole number strictly increasing per partition, e.g. ${! this.position }), or use semantic at_least_once"

// arrivalCounter warns, at each txn_assembler without source_offset, when
// the config's starrocks_txn output is exactly_once and no message of the
// config can carry an offset.
func arrivalCounter(root *yaml.Node, outs []*yaml.Node, warn func(*yaml.Node, string, ...any)) {
	exactlyOnce := false
	for _, out := range outs {
		if s := mapValue(out, "semantic"); s != nil && judged(s) && strings.TrimSpace(s.Value) == "exactly_once" {
			exactlyOnce = true
		}
	}
	if !exactlyOnce || mapValue(root, "input") == nil || mentionsText(root, "kafka_offset") || mentionsText(root, "starrocks_source_offset") {
		return
	}
	defined := map[string]bool{}
	if res := mapValue(root, "input_resources"); res != nil && res.Kind == yaml.SequenceNode {
		for _, r := range res.Content {
			if l := mapValue(r, "label"); l != nil {
				defined[l.Value] = true
			}
		}
	}
	for _, key := range []string{"input", "input_resources"} {
		if n := mapValue(root, key); n != nil && mayReadKafka(n, defined) {
			return
		}
	}
	for _, asm := range assemblers(root) {
		if off := mapValue(asm.conf, "source_offset"); off != nil && strings.TrimSpace(off.Value) != "" {
			continue
		}
		warn(asm.key, msgArrivalCounter)
	}
}

// mayReadKafka reports whether an input tree may deliver kafka_offset: a
// component whose name says Kafka or Redpanda (the kafka, kafka_franz,
// redpanda… inputs, this project's kafka_txn and debezium_txn), or a
// resource input this file does not define. Processor lists are skipped
// (mentionsText covers what they set).
func mayReadKafka(n *yaml.Node, defined map[string]bool) bool {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			switch {
			case k == "processors":
				continue
			case strings.Contains(k, "kafka") || strings.Contains(k, "redpanda") || k == "debezium_txn":
				return true
			case k == "resource" && v.Kind == yaml.ScalarNode && !defined[v.Value]:
				return true
			}
			if mayReadKafka(v, defined) {
				return true
			}
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			if mayReadKafka(c, defined) {
				return true
			}
		}
	}
	return false
}

// assembler is one txn_assembler of the config: its key (for the line) and
// its fields (a null when it has none).
type assembler struct{ key, conf *yaml.Node }

// assemblers returns every txn_assembler of the config, wherever it sits
// (tests excepted, as in the placement check).
func assemblers(root *yaml.Node) []assembler {
	var out []assembler
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Value == Assembler && (v.Kind == yaml.MappingNode || v.Tag == "!!null") {
					out = append(out, assembler{key: k, conf: v})
					continue
				}
				walk(v)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c)
			}
		}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "tests" {
			walk(root.Content[i+1])
		}
	}
	return out
}

// mentionsText reports whether s occurs in any key or value of n.
func mentionsText(n *yaml.Node, s string) bool {
	if strings.Contains(n.Value, s) {
		return true
	}
	for _, c := range n.Content {
		if mentionsText(c, s) {
			return true
		}
	}
	return false
}
