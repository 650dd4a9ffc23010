package lint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// The cycle check warns about a kafka_txn → starrocks_txn config that can
// run but cannot make its rows visible within the output's commit_interval,
// or that gives the input no way to deliver whole source transactions. Like
// the placement check it needs both components' fields at once, which no
// component's lint rule sees. It warns and never refuses: each such config
// works, only slower or later than its commit_interval says (the input's
// README, Sizing).

// Defaults the check assumes for fields a config leaves out; they are the
// components' spec defaults.
const (
	defaultCommitInterval = time.Second
	defaultMaxInFlight    = 1024
)

// The consumer-group defaults, as the inputs' specs give them.
var (
	defaultHeartbeat, _ = time.ParseDuration(kafka.DefaultHeartbeatInterval)
	defaultSession, _   = time.ParseDuration(kafka.DefaultSessionTimeout)
)

// CheckCycleYAML returns a warning for every way the config's kafka_txn
// input and starrocks_txn output keep a commit cycle from reaching its
// commit_interval. The components are found wherever they sit: at the top,
// under a broker, a switch, a fallback, a sequence or a retry, or as
// resources. Configs without both, and values given by environment
// interpolation, are not judged. It also warns about a starrocks_txn output
// that may send its MySQL password in clear text (cleartext.go), explains
// its transaction_mode (pertable.go), and warns when it is exactly_once
// behind a txn_assembler that can only number messages by arrival
// (arrival.go).
func CheckCycleYAML(conf []byte) ([]Problem, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(conf, &doc); err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil
	}
	root := doc.Content[0]
	var ins, groups, outs []*yaml.Node
	for _, key := range []string{"input", "input_resources"} {
		if n := mapValue(root, key); n != nil {
			ins = append(ins, components(n, "kafka_txn")...)
			groups = append(groups, components(n, "kafka_txn", "debezium_txn")...)
		}
	}
	for _, key := range []string{"output", "output_resources"} {
		if n := mapValue(root, key); n != nil {
			outs = append(outs, components(n, "starrocks_txn")...)
		}
	}
	var ps []Problem
	seen := map[Problem]bool{}
	warn := func(n *yaml.Node, format string, args ...any) {
		p := Problem{Line: n.Line, Column: n.Column, What: "warning: " + fmt.Sprintf(format, args...)}
		if !seen[p] {
			seen[p] = true
			ps = append(ps, p)
		}
	}
	if len(outs) > 0 {
		for _, g := range groups {
			leaseGap(g, warn)
		}
	}
	assembled := mentions(root, Assembler)
	for _, in := range ins {
		for _, out := range outs {
			checkCycle(in, out, assembled, warn)
		}
	}
	for _, out := range outs {
		cleartextWithoutTLS(out, warn)
		transactionMode(out, warn)
	}
	arrivalCounter(root, outs, warn)
	return ps, nil
}

// components returns the configuration of every component named one of
// names in n, however deep (a mapping key of that name whose value is a
// mapping, or null). Processor lists are not searched: no processor holds
// an input or an output, and some name their parts with keys of the user's
// choice (workflow's branches), which may be a component's name. Neither is
// a key whose value is a string, even an empty one (a header's, say).
func components(n *yaml.Node, names ...string) []*yaml.Node {
	var found []*yaml.Node
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "processors" {
				continue
			}
			if slices.Contains(names, k.Value) {
				if v.Kind == yaml.MappingNode {
					found = append(found, v)
				} else if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
					found = append(found, &yaml.Node{Kind: yaml.MappingNode, Line: k.Line, Column: k.Column})
				}
				continue
			}
			found = append(found, components(v, names...)...)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			found = append(found, components(c, names...)...)
		}
	}
	return found
}

