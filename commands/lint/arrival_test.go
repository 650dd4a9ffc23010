package lint

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exactly_once behind a txn_assembler that can only number its messages by
// arrival is warned about at the assembler's line; any way the file leaves
// for an offset to come (source_offset, a Kafka input, a resource defined
// elsewhere, a mapping naming kafka_offset or starrocks_source_offset) or
// at_least_once warns nothing.
func TestArrivalCounterWarning(t *testing.T) {
	const eo = "output:\n  starrocks_txn:\n    load_urls: [ http://fe:8030 ]\n    semantic: exactly_once\n    mysql_address: fe:9030\n    pipeline_id: p\n"
	for _, tc := range []struct {
		name, conf string
		// line is the line of the warning; 0 for none.
		line int
	}{
		{"http_server input, no source_offset", "input:\n  http_server: {}\n  processors:\n    - txn_assembler: { format: envelope }\n" + eo, 4},
		{"assembler written as null", "input:\n  stdin: {}\n  processors:\n    - txn_assembler:\n" + eo, 4},
		{"under pipeline.processors", "input:\n  generate: { mapping: 'root = {}' }\npipeline:\n  threads: 1\n  processors:\n    - txn_assembler: {}\n" + eo, 6},
		{"broker of non-Kafka inputs", "input:\n  broker:\n    inputs:\n      - stdin: {}\n      - resource: files\n  processors:\n    - txn_assembler: {}\ninput_resources:\n  - label: files\n    file: { paths: [ ./cdc.jsonl ] }\n" + eo, 7},
		{"empty source_offset", "input:\n  stdin: {}\n  processors:\n    - txn_assembler: { source_offset: \"\" }\n" + eo, 4},
		{"source_offset set", "input:\n  stdin: {}\n  processors:\n    - txn_assembler: { source_offset: '${! this.position }' }\n" + eo, 0},
		{"source_offset interpolated from the environment", "input:\n  stdin: {}\n  processors:\n    - txn_assembler: { source_offset: '${POSITION}' }\n" + eo, 0},
		{"kafka_txn input", "input:\n  kafka_txn: { seed_brokers: [ k:9092 ], topics: [ cdc ], consumer_group: g }\n  processors:\n    - txn_assembler: {}\n" + eo, 0},
		{"kafka_franz input under a broker", "input:\n  broker:\n    inputs:\n      - kafka_franz: { seed_brokers: [ k:9092 ], topics: [ cdc ] }\n  processors:\n    - txn_assembler: {}\n" + eo, 0},
		{"redpanda input", "input:\n  redpanda: { seed_brokers: [ k:9092 ], topics: [ cdc ] }\n  processors:\n    - txn_assembler: {}\n" + eo, 0},
		{"resource input of another file", "input:\n  resource: cdc\n  processors:\n    - txn_assembler: {}\n" + eo, 0},
		{"a mapping sets kafka_offset", "input:\n  stdin: {}\n  processors:\n    - mapping: 'meta kafka_offset = this.pos'\n    - txn_assembler: {}\n" + eo, 0},
		{"a mapping sets starrocks_source_offset", "input:\n  stdin: {}\n  processors:\n    - txn_assembler: {}\npipeline:\n  processors:\n    - mapping: 'meta starrocks_source_offset = this.pos'\n" + eo, 0},
		{"at_least_once", "input:\n  stdin: {}\n  processors:\n    - txn_assembler: {}\noutput:\n  starrocks_txn:\n    load_urls: [ http://fe:8030 ]\n", 0},
		{"semantic from the environment", "input:\n  stdin: {}\n  processors:\n    - txn_assembler: {}\noutput:\n  starrocks_txn:\n    load_urls: [ http://fe:8030 ]\n    semantic: ${SEMANTIC}\n", 0},
		{"no assembler", "input:\n  stdin: {}\n" + eo, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := CheckCycleYAML([]byte(tc.conf))
			require.NoError(t, err)
			var got []Problem
			for _, p := range ps {
				if p.What == "warning: "+msgArrivalCounter {
					got = append(got, p)
				}
			}
			if tc.line == 0 {
				assert.Empty(t, got, "%v", ps)
				return
			}
			require.Len(t, got, 1, "%v", ps)
			assert.Equal(t, tc.line, got[0].Line)
			assert.Contains(t, got[0].What, "source_offset")
			assert.Contains(t, got[0].What, "exactly_once")
		})
	}
}
