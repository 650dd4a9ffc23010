package bench

import (
	"fmt"
	"strings"
)

// Schema is examples/schema.sql: the orders, order_items and order_events
// tables every configuration loads. The binary passes its embedded copy to
// Command; the tests read the file.
var Schema string

// PipelineYAML is the stream configuration of c: kafka_txn (read through the
// bench_timed wrapper) → txn_assembler → the configuration's output. The
// starrocks_txn settings are those of examples/demo.yaml, with c's
// max_in_flight and semantic and the options' buffer_size and
// commit_interval; exactly_once also gets pipeline_id PipelineID and the
// emulator's MySQL address mysqlAddr for its progress table.
func PipelineYAML(c Config, o Options, brokers, feURL, mysqlAddr string) string {
	o.defaults()
	var sb strings.Builder
	if c.Input == InputDebeziumTxn {
		fmt.Fprintf(&sb, `input:
  %s:
    input:
      debezium_txn:
        seed_brokers: [ %q ]
        topics: [ %s ]
        transaction_topic: %s
        consumer_group: bench
        checkpoint_limit: 100000
        batching:
          count: %d
          period: 50ms
`, timedInputName, brokers, strings.Join(debeziumNaming.DataTopics(), ", "), debeziumNaming.TransactionTopic(), c.Batch)
	} else {
		fmt.Fprintf(&sb, `input:
  %s:
    input:
      kafka_txn:
        seed_brokers: [ %q ]
        topics: [ %q ]
        consumer_group: bench
        isolation_level: read_committed
        checkpoint_limit: 100000
        batching:
          count: %d
          period: 50ms
  processors:
    - txn_assembler:
        format: envelope
`, timedInputName, brokers, topic, c.Batch)
	}
	switch c.Output {
	case OutputStarRocksTxn:
		fmt.Fprintf(&sb, `output:
  starrocks_txn:
    load_urls: [ %q ]
    username: root
    password: ""
    commit_interval: %s
    max_in_flight: %d
    buffer_size: %d
`, feURL, o.CommitInterval, c.MaxInFlight, o.BufferSize)
		if c.Semantic != "" {
			fmt.Fprintf(&sb, "    semantic: %s\n", c.Semantic)
		}
		if c.Semantic == SemanticExactlyOnce {
			fmt.Fprintf(&sb, `    pipeline_id: %s
    progress_table: %s
    mysql_address: %q
`, PipelineID, ProgressTable, mysqlAddr)
		}
	case OutputHTTPClient:
		// What users do today: one plain stream load per table per output
		// batch. The assembler's body-less END markers carry no row.
		fmt.Fprintf(&sb, `output:
  http_client:
    url: '%s/api/%s/${! @starrocks_table }/_stream_load'
    verb: PUT
    headers:
      format: json
      strip_outer_array: "true"
    basic_auth:
      enabled: true
      username: root
      password: ""
    max_in_flight: %d
    batching:
      count: %d
      period: 50ms
      processors:
        - mapping: 'root = if content().length() == 0 { deleted() }'
        - group_by_value:
            value: '${! @starrocks_table }'
        - archive:
            format: json_array
`, feURL, "test", c.MaxInFlight, c.Batch)
	default:
		sb.WriteString("output:\n  drop: {}\n")
	}
	sb.WriteString("shutdown_timeout: 20s\n")
	return sb.String()
}
