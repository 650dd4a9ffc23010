package lint

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCycleWarnings(t *testing.T) {
	const asm = "  processors:\n    - txn_assembler: {}\n"
	for _, tc := range []struct {
		name, conf string
		// want are pieces of the warnings, in order; none when the config
		// can reach its commit_interval.
		want []string
		line int
	}{
		{name: "defaults", conf: `
input:
  kafka_txn:
    seed_brokers: [ k:9092 ]
    topics: [ cdc ]
    consumer_group: g
` + asm + `
output:
  starrocks_txn:
    load_urls: [ http://fe:8030 ]
`},
		{name: "period at the default commit interval", conf: `
input:
  kafka_txn:
    batching:
      count: 1000
      period: 1s
` + asm + `
output:
  starrocks_txn: {}
`, want: []string{"kafka_txn batching.period 1s is not below starrocks_txn commit_interval 1s: a partition's records wait for the period before the output sees them, so rows become visible after about 2s, not 1s"}, line: 6},
		{name: "heartbeat above a quarter of the session timeout", conf: `
input:
  kafka_txn:
    session_timeout: 10s
    heartbeat_interval: 3s
` + asm + `
output:
  starrocks_txn: {}
`, want: []string{"heartbeat_interval (3s) is above a quarter of session_timeout (10s): the membership lease that lets the output commit lapses for 1s of every heartbeat interval"}, line: 5},
		{name: "debezium heartbeat above a quarter of the session timeout", conf: `
input:
  debezium_txn:
    heartbeat_interval: 15s
output:
  starrocks_txn: {}
`, want: []string{"heartbeat_interval (15s) is above a quarter of session_timeout (45s): the membership lease that lets the output commit lapses for 7.5s of every heartbeat interval"}, line: 4},
		{name: "heartbeat at a quarter of the session timeout", conf: `
input:
  kafka_txn:
    session_timeout: 12s
    heartbeat_interval: 3s
` + asm + `
output:
  starrocks_txn: {}
`},
		{name: "period below a longer commit interval", conf: `
input:
  kafka_txn:
    batching:
      period: 2s
` + asm + `
output:
  starrocks_txn:
    commit_interval: 5s
`},
		{name: "coalesce off", conf: `
input:
  kafka_txn:
    coalesce: false
    batching:
      period: 100ms
` + asm + `
output:
  starrocks_txn:
    max_in_flight: 256
`, want: []string{"max_in_flight 256 slots until its commit: one commit_interval (1s) holds the batches of only 25 busy partitions"}, line: 12},
		{name: "coalesce off, max_in_flight left to its default", conf: `
input:
  kafka_txn:
    coalesce: false
    batching:
      period: 50ms
` + asm + `
output:
  starrocks_txn: {}
`, want: []string{"max_in_flight 1024 slots until its commit: one commit_interval (1s) holds the batches of only 51 busy partitions, and with more the commits fall behind commit_interval; leave coalesce on, or raise max_in_flight to 20 × the partitions"}, line: 11},
		{name: "no assembler and no check", conf: `
input:
  kafka_txn:
    batching:
      period: 50ms
pipeline:
  processors:
    - mapping: root = this
output:
  starrocks_txn: {}
`, want: []string{"kafka_txn cannot tell where source transactions end"}, line: 4},
		{name: "no assembler, a check", conf: `
input:
  kafka_txn:
    batching:
      period: 50ms
      check: this.end == true
output:
  starrocks_txn: {}
`},
		{name: "assembler in the pipeline", conf: `
input:
  kafka_txn:
    batching:
      period: 50ms
pipeline:
  threads: 1
  processors:
    - txn_assembler: {}
output:
  starrocks_txn: {}
`},
		{name: "interpolated values are not judged", conf: `
input:
  kafka_txn:
    coalesce: ${COALESCE}
    batching:
      period: ${PERIOD}
` + asm + `
output:
  starrocks_txn:
    commit_interval: ${INTERVAL:1s}
`},
		{name: "output under a broker", conf: `
input:
  kafka_txn:
    batching:
      period: 2s
` + asm + `
output:
  broker:
    pattern: fan_out
    outputs:
      - starrocks_txn:
          commit_interval: 1s
      - drop: {}
`, want: []string{"kafka_txn batching.period 2s is not below starrocks_txn commit_interval 1s"}, line: 5},
		{name: "output under a switch, heartbeat of a nested input", conf: `
input:
  broker:
    inputs:
      - kafka_txn:
          session_timeout: 10s
          heartbeat_interval: 3s
          coalesce: false
          batching:
            period: 100ms
` + asm + `
output:
  switch:
    cases:
      - check: 'true'
        output:
          starrocks_txn:
            max_in_flight: 256
`, want: []string{"heartbeat_interval (3s) is above a quarter of session_timeout (10s)", "max_in_flight 256 slots until its commit"}, line: 7},
		{name: "output as a resource", conf: `
input:
  kafka_txn:
    batching:
      period: 3s
` + asm + `
output:
  resource: sr
output_resources:
  - label: sr
    starrocks_txn:
      commit_interval: 2s
`, want: []string{"kafka_txn batching.period 3s is not below starrocks_txn commit_interval 2s"}, line: 5},
		{name: "an output left empty", conf: `
input:
  kafka_txn:
    batching:
      period: 1s
` + asm + `
output:
  fallback:
    - starrocks_txn:
    - drop: {}
`, want: []string{"kafka_txn batching.period 1s is not below starrocks_txn commit_interval 1s"}, line: 5},
		{name: "a workflow branch named kafka_txn is no input", conf: `
input:
  generate:
    mapping: root = {}
  processors:
    - workflow:
        branches:
          kafka_txn:
            processors:
              - mapping: root = this
output:
  starrocks_txn:
    commit_interval: 1s
`},
		{name: "a header named starrocks_txn is no output", conf: `
input:
  kafka_txn:
    batching:
      period: 1s
` + asm + `
output:
  http_client:
    url: http://sink:8080/
    headers:
      starrocks_txn: ""
`},
		{name: "another output", conf: `
input:
  kafka_txn:
    batching:
      period: 5s
output:
  drop: {}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := CheckCycleYAML([]byte(tc.conf))
			require.NoError(t, err)
			require.Len(t, ps, len(tc.want), "%v", ps)
			for i, w := range tc.want {
				assert.Contains(t, ps[i].What, w)
				assert.Contains(t, ps[i].What, "warning: ")
			}
			if tc.line > 0 {
				assert.Equal(t, tc.line, ps[0].Line)
			}
		})
	}
}

// The command prints the warnings and still exits 0: the config runs.
func TestRunPrintsCycleWarningsWithoutFailing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "slow.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
input:
  kafka_txn:
    batching:
      period: 3s
  processors:
    - txn_assembler: {}
output:
  starrocks_txn: {}
`), 0o600))
	var stderr bytes.Buffer
	assert.Equal(t, 0, Run([]string{path}, &stderr, func([]string) int { return 0 }))
	assert.Contains(t, stderr.String(), path+"(5,15) warning: kafka_txn batching.period 3s is not below starrocks_txn commit_interval 1s")
}
