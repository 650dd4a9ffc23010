package bench

import (
	"fmt"
	"strings"
)

// PipelineYAML is the stream configuration of row c: its input read through
// the bench_timed wrapper (kafka_txn with consumer group group, or the
// pre-built contract stream), txn_assembler in the input's processors where
// the row has it, and the row's output. The starrocks_txn settings are the
// output's defaults but for commit_interval and, when the options set them,
// max_in_flight and buffer_size; exactly_once also gets pipeline_id
// PipelineID and the emulator's MySQL address mysqlAddr for its progress
// table.
func PipelineYAML(c Config, o Options, group, brokers, feURL, mysqlAddr string) string {
	o.defaults()
	var sb strings.Builder
	switch c.Kind {
	case KindOutput:
		fmt.Fprintf(&sb, "input:\n  %s:\n    input:\n      %s: {}\n", timedInputName, prebuiltInputName)
	case KindDebezium:
		fmt.Fprintf(&sb, `input:
  %s:
    input:
      debezium_txn:
        seed_brokers: [ %q ]
        topics: [ %s ]
        transaction_topic: %s
        consumer_group: %s
        checkpoint_limit: 100000
        batching:
          count: %d
          period: 50ms
`, timedInputName, brokers, strings.Join(debeziumNaming.DataTopics(), ", "), debeziumNaming.TransactionTopic(), group, c.Batch)
	default:
		fmt.Fprintf(&sb, `input:
  %s:
    input:
      kafka_txn:
        seed_brokers: [ %q ]
        topics: [ %q ]
        consumer_group: %s
        checkpoint_limit: 100000
        batching:
          count: %d
          period: 50ms
`, timedInputName, brokers, topicName, group, c.Batch)
		if c.Kind != KindDrop {
			sb.WriteString("  processors:\n    - txn_assembler:\n        format: envelope\n")
		}
	}
	switch c.Kind {
	case KindPipeline, KindOutput, KindDebezium:
		sb.WriteString(starrocksTxnYAML(c, o, feURL, mysqlAddr))
	case KindHTTP:
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

// starrocksTxnYAML is the output section of a starrocks_txn row: the
// output's defaults but for commit_interval and, when the options set them,
// max_in_flight and buffer_size; exactly_once also gets pipeline_id
// PipelineID, the progress table and the MySQL address.
func starrocksTxnYAML(c Config, o Options, feURL, mysqlAddr string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `output:
  starrocks_txn:
    load_urls: [ %q ]
    username: root
    password: ""
    commit_interval: %s
    mysql_address: %q
`, feURL, o.CommitInterval, mysqlAddr)
	if c.MaxInFlight > 0 {
		fmt.Fprintf(&sb, "    max_in_flight: %d\n", c.MaxInFlight)
	}
	if o.BufferSize > 0 {
		fmt.Fprintf(&sb, "    buffer_size: %d\n", o.BufferSize)
	}
	if c.Semantic != "" {
		fmt.Fprintf(&sb, "    semantic: %s\n", c.Semantic)
	}
	if c.Mode != "" {
		fmt.Fprintf(&sb, "    transaction_mode: %s\n", c.Mode)
	}
	if c.SchemaEvolution != "" {
		fmt.Fprintf(&sb, "    schema_evolution: %s\n", c.SchemaEvolution)
	}
	if c.Semantic == SemanticExactlyOnce {
		fmt.Fprintf(&sb, `    pipeline_id: %s
    progress_table: %s
`, PipelineID, ProgressTable)
	}
	return sb.String()
}