// checkCycle warns about one kafka_txn input feeding one starrocks_txn
// output; assembled tells whether the stream has a txn_assembler.
func checkCycle(in, out *yaml.Node, assembled bool, warn func(*yaml.Node, string, ...any)) {
	commit, ok := durationOf(mapValue(out, "commit_interval"), defaultCommitInterval)
	if !ok || commit <= 0 {
		return
	}
	batching := orEmpty(mapValue(in, "batching"))
	periodNode := mapValue(batching, "period")
	period, periodOK := durationOf(periodNode, 0)
	if periodOK && period >= commit {
		warn(periodNode, "kafka_txn batching.period %s is not below starrocks_txn commit_interval %s: a partition's records wait for the period before the output sees them, so rows become visible after about %s, not %s; lower batching.period (50ms to 100ms is a good start)",
			period, commit, period+commit, commit)
	}

	coalesce, coalesceOK := boolOf(mapValue(in, "coalesce"), true)
	mif, mifOK := intOf(mapValue(out, "max_in_flight"), defaultMaxInFlight)
	if coalesceOK && !coalesce && mifOK && periodOK && period > 0 && period < commit {
		// With one partition per batch, every partition hands the output
		// a batch per period at busy times, and each holds a slot until
		// the commit after it: a cycle needs commit_interval ÷ period
		// slots per partition.
		perPart := int((commit + period - 1) / period)
		warn(orNode(mapValue(out, "max_in_flight"), out), "kafka_txn coalesce is off, so every busy partition delivers a batch per batching.period (%s), each holding one of starrocks_txn's max_in_flight %d slots until its commit: one commit_interval (%s) holds the batches of only %d busy partitions, and with more the commits fall behind commit_interval; leave coalesce on, or raise max_in_flight to %d × the partitions",
			period, mif, commit, mif/perPart, perPart)
	}

	if check := mapValue(batching, "check"); check == nil && !assembled {
		warn(in, "kafka_txn cannot tell where source transactions end: no txn_assembler in the stream and no batching.check, so batches can end inside a source transaction and each waits in one of starrocks_txn's max_in_flight slots for the next; set batching.check to what marks a transaction's last record (the input's README, Ending batches at source-transaction ends)")
	}
}

// leaseGap warns when an input's heartbeat_interval lets its membership
// lease lapse for part of every heartbeat (above a quarter of
// session_timeout); from half of it on the input's own lint rule and its
// start refuse the config.
func leaseGap(in *yaml.Node, warn func(*yaml.Node, string, ...any)) {
	hbNode := mapValue(in, kafka.FieldHeartbeatInterval)
	hb, hbOK := durationOf(hbNode, defaultHeartbeat)
	st, stOK := durationOf(mapValue(in, kafka.FieldSessionTimeout), defaultSession)
	if !hbOK || !stOK || hb <= 0 || st <= 0 || 2*hb >= st {
		return
	}
	if gap := kafka.LeaseGap(hb, st); gap > 0 {
		warn(orNode(hbNode, in), kafka.HeartbeatLeaseGapMsg, hb, st, gap)
	}
}

// mentions reports whether key occurs anywhere in n as a mapping key.
func mentions(n *yaml.Node, key string) bool {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key || mentions(n.Content[i+1], key) {
				return true
			}
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			if mentions(c, key) {
				return true
			}
		}
	}
	return false
}

var emptyMap = &yaml.Node{Kind: yaml.MappingNode}

func orEmpty(n *yaml.Node) *yaml.Node {
	if n == nil {
		return emptyMap
	}
	return n
}

func orNode(n, alt *yaml.Node) *yaml.Node {
	if n == nil {
		return alt
	}
	return n
}

// judged reports whether n is a plain value the check can read (not an
// interpolation, which only the running config resolves).
func judged(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && !strings.Contains(n.Value, "${")
}

func durationOf(n *yaml.Node, def time.Duration) (time.Duration, bool) {
	if n == nil || (n.Kind == yaml.ScalarNode && strings.TrimSpace(n.Value) == "") {
		return def, true
	}
	if !judged(n) {
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.Value))
	return d, err == nil
}

func intOf(n *yaml.Node, def int) (int, bool) {
	if n == nil {
		return def, true
	}
	if !judged(n) {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(n.Value))
	return v, err == nil
}

func boolOf(n *yaml.Node, def bool) (bool, bool) {
	if n == nil {
		return def, true
	}
	if !judged(n) {
		return false, false
	}
	v, err := strconv.ParseBool(strings.TrimSpace(n.Value))
	return v, err == nil
}
